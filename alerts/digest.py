"""The daily digest: the alerts of one local day (opened that day, or still open during it)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

SQL = """SELECT id, kind, rule, state, summary, opened_at, resolved_at, acknowledged_by
         FROM alerts WHERE opened_at < %s AND (resolved_at IS NULL OR resolved_at >= %s)
         ORDER BY opened_at, id"""
COLS = ("id", "kind", "rule", "state", "summary", "opened_at", "resolved_at", "acknowledged_by")


def day_bounds(day: str, tz: str) -> tuple[datetime, datetime]:
    """Start and end of the local calendar day ``day`` (YYYY-MM-DD) in ``tz`` (DST-aware)."""
    d = date.fromisoformat(day)
    z = ZoneInfo(tz)
    return datetime.combine(d, time(), z), datetime.combine(d + timedelta(days=1), time(), z)


def rows(conn, day: str, tz: str) -> list[dict]:
    a, b = day_bounds(day, tz)
    return [dict(zip(COLS, r)) for r in conn.execute(SQL, (b, a)).fetchall()]

