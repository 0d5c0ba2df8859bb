"""What a notice of violation says, gathered from the records: the ordinance as documents
cite it, the evidence (an episode's readings for the chart, maintenance windows and drift
around it, the lab samples with their laboratory and ids, the days of violation) and the
subject of the notice (the violations of an alert, or a finding).

:func:`enforcement.notices.draft` stores what these give in the notice's document; the
lifecycle (issue, respond, close, escalate) is :mod:`enforcement.notices`.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from foundation.errors import InputError
from enforcement import findings as fnd
from enforcement.periods import local_date
from lab.ordinance import pack_timezone
from limits.days import by_site_and_rule
from limits.packs import cite as cite_code, load_pack
from limits.statements import of_violation, quantity, statistic_of, stated

PARAMETER_NAMES = {"ph": "pH", "temperature": "temperature", "flow": "flow", "fog": "oil and grease",
                   "cn": "cyanide", "bod5": "BOD", "tss": "suspended solids", "tkn": "TKN", "tp": "total phosphorus",
                   "cu": "copper", "ni": "nickel", "zn": "zinc", "cd": "cadmium", "cr6": "hexavalent chromium",
                   "cr3": "trivalent chromium", "phenols": "phenols", "fe": "iron", "sn": "tin"}
#: the most readings a notice's chart draws (the peak and the limit crossings always among them)
MAX_CHART_POINTS = 1500


# --- the ordinance as documents cite it ------------------------------------------------

def ordinance_title(pack) -> str:
    """The ordinance by its title (the pack's ``code``, e.g. "Village of Palmyra Code"), else
    the village's name."""
    return getattr(pack, "code", "") or pack.name


def cite(pack, section: str) -> str:
    """``Village of Palmyra Code §13.60(1)`` (:func:`limits.packs.cite`)."""
    return cite_code(ordinance_title(pack), section)


def cite_rule(pack, rule) -> str:
    return cite(pack, rule.section)


def requirement_of_violation(v: dict) -> dict:
    """The provision a violation breaks: the pack's rule by title and section with its words,
    or (a rule not in the pack, e.g. a permit's limit) the violation's own citation."""
    try:
        p = load_pack(v["pack"])
        r = next((x for x in p.rules if x.id == v["rule"]), None)
    except InputError:
        p, r = None, None
    if r is not None:
        return {"citation": cite_rule(p, r), "words": r.words, "section": r.section, "source": ordinance_title(p)}
    return {"citation": v["citation"], "words": v["words"] or "", "section": None, "source": None}


# --- evidence ------------------------------------------------------------------------

def _readings(conn, v: dict) -> dict:
    """The episode's readings with an hour either side (at least a quarter of its length),
    thinned to :data:`MAX_CHART_POINTS` keeping the extremes; from ``readings`` or, once
    retention removed them, ``readings_evidence`` (which keeps an hour either side of each
    episode for the records period)."""
    start, end = v["start"], v["end"]
    pad = max(timedelta(hours=1), (end - start) / 4)
    # the raw readings, and those kept as evidence after retention removed the raw ones (0071)
    rows = conn.execute("SELECT time, value FROM (SELECT time, value, quality FROM readings WHERE sensor_id = %(s)s "
                        "AND time >= %(a)s AND time <= %(b)s UNION SELECT time, value, quality FROM readings_evidence "
                        "WHERE sensor_id = %(s)s AND time >= %(a)s AND time <= %(b)s) r WHERE quality = 0 "
                        "AND value IS NOT NULL ORDER BY time",
                        {"s": v["sensor_id"], "a": start - pad, "b": end + pad}).fetchall()
    t = np.array([r[0].timestamp() for r in rows], dtype=np.float64)
    y = np.array([r[1] for r in rows], dtype=np.float64)
    if len(t) > MAX_CHART_POINTS:
        keep = np.unique(np.concatenate([np.linspace(0, len(t) - 1, MAX_CHART_POINTS).astype(int),
                                         [int(np.argmax(y)), int(np.argmin(y))]]))
        t, y = t[keep], y[keep]
    maintenance, maint_points = _maintenance(conn, v["sensor_id"], start - pad, end + pad)
    return {"kind": "readings", "sensor": v["sensor"], "parameter": v["parameter"], "unit": v["unit"],
            "maintenance": maintenance, "maintenance_points": maint_points,
            "drift": _drift(conn, v["sensor_id"], start - pad, end + pad),
            "limit": v["limit"], "comparison": v["evidence"].get("comparison"), "rule": v["rule"],
            "stated": _stated_reading_limit(v),
            "start": start.isoformat(), "end": end.isoformat(), "peak": v["peak"],
            "peak_time": v["evidence"].get("peak_time"), "readings_in_episode": v["evidence"].get("readings"),
            "episodes": v.get("episodes", 1),
            "points": [[datetime.fromtimestamp(a, timezone.utc).isoformat(), float(b)] for a, b in zip(t, y)],
            "from": (start - pad).isoformat(), "to": (end + pad).isoformat()}


def _maintenance(conn, sensor_id: int, a: datetime, b: datetime) -> tuple[list[dict], list]:
    """The maintenance windows in effect of the sensor overlapping ``[a, b]`` (the
    chart shades them) and the readings stored in them (quality 3, never judged), thinned
    like the others."""
    from foundation.quality import MAINTENANCE
    from foundation.windows import on_record

    us = lambda t: int(t.timestamp() * 1_000_000)   # noqa: E731
    wins = [{k: w[k] for k in ("id", "start", "end", "reason", "person", "source")}
            for w in on_record(conn, [sensor_id], us(a), us(b) + 1) if w["in_effect"]]
    if not wins:
        return [], []
    rows = conn.execute("SELECT time, value FROM readings WHERE sensor_id = %s AND time >= %s AND time <= %s "
                        "AND quality = %s AND value IS NOT NULL ORDER BY time", (sensor_id, a, b, MAINTENANCE)).fetchall()
    step = max(1, len(rows) // MAX_CHART_POINTS)
    return wins, [[r[0].astimezone(timezone.utc).isoformat(), float(r[1])] for r in rows[::step]]


def _drift(conn, sensor_id: int, a: datetime, b: datetime) -> list[dict]:
    """The periods the sensor drifted overlapping ``[a, b]`` (a grab sample beyond
    the tolerance, :func:`field.drift.periods`): the readings judged then are marked in the
    evidence."""
    from field import drift

    return [{"from": p["from"].astimezone(timezone.utc).isoformat(),
             "until": p["until"].astimezone(timezone.utc).isoformat() if p["until"] else None,
             "detail": p["check"]["detail"]} for p in drift.periods(conn, sensor_id, a, b)]


def _stated_reading_limit(v: dict) -> str:
    """A continuous rule's limit in its words: ``lower than pH 6 at any time``; a slug's
    ``more than 5 times the 24-hour average of 40 gal/min (200 gal/min) for longer than 15
    minutes``."""
    ev = v["evidence"] or {}
    if ev.get("multiple") and ev.get("average") is not None:
        try:
            r = load_pack(v["pack"]).rule(v["rule"])
            longer = f" for longer than {r.longer_than_min:g} minutes" if r.longer_than_min else ""
            hours = f"{r.window_h:g}-hour" if r.window_h else "24-hour"
        except (InputError, KeyError):
            longer, hours = "", "24-hour"
        return (f"{ev.get('comparison') or 'more than'} {ev['multiple']:g} times the {hours} average of "
                f"{quantity(ev['average'], v['unit'])} ({quantity(v['limit'], v['unit'])}){longer}")
    try:
        r = load_pack(v["pack"]).rule(v["rule"])
    except (InputError, KeyError):
        r = None
    if r is not None and r.kind == "range" and r.longer_than_min:     # a duration qualifier
        return (f"{ev.get('comparison') or r.comparison} {quantity(v['limit'], v['unit'])} for longer than "
                f"{r.longer_than_min:g} minutes")
    return stated(ev.get("comparison"), v["limit"], v["unit"], "reading")


def _last(v: dict) -> datetime:
    """An episode's last instant: its end, else its last exceeding reading, else its start."""
    if v["end"] is not None:
        return v["end"]
    last = v["evidence"].get("last")
    return datetime.fromisoformat(last.replace("Z", "+00:00")) if last else v["start"]


def combine(vs: list[dict]) -> dict:
    """The episodes of one alert (one sensor and rule) as one record: from the first start to
    the last end, the most extreme peak, the readings beyond the limit summed."""
    vs = sorted(vs, key=lambda v: v["start"])
    if len(vs) == 1:
        return {**vs[0], "end": _last(vs[0]), "episodes": 1, "violation_ids": [vs[0]["id"]]}
    cmp_ = vs[0]["evidence"].get("comparison") or ""
    lower = cmp_.startswith(("lower", "less", "below"))
    best = (min if lower else max)(vs, key=lambda v: v["peak"])
    readings = [v["evidence"].get("readings") for v in vs]
    evidence = {**vs[0]["evidence"], "peak_time": best["evidence"].get("peak_time"),
                "readings": sum(readings) if all(r is not None for r in readings) else None}
    return {**vs[0], "end": max(_last(v) for v in vs), "peak": best["peak"], "evidence": evidence,
            "episodes": len(vs), "violation_ids": [v["id"] for v in vs]}


def _lab_samples(conn, v: dict) -> dict:
    """The lab results behind a lab violation: laboratory, sample ids, values, methods, files."""
    samples = [str(s) for s in v["evidence"].get("samples", [])]
    rows = conn.execute(
        "SELECT ls.sample_key, ls.laboratory, ls.collected, ls.sample_type, r.analyte, r.value_mg_l, r.qualifier, "
        "r.method, r.version, r.source FROM lab_results_current r JOIN lab_samples ls ON ls.id = r.sample_id "
        "JOIN sites s ON s.id = ls.site_id WHERE s.key = %s AND ls.sample_key = ANY(%s) AND r.analyte = %s "
        "ORDER BY ls.collected, ls.sample_key", (v["site"], samples, v["parameter"])).fetchall()
    ev = v["evidence"] or {}
    return {"kind": "lab", "analyte": v["parameter"], "limit": v["limit"], "unit": v["unit"] or "mg/l",
            "statistic": statistic_of(v), "average_mg_l": ev.get("average_mg_l"), "stated": of_violation(v),
            "comparison": ev.get("comparison"), "results": ev.get("results"), "month": ev.get("month"),
            "week": ev.get("week"), "window": ev.get("window"),
            "day": ev.get("day"), "peak": v["peak"], "day_volume_gal": ev.get("day_volume_gal"),
            "lower_bound": ev.get("lower_bound"),
            "samples": [{"sample": k, "laboratory": lab, "collected": c.isoformat(), "sample_type": st,
                         "analyte": a, "mg_l": val, "non_detect": q == "<", "method": m, "version": ver,
                         "source": src} for k, lab, c, st, a, val, q, m, ver, src in rows]}


def days_of_violation(vs: list[dict], tz, period=None) -> dict:
    """The days of violation of violation records (palmyra-wi §13.60(1): "Each day a
    condition is allowed to exist which is contrary to all or any part of this subchapter
    shall constitute a new violation"): the distinct local days on which their conditions
    existed, per rule, counted by :func:`limits.days.by_site_and_rule` over each record's
    half-open intervals (two episodes on one day are one day; an episode across midnight
    two; a whole day's condition, ``[00:00, 00:00)``, one); only those of ``period`` (a pair
    of instants) where one is given. The same number as the record's own and the CLI's."""
    recs = [{"site": v["site"], "rule": v["rule"], "start": v["start"], "end": v.get("end"),
             "evidence": v.get("evidence") or {}} for v in vs]
    per = by_site_and_rule(recs, tz, period)
    dates = sorted({d for r in per for d in r["dates"]})
    return {"days": sum(r["days"] for r in per), "dates": dates, "how": _how(vs)}


def _how(vs: list[dict]) -> str:
    """How the days were counted, in words, by what the records are."""
    stats = {(v.get("evidence") or {}).get("statistic") for v in vs}
    if stats & {"monthly-average", "period-average", "weekly-average", "rolling-30-day"}:
        whole = {(v.get("evidence") or {}).get("average_days") for v in vs} == {"period"}
        return ("every local day of the month (or period) averaged" if whole else
                "the distinct local days of the samples (or the days metered whole) that make up the average")
    if stats & {"daily-maximum"} or any(v.get("source") == "permit" for v in vs):
        return "the distinct local days on which the condition existed"
    if vs and all(v.get("source") == "lab" for v in vs):
        return "the distinct local days of the results"
    return "the distinct local days the episodes cover"


# --- the subject of a notice ----------------------------------------------------------

def subject_of_violations(conn, vs: list[dict], alert_id: int | None = None) -> dict:
    v = combine(vs)
    tz = pack_timezone(v["pack"])
    kind = fnd.violation_kind(v)
    req = requirement_of_violation(v)
    evidence = _lab_samples(conn, v) if kind == "lab-violation" else _readings(conn, v)
    words = None
    if v["parameter"] == "flow" and v["source"] == "lab":     # a permit's flow, from the metered readings
        evidence = _flow_evidence(v)
        words = "a discharge limit exceeded, as the flow meter at the control manhole measured it"
    summary = _summary(v, tz)
    ids = v["violation_ids"]
    ref = (f"alert {alert_id}: violation{'s' if len(ids) > 1 else ''} {_ranges(ids)}" if alert_id
           else f"violation {v['id']}")
    return {"ref": ref, "kind": kind, "rule": v["rule"], "summary": summary.strip(),
            "occurred": local_date(v["start"], tz).isoformat(), "requirement": req, "evidence": evidence,
            "days": days_of_violation(vs, tz), "pack": v["pack"], "violation_id": ids[0], "finding_id": None,
            "violation_ids": ids, "alert_id": alert_id, "finding_words": words}


def _summary(v: dict, tz) -> str:
    """What was found, in one sentence: the value, what it is (a result, a day's mean, a
    month's average, a day's loading or flow), the limit as stated with its comparison word,
    the rule and when."""
    name = PARAMETER_NAMES.get(v["parameter"], v["parameter"])
    ev = v["evidence"] or {}
    st = statistic_of(v)
    value = quantity(v["peak"], v["unit"])
    if v["unit"] == "pH":            # "pH 3.5", not "pH pH 3.5"
        name, value = value, ""
    limit = f"the limit: {of_violation(v)}"
    start_l, end_l = v["start"].astimezone(tz), v["end"].astimezone(tz)
    if st == "monthly-average":
        what = (f"{_nv(name, value)}, the average of {ev.get('results') or ev.get('days')} "
                f"{'results' if v['parameter'] != 'flow' else 'whole days'} of {ev.get('month')}")
        return f"{what} ({limit})"
    if st == "weekly-average":
        return f"{_nv(name, value)}, the average of {ev.get('results')} results of the week of {ev.get('week')} ({limit})"
    if st == "rolling-30-day" and ev.get("window"):
        return (f"{_nv(name, value)}, the average of {ev.get('results')} results of the 30 days {ev['window'][0]} to "
                f"{ev['window'][1]} ({limit})")
    if st == "period-average":
        return (f"{_nv(name, value)}, the average of {ev.get('results')} results from {start_l:%Y-%m-%d} to "
                f"{end_l:%Y-%m-%d} ({limit})")
    if st == "daily-maximum" and ev.get("results", 1) > 1:
        return f"{_nv(name, value)}, the mean of {ev['results']} results of {ev.get('day')} ({limit})"
    if st in ("daily-maximum", "daily-loading") or v["parameter"] == "flow":
        day = ev.get("day") or f"{start_l:%Y-%m-%d}"
        return f"{_nv(name, value)} on {day} ({limit})"
    if st == "each":
        sample = (ev.get("samples") or [None])[0]
        return (_nv(name, value) + (f" in sample {sample}" if sample else "")
                + f" ({limit}), collected {start_l:%Y-%m-%d %H:%M %Z}")
    return (f"{_nv(name, value)} ({limit}), {start_l:%Y-%m-%d %H:%M %Z}"
            + (f" to {end_l:%Y-%m-%d %H:%M %Z}" if end_l != start_l else ""))


def _nv(name: str, value: str) -> str:
    return f"{name} {value}".strip()


def _flow_evidence(v: dict) -> dict:
    """A permit's flow condition broken: the day's or the month's metered flow against it."""
    ev = v["evidence"] or {}
    return {"kind": "flow", "statistic": statistic_of(v), "parameter": "flow", "unit": v["unit"], "peak": v["peak"],
            "limit": v["limit"], "comparison": v["evidence"].get("comparison"), "stated": of_violation(v),
            "day": ev.get("day"), "coverage": ev.get("coverage"), "lower_bound": ev.get("lower_bound"),
            "month": ev.get("month"), "days": ev.get("days"), "metered_days": ev.get("metered_days")}


def as_the_municipality(pack):
    """``words -> words`` with the guide's ``{municipality}`` the pack's kind (``City``, ``Village``)."""
    kind = (pack.municipality.kind if pack.municipality else "utility").capitalize()
    return lambda words: words.replace("{municipality}", kind) if isinstance(words, str) else words


def _ranges(ids: list[int]) -> str:
    """``2-32, 40`` for ids 2, 3, ..., 32, 40."""
    out, run = [], []
    for i in sorted(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def alert_violations(conn, alert_id: int) -> list[dict]:
    """The violation episodes a violation alert covers: the one that opened it, those it
    continued (``audit_log`` ``alert-episode-continued``), and every episode of its sensor and
    rule from the first one's start to the last end the alert saw (``alert-episode-ended``)."""
    row = conn.execute("SELECT a.kind, a.violation_id, v.sensor_id, v.rule, v.start_time FROM alerts a "
                       "LEFT JOIN violations v ON v.id = a.violation_id WHERE a.id = %s", (alert_id,)).fetchone()
    if row is None:
        raise InputError(f"no alert {alert_id} (sewerwatch alerts list --all shows them)")
    if row[0] != "violation" or row[1] is None:
        raise InputError(f"alert {alert_id} is a {row[0]} alert: a notice is drafted from a violation alert")
    obj = f"alert:{alert_id}"
    ids = [row[1]] + [int(x) for (x,) in conn.execute(
        "SELECT detail->>'violation_id' FROM audit_log WHERE action = 'alert-episode-continued' AND object = %s "
        "AND detail ? 'violation_id' ORDER BY id", (obj,)).fetchall()]
    ids += [x for (x,) in conn.execute(
        "SELECT v.id FROM violations v WHERE v.sensor_id = %s AND v.rule = %s AND v.start_time >= %s "
        "AND v.start_time <= (SELECT max((detail->>'end')::timestamptz) FROM audit_log "
        "                     WHERE action = 'alert-episode-ended' AND object = %s) ORDER BY v.start_time",
        (row[2], row[3], row[4], obj)).fetchall()]
    return [fnd.violation(conn, i) for i in dict.fromkeys(ids)]


def subject_of_finding(conn, f: dict, pack: str) -> dict:
    p = load_pack(pack)
    req = {"citation": f["citation"] or fnd.SNC_CITATION, "words": f["words"] or "", "section": None,
           "source": ordinance_title(p) if f["citation"] and f["citation"].startswith(ordinance_title(p)) else None}
    ev = dict(f["evidence"] or {})
    days = {"days": 1, "dates": [], "how": "one violation, the finding"}
    if f["kind"] == "late-report" and ev.get("days_late"):
        days = {"days": max(1, int(ev["days_late"])), "dates": [],
                "how": "each day the report was overdue, from its due date"}
    elif ev.get("days"):
        days = {"days": int(ev["days"]), "dates": [], "how": "as the superintendent recorded them"}
    elif f["kind"] == "snc" and f["period_start"]:
        tz = pack_timezone(pack)
        vs = fnd.violations_between(conn, datetime(f["period_start"].year, f["period_start"].month,
                                                   f["period_start"].day, tzinfo=tz),
                                    datetime(f["period_end"].year, f["period_end"].month, f["period_end"].day,
                                             tzinfo=tz), f["site"])
        if vs:
            p0 = datetime(f["period_start"].year, f["period_start"].month, f["period_start"].day, tzinfo=tz)
            p1 = datetime(f["period_end"].year, f["period_end"].month, f["period_end"].day, tzinfo=tz)
            days = {**days_of_violation(vs, tz, (p0, p1)),
                    "how": "the distinct local days of the period on which its violations existed"}
    return {"ref": f"finding {f['id']}", "kind": f["kind"], "rule": None, "summary": f["summary"],
            "violation_ids": [f["violation_id"]] if f["violation_id"] else [], "alert_id": None,
            "occurred": f["occurred"].isoformat(), "requirement": req,
            "evidence": {"kind": f["kind"], **ev, "snc_criterion": f["snc_criterion"]},
            "days": days, "pack": pack, "violation_id": None,
            "finding_id": f["id"]}
