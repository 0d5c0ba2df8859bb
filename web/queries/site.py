"""An industrial user's page: its profile and permit, sensors and devices,
the readings of a range bucketed for the chart, its violations with days of violation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from foundation.units import CANONICAL
from web import formats
from web.chart import BUCKETS, Series
from web.queries.today import sensor_limits, site_continuous_rules

#: Ranges longer than this read the one-minute aggregates (``readings_1m``) [s].
AGGREGATES_AFTER_S = 2 * 86400

BUCKETS_SQL = """
    SELECT sensor_id, extract(epoch FROM date_bin(%(w)s, time, %(origin)s)) AS b,
           min(value) FILTER (WHERE quality = 0), max(value) FILTER (WHERE quality = 0), count(*)
    FROM readings WHERE sensor_id = ANY(%(ids)s) AND time >= %(t0)s AND time < %(t1)s
    GROUP BY 1, 2 ORDER BY 1, 2"""
BUCKETS_1M_SQL = """
    SELECT sensor_id, extract(epoch FROM date_bin(%(w)s, minute, %(origin)s)) AS b, min(min), max(max), sum(n)
    FROM readings_1m WHERE sensor_id = ANY(%(ids)s) AND minute >= %(t0)s AND minute < %(t1)s
    GROUP BY 1, 2 ORDER BY 1, 2"""


def profile(conn, key: str) -> dict | None:
    row = conn.execute("SELECT id, key, name, pack, sic FROM sites WHERE key = %s", (key,)).fetchone()
    if row is None:
        return None
    site = dict(zip(("id", "key", "name", "pack", "sic"), row))     # its permit: the stored one (permit_of)
    site["sensors"] = [dict(zip(("id", "name", "parameter", "unit", "source", "address", "interval_s", "last_time",
                                 "last_value", "last_quality"), r)) for r in conn.execute(
        """SELECT s.id, s.name, s.parameter, s.unit, s.source, s.address, s.interval_s, l.time, l.value, l.quality
           FROM sensors s LEFT JOIN LATERAL (SELECT time, value, quality FROM readings r WHERE r.sensor_id = s.id
                                             ORDER BY time DESC LIMIT 1) l ON true
           WHERE s.site_id = %s ORDER BY s.name""", (site["id"],)).fetchall()]
    for s in site["sensors"]:
        s["cunit"] = CANONICAL.get(s["parameter"], s["unit"])     # readings hold the canonical unit
    site["devices"] = [dict(zip(("device", "state", "last_good_at", "last_error", "polls", "transport_errors"), r))
                       for r in conn.execute("SELECT device, state, last_good_at, last_error, polls, transport_errors "
                                             "FROM device_health WHERE site_key = %s ORDER BY device", (key,)).fetchall()]
    site["violations"] = [dict(zip(("id", "parameter", "rule", "start", "end", "peak", "limit", "unit", "days",
                                    "citation", "source"), r)) for r in conn.execute(
        "SELECT id, parameter, rule, start_time, end_time, peak, limit_value, unit, days_of_violation, citation, source "
        "FROM violations WHERE site_id = %s ORDER BY start_time DESC LIMIT 200", (site["id"],)).fetchall()]
    return site


def permit_of(conn, key: str):
    """The site's current permit (:func:`limits.permit_store.current_permits`), or None."""
    from limits.permit_store import current_permits
    return current_permits(conn).get(key)


def series(conn, site: dict, permit, t0: datetime, t1: datetime) -> list[tuple[dict, Series]]:
    """Each sensor's readings between ``t0`` and ``t1`` in :data:`BUCKETS` buckets, with its
    limits and the episodes of the range."""
    span = (t1 - t0).total_seconds()
    width = timedelta(seconds=max(1.0, span / BUCKETS))
    ids = [s["id"] for s in site["sensors"]]
    sql = BUCKETS_1M_SQL if span > AGGREGATES_AFTER_S else BUCKETS_SQL
    if sql is BUCKETS_1M_SQL:
        width = max(width, timedelta(minutes=1))
    rows = conn.execute(sql, {"w": width, "origin": t0, "ids": ids, "t0": t0, "t1": t1}).fetchall()
    eps = conn.execute("SELECT sensor_id, start_time, end_time FROM violations WHERE site_id = %s AND start_time < %s "
                       "AND (end_time IS NULL OR end_time >= %s)", (site["id"], t1, t0)).fetchall()
    rules = site_continuous_rules(site["pack"], permit)
    from foundation.windows import US, load as load_windows
    windows = load_windows(conn, ids, int(t0.timestamp() * US), int(t1.timestamp() * US))
    n = int(np.ceil(span / width.total_seconds()))
    base = t0.timestamp()
    starts = base + np.arange(n) * width.total_seconds()
    out = []
    by_sensor: dict[int, list] = {}
    for sid, b, lo, hi, cnt in rows:
        by_sensor.setdefault(sid, []).append((float(b), lo, hi, cnt))
    for s in site["sensors"]:
        lo = np.full(n, np.nan)
        hi = np.full(n, np.nan)
        cnt = np.zeros(n)
        got = by_sensor.get(s["id"], [])
        if got:
            arr = np.array([(b, np.nan if a is None else a, np.nan if c is None else c, k) for b, a, c, k in got],
                           dtype=np.float64)
            idx = np.clip(np.round((arr[:, 0] - base) / width.total_seconds()).astype(int), 0, n - 1)
            lo[idx], hi[idx], cnt[idx] = arr[:, 1], arr[:, 2], arr[:, 3]
        limits, _ = sensor_limits(rules, s["parameter"], None)
        unit = CANONICAL.get(s["parameter"], s["unit"])
        labels = [(lim.value, f"violation if {lim.comparison} {lim.value:g} {formats.unit(unit)} · {lim.citation}")
                  for lim in limits]
        episodes = [(a.timestamp(), None if e is None else e.timestamp()) for sid, a, e in eps if sid == s["id"]]
        maint = [(a / US, min(b / US, t1.timestamp())) for a, b in windows.of_sensor(s["id"])]
        out.append((s, Series(starts, lo, hi, cnt, unit, labels, episodes, maint)))
    return out


def parse_range(rng: str | None, since: str | None, until: str | None, tz: str, now: datetime
                ) -> tuple[datetime, datetime, str]:
    """The chart's range: ``24h`` (default), ``7d``, ``30d``, or ``since``/``until`` local dates."""
    from datetime import date
    from zoneinfo import ZoneInfo
    if since:
        try:
            a = date.fromisoformat(since)
            b = date.fromisoformat(until) if until else a
        except ValueError:
            a = b = None
        if a is not None and b is not None and b >= a and (b - a).days <= 400:
            z = ZoneInfo(tz)
            t0 = datetime(a.year, a.month, a.day, tzinfo=z)
            nb = b + timedelta(days=1)
            return t0, datetime(nb.year, nb.month, nb.day, tzinfo=z), "custom"
    hours = {"24h": 24, "7d": 24 * 7, "30d": 24 * 30}.get(rng or "24h", 24)
    end = now.astimezone(timezone.utc)
    return end - timedelta(hours=hours), end, rng if rng in ("24h", "7d", "30d") else "24h"
