"""The loadings chart of a bill: every lab result of the quarter that the bill's table lists,
drawn with matplotlib's object API (no pyplot, so no global backend state).

Where the quarter's volume is known, each result is drawn as its loading [lb/day] (the
result's concentration x its day's volume x 8.34); where it is not (a draft bill whose
meter covered too little of the quarter), as its concentration [mg/l] on a log axis, and
the chart says why. Either way the chart shows as many points as the table has results:
:func:`chart_series` is what is drawn and the tests count it. The legend stands to the
right of the axes, outside them, so it never covers a point.

The SVG is reproducible: no date in its metadata and a fixed salt for its element ids.
"""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.figure import Figure

#: The salt of the SVG's element ids (matplotlib's ``svg.hashsalt``): same chart, same bytes.
SVG_SALT = "sewerwatch"


def chart_series(bill: dict) -> dict:
    """What the chart draws: ``kind`` (``loadings`` or ``concentrations``), ``unit``, ``note``
    and ``series`` (analyte -> sorted list of ``(date, value, non_detect)``)."""
    by: dict[str, list] = {}
    if bill["loadings"] and len(bill["loadings"]) == len(bill["results"]):
        kind, unit, note = "loadings", "lb/day", None
        for x in bill["loadings"]:
            by.setdefault(x["analyte"], []).append((x["date"], x["lb_per_day"], x["non_detect"]))
    else:
        kind, unit, note = "concentrations", "mg/l", None
        if bill["results"]:
            note = (f"a loading needs its day's volume: {len(bill['loadings'])} of {len(bill['results'])} results "
                    "have one (the quarter's volume is unknown), so the results are drawn as concentrations")
        for r in bill["results"]:
            by.setdefault(r["analyte"], []).append((r.get("local_date") or r["collected"][:10],
                                                   r["mg_l"], r["non_detect"]))
    return {"kind": kind, "unit": unit, "note": note, "series": {a: sorted(p) for a, p in sorted(by.items())}}


def loadings_figure(bill: dict) -> Figure:
    """The chart as a matplotlib figure (:func:`loadings_svg` draws it as SVG; the page prints
    :func:`chart_series`'s ``note`` under it).

    Parameters
    ----------
    bill : dict
        A bill (:func:`lab.billing.bill_site`): ``loadings`` (``date``, ``analyte``,
        ``lb_per_day`` [lb/day]), ``results``, ``period_start``, ``period_end``, ``name``,
        ``quarter``.
    """
    what = chart_series(bill)
    fig = Figure(figsize=(7.0, 3.0), dpi=100)
    ax = fig.subplots()
    for analyte, pts in what["series"].items():
        x = [np.datetime64(p[0]) for p in pts]
        y = [p[1] for p in pts]
        line, = ax.plot(x, y, marker="o", label=analyte)
        nd = [i for i, p in enumerate(pts) if p[2]]
        if nd:   # a non-detect: an open marker at the value it counts as
            ax.plot([x[i] for i in nd], [y[i] for i in nd], linestyle="none", marker="o", markersize=9,
                    markerfacecolor="white", markeredgecolor=line.get_color())
    ax.set_xlim(np.datetime64(bill["period_start"][:10]), np.datetime64(bill["period_end"][:10]))
    if what["kind"] == "loadings":
        ax.set_ylabel("loading [lb/day]")
        ax.set_ylim(bottom=0)
    else:
        ax.set_ylabel("concentration [mg/l]")
        if any(v > 0 for pts in what["series"].values() for _d, v, _n in pts):
            ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_title(f"{bill['name']}: {'loadings' if what['kind'] == 'loadings' else 'lab results'} {bill['quarter']}",
                 fontsize=10)
    if what["series"]:
        # outside the axes, to the right: a legend never covers a point
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no lab results this quarter", ha="center", va="center", transform=ax.transAxes)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def loadings_svg(bill: dict) -> str:
    """The ``<svg>`` element of a bill's chart (see :func:`loadings_figure`)."""
    fig = loadings_figure(bill)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, transparent=True)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]
