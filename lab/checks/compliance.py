"""Prohibitions and permit limits checked on lab results: concentrations, loadings, flows.

Each exceedance becomes a violation shaped like the sensor rules' (``site``, ``parameter``,
``rule``, ``start``, ``end``, ``peak``, ``limit``, ``citation``) plus ``words``, ``unit``,
``pack``, ``days_of_violation``, ``evidence``, ``applies`` (``ordinance`` or ``permit``),
``stricter_of`` (where both limit it: which applies and what it is stricter than),
``provenance`` and ``source`` = ``lab``.

Concentrations (:func:`check_limit`): a rule with statistic ``each`` (a pack's basis
``sample``) judges every result (webster-wi §240-5 and Superior: "may contain more than 100
ppm"; palmyra-wi §13.48(2)(l) cyanide "in excess of 0.5 mg/l"); ``daily-maximum`` (a permit's
daily maximum, basis ``daily``) each local day's mean of its results, or every result, as
``[enforcement] daily_maximum`` says (:mod:`limits.readings`); ``period-average`` (basis
``average``) the mean of a site's results over the period checked (palmyra-wi §13.48(2)(k):
"exceeding on analysis an average of 100 mg/l"); ``monthly-average`` (a permit's monthly
average) the mean of each calendar month in the village's time zone.

Each record says when its condition existed (``start``, ``end``, and for a day's mean or an
average ``evidence.intervals``: the half-open intervals of :mod:`limits.days`), and its
``days_of_violation`` is counted from them by :func:`limits.days.record_days`: a result is
the instant it was collected, a day's mean that local day, an average the days of its
samples or its whole period (``[enforcement] average_days``).

Loadings (:func:`check_loadings`, palmyra-wi §13.48(2)(m)3 "loading in excess of the
wastewater discharge permit"): each result x the metered volume of its local day x 8.34
[lb/day]. A day whose flow readings do not cover it whole gives no loading: it is stated as
incomplete, not guessed; unless even the covered part's volume already exceeds the limit,
which is a violation (a lower bound).

Flows (:func:`check_flows`, a permit's average and maximum daily flow, §13.54(3)(b)): each
whole day's metered volume against the maximum; each calendar month's average of whole days
against the average.
"""

from __future__ import annotations

import operator
from datetime import date, datetime, timezone

import numpy as np

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.formulas.volumes import loading_lb
from lab.ordinance import LabLimit, lab_limits, pack_timezone
from lab.results_table import LabTable, iso
from limits import core, sample_types
from limits.days import day_intervals, local_midnight, record_days
from limits.permits import Permit, renewal
from limits.readings import Readings

#: a day counts as metered whole when its readings cover this much of it
WHOLE_DAY = 0.99


def _violation(lim: LabLimit, pack: str, site: str, t0, t1, peak: float, samples, values, nd,
               intervals: list | None = None) -> dict:
    """A lab violation record; ``intervals`` (ISO pairs, :mod:`limits.days`) where its
    condition existed otherwise than at ``[t0, t1]``'s samples."""
    ev = {"statistic": lim.statistic, "comparison": lim.comparison, "samples": [str(s) for s in samples],
          "values_mg_l": [float(v) for v in values], "non_detect": [bool(x) for x in nd]}
    if lim.sample_type:
        ev["sample_type"] = lim.sample_type
    if intervals:
        ev["intervals"] = intervals
    rec = {
        "site": site, "parameter": lim.analyte, "rule": lim.rule, "start": iso(t0), "end": iso(t1),
        "peak": float(peak), "limit": lim.limit, "unit": lim.unit, "comparison": lim.comparison,
        "citation": lim.citation, "provenance": lim.provenance, "words": lim.words, "pack": pack, "source": "lab",
        "applies": lim.origin, "stricter_of": lim.stricter_of, "evidence": ev,
    }
    rec["days_of_violation"] = record_days(rec, pack_timezone(pack))
    return rec


#: operator -> the function telling whether ``value op limit`` holds (a violation, a threshold met)
VIOLATES = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def local_days(collected: np.ndarray, tz) -> np.ndarray:
    """The local calendar day (``datetime64[D]``) of each collection time (UTC ``datetime64``)."""
    us = collected.astype("datetime64[us]").astype(np.int64)
    return core.local_day(us, tz).astype("datetime64[D]")


def check_limit(table: LabTable, lim: LabLimit, pack: str, non_detect: str = DEFAULT_COMPLIANCE,
                readings: Readings = Readings(), period: tuple[datetime, datetime] | None = None,
                types_named: frozenset[str] = frozenset()) -> list[dict]:
    """Violations of one lab limit in ``table`` (all sites), in site and time order.

    ``readings``: how a daily maximum is judged and which days an average's violation has
    (:mod:`limits.readings`); ``period``: the instants ``[start, end)`` checked (an average
    over the period has every day of it under ``average_days = "period"``); ``types_named``:
    the sample types the analyte's limits name (:func:`limits.sample_types.named`): a limit
    naming a type judges, and averages, the results of that type only; one naming none the
    results of the types no limit names (a table without sample types: every result).
    """
    mask = table.analyte == lim.analyte
    if table.sample_type is not None and (lim.sample_type or types_named):
        mask &= sample_types.judged_by(table.sample_type, lim.sample_type, types_named)
    sel = table.select(mask)
    if len(sel) == 0:
        return []
    tz = pack_timezone(pack)
    values = substitute(sel.value_mg_l, sel.non_detect, non_detect)
    out: list[dict] = []
    violates = VIOLATES[lim.op]
    statistic = lim.statistic
    if statistic == "daily-maximum" and readings.daily_maximum == "each-sample":
        statistic = "each"
    if statistic == "each":
        for i in np.flatnonzero(violates(values, lim.limit)):
            out.append(_violation(lim, pack, sel.site[i], sel.collected[i], sel.collected[i], values[i],
                                  [sel.sample[i]], [values[i]], [sel.non_detect[i]]))
    elif statistic == "rolling-30-day":
        out += _rolling(lim, pack, sel, values, tz, readings)
    elif statistic in ("daily-maximum", "period-average", "monthly-average", "weekly-average"):
        group = sel.site.astype(str)
        days = local_days(sel.collected, tz)
        if statistic == "weekly-average":          # the calendar week, Sunday to Saturday: its Sunday
            n = days.astype(np.int64)
            key = (n - (n + 4) % 7).astype("datetime64[D]").astype(str)
            group = np.char.add(np.char.add(group, "|"), key)
        elif statistic != "period-average":
            unit = "D" if statistic == "daily-maximum" else "M"
            # site ids are slugs: no "|"
            group = np.char.add(np.char.add(group, "|"), days.astype(f"datetime64[{unit}]").astype(str))
        uniq, inv = np.unique(group, return_inverse=True)
        means = np.bincount(inv, weights=values, minlength=len(uniq)) / np.bincount(inv, minlength=len(uniq))
        for g in np.flatnonzero(violates(means, lim.limit)):
            m = inv == g
            sampled = day_intervals(days[m].astype(str), tz)
            if statistic == "daily-maximum":
                spans = sampled                                   # the day whose mean it is
            elif readings.average_days == "sampled":
                spans = sampled                                   # the days of its samples
            elif statistic == "monthly-average":
                month = days[m][0].astype("datetime64[M]")
                spans = [[_z(local_midnight(_date(month), tz)),
                          _z(local_midnight(_date(month + np.timedelta64(1, "M")), tz))]]
            elif statistic == "weekly-average":
                sunday = np.datetime64(uniq[g].split("|")[1], "D")
                spans = [[_z(local_midnight(_date(sunday), tz)),
                          _z(local_midnight(_date(sunday + np.timedelta64(7, "D")), tz))]]
            else:
                spans = [[_z(period[0]), _z(period[1])]] if period is not None else sampled
            out.append(_violation(lim, pack, sel.site[m][0], sel.collected[m].min(), sel.collected[m].max(),
                                  means[g], sel.sample[m], values[m], sel.non_detect[m], spans))
            ev = out[-1]["evidence"]
            ev["average_mg_l"] = float(means[g])
            ev["results"] = int(m.sum())
            if statistic != "daily-maximum":
                ev["average_days"] = readings.average_days
            if statistic == "monthly-average":
                ev["month"] = uniq[g].split("|")[1]
            elif statistic == "weekly-average":
                ev["week"] = uniq[g].split("|")[1]          # its Sunday
            elif statistic == "daily-maximum":
                ev["day"] = uniq[g].split("|")[1]
    else:
        raise ValueError(f"unknown statistic {lim.statistic!r}")
    out.sort(key=lambda v: (v["site"], v["start"]))
    return out


#: the days a rolling average takes in, the day of the sample it ends on included
ROLLING_DAYS = 30


def _rolling(lim: LabLimit, pack: str, sel: LabTable, values: np.ndarray, tz, readings: Readings) -> list[dict]:
    """A rolling 30-day average: for each local day a result was collected on, the mean of the
    results of the 30 local days ending on it (that day included); each such window over the
    limit is one record, its days of violation those of its samples (``average_days =
    "sampled"``) or all 30 days of it (``"period"``)."""
    out = []
    violates = VIOLATES[lim.op]
    days = local_days(sel.collected, tz)
    for site in np.unique(sel.site.astype(str)):
        at = sel.site.astype(str) == site
        for end in np.unique(days[at]):
            first = end - np.timedelta64(ROLLING_DAYS - 1, "D")
            m = at & (days >= first) & (days <= end)
            mean = float(values[m].mean())
            if not violates(mean, lim.limit):
                continue
            if readings.average_days == "sampled":
                spans = day_intervals(days[m].astype(str), tz)
            else:
                spans = [[_z(local_midnight(_date(first), tz)),
                          _z(local_midnight(_date(end + np.timedelta64(1, "D")), tz))]]
            rec = _violation(lim, pack, site, sel.collected[m].min(), sel.collected[m].max(), mean, sel.sample[m],
                             values[m], sel.non_detect[m], spans)
            rec["evidence"].update(average_mg_l=mean, results=int(m.sum()), average_days=readings.average_days,
                                   window=[str(first), str(end)])
            out.append(rec)
    return out


def _date(d: np.datetime64) -> date:
    return date.fromisoformat(str(d.astype("datetime64[D]")))


def _z(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def in_force(table: LabTable, permit: Permit, pack: str) -> np.ndarray:
    """Which results were collected while ``permit`` was in force: from its effective date
    to the end of its last term (local days of the village)."""
    tz = pack_timezone(pack)
    day = local_days(table.collected, tz)
    ok = day >= np.datetime64(permit.effective)
    ends = renewal(permit, permit.effective).ends if permit.renewal.notice_given or not permit.renewal.automatic \
        else None
    if ends is not None:
        ok &= day <= np.datetime64(ends)
    return ok


def check_lab(table: LabTable, pack: str, non_detect: str = DEFAULT_COMPLIANCE,
              permit: Permit | None = None, readings: Readings = Readings(),
              period: tuple[datetime, datetime] | None = None) -> list[dict]:
    """Violations of every concentration limit of ``pack`` and of the site's ``permit`` (the
    stricter where both limit an analyte the same way) in ``table``. Results collected while
    the permit was not in force (:func:`in_force`) are judged by the ordinance alone.
    ``readings`` and ``period`` as for :func:`check_limit`."""
    out: list[dict] = []
    parts = [(table, None)]
    if permit is not None:
        m = in_force(table, permit, pack)
        parts = [(table.select(~m), None), (table.select(m), permit)]
    for part, p in parts:
        if len(part):
            limits = lab_limits(pack, p)
            for lim in limits:
                out.extend(check_limit(part, lim, pack, non_detect, readings, period,
                                       sample_types.named(limits, lim.analyte)))
    out.sort(key=lambda v: (v["site"], v["start"], v["rule"]))
    return out


def _day_volume(days: dict, day: str) -> tuple[float, float]:
    v = days.get(day)
    if v is None:
        return 0.0, 0.0
    return float(v["volume_gal"]), float(v["coverage"])


def check_loadings(table: LabTable, limits, days: dict[str, dict], pack: str,
                   non_detect: str = DEFAULT_COMPLIANCE) -> tuple[list[dict], list[dict]]:
    """Loadings [lb/day] of each result against loading limits.

    Parameters
    ----------
    table : LabTable
        One site's results.
    limits : iterable of LabLimit
        Loading limits (:func:`lab.ordinance.loading_limits`).
    days : dict
        Local date (ISO) -> ``{"volume_gal", "coverage"}``: the site's metered volume of that
        day and how much of the day the readings cover [0-1] (a day without readings may be
        absent).
    pack : str
        The site's pack (its time zone gives the days).

    Returns
    -------
    violations : list of dict
        As :func:`check_limit`'s, ``peak`` the loading [lb/day]; evidence with the day, its
        volume and coverage (``lower_bound`` when the day is not metered whole).
    incomplete : list of dict
        ``site``, ``rule``, ``sample``, ``day``, ``coverage``, ``note``: loadings that cannot be
        judged because the day's metered flow is incomplete.
    """
    tz = pack_timezone(pack)
    out, incomplete = [], []
    for lim in limits:
        sel = table.select(table.analyte == lim.analyte)
        if len(sel) == 0:
            continue
        values = substitute(sel.value_mg_l, sel.non_detect, non_detect)
        day_of = local_days(sel.collected, tz).astype(str)
        for i in range(len(sel)):
            vol, cov = _day_volume(days, day_of[i])
            lb = float(loading_lb(values[i], vol))
            whole = cov >= WHOLE_DAY
            if VIOLATES[lim.op](lb, lim.limit):
                v = _violation(lim, pack, sel.site[i], sel.collected[i], sel.collected[i], lb, [sel.sample[i]],
                               [values[i]], [sel.non_detect[i]])
                v["evidence"].update({"statistic": "daily-loading", "day": day_of[i], "day_volume_gal": vol,
                                      "coverage": cov, "lower_bound": not whole})
                out.append(v)
            elif not whole:
                incomplete.append({
                    "site": str(sel.site[i]), "rule": lim.rule, "sample": str(sel.sample[i]), "day": day_of[i],
                    "coverage": cov, "citation": lim.citation,
                    "note": (f"loading not judged: the metered flow of {day_of[i]} is incomplete "
                             f"({cov:.0%} of the day covered)")})
    out.sort(key=lambda v: (v["site"], v["start"], v["rule"]))
    return out, incomplete


def check_flows(site: str, permit: Permit, days: dict[str, dict], pack: str,
                readings: Readings = Readings()) -> tuple[list[dict], list[dict]]:
    """The site's metered daily volumes against its permit's maximum and average daily flow.

    ``days``: as for :func:`check_loadings`. A day not metered whole is incomplete (unless its
    covered part alone exceeds the maximum: a violation, a lower bound); the monthly average
    is of the whole days only. A permit without a flow condition judges no flow and states
    nothing incomplete. A day's violation is that local day; a month's average, the whole
    days that make it up or the calendar month (``readings.average_days``).

    Returns
    -------
    violations, incomplete : list of dict
    """
    out, incomplete = [], []
    mx, avg_limit = permit.maximum_daily_gpd, permit.average_daily_gpd
    if mx is None and avg_limit is None:
        return out, incomplete
    cite = permit.cite("flow")
    said = [f"average daily flow {avg_limit:,.0f} gal/day" if avg_limit is not None else "",
            f"maximum daily flow {mx:,.0f} gal/day" if mx is not None else ""]
    words = (", ".join(x for x in said if x).capitalize()
             + " (§13.54(2)(b), (e); §13.54(3)(b)).")
    tz = pack_timezone(pack)

    def finding(rule, limit, peak, start, end, evidence, statistic):
        rec = {"site": site, "parameter": "flow", "rule": rule, "start": start, "end": end, "peak": peak,
               "limit": limit, "unit": "gal/d", "comparison": "more than", "citation": cite,
               "provenance": permit.path, "words": words, "pack": pack, "source": "lab", "applies": "permit",
               "stricter_of": None, "evidence": {"statistic": statistic, "comparison": "more than", **evidence}}
        rec["days_of_violation"] = record_days(rec, tz)
        return rec

    whole = {}
    for day in sorted(days):
        vol, cov = _day_volume(days, day)
        d0 = np.datetime64(day)
        span = [iso(_utc(d0, tz)), iso(_utc(d0 + np.timedelta64(1, "D"), tz))]
        if cov >= WHOLE_DAY:
            whole[day] = vol
        if mx is not None and vol > mx:
            out.append(finding("flow-daily-max", mx, vol, *span,
                               {"day": day, "coverage": cov, "lower_bound": cov < WHOLE_DAY}, "daily-maximum"))
        elif cov < WHOLE_DAY:
            incomplete.append((day, cov))
    if incomplete:
        # one statement for the days not metered whole, as runs of consecutive days
        listed = [d for d, _ in incomplete]
        rule, what = (("flow-daily-max", "daily flow not judged on") if mx is not None else
                      ("flow-monthly-avg", "left out of the monthly average daily flow:"))
        incomplete = [{"site": site, "rule": rule, "day": listed[0], "days": listed,
                       "coverage": min(c for _, c in incomplete), "citation": cite,
                       "note": f"{what} {len(listed)} day(s) whose metered flow is incomplete: "
                               f"{day_ranges(listed)}"}]
    if avg_limit is not None and whole:
        months: dict[str, list] = {}
        for day, vol in whole.items():
            months.setdefault(day[:7], []).append((day, vol))
        for month, vols in sorted(months.items()):
            avg = sum(v for _, v in vols) / len(vols)
            if avg > avg_limit:
                first, last = vols[0][0], vols[-1][0]
                if readings.average_days == "sampled":
                    spans = day_intervals([d for d, _ in vols], tz)          # the days metered whole
                else:
                    m0 = np.datetime64(month + "-01")
                    spans = [[iso(_utc(m0, tz)),
                              iso(_utc((m0.astype("datetime64[M]") + np.timedelta64(1, "M")).astype("datetime64[D]"),
                                       tz))]]
                out.append(finding("flow-monthly-avg", avg_limit, avg,
                                   iso(_utc(np.datetime64(first), tz)),
                                   iso(_utc(np.datetime64(last) + np.timedelta64(1, "D"), tz)),
                                   {"month": month, "days": len(vols), "average_gpd": avg,
                                    "metered_days": [d for d, _ in vols], "intervals": spans,
                                    "average_days": readings.average_days}, "monthly-average"))
    return out, incomplete


def day_ranges(days: list[str]) -> str:
    """``2026-01-01..2026-01-31, 2026-02-03``: sorted ISO days as runs of consecutive days."""
    out, run = [], []
    for d in sorted(days):
        if run and (date.fromisoformat(d) - date.fromisoformat(run[-1])).days == 1:
            run.append(d)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
        run = [d]
    if run:
        out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
    return ", ".join(out)


def _utc(day: np.datetime64, tz) -> np.datetime64:
    """Local midnight of ``day`` in ``tz`` as a UTC ``datetime64[s]``."""
    d = date.fromisoformat(str(day))
    return np.datetime64(int(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()), "s")
