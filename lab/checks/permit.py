"""Whether a user needs a wastewater discharge permit (palmyra-wi §13.54(1)).

A permit is required when the discharge has a BOD above 250 mg/l, suspended solids above
250 mg/l, TKN above 40 mg/l, total phosphorus above 7 mg/l (judged here on the average of
the user's results over the period, non-detects at their detection limit by default), or a
volume of 5,000 gallons a day or more (judged on the average daily volume from the metered
flow).

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(1)(a)-(e).
"""

from __future__ import annotations

import numpy as np

from lab.checks.compliance import VIOLATES

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import permit_thresholds
from lab.results_table import LabTable


def permit_required(table: LabTable, site: str, pack: str, daily_volumes_gal=None,
                    non_detect: str = DEFAULT_COMPLIANCE) -> dict:
    """Decide whether ``site`` needs a discharge permit under ``pack``.

    Parameters
    ----------
    table : LabTable
        Lab results (any sites; only ``site``'s are used).
    daily_volumes_gal : array_like, optional
        The site's metered volume of each whole day of the period [gal/day].

    Returns
    -------
    dict
        ``required`` (bool), ``reasons`` (the criteria met, each with value, threshold and
        citation) and ``checked`` (every criterion looked at).
    """
    conc, vol = permit_thresholds(pack)
    sel = table.select(table.site == site)
    checked, reasons = [], []
    for analyte, th in conc.items():
        m = sel.analyte == analyte
        if not m.any():
            continue
        avg = float(substitute(sel.value_mg_l[m], sel.non_detect[m], non_detect).mean())
        item = {"criterion": analyte, "value": avg, "statistic": "average", "unit": "mg/l",
                "threshold": th.value, "comparison": th.op, "citation": th.citation, "results": int(m.sum())}
        checked.append(item)
        if VIOLATES[th.op](avg, th.value):
            reasons.append(item)
    if vol is not None and daily_volumes_gal is not None and len(daily_volumes_gal):
        d = np.asarray(daily_volumes_gal, dtype=np.float64)
        avg = float(d.mean())
        item = {"criterion": "volume", "value": avg, "statistic": "average daily", "unit": "gal/d",
                "max_day": float(d.max()), "days": int(len(d)), "threshold": vol.value,
                "comparison": vol.op, "citation": vol.citation}
        checked.append(item)
        if VIOLATES[vol.op](avg, vol.value):
            reasons.append(item)
    return {"site": site, "pack": pack, "required": bool(reasons), "reasons": reasons, "checked": checked}
