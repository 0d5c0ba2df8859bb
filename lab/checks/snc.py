"""EPA significant noncompliance (SNC) of an industrial user over six-month windows.

Chronic violation: 66 % or more of all the measurements of a pollutant parameter in a
six-month period exceed (by any magnitude) the numeric limit. Technical review criteria
(TRC) violation: 33 % or more of the measurements equal or exceed the limit multiplied by
1.4 for BOD, TSS and fat/oil/grease, 1.2 for all other pollutants. pH is excluded.
Windows are calendar half-years (January-June, July-December, UTC).

References
----------
40 CFR 403.8(f)(2)(viii)(A) and (B) (EPA General Pretreatment Regulations), as the issue
asks; the limits are the ordinance's (e.g. palmyra-wi, 003_44f871d49a02d8f5.txt
§13.48(2)(k), (l)) or a user's permit.
"""

from __future__ import annotations

import numpy as np

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import lab_limits
from lab.results_table import LabTable, iso

CHRONIC_PERCENT = 66
TRC_PERCENT = 33
#: TRC multiplier per parameter; every other parameter 1.2; pH has none (excluded)
TRC_FACTOR = {"bod5": 1.4, "tss": 1.4, "fog": 1.4}
TRC_FACTOR_OTHER = 1.2
EXCLUDED = ("ph",)
CITATION = "40 CFR 403.8(f)(2)(viii)(A)-(B)"
#: relative tolerance when a value is compared with factor × limit (140 vs 1.4 × 100)
_RTOL = 1e-9


def trc_factor(parameter: str) -> float:
    return TRC_FACTOR.get(parameter, TRC_FACTOR_OTHER)


def snc_counts(values, limit: float, parameter: str) -> dict:
    """SNC of one parameter's measurements of one window.

    Parameters
    ----------
    values : array_like
        The window's measurements [limit's unit].
    limit : float
        The numeric limit.
    parameter : str
        Picks the TRC factor (1.4 for bod5, tss, fog; 1.2 otherwise).

    Returns
    -------
    dict
        ``n``, ``n_exceed`` (> limit), ``n_trc`` (>= factor × limit), percentages,
        ``chronic``, ``trc``, ``snc``.
    """
    if parameter in EXCLUDED:
        raise ValueError("pH is excluded from the SNC criteria")
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    factor = trc_factor(parameter)
    trc_limit = factor * limit
    n_exceed = int(np.count_nonzero(v > limit))
    n_trc = int(np.count_nonzero(v >= trc_limit - _RTOL * abs(trc_limit)))
    # integer comparisons: exactly 66 % (33 of 50) is chronic, exactly 33 % is TRC
    chronic = n > 0 and n_exceed * 100 >= CHRONIC_PERCENT * n
    trc = n > 0 and n_trc * 100 >= TRC_PERCENT * n
    return {"n": n, "n_exceed": n_exceed, "percent_exceed": 100.0 * n_exceed / n if n else 0.0,
            "trc_factor": factor, "trc_limit": trc_limit, "n_trc": n_trc,
            "percent_trc": 100.0 * n_trc / n if n else 0.0,
            "chronic": bool(chronic), "trc": bool(trc), "snc": bool(chronic or trc)}


def half_year(t: np.ndarray) -> np.ndarray:
    """Start of the calendar half-year of each ``datetime64`` (``datetime64[M]``)."""
    months = t.astype("datetime64[M]").astype(np.int64)  # months since 1970-01
    return (months - months % 6).astype("datetime64[M]")


def snc(table: LabTable, limits: dict[str, float], non_detect: str = DEFAULT_COMPLIANCE) -> list[dict]:
    """SNC per site, parameter and six-month window.

    Parameters
    ----------
    table : LabTable
        Lab results.
    limits : dict
        parameter -> numeric limit [mg/l] (the ordinance's or the permit's).

    Returns
    -------
    list of dict
        One per (site, parameter, window) with measurements: the counts of
        :func:`snc_counts` plus ``site``, ``parameter``, ``limit``, ``window_start``,
        ``window_end`` (exclusive), ``citation``.
    """
    out = []
    if len(table) == 0:
        return out
    windows = half_year(table.collected)
    values = substitute(table.value_mg_l, table.non_detect, non_detect)
    for parameter, limit in sorted(limits.items()):
        if parameter in EXCLUDED:
            continue
        pm = table.analyte == parameter
        for site in sorted(set(table.site[pm])):
            sm = pm & (table.site == site)
            for w in np.unique(windows[sm]):
                m = sm & (windows == w)
                res = snc_counts(values[m], limit, parameter)
                end = w + np.timedelta64(6, "M")
                out.append({"site": site, "parameter": parameter, "limit": float(limit),
                            "window_start": iso(w.astype("datetime64[s]")),
                            "window_end": iso(end.astype("datetime64[s]")),
                            "citation": CITATION, **res})
    return out


def pack_limits(pack: str) -> dict[str, float]:
    """The numeric lab limits of ``pack`` (e.g. palmyra-wi: fog 100, cn 0.5 mg/l)."""
    return {lim.analyte: lim.limit for lim in lab_limits(pack)}
