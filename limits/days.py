"""Days of violation: the local calendar days on which a condition existed, per site and rule.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.60(1): "Each day a condition is allowed to exist
which is contrary to all or any part of this subchapter shall constitute a new violation."
(§13.60(2): "Each day a violation occurs shall constitute a separate violation.")

A day counts when the condition existed during it. Every violation record states when it
existed as half-open intervals ``[start, end)`` (:func:`intervals_of`), and one function
turns intervals into local days (:func:`day_span`): the days from the local day of
``start`` to the local day of the last instant before ``end``. So a condition of one whole
local day, ``[00:00, 00:00 next day)``, is one day, never two; two episodes on one day are
one day; an episode across local midnight is two; the days are local days of the village
(the pack's time zone, DST-aware: a 23- or 25-hour day is one day).

What the interval of each kind of record is:

* an episode of the readings (``check``, the live evaluator, ``check --store``): from its
  first exceeding reading to its last one, inclusive (``[start, last + 1 µs)``): the days
  on which a reading showed the condition;
* a lab result judged on its own (each sample, a loading, a daily maximum judged per
  sample): the instant it was collected;
* a day's value (a daily maximum judged on the day's mean, a day's metered flow): that
  local day, ``[00:00, 00:00 next day)``;
* an average (a monthly or period average, a month's average daily flow): the days of the
  samples or metered days that make it up, or the whole month or period, as
  ``[enforcement] average_days`` says (:mod:`limits.readings`), given as the record's
  ``evidence.intervals``;
* an expired permit: from the day after it ended to the last day judged.

:func:`by_site_and_rule` counts the distinct days per site and rule of any records;
:func:`from_db` asks the database, whose SQL function ``violation_days`` (migration
``0110_violation_days.sql``, with ``violation_spans``) applies the same rule to the rows of
``violations``. Notices, bills, the annual report and the CLI's summaries count with these.
"""

from __future__ import annotations

from datetime import date, datetime, time as dtime, timezone

import numpy as np

from limits import core

#: what one instant (a record without a length) lasts in its half-open interval [us]
INSTANT_US = 1


def day_span(start, end, tz) -> tuple[np.ndarray, np.ndarray]:
    """The local days each half-open interval ``[start, end)`` touches.

    Parameters
    ----------
    start, end : array_like of int64
        The intervals [us UTC]. An interval with ``end <= start`` is an instant: the day of
        ``start``.
    tz : zoneinfo.ZoneInfo
        The village's time zone.

    Returns
    -------
    first, last : ndarray of int64
        The local day numbers (days since 1970-01-01 local) of ``start`` and of the last
        instant before ``end``, inclusive.
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start + INSTANT_US)
    both = core.local_day(np.concatenate([start, end - 1]), tz)
    return both[:len(start)], both[len(start):]


def days_touched(start, end, tz) -> np.ndarray:
    """How many local days each half-open interval ``[start, end)`` [us UTC] touches
    (:func:`day_span`)."""
    d0, d1 = day_span(start, end, tz)
    return (d1 - d0 + 1).astype(np.int64)


def clip(start, end, lo: int | None = None, hi: int | None = None):
    """Intervals cut to ``[lo, hi)`` [us UTC]; an instant keeps its length. Returns
    ``(start, end, keep)``: ``keep`` False where nothing of an interval is left."""
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start + INSTANT_US)
    if lo is not None:
        start = np.maximum(start, lo)
    if hi is not None:
        end = np.minimum(end, hi)
    return start, end, end > start


def distinct_days(key, start, end, tz, lo: int | None = None, hi: int | None = None):
    """Distinct local days per key across half-open intervals.

    Parameters
    ----------
    key : array_like of int
        A group code per interval (e.g. site and rule).
    start, end : array_like of int64
        The intervals ``[start, end)`` [us UTC].
    tz : zoneinfo.ZoneInfo
        The village's time zone.
    lo, hi : int, optional
        Only the part of each interval in ``[lo, hi)`` [us UTC] counts: the period reported.

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
    empty = np.empty(0, dtype=np.int64)
    start, end, keep = clip(start, end, lo, hi)
    key, start, end = key[keep], start[keep], end[keep]
    if len(key) == 0:
        return empty, empty, np.empty((0, 2), dtype=np.int64)
    d0, d1 = day_span(start, end, tz)
    n = d1 - d0 + 1
    offs = np.cumsum(n) - n
    days = np.repeat(d0 - offs, n) + np.arange(int(n.sum()))
    keys = np.repeat(key, n)
    pairs = np.unique(np.stack([keys, days], axis=1), axis=0)
    k, counts = np.unique(pairs[:, 0], return_counts=True)
    return k.astype(np.int64), counts.astype(np.int64), pairs


def us(t) -> int:
    """An aware datetime or ISO-8601 text -> [us UTC]."""
    if not isinstance(t, datetime):
        t = datetime.fromisoformat(str(t).replace("Z", "+00:00"))
    return int(round(t.timestamp() * core.US))


def intervals_of(record: dict) -> list[tuple[int, int]]:
    """The half-open intervals ``[start, end)`` [us UTC] during which a violation record's
    condition existed (see the module docstring).

    ``record``: ``start``, and ``evidence.intervals`` (pairs of ISO texts), else ``last``
    (an episode's last exceeding reading, also as ``evidence.last``), else ``end``; times as
    ISO-8601 texts or aware datetimes (``check``'s records, lab violations, rows of
    ``violations``).
    """
    ev = record.get("evidence") or {}
    spans = record.get("intervals") or ev.get("intervals")
    if spans:
        return [(us(a), us(b)) for a, b in spans]
    s = us(record["start"])
    last = record.get("last") or ev.get("last")
    if last:
        return [(s, us(last) + INSTANT_US)]
    end = record.get("end")
    e = us(end) if end else s
    return [(s, e if e > s else s + INSTANT_US)]


def record_days(record: dict, tz) -> int:
    """The days of violation of one record: the local days its intervals touch."""
    spans = intervals_of(record)
    _k, counts, _p = distinct_days(np.zeros(len(spans)), [a for a, _ in spans], [b for _, b in spans], tz)
    return int(counts[0]) if len(counts) else 0


def overlaps(record: dict, lo: int, hi: int) -> bool:
    """Whether a record's condition existed at some instant of ``[lo, hi)`` [us UTC]."""
    spans = intervals_of(record)
    _s, _e, keep = clip([a for a, _ in spans], [b for _, b in spans], lo, hi)
    return bool(keep.any())


def local_midnight(d: date, tz) -> datetime:
    """The first instant of local day ``d`` in ``tz``."""
    return datetime.combine(d, dtime(0), tzinfo=tz)


def day_intervals(days, tz) -> list[list[str]]:
    """``[[00:00, 00:00 next day), ...]`` of local dates (ISO texts or dates), as ISO UTC pairs:
    the ``evidence.intervals`` of a record whose condition existed on those days."""
    out = []
    for d in sorted({date.fromisoformat(str(x)) for x in days}):
        a = local_midnight(d, tz)
        b = local_midnight(date.fromordinal(d.toordinal() + 1), tz)
        out.append([_z(a), _z(b)])
    return out


def _z(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _bound(x, tz) -> int:
    return us(local_midnight(x, tz) if isinstance(x, date) and not isinstance(x, datetime) else x)


def by_site_and_rule(records, tz, period=None) -> list[dict]:
    """Distinct days of violation per site and rule in violation records.

    Parameters
    ----------
    records : iterable of dict
        Each with ``site``, ``rule`` and what :func:`intervals_of` reads.
    tz : zoneinfo.ZoneInfo
        The village's time zone.
    period : (start, end), optional
        Only the days of ``[start, end)`` count: aware datetimes, or local dates (their
        local midnights).

    Returns
    -------
    list of dict
        ``site``, ``rule``, ``days`` (the number of distinct days), ``dates`` (the local
        dates, ISO) and ``episodes`` (the records counted), sorted by site and rule.
    """
    recs = list(records)
    if not recs:
        return []
    groups = sorted({(r["site"], r["rule"]) for r in recs})
    index = {g: i for i, g in enumerate(groups)}
    key, start, end, rec_of = [], [], [], []
    for j, r in enumerate(recs):
        for a, b in intervals_of(r):
            key.append(index[(r["site"], r["rule"])])
            start.append(a)
            end.append(b)
            rec_of.append(j)
    lo = hi = None
    if period is not None:
        lo, hi = _bound(period[0], tz), _bound(period[1], tz)
    keys, counts, pairs = distinct_days(key, start, end, tz, lo, hi)
    _s, _e, keep = clip(start, end, lo, hi)
    episodes = {}
    for k, j in zip(np.asarray(key)[keep].tolist(), np.asarray(rec_of)[keep].tolist()):
        episodes.setdefault(k, set()).add(j)
    out = []
    for k, c in zip(keys.tolist(), counts.tolist()):
        site, rule = groups[k]
        ds = pairs[pairs[:, 0] == k, 1]
        out.append({"site": site, "rule": rule, "days": c,
                    "dates": [str(np.datetime64(int(d), "D")) for d in ds.tolist()],
                    "episodes": len(episodes.get(k, ()))})
    return out


#: The SQL of :func:`from_db` (``violation_days``: migration 0110_violation_days.sql).
DAYS_SQL = ("SELECT s.key, d.rule, d.days, d.dates FROM violation_days(%s, %s, %s) d "
            "JOIN sites s ON s.id = d.site_id WHERE (%s::text[] IS NULL OR s.key = ANY(%s::text[])) "
            "ORDER BY s.key, d.rule")


def from_db(conn, start: datetime, end: datetime, tz, sites: list[str] | None = None) -> list[dict]:
    """Distinct days of violation per site and rule from the ``violations`` table: the days
    in ``[start, end)`` on which a row's condition existed (the rule of :func:`intervals_of`,
    in SQL), counted in ``tz``.

    Returns records as :func:`by_site_and_rule` (without ``episodes``).
    """
    rows = conn.execute(DAYS_SQL, (start, end, str(tz), sites, sites)).fetchall()
    return [{"site": k, "rule": r, "days": int(n), "dates": [d.isoformat() for d in ds]} for k, r, n, ds in rows]
