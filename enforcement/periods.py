"""Periods of enforcement, as local calendar dates of the village.

* SNC periods (40 CFR 403.8(f)(2)(viii)(A), (B): "during a six-month period"): calendar
  halves ``2026H1`` (January-June) and ``2026H2``, or, where the config says
  ``snc_periods = "rolling-quarters"``, the six months ending with each quarter: ``2026Q1``
  is October 2025 to March 2026, ``2026Q2`` January to June 2026.
* Sampling periods of a monitoring requirement: ``day``, ``week`` (Monday to Sunday),
  ``month``, ``quarter``, ``year``.

A :class:`Period` runs from ``start`` (inclusive) to ``end`` (exclusive), both local dates;
:meth:`Period.bounds` gives the instants in a time zone (midnights, DST-aware).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from foundation import moments
from foundation.errors import InputError

HALF = re.compile(r"^(\d{4})H([12])$")
QUARTER = re.compile(r"^(\d{4})Q([1-4])$")

#: the periods a sampling frequency counts in (as limits/permits.py names them)
SAMPLING_PERIODS = ("day", "week", "month", "quarter", "year")


@dataclass(frozen=True, order=True)
class Period:
    """``[start, end)`` in local dates, with its name (``2026H1``, ``2026-03``, ...)."""

    start: date
    end: date
    name: str

    def bounds(self, tz) -> tuple[datetime, datetime]:
        """The period's first and past-the-end instants: local midnights in ``tz``."""
        return (datetime(self.start.year, self.start.month, self.start.day, tzinfo=tz),
                datetime(self.end.year, self.end.month, self.end.day, tzinfo=tz))

    def contains(self, d: date) -> bool:
        return self.start <= d < self.end

    @property
    def last_day(self) -> date:
        return self.end - timedelta(days=1)

    def as_json(self) -> dict:
        return {"name": self.name, "start": self.start.isoformat(), "end": self.end.isoformat()}


def add_months(d: date, n: int) -> date:
    """The first of the month ``n`` months after ``d``'s month."""
    m = d.year * 12 + (d.month - 1) + n
    return date(m // 12, m % 12 + 1, 1)


def snc_period(text: str) -> Period:
    """An SNC period by name: ``2026H1``, ``2026H2`` (calendar halves) or ``2026Q1`` ...
    ``2026Q4`` (the six months ending with that quarter).

    Raises
    ------
    InputError
        For any other text.
    """
    t = text.strip().upper()
    m = HALF.match(t)
    if m:
        start = date(int(m.group(1)), 1 if m.group(2) == "1" else 7, 1)
        return Period(start, add_months(start, 6), t)
    m = QUARTER.match(t)
    if m:
        end = add_months(date(int(m.group(1)), 3 * int(m.group(2)) - 2, 1), 3)
        return Period(add_months(end, -6), end, t)
    raise InputError(f"--period: expected a half year such as 2026H1 or the six months ending with a quarter "
                     f"such as 2026Q2, got {text!r}")


def snc_periods_of_year(year: int, mode: str) -> list[Period]:
    """The SNC periods ending in ``year``: two halves, or four windows ending with each quarter."""
    if mode == "halves":
        return [snc_period(f"{year}H1"), snc_period(f"{year}H2")]
    if mode == "rolling-quarters":
        return [snc_period(f"{year}Q{q}") for q in (1, 2, 3, 4)]
    raise ValueError(f"unknown SNC period mode {mode!r}")


def year_period(text: str | int) -> Period:
    """A calendar year (``2026``): its local days (:func:`foundation.moments.named_period`)."""
    return Period(*moments.named_period(str(text), "--year", ("year",)))


def sampling_period(per: str, d: date) -> Period:
    """The sampling period of kind ``per`` (:data:`SAMPLING_PERIODS`) that holds day ``d``."""
    if per == "day":
        return Period(d, d + timedelta(days=1), d.isoformat())
    if per == "week":
        start = d - timedelta(days=d.weekday())
        iso = start.isocalendar()
        return Period(start, start + timedelta(days=7), f"{iso[0]}-W{iso[1]:02d}")
    if per == "month":
        start = date(d.year, d.month, 1)
        return Period(start, add_months(start, 1), f"{d.year}-{d.month:02d}")
    if per == "quarter":
        q = (d.month - 1) // 3 + 1
        start = date(d.year, 3 * q - 2, 1)
        return Period(start, add_months(start, 3), f"{d.year}Q{q}")
    if per == "year":
        return Period(date(d.year, 1, 1), date(d.year + 1, 1, 1), str(d.year))
    raise ValueError(f"unknown sampling period {per!r} (known: {', '.join(SAMPLING_PERIODS)})")


def sampling_periods(per: str, first: date, end: date) -> list[Period]:
    """The sampling periods of kind ``per`` overlapping ``[first, end)``, in order."""
    out = []
    d = first
    while d < end:
        p = sampling_period(per, d)
        out.append(p)
        d = p.end
    return out


def local_date(t: datetime, tz) -> date:
    """The local calendar date of an aware instant."""
    return t.astimezone(tz).date()
