"""A limit stated as the ordinance or the permit states it: its comparison word, its number
and unit, and what it limits (each sample, a daily maximum, a monthly average, the average
of a period, a day's loading, a day's flow, every reading).

``stated("more than", 0.5, "mg/l", "monthly-average")`` is ``more than 0.5 mg/l as a monthly
average``; ``stated("in excess of", 0.5, "mg/l", "each")`` is ``in excess of 0.5 mg/l in any
sample``. A notice, the CLI's summaries and the lab checks say a limit this way, never a
bare number, and never "in any sample" of a limit on an average (:func:`of_violation` reads
a violation record).
"""

from __future__ import annotations

from limits.sample_types import in_words

#: statistic -> what the limit applies to, in words
FORMS = {
    "each": "in any sample",
    "daily-maximum": "as a daily maximum",
    "monthly-average": "as a monthly average",
    "period-average": "as an average over the period",
    "weekly-average": "as a weekly average",
    "rolling-30-day": "as a rolling 30-day average",
    "daily-loading": "as a daily loading",
    "reading": "at any time",
}
#: flow has its own words for a day's and a month's value (a permit's maximum and average
#: daily flow, palmyra-wi §13.54(3)(b))
FLOW_FORMS = {"daily-maximum": "as the maximum daily flow", "monthly-average": "as a month's average daily flow"}
#: units as people write them
UNITS = {"gal/d": "gal/day", "lb/d": "lb/day", "gpm": "gal/min", "degF": "°F", "degC": "°C", "mgd": "MGD"}
#: what a comparison means when a rule gives no words
OPERATOR_WORDS = {">": "more than", ">=": "at least", "<": "less than", "<=": "at most"}


def number(x: float, unit: str | None) -> str:
    """``30,000`` for gallons a day, ``0.5`` for a concentration."""
    if unit in ("gal/d", "gal", "gpd"):
        return f"{x:,.0f}"
    return f"{x:g}"


def quantity(x: float, unit: str | None) -> str:
    """``0.5 mg/l``, ``30,000 gal/day``, ``pH 6``."""
    if unit == "pH":
        return f"pH {x:g}"
    u = UNITS.get(unit or "", unit or "")
    return f"{number(x, unit)} {u}".strip()


def stated(comparison: str | None, limit: float, unit: str | None, statistic: str | None = None,
           parameter: str | None = None, sample_type: str | None = None) -> str:
    """The limit in words: comparison, number and unit, and its form (:data:`FORMS`); a limit
    of one sample type says it (``more than 4 mg/l in a grab sample``, ``more than 1 mg/l as a
    monthly average of composite samples``, :func:`limits.sample_types.in_words`)."""
    words = comparison or OPERATOR_WORDS[">"]
    form = (FLOW_FORMS.get(statistic or "") if parameter == "flow" else None) or FORMS.get(statistic or "", "")
    form = in_words(sample_type, statistic) or form
    return f"{words} {quantity(limit, unit)}" + (f" {form}" if form else "")


def statistic_of(v: dict) -> str:
    """The form of a violation record's limit: its evidence's ``statistic``; an episode of the
    readings (no statistic) is judged on every reading."""
    ev = v.get("evidence") or {}
    st = ev.get("statistic") or v.get("statistic")
    if st is None:
        return "reading"
    if st == "each" and (v.get("unit") == "lb/d"):
        return "daily-loading"
    return st


def of_violation(v: dict) -> str:
    """The limit a violation record broke, stated (:func:`stated`)."""
    ev = v.get("evidence") or {}
    return stated(v.get("comparison") or ev.get("comparison"), v["limit"], v.get("unit"), statistic_of(v),
                  v.get("parameter"), ev.get("sample_type"))
