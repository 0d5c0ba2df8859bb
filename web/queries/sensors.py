"""Sensor health as the office shows it: each sensor's last reading and
its age, the minutes of the last day with no reading (from the one-minute aggregates), its
open health conditions (no data, flat line, readings outside the physical range) and the
readings of the last hour that were not usable."""

from __future__ import annotations

SQL = """
    SELECT s.id, s.site_id, t.key, t.name, s.name, s.parameter, s.source, s.interval_s, l.time, l.value, l.quality
    FROM sensors s JOIN sites t ON t.id = s.site_id
    LEFT JOIN LATERAL (SELECT time, value, quality FROM readings r WHERE r.sensor_id = s.id
                       ORDER BY time DESC LIMIT 1) l ON true
    ORDER BY t.name, s.name"""
MINUTES_SQL = """
    SELECT sensor_id, count(*) FROM readings_1m
    WHERE minute >= %(t0)s AND minute < %(t1)s GROUP BY sensor_id"""
IMPLAUSIBLE_SQL = """
    SELECT sensor_id, count(*) FROM readings WHERE time > now() - interval '1 hour' AND quality <> 0
    GROUP BY sensor_id"""
CONDITIONS_SQL = """
    SELECT sensor_id, rule, opened_at, state FROM alerts
    WHERE kind = 'sensor-health' AND state <> 'resolved' AND sensor_id IS NOT NULL"""
FAULTS_SQL = """
    SELECT sensor_id, count(*) FROM alerts WHERE kind = 'sensor-health' AND rule = 'sensor-fault'
    AND opened_at > now() - interval '7 days' GROUP BY sensor_id"""


def health(conn) -> dict:
    """Every sensor with its health; how far the aggregates reach (gaps are counted up to there)."""
    now = conn.execute("SELECT now()").fetchone()[0]
    row = conn.execute("SELECT done_to FROM maintenance_state WHERE job = 'aggregates'").fetchone()
    done_to = row[0] if row else None
    from datetime import timedelta
    t1 = min(now, done_to) if done_to else None
    t0 = (t1 - timedelta(hours=24)) if t1 else None
    minutes = dict(conn.execute(MINUTES_SQL, {"t0": t0, "t1": t1}).fetchall()) if t1 else {}
    implausible = dict(conn.execute(IMPLAUSIBLE_SQL).fetchall())
    faults = dict(conn.execute(FAULTS_SQL).fetchall())
    conditions: dict[int, list] = {}
    for sid, rule, opened, state in conn.execute(CONDITIONS_SQL).fetchall():
        conditions.setdefault(sid, []).append({"rule": rule, "since": opened, "state": state})
    window_min = None if t1 is None else (t1 - t0).total_seconds() / 60
    out = []
    for sid, site_id, site, site_name, name, parameter, source, interval_s, t, v, q in conn.execute(SQL).fetchall():
        age = None if t is None else (now - t).total_seconds()
        out.append({"id": sid, "site_id": site_id, "site": site, "site_name": site_name, "name": name, "parameter": parameter,
                    "source": source, "interval_s": interval_s, "last_time": t, "last_value": v, "quality": q,
                    "age_s": age, "minutes_without": None if window_min is None else
                    max(0, int(window_min) - int(minutes.get(sid, 0))),
                    "implausible_hour": implausible.get(sid, 0), "faults_7d": faults.get(sid, 0),
                    "conditions": conditions.get(sid, [])})
    return {"now": now, "sensors": out, "aggregates_to": done_to}
