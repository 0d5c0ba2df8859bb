"""Dates and times given on the command line, read one way by every command.

A date (``2026-06-30``) is a calendar day of the village: its time zone (``[utility]
timezone``, else its rule pack's). As the start of a range it is that day's first instant
(local midnight), as the end of a range (exclusive: ``--until``, ``--to``) it is the first
instant of that day too, so ``--since 2026-01-01 --until 2026-07-01`` is January 1 to June 30
inclusive, local days, DST-aware. A time with an offset (``2026-06-30T23:30:00-05:00``,
``...Z``) is taken as given. A time without one is the village's wall-clock time; one that
does not exist there (the hour skipped when clocks go forward) or happens twice (the hour
repeated when they go back) is refused, asking for an offset.

Periods by name: a year ``2026``, a quarter ``2026Q1``, a half ``2026H1``, a month
``2026-03``: local days, ``[first day, first day after)``.

:data:`HELP` is the sentence every ``--help`` of such an option ends with.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from foundation import config, tomlfile
from foundation.errors import InputError

#: what every date or time option's --help says
HELP = ("a date is a local calendar day of the village (its time zone: [utility] timezone, else its "
        "rule pack's); a time with an offset (2026-06-30T23:30-05:00, ...Z) is taken as given, one without "
        "is the village's clock")

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
YEAR = re.compile(r"^(\d{4})$")
QUARTER = re.compile(r"^(\d{4})Q([1-4])$")
HALF = re.compile(r"^(\d{4})H([12])$")
MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def day(text: str, what: str) -> date:
    """A calendar date such as ``2026-07-31`` (one-line error naming the option otherwise)."""
    t = str(text).strip()
    try:
        if not DATE.match(t):
            raise ValueError
        return date.fromisoformat(t)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-07-31, got {text!r}") from None


def midnight(d: date, tz) -> datetime:
    """The first instant of local day ``d`` in ``tz``."""
    return datetime.combine(d, time(0), tzinfo=tz)


def _wall(dt: datetime, tz, what: str, text: str) -> datetime:
    """A naive wall-clock time in ``tz``, refusing one that does not exist or happens twice."""
    a, b = dt.replace(tzinfo=tz, fold=0), dt.replace(tzinfo=tz, fold=1)
    if a.utcoffset() != b.utcoffset():
        back = a.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None)
        kind = "does not exist" if back != dt else "happens twice"
        raise InputError(f"{what}: {text} {kind} in {tz} (the clocks change then): give it with an offset, "
                         f"e.g. {a.isoformat()} or {b.isoformat()}")
    return a


def instant(text: str, what: str, tz) -> datetime:
    """A date (its local midnight in ``tz``) or a time (with its offset, else ``tz``'s wall
    clock) as an aware datetime. For a range's start and its exclusive end alike."""
    t = str(text).strip()
    if DATE.match(t):
        return midnight(day(t, what), tz)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-07-01 or an ISO-8601 time such as "
                         f"2026-07-01T06:00:00-05:00, got {text!r}") from None
    if dt.tzinfo is None:
        return _wall(dt, tz, what, t)
    return dt


def span(since: str, until: str, tz, names: tuple[str, str] = ("--since", "--until")) -> tuple[datetime, datetime]:
    """``[since, until)`` as instants (:func:`instant`); the end must come after the start."""
    a, b = instant(since, names[0], tz), instant(until, names[1], tz)
    if b <= a:
        raise InputError(f"{names[1]} ({until}) must be after {names[0]} ({since})")
    return a, b


def end_of_day(d: date, tz) -> datetime:
    """The last instant of local day ``d`` (``--as-of D``: as things stood at the end of D)."""
    return midnight(d + timedelta(days=1), tz) - timedelta(microseconds=1)


def named_period(text: str, what: str,
                 kinds: tuple[str, ...] = ("year", "half", "quarter", "month")) -> tuple[date, date, str]:
    """A period by name as local dates ``[first, end)`` and its canonical name: ``2026``,
    ``2026H1``, ``2026Q3``, ``2026-03`` (those of ``kinds``)."""
    t = str(text).strip().upper()
    m = YEAR.match(t)
    if m and "year" in kinds:
        y = int(m.group(1))
        return date(y, 1, 1), date(y + 1, 1, 1), t
    m = HALF.match(t)
    if m and "half" in kinds:
        y, h = int(m.group(1)), int(m.group(2))
        return date(y, 1 if h == 1 else 7, 1), date(y + (h == 2), 7 if h == 1 else 1, 1), t
    m = QUARTER.match(t)
    if m and "quarter" in kinds:
        y, q = int(m.group(1)), int(m.group(2))
        return date(y, 3 * q - 2, 1), date(y + (q == 4), 1 if q == 4 else 3 * q + 1, 1), t
    m = MONTH.match(t)
    if m and "month" in kinds and 1 <= int(m.group(2)) <= 12:
        y, mo = int(m.group(1)), int(m.group(2))
        return date(y, mo, 1), date(y + (mo == 12), 1 if mo == 12 else mo + 1, 1), t
    examples = {"year": "2026", "half": "2026H1", "quarter": "2026Q1", "month": "2026-03"}
    raise InputError(f"{what}: expected {' or '.join(examples[k] for k in kinds)}, got {text!r}")


def period_bounds(text: str, what: str, tz, kinds=("year", "half", "quarter", "month")) -> tuple[datetime, datetime]:
    """A named period (:func:`named_period`) as the instants ``[first local midnight, end)``."""
    a, b, _name = named_period(text, what, kinds)
    return midnight(a, tz), midnight(b, tz)


def village_zone(cfg) -> ZoneInfo:
    """The village's time zone, in which the command line's dates are local days: the
    config's ``[utility] timezone``, else its rule pack's ``timezone`` (the pack file on the
    pack search path, :func:`foundation.config.find_pack`)."""
    if getattr(cfg, "timezone", None):
        return ZoneInfo(cfg.timezone)
    path = config.find_pack(cfg.pack)
    if path is None:
        raise InputError(f"unknown rule pack {cfg.pack!r}: the village's time zone is not known "
                         "(set [utility] timezone)")
    name = tomlfile.read(path, "rule pack").get("timezone")
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"{path}: timezone: unknown time zone {name!r}") from None
