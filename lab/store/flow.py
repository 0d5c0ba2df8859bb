"""Flow from the database: readings of a site's flow meters, volumes of windows and periods.

Readings are fetched as numpy arrays (good readings only, quality 0) and integrated with
:mod:`lab.formulas.volumes`.

A maintenance window (a meter lifted out to be cleaned reads 0) leaves its readings
out (quality 3), never counting them as zero flow: a window shorter than the gap the
integration joins is bridged from the readings either side (its volume *estimated*), a longer
one is a hole in the day's coverage (its volume *missing*, the day incomplete).
:func:`period_volume` states each window and which it is.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np

from lab.formulas.volumes import bucket_volumes_gal, loading_lb, window_volume_gal
from lab.ordinance import pack_timezone

#: readings further apart than this are not joined when integrating [s]
DEFAULT_MAX_GAP_S = 900.0


def flow_sensors(conn, site: str) -> list[tuple[int, str, float | None]]:
    """(id, name, interval_s) of the flow sensors of site ``site``."""
    return conn.execute(
        "SELECT s.id, s.name, s.interval_s FROM sensors s JOIN sites t ON t.id = s.site_id "
        "WHERE t.key = %s AND s.parameter = 'flow' ORDER BY s.id", (site,)).fetchall()


def fetch_flow(conn, sensor_id: int, start: datetime, end: datetime, pad_s: float = DEFAULT_MAX_GAP_S):
    """Good flow readings of one sensor from ``start - pad`` to ``end + pad``.

    Returns
    -------
    t : numpy.ndarray of datetime64[us]
        Reading times [UTC].
    q : numpy.ndarray
        Flow [gpm].
    """
    pad = timedelta(seconds=pad_s)
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT extract(epoch FROM time)::float8, value FROM readings WHERE sensor_id = %s "
                    "AND time >= %s AND time <= %s AND quality = 0 AND value IS NOT NULL ORDER BY time",
                    (sensor_id, start - pad, end + pad))
        rows = cur.fetchall()
    if not rows:
        return np.array([], dtype="datetime64[us]"), np.array([], dtype=np.float64)
    arr = np.asarray(rows, dtype=np.float64)
    t = np.round(arr[:, 0] * 1e6).astype(np.int64).astype("datetime64[us]")
    return t, arr[:, 1]


def _max_gap(interval_s) -> float:
    return max(DEFAULT_MAX_GAP_S, 3.0 * float(interval_s)) if interval_s else DEFAULT_MAX_GAP_S


def _dt64(t: datetime) -> np.datetime64:
    return np.datetime64(int(t.timestamp() * 1e6), "us")


def local_days(start: datetime, end: datetime, tz) -> tuple[list[str], np.ndarray]:
    """The calendar days of ``tz`` that overlap ``[start, end)`` and their boundaries (epoch seconds)."""
    d = start.astimezone(tz).date()
    last = (end - timedelta(microseconds=1)).astimezone(tz).date()
    days, edges = [], []
    while d <= last:
        days.append(d.isoformat())
        edges.append(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp())
        d += timedelta(days=1)
    edges.append(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp())
    return days, np.asarray(edges)


def period_volume(conn, site: str, start: datetime, end: datetime, tz=None) -> dict:
    """Volume discharged by ``site`` in ``[start, end)`` from its metered flow.

    ``tz`` gives the calendar days of ``daily_gal`` (default: the site's pack time zone).

    Returns
    -------
    dict
        ``volume_gal``, ``volume_mg`` [million gallons], ``coverage`` (least covered
        fraction over the site's flow sensors), ``sensors`` (per sensor: id, name,
        readings, volume_gal, coverage), ``daily_gal`` (volumes of the days the readings
        cover whole, by local date [gal]) and ``days`` (every day of the period: local date ->
        ``{"volume_gal", "coverage"}``, the volume the readings show and the least covered
        fraction over the sensors; a day with readings on part of it only is incomplete; with
        ``maintenance_s``, the seconds of it in maintenance windows). Each sensor lists its
        ``windows`` (:func:`_windows`: their volume ``estimated`` or ``missing``).
    """
    if tz is None:
        pack = conn.execute("SELECT pack FROM sites WHERE key = %s", (site,)).fetchone()
        tz = pack_timezone(pack[0]) if pack else timezone.utc
    day_names, edges = local_days(start, end, tz)
    total, per, cover = 0.0, [], []
    daily = {}
    days = {d: {"volume_gal": 0.0, "coverage": 1.0} for d in day_names}
    for sid, name, interval in flow_sensors(conn, site):
        t, q = fetch_flow(conn, sid, start, end)
        gap = _max_gap(interval)
        v, c = window_volume_gal(t, q, _dt64(start), _dt64(end), gap)
        total += v
        cover.append(c)
        per.append({"sensor_id": sid, "name": name, "readings": int(t.size), "volume_gal": v, "coverage": c})
        per[-1]["windows"] = _windows(conn, sid, start, end, gap)
        vols, covs = bucket_volumes_gal(t, q, edges, gap)
        for k, (d, vv, cc) in enumerate(zip(day_names, vols, covs)):
            if cc >= 0.99:  # whole days only
                daily[d] = daily.get(d, 0.0) + float(vv)
            days[d]["volume_gal"] += float(vv)
            days[d]["coverage"] = min(days[d]["coverage"], float(cc))
            inside = sum(max(0.0, min(w["end_s"], edges[k + 1]) - max(w["start_s"], edges[k])) for w in per[-1]["windows"])
            if inside > 0:
                days[d]["maintenance_s"] = days[d].get("maintenance_s", 0.0) + inside
    if not cover:
        days = {d: {"volume_gal": 0.0, "coverage": 0.0} for d in day_names}
    return {"site": site, "volume_gal": total, "volume_mg": total / 1e6,
            "coverage": min(cover) if cover else 0.0, "sensors": per, "daily_gal": daily, "days": days}


def _windows(conn, sensor_id: int, start: datetime, end: datetime, gap_s: float) -> list[dict]:
    """The maintenance windows in effect of a flow sensor within ``[start, end)``: ``id``,
    ``start_s``, ``end_s`` [epoch s, clipped], ``seconds`` and ``volume`` (``estimated``: bridged
    from the readings either side; ``missing``: longer than the integration joins)."""
    from foundation.windows import US, load

    a, b = start.timestamp(), end.timestamp()
    out = []
    for w in load(conn, [sensor_id], int(a * US), int(b * US)).items:
        s0, s1 = max(w.start_us / US, a), min(w.end_us / US, b)
        if s1 <= s0:
            continue
        out.append({"id": w.id, "reason": w.reason, "start_s": s0, "end_s": s1, "seconds": s1 - s0,
                    "volume": "estimated" if (w.end_us - w.start_us) / US < gap_s else "missing"})
    return out


def link_composite(conn, sample_id: int, sensor_id: int | None = None) -> dict | None:
    """Link a composite sample to the flow readings of its window and store the window's volume.

    Picks the site's flow sensor (or ``sensor_id``); with none, or several and no choice,
    returns None and links nothing. Writes ``lab_samples.flow_sensor_id`` and a row of
    ``lab_composite_flows``.

    Returns
    -------
    dict or None
        ``sample_id``, ``sensor_id``, ``readings``, ``volume_gal``, ``coverage``.
    """
    row = conn.execute(
        "SELECT s.window_start, s.window_end, t.key FROM lab_samples s JOIN sites t ON t.id = s.site_id "
        "WHERE s.id = %s AND s.sample_type = 'composite'", (sample_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    start, end, site = row
    sensors = flow_sensors(conn, site)
    if sensor_id is None:
        if len(sensors) != 1:
            return None
        sensor_id = sensors[0][0]
    interval = next((s[2] for s in sensors if s[0] == sensor_id), None)
    t, q = fetch_flow(conn, sensor_id, start, end)
    v, c = window_volume_gal(t, q, _dt64(start), _dt64(end), _max_gap(interval))
    n = int(np.count_nonzero((t >= _dt64(start)) & (t < _dt64(end))))
    conn.execute("UPDATE lab_samples SET flow_sensor_id = %s WHERE id = %s", (sensor_id, sample_id))
    conn.execute(
        "INSERT INTO lab_composite_flows (sample_id, sensor_id, window_start, window_end, readings, volume_gal, coverage) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (sample_id) DO UPDATE SET sensor_id = EXCLUDED.sensor_id, "
        "window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, readings = EXCLUDED.readings, "
        "volume_gal = EXCLUDED.volume_gal, coverage = EXCLUDED.coverage, computed_at = now()",
        (sample_id, sensor_id, start, end, n, v, c))
    return {"sample_id": sample_id, "sensor_id": sensor_id, "readings": n, "volume_gal": v, "coverage": c}


def composite_loadings(conn, sample_id: int) -> dict:
    """Flow-weighted loading of each analyte of a linked composite: mg/l × window MG × 8.34 [lb].

    Returns
    -------
    dict
        ``volume_gal``, ``coverage`` and ``analytes`` (analyte -> ``{"mg_l", "pounds"}``).
    """
    link = conn.execute("SELECT volume_gal, coverage FROM lab_composite_flows WHERE sample_id = %s",
                        (sample_id,)).fetchone()
    if link is None:
        raise LookupError(f"sample {sample_id} is not a composite linked to flow readings")
    vol, cov = link
    res = conn.execute("SELECT analyte, value_mg_l, qualifier FROM lab_results_current WHERE sample_id = %s "
                       "ORDER BY analyte", (sample_id,)).fetchall()
    return {"sample_id": sample_id, "volume_gal": vol, "coverage": cov,
            "analytes": {a: {"mg_l": v, "non_detect": qual == "<", "pounds": float(loading_lb(v, vol))}
                         for a, v, qual in res}}


def store_violations(conn, violations: list[dict]) -> int:
    """Insert lab violations (see :mod:`lab.checks.compliance`; an expired permit, source
    ``permit``) into ``violations``; returns how many were new.

    A violation already stored (same site, rule, start and source) is not stored again.
    """
    n = 0
    for v in violations:
        cur = conn.execute(
            "INSERT INTO violations (site_id, parameter, rule, pack, citation, words, start_time, end_time, peak, "
            "limit_value, unit, days_of_violation, evidence, source) "
            "SELECT t.id, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM sites t WHERE t.key = %s "
            "AND NOT EXISTS (SELECT 1 FROM violations o WHERE o.site_id = t.id AND o.rule = %s "
            "AND o.start_time = %s AND o.source = %s)",
            (v["parameter"], v["rule"], v["pack"], v["citation"], v["words"], v["start"], v["end"], v["peak"],
             v["limit"], v["unit"], v["days_of_violation"],
             json.dumps({**v["evidence"], **{k: v[k] for k in ("applies", "stricter_of", "provenance") if v.get(k)}}),
             v.get("source", "lab"), v["site"], v["rule"], v["start"], v.get("source", "lab")))
        n += cur.rowcount
    return n


def stored_violations(conn, site: str, start: datetime, end: datetime) -> list[dict]:
    """The violations of ``site`` stored in ``violations`` (every source) whose condition
    existed in ``[start, end)`` (the SQL ``violation_in`` of migration 0110, the rule of
    :func:`limits.days.intervals_of`): ``site``, ``rule``, ``parameter``, ``start``, ``end``,
    ``evidence`` (its ``last`` and ``intervals``), ``peak``, ``limit``, ``unit``,
    ``comparison``, ``citation``, ``source``."""
    rows = conn.execute(
        "SELECT v.rule, v.parameter, v.start_time, v.end_time, v.evidence, v.peak, v.limit_value, v.unit, v.citation, "
        "v.source FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = %s "
        "AND violation_in(v.start_time, v.end_time, v.evidence, %s, %s) ORDER BY v.start_time, v.id",
        (site, start, end)).fetchall()
    return [{"site": site, "rule": r, "parameter": prm, "start": _z(a), "end": _z(b) if b else None,
             "evidence": ev or {}, "peak": peak, "limit": lim, "unit": unit, "comparison": (ev or {}).get("comparison"),
             "citation": c, "source": src} for r, prm, a, b, ev, peak, lim, unit, c, src in rows]


def _z(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
