"""The loadings chart of a bill: an SVG line chart of each analyte's loading [lb/day] over the
quarter, drawn with matplotlib's object API (no pyplot, so no global backend state)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure


def loadings_svg(bill: dict) -> str:
    """The ``<svg>`` element of a bill's loadings chart.

    Parameters
    ----------
    bill : dict
        A bill (:func:`lab.billing.bill_site`): ``loadings`` (``date``, ``analyte``,
        ``lb_per_day`` [lb/day]), ``period_start``, ``period_end``, ``name``, ``quarter``.
    """
    fig = Figure(figsize=(7.0, 3.0), dpi=100)
    ax = fig.subplots()
    by = {}
    for x in bill["loadings"]:
        by.setdefault(x["analyte"], []).append((np.datetime64(x["date"]), x["lb_per_day"]))
    for analyte, pts in sorted(by.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=analyte)
    ax.set_ylabel("loading [lb/day]")
    ax.set_xlim(np.datetime64(bill["period_start"][:10]), np.datetime64(bill["period_end"][:10]))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{bill['name']}: loadings {bill['quarter']}")
    if by:
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no lab results this quarter", ha="center", va="center", transform=ax.transAxes)
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]
