"""Prohibitions checked on lab results: fat/oil/grease and cyanide.

Each exceedance becomes a violation shaped like the sensor rules' (``site``, ``parameter``,
``rule``, ``start``, ``end``, ``peak``, ``limit``, ``citation``) plus ``words``, ``unit``,
``pack``, ``days_of_violation``, ``evidence`` and ``source`` = ``lab``.

A rule with statistic ``each`` (the pack's basis ``sample``) judges every result
(webster-wi §240-5 and Superior: "may contain more than 100 ppm"; palmyra-wi §13.48(2)(l)
cyanide "in excess of 0.5 mg/l"); one with ``period-average`` (basis ``average``) judges the
mean of a site's results over the period checked (palmyra-wi §13.48(2)(k): "exceeding on
analysis an average of 100 mg/l"); the caller picks the period by the results it passes.
"""

from __future__ import annotations

import operator

import numpy as np

from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import LabLimit, lab_limits
from lab.results_table import LabTable, iso


def _violation(lim: LabLimit, pack: str, site: str, t0, t1, peak: float, samples, values, nd) -> dict:
    return {
        "site": site, "parameter": lim.analyte, "rule": lim.rule, "start": iso(t0), "end": iso(t1),
        "peak": float(peak), "limit": lim.limit, "unit": lim.unit, "citation": lim.citation,
        "words": lim.words, "pack": pack, "days_of_violation": 1, "source": "lab",
        "evidence": {"statistic": lim.statistic, "samples": [str(s) for s in samples],
                     "values_mg_l": [float(v) for v in values], "non_detect": [bool(x) for x in nd]},
    }


#: operator -> the function telling whether ``value op limit`` holds (a violation, a threshold met)
VIOLATES = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def check_limit(table: LabTable, lim: LabLimit, pack: str, non_detect: str = DEFAULT_COMPLIANCE) -> list[dict]:
    """Violations of one lab limit in ``table`` (all sites), in site and time order."""
    sel = table.select(table.analyte == lim.analyte)
    if len(sel) == 0:
        return []
    values = substitute(sel.value_mg_l, sel.non_detect, non_detect)
    out: list[dict] = []
    violates = VIOLATES[lim.op]
    if lim.statistic == "each":
        for i in np.flatnonzero(violates(values, lim.limit)):
            out.append(_violation(lim, pack, sel.site[i], sel.collected[i], sel.collected[i], values[i],
                                  [sel.sample[i]], [values[i]], [sel.non_detect[i]]))
    elif lim.statistic == "period-average":
        uniq, inv = np.unique(sel.site.astype(str), return_inverse=True)
        means = np.bincount(inv, weights=values, minlength=len(uniq)) / np.bincount(inv, minlength=len(uniq))
        for g in np.flatnonzero(violates(means, lim.limit)):
            m = inv == g
            out.append(_violation(lim, pack, sel.site[m][0], sel.collected[m].min(), sel.collected[m].max(),
                                  means[g], sel.sample[m], values[m], sel.non_detect[m]))
            out[-1]["evidence"]["average_mg_l"] = float(means[g])
    else:
        raise ValueError(f"unknown statistic {lim.statistic!r}")
    out.sort(key=lambda v: (v["site"], v["start"]))
    return out


def check_lab(table: LabTable, pack: str, non_detect: str = DEFAULT_COMPLIANCE) -> list[dict]:
    """Violations of every lab-checked prohibition of ``pack`` in ``table``."""
    out: list[dict] = []
    for lim in lab_limits(pack):
        out.extend(check_limit(table, lim, pack, non_detect))
    out.sort(key=lambda v: (v["site"], v["start"], v["rule"]))
    return out
