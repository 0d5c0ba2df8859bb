"""Containers, preservation and maximum holding times, per analyte, as data.

The table is ``preservation.toml`` beside this module, from 40 CFR 136.3(e), Table II
("Required Containers, Preservation Techniques, and Holding Times"): e.g. BOD, cool to
≤ 6 °C, 48 hours; cyanide, NaOH to pH > 10, 14 days; pH, analyse within 15 minutes. A result
analysed later than its holding time after it was sampled is not a valid measurement of the
sample (:func:`over_hold`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from foundation import tomlfile

TABLE = Path(__file__).with_name("preservation.toml")
#: What the chain of custody prints for an analyte the table does not hold.
UNLISTED = "as the laboratory directs"


@dataclass(frozen=True)
class Method:
    """How one analyte is sampled and kept.

    Attributes
    ----------
    analyte : str
        The lab CSV's analyte id (``bod5``).
    container : str
        Volume and material, in words.
    preservation : str
        In words (``cool to 6 °C or below``).
    holding_hours : float or None
        Sampled to analysed, at most [h]; None: not in the table (nothing is judged).
    words : str
        The holding time as people say it (``48 hours``, ``7 days``).
    citation : str
        Where it comes from.
    """

    analyte: str
    container: str
    preservation: str
    holding_hours: float | None
    words: str
    citation: str


@lru_cache(maxsize=1)
def methods() -> dict[str, Method]:
    """Every analyte of the table -> its :class:`Method`."""
    data = tomlfile.read(TABLE, "preservation table")
    cite = data["citation"]
    return {k: Method(k, v["container"], v["preservation"], float(v["holding_hours"]), v["words"], cite)
            for k, v in data["analytes"].items()}


def method(analyte: str) -> Method:
    """The analyte's method; one of :data:`UNLISTED` words where the table has none."""
    m = methods().get(analyte)
    if m is not None:
        return m
    return Method(analyte, UNLISTED, UNLISTED, None, UNLISTED, next(iter(methods().values())).citation)


def held_hours(sampled: datetime, analysed: datetime) -> float:
    """Sampled to analysed [h]."""
    return (analysed - sampled).total_seconds() / 3600.0


def over_hold(analyte: str, sampled: datetime, analysed: datetime | None) -> bool:
    """Whether a result was analysed after the analyte's holding time (False when the
    analysis time is unknown or the table has no holding time for it)."""
    m = method(analyte)
    if analysed is None or m.holding_hours is None:
        return False
    return held_hours(sampled, analysed) > m.holding_hours
