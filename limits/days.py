"""Days of violation: distinct local calendar days per site and rule, across episodes.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.60(1): "Each day a condition is allowed to exist
which is contrary to all or any part of this subchapter shall constitute a new violation."
(§13.60(2): "Each day a violation occurs shall constitute a separate violation.") So the
number of violations a site owes a forfeiture for is the number of distinct days on which
it was in violation of a rule: two episodes on one day are one day; an episode across local
midnight is two; the days are local days of the village (the pack's time zone, DST-aware).

:func:`distinct_days` is the vectorised core; :func:`by_site_and_rule` reads violation
records (``check``'s, the lab checks', the ``violations`` table's); :func:`from_db` asks
the database (the SQL function ``violation_days`` of migration 0080, the same rule in SQL).
Notices and bills use these.
"""

from __future__ import annotations

from datetime import date, datetime

import numpy as np

from limits import core


def distinct_days(key, start, last, tz, first_day: int | None = None, end_day: int | None = None):
    """Distinct local days per key across episodes.

    Parameters
    ----------
    key : array_like of int
        A group code per episode (e.g. site and rule).
    start, last : array_like of int64
        First and last exceeding reading of each episode [us UTC].
    tz : zoneinfo.ZoneInfo
        The village's time zone.
    first_day, end_day : int, optional
        Only days ``first_day <= d < end_day`` count (local day numbers, days since
        1970-01-01 local): the period reported.

    Returns
    -------
    keys : ndarray of int64
        The groups with at least one day, ascending.
    counts : ndarray of int64
        Distinct days of each.
    pairs : ndarray, shape (m, 2)
        The distinct (key, local day number) pairs, sorted.
    """
    key = np.asarray(key, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    last = np.asarray(last, dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    if len(key) == 0:
        return empty, empty, np.empty((0, 2), dtype=np.int64)
    both = core.local_day(np.concatenate([start, last]), tz)
    d0, d1 = both[:len(start)], both[len(start):]
    if first_day is not None:
        d0 = np.maximum(d0, first_day)
    if end_day is not None:
        d1 = np.minimum(d1, end_day - 1)
    n = np.maximum(d1 - d0 + 1, 0)
    offs = np.cumsum(n) - n
    days = np.repeat(d0 - offs, n) + np.arange(int(n.sum()))
    keys = np.repeat(key, n)
    pairs = np.unique(np.stack([keys, days], axis=1), axis=0) if len(days) else np.empty((0, 2), dtype=np.int64)
    k, counts = np.unique(pairs[:, 0], return_counts=True) if len(pairs) else (empty, empty)
    return k.astype(np.int64), counts.astype(np.int64), pairs


def _us(text) -> int:
    if isinstance(text, datetime):
        return int(round(text.timestamp() * core.US))
    return int(round(datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() * core.US))


def _local_day_number(d: date) -> int:
    return (d - date(1970, 1, 1)).days


def by_site_and_rule(records, tz, period: tuple[date, date] | None = None) -> list[dict]:
    """Distinct days of violation per site and rule in violation records.

    Parameters
    ----------
    records : iterable of dict
        Each with ``site``, ``rule``, ``start`` and ``last`` (or ``end``): ISO-8601 texts or
        aware datetimes (``check``'s records, lab violations, rows of ``violations``).
    tz : zoneinfo.ZoneInfo
        The village's time zone.
    period : (date, date), optional
        Only local days ``first <= day < end`` count.

    Returns
    -------
    list of dict
        ``site``, ``rule``, ``days`` (the number of distinct days), ``dates`` (the local
        dates, ISO) and ``episodes`` (the records counted), sorted by site and rule.
    """
    recs = [r for r in records]
    if not recs:
        return []
    groups = sorted({(r["site"], r["rule"]) for r in recs})
    index = {g: i for i, g in enumerate(groups)}
    key = np.array([index[(r["site"], r["rule"])] for r in recs], dtype=np.int64)
    start = np.array([_us(r["start"]) for r in recs], dtype=np.int64)
    last = np.array([_us(r.get("last") or r.get("end") or r["start"]) for r in recs], dtype=np.int64)
    first_day = end_day = None
    if period is not None:
        first_day, end_day = _local_day_number(period[0]), _local_day_number(period[1])
    keys, counts, pairs = distinct_days(key, start, last, tz, first_day, end_day)
    episodes = np.bincount(key, minlength=len(groups))
    out = []
    for k, c in zip(keys.tolist(), counts.tolist()):
        site, rule = groups[k]
        ds = pairs[pairs[:, 0] == k, 1]
        out.append({"site": site, "rule": rule, "days": c,
                    "dates": [str(np.datetime64(int(d), "D")) for d in ds.tolist()],
                    "episodes": int(episodes[k])})
    return out


#: The SQL of :func:`from_db` (``violation_days``: migration 0080_permits.sql).
DAYS_SQL = ("SELECT s.key, d.rule, d.days, d.dates FROM violation_days(%s, %s, %s) d "
            "JOIN sites s ON s.id = d.site_id WHERE (%s::text[] IS NULL OR s.key = ANY(%s::text[])) "
            "ORDER BY s.key, d.rule")


def from_db(conn, start: datetime, end: datetime, tz, sites: list[str] | None = None) -> list[dict]:
    """Distinct days of violation per site and rule from the ``violations`` table: episodes
    (live, re-evaluated and lab) touching ``[start, end)``, days counted in ``tz`` within it.

    Returns records as :func:`by_site_and_rule` (without ``episodes``).
    """
    rows = conn.execute(DAYS_SQL, (start, end, str(tz), sites, sites)).fetchall()
    return [{"site": k, "rule": r, "days": int(n), "dates": [d.isoformat() for d in ds]} for k, r, n, ds in rows]
