"""Prohibitions and permit limits checked on lab results: concentrations, loadings, flows.

Each exceedance becomes a violation shaped like the sensor rules' (``site``, ``parameter``,
``rule``, ``start``, ``end``, ``peak``, ``limit``, ``citation``) plus ``words``, ``unit``,
``pack``, ``days_of_violation``, ``evidence``, ``applies`` (``ordinance`` or ``permit``),
``stricter_of`` (where both limit it: which applies and what it is stricter than),
``provenance`` and ``source`` = ``lab``.

Concentrations (:func:`check_limit`): a rule with statistic ``each`` (a pack's basis
``sample``, a permit's daily maximum) judges every result (webster-wi §240-5 and Superior:
"may contain more than 100 ppm"; palmyra-wi §13.48(2)(l) cyanide "in excess of 0.5 mg/l");
``period-average`` (basis ``average``) the mean of a site's results over the period checked
(palmyra-wi §13.48(2)(k): "exceeding on analysis an average of 100 mg/l"); ``monthly-average``
(a permit's monthly average) the mean of each calendar month in the village's time zone.

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
from datetime import date, datetime

import numpy as np

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.formulas.volumes import loading_lb
from lab.ordinance import LabLimit, lab_limits, pack_timezone
from lab.results_table import LabTable, iso
from limits import core
from limits.permits import Permit, renewal

#: a day counts as metered whole when its readings cover this much of it
WHOLE_DAY = 0.99


def _violation(lim: LabLimit, pack: str, site: str, t0, t1, peak: float, samples, values, nd) -> dict:
    return {
        "site": site, "parameter": lim.analyte, "rule": lim.rule, "start": iso(t0), "end": iso(t1),
        "peak": float(peak), "limit": lim.limit, "unit": lim.unit, "citation": lim.citation,
        "provenance": lim.provenance, "words": lim.words, "pack": pack, "days_of_violation": 1, "source": "lab",
        "applies": lim.origin, "stricter_of": lim.stricter_of,
        "evidence": {"statistic": lim.statistic, "comparison": lim.comparison, "samples": [str(s) for s in samples],
                     "values_mg_l": [float(v) for v in values], "non_detect": [bool(x) for x in nd]},
    }


#: operator -> the function telling whether ``value op limit`` holds (a violation, a threshold met)
VIOLATES = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def local_days(collected: np.ndarray, tz) -> np.ndarray:
    """The local calendar day (``datetime64[D]``) of each collection time (UTC ``datetime64``)."""
    us = collected.astype("datetime64[us]").astype(np.int64)
    return core.local_day(us, tz).astype("datetime64[D]")


def check_limit(table: LabTable, lim: LabLimit, pack: str, non_detect: str = DEFAULT_COMPLIANCE) -> list[dict]:
    """Violations of one lab limit in ``table`` (all sites), in site and time order."""
    sel = table.select(table.analyte == lim.analyte)
    if len(sel) == 0:
        return []
    values = substitute(sel.value_mg_l, sel.non_detect, non_detect)
    out: list[dict] = []
    violates = VIOLATES[lim.op]
    if lim.statistic == "each":
        for i in np.flatnonzero(violates(values, lim.limit)):
            out.append(_violation(lim, pack, sel.site[i], sel.collected[i], sel.collected[i], values[i],
                                  [sel.sample[i]], [values[i]], [sel.non_detect[i]]))
    elif lim.statistic in ("period-average", "monthly-average"):
        group = sel.site.astype(str)
        if lim.statistic == "monthly-average":
            months = local_days(sel.collected, pack_timezone(pack)).astype("datetime64[M]").astype(str)
            group = np.char.add(np.char.add(group, "|"), months)   # site ids are slugs: no "|"
        uniq, inv = np.unique(group, return_inverse=True)
        means = np.bincount(inv, weights=values, minlength=len(uniq)) / np.bincount(inv, minlength=len(uniq))
        for g in np.flatnonzero(violates(means, lim.limit)):
            m = inv == g
            out.append(_violation(lim, pack, sel.site[m][0], sel.collected[m].min(), sel.collected[m].max(),
                                  means[g], sel.sample[m], values[m], sel.non_detect[m]))
            out[-1]["evidence"]["average_mg_l"] = float(means[g])
            if lim.statistic == "monthly-average":
                out[-1]["evidence"]["month"] = uniq[g].split("|")[1]
                out[-1]["evidence"]["results"] = int(m.sum())
    else:
        raise ValueError(f"unknown statistic {lim.statistic!r}")
    out.sort(key=lambda v: (v["site"], v["start"]))
    return out


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
              permit: Permit | None = None) -> list[dict]:
    """Violations of every concentration limit of ``pack`` and of the site's ``permit`` (the
    stricter where both limit an analyte the same way) in ``table``. Results collected while
    the permit was not in force (:func:`in_force`) are judged by the ordinance alone."""
    out: list[dict] = []
    parts = [(table, None)]
    if permit is not None:
        m = in_force(table, permit, pack)
        parts = [(table.select(~m), None), (table.select(m), permit)]
    for part, p in parts:
        if len(part):
            for lim in lab_limits(pack, p):
                out.extend(check_limit(part, lim, pack, non_detect))
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
                v["evidence"].update({"day": day_of[i], "day_volume_gal": vol, "coverage": cov,
                                      "lower_bound": not whole})
                out.append(v)
            elif not whole:
                incomplete.append({
                    "site": str(sel.site[i]), "rule": lim.rule, "sample": str(sel.sample[i]), "day": day_of[i],
                    "coverage": cov, "citation": lim.citation,
                    "note": (f"loading not judged: the metered flow of {day_of[i]} is incomplete "
                             f"({cov:.0%} of the day covered)")})
    out.sort(key=lambda v: (v["site"], v["start"], v["rule"]))
    return out, incomplete


def check_flows(site: str, permit: Permit, days: dict[str, dict], pack: str) -> tuple[list[dict], list[dict]]:
    """The site's metered daily volumes against its permit's maximum and average daily flow.

    ``days``: as for :func:`check_loadings`. A day not metered whole is incomplete (unless its
    covered part alone exceeds the maximum: a violation, a lower bound); the monthly average
    is of the whole days only.

    Returns
    -------
    violations, incomplete : list of dict
    """
    out, incomplete = [], []
    cite = permit.cite("flow")
    words = (f"Average daily flow {permit.average_daily_gpd or 0:,.0f} gal/day, maximum daily flow "
             f"{permit.maximum_daily_gpd or 0:,.0f} gal/day (§13.54(2)(b), (e); §13.54(3)(b)).")

    def finding(rule, limit, peak, start, end, evidence):
        return {"site": site, "parameter": "flow", "rule": rule, "start": start, "end": end, "peak": peak,
                "limit": limit, "unit": "gal/d", "citation": cite, "provenance": permit.path, "words": words,
                "pack": pack, "days_of_violation": 1, "source": "lab", "applies": "permit", "stricter_of": None,
                "evidence": evidence}

    tz = pack_timezone(pack)
    whole = {}
    for day in sorted(days):
        vol, cov = _day_volume(days, day)
        d0 = np.datetime64(day)
        span = [iso(_utc(d0, tz)), iso(_utc(d0 + np.timedelta64(1, "D"), tz))]
        if cov >= WHOLE_DAY:
            whole[day] = vol
        if permit.maximum_daily_gpd is not None and vol > permit.maximum_daily_gpd:
            out.append(finding("flow-daily-max", permit.maximum_daily_gpd, vol, *span,
                               {"day": day, "coverage": cov, "lower_bound": cov < WHOLE_DAY}))
        elif cov < WHOLE_DAY:
            incomplete.append((day, cov))
    if incomplete:
        # one statement for the days not metered whole, as runs of consecutive days
        incomplete = [{"site": site, "rule": "flow-daily-max", "day": incomplete[0][0],
                       "days": [d for d, _ in incomplete], "coverage": min(c for _, c in incomplete), "citation": cite,
                       "note": f"daily flow not judged on {len(incomplete)} day(s) whose metered flow is incomplete: "
                               f"{day_ranges([d for d, _ in incomplete])}"}]
    if permit.average_daily_gpd is not None and whole:
        months: dict[str, list] = {}
        for day, vol in whole.items():
            months.setdefault(day[:7], []).append((day, vol))
        for month, vols in sorted(months.items()):
            avg = sum(v for _, v in vols) / len(vols)
            if avg > permit.average_daily_gpd:
                first, last = vols[0][0], vols[-1][0]
                out.append(finding("flow-monthly-avg", permit.average_daily_gpd, avg,
                                   iso(_utc(np.datetime64(first), tz)),
                                   iso(_utc(np.datetime64(last) + np.timedelta64(1, "D"), tz)),
                                   {"month": month, "days": len(vols), "average_gpd": avg}))
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
