"""EPA significant noncompliance (SNC) of an industrial user over six-month windows.

40 CFR 403.8(f)(2)(viii):

(A) "Chronic violations of wastewater Discharge limits, defined here as those in which
    sixty-six percent or more of all of the measurements taken for the same pollutant
    parameter during a six-month period exceed (by any magnitude) a numeric Pretreatment
    Standard or Requirement, including instantaneous limits". Every pollutant parameter,
    pH included; for pH, whose limit is a range, "exceed" means outside the range (below
    the lower limit or above the upper one, with the ordinance's own comparison words).
(B) "Technical Review Criteria (TRC) violations, defined here as those in which thirty-three
    percent or more of all of the measurements taken for the same pollutant parameter during
    a six-month period equal or exceed the product of the numeric Pretreatment Standard or
    Requirement including instantaneous limits, as defined by 40 CFR 403.3(l) multiplied by
    the applicable TRC (TRC = 1.4 for BOD, TSS, fats, oil, and grease, and 1.2 for all other
    pollutants except pH)". pH has no TRC.

"Equal or exceed the product" is decided in exact decimal arithmetic: the limit as written
times 1.4 (or 1.2), against each measurement as written (the shortest decimal of its
float). A value one ulp below 140 for a limit of 100 does not equal or exceed 140
(:func:`trc_boundary`). Percentages are counted in integers, so exactly 66 % and 33 % count.
Windows are calendar half-years (January-June, July-December) of the village's local days,
as ``sewerwatch snc --period 2026H1`` counts them.

References
----------
40 CFR 403.8(f)(2)(viii)(A) and (B) (EPA General Pretreatment Regulations); the limits are
the ordinance's (e.g. palmyra-wi, 003_44f871d49a02d8f5.txt §13.48(2)(g) pH, (k), (l)) or a
user's permit.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal
from typing import NamedTuple

import numpy as np

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import lab_limits, site_rules
from lab.results_table import LabTable, iso
from limits import core
from limits.permits import Permit

CHRONIC_PERCENT = 66
TRC_PERCENT = 33
#: TRC multiplier per parameter (decimal, as the regulation writes it); every other
#: parameter 1.2; pH has none (40 CFR 403.8(f)(2)(viii)(B): "all other pollutants except pH")
TRC_FACTOR = {"bod5": Decimal("1.4"), "tss": Decimal("1.4"), "fog": Decimal("1.4")}
TRC_FACTOR_OTHER = Decimal("1.2")
NO_TRC = ("ph",)
CITATION = "40 CFR 403.8(f)(2)(viii)(A)-(B)"


class Range(NamedTuple):
    """A limit that is a range (pH): a measurement exceeds it when ``value low_op low`` or
    ``value high_op high`` (e.g. palmyra-wi §13.48(2)(g) "lower than 6.0 or higher than 9.0":
    ``<`` 6.0, ``>`` 9.0)."""

    low: float
    high: float
    low_op: str = "<"
    high_op: str = ">"


_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def trc_factor(parameter: str) -> Decimal | None:
    """The TRC multiplier of ``parameter`` (None for pH)."""
    if parameter in NO_TRC:
        return None
    return TRC_FACTOR.get(parameter, TRC_FACTOR_OTHER)


def _decimal(x: float) -> Decimal:
    """The shortest decimal that reads back as ``x``: the number as written."""
    return Decimal(repr(float(x)))


def trc_boundary(limit: float, factor: Decimal) -> float:
    """The smallest float whose written value equals or exceeds ``limit`` x ``factor``,
    computed exactly in decimal.

    ``value >= trc_boundary(limit, factor)`` is then exactly "equal or exceed the product"
    for every float ``value``: 140.0 for a limit of 100 and 1.4, and the float just below
    140 (139.99999999999997) does not reach it.
    """
    product = _decimal(limit) * factor
    x = float(product)
    while _decimal(x) < product:
        x = float(np.nextafter(x, np.inf))
    while True:
        below = float(np.nextafter(x, -np.inf))
        if _decimal(below) < product:
            return x
        x = below


def snc_counts(values, limit: float | Range, parameter: str) -> dict:
    """SNC of one parameter's measurements of one window.

    Parameters
    ----------
    values : array_like
        The window's measurements [limit's unit].
    limit : float or Range
        The numeric limit, or for pH the :class:`Range`.
    parameter : str
        Picks the TRC factor (1.4 for bod5, tss, fog; 1.2 otherwise; none for pH).

    Returns
    -------
    dict
        ``n``, ``n_exceed`` (exceeding the limit: above it, or outside the range),
        ``trc_factor`` and ``trc_limit`` (None for pH), ``n_trc`` (equal or exceeding the
        product, exactly), percentages, ``chronic``, ``trc``, ``snc``.
    """
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    if parameter in NO_TRC and not isinstance(limit, Range):
        raise ValueError(f"{parameter}: pH is judged against its range (a Range), not one number")
    if isinstance(limit, Range):
        out = _OPS[limit.low_op](v, limit.low) | _OPS[limit.high_op](v, limit.high)
        n_exceed = int(np.count_nonzero(out))
    else:
        n_exceed = int(np.count_nonzero(v > limit))
    factor = trc_factor(parameter)
    if factor is None or isinstance(limit, Range):
        factor_f = trc_limit = None
        n_trc = 0
    else:
        boundary = trc_boundary(limit, factor)
        n_trc = int(np.count_nonzero(v >= boundary))
        factor_f, trc_limit = float(factor), float(_decimal(limit) * factor)
    # integer comparisons: exactly 66 % (33 of 50) is chronic, exactly 33 % is TRC
    chronic = n > 0 and n_exceed * 100 >= CHRONIC_PERCENT * n
    trc = factor_f is not None and n > 0 and n_trc * 100 >= TRC_PERCENT * n
    return {"n": n, "n_exceed": n_exceed, "percent_exceed": 100.0 * n_exceed / n if n else 0.0,
            "trc_factor": factor_f, "trc_limit": trc_limit, "n_trc": n_trc,
            "percent_trc": 100.0 * n_trc / n if n else 0.0,
            "chronic": bool(chronic), "trc": bool(trc), "snc": bool(chronic or trc)}


def half_year(t: np.ndarray, tz=None) -> np.ndarray:
    """Start of the calendar half-year of each ``datetime64`` [UTC] (``datetime64[M]``): of its
    local day in ``tz`` (UTC without one)."""
    if tz is not None:
        t = core.local_day(t.astype("datetime64[us]").astype(np.int64), tz).astype("datetime64[D]")
    months = t.astype("datetime64[M]").astype(np.int64)  # months since 1970-01
    return (months - months % 6).astype("datetime64[M]")


def _instant(month: np.datetime64, tz) -> str:
    """The first instant of a month in ``tz`` (UTC without one), ISO UTC."""
    if tz is None:
        return iso(month.astype("datetime64[s]"))
    d = date.fromisoformat(str(month.astype("datetime64[D]")))
    return datetime(d.year, d.month, d.day, tzinfo=tz).astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def snc(table: LabTable, limits: dict[str, float | Range], non_detect: str = DEFAULT_COMPLIANCE,
        tz=None) -> list[dict]:
    """SNC per site, parameter and six-month window.

    Parameters
    ----------
    table : LabTable
        Lab results (pH results in pH units).
    limits : dict
        parameter -> numeric limit [mg/l], or for pH its :class:`Range` (the ordinance's or
        the permit's).
    tz : zoneinfo.ZoneInfo, optional
        The village's time zone: the half-years are of its local days.

    Returns
    -------
    list of dict
        One per (site, parameter, window) with measurements: the counts of
        :func:`snc_counts` plus ``site``, ``parameter``, ``limit`` (a number, or
        ``[low, high]``), ``window_start``, ``window_end`` (exclusive), ``citation``.
    """
    out = []
    if len(table) == 0:
        return out
    windows = half_year(table.collected, tz)
    values = substitute(table.value_mg_l, table.non_detect, non_detect)
    for parameter, limit in sorted(limits.items()):
        pm = table.analyte == parameter
        for site in sorted(set(table.site[pm])):
            sm = pm & (table.site == site)
            for w in np.unique(windows[sm]):
                m = sm & (windows == w)
                res = snc_counts(values[m], limit, parameter)
                end = w + np.timedelta64(6, "M")
                out.append({"site": site, "parameter": parameter,
                            "limit": [limit.low, limit.high] if isinstance(limit, Range) else float(limit),
                            "window_start": _instant(w, tz), "window_end": _instant(end, tz),
                            "citation": CITATION, **res})
    return out


def pack_limits(pack: str, permit: Permit | None = None) -> dict[str, float | Range]:
    """The numeric limits SNC is judged against at a site of ``pack``: the lab limits (e.g.
    palmyra-wi: fog 100, cn 0.5 mg/l; a permit's daily maximum where it has one for the
    analyte, else its other limit) and the pH range (palmyra-wi §13.48(2)(g): 6.0 to 9.0),
    the stricter of ordinance and ``permit`` where both limit one (:func:`lab.ordinance.site_rules`)."""
    out: dict[str, float | Range] = {}
    # the per-sample (daily maximum) limit last, so it wins; of limits by sample type, the one
    # naming none or composites (the daily maximum a 24-hour sample is judged by) over a grab's
    for lim in sorted(lab_limits(pack, permit), key=lambda x: (x.statistic in ("each", "daily-maximum"),
                                                               x.sample_type != "grab")):
        out[lim.analyte] = lim.limit
    rules = site_rules(pack, permit)
    ph = [r for r in rules if r.kind == "range" and r.parameter == "ph"]
    low = next((r for r in ph if r.op in ("<", "<=")), None)
    high = next((r for r in ph if r.op in (">", ">=")), None)
    if low is not None and high is not None:
        out["ph"] = Range(low.limit_canonical, high.limit_canonical, low.op, high.op)
    return out
