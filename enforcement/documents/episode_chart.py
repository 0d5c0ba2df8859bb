"""The evidence chart of a notice: the episode's readings with the limit drawn.

From the notice's stored evidence alone (``points``: ISO instants and values in the
parameter's canonical unit), so the chart is redrawn the same from the database. Times are
the village's local clock. The limit is a dashed line named with the ordinance's comparison,
the episode is shaded, the peak marked; a maintenance window in effect is
hatched grey with the readings taken in it (never judged) drawn grey; the legend stands right
of the axes and covers no reading. matplotlib's object API (no pyplot); the SVG carries no date and a fixed id salt.
"""

from __future__ import annotations

import io
from datetime import datetime
from zoneinfo import ZoneInfo

import matplotlib
from matplotlib.dates import AutoDateLocator, DateFormatter
from matplotlib.figure import Figure

from lab.documents.loadings_chart import SVG_SALT

PARAMETER_NAMES = {"ph": "pH", "temperature": "temperature", "flow": "flow", "level": "level"}


def _local(iso: str, tz: ZoneInfo) -> datetime:
    """A naive local datetime (matplotlib draws it as given) of an ISO instant."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(tz).replace(tzinfo=None)


def episode_figure(evidence: dict, tz_name: str) -> Figure:
    """The chart as a figure (see the module docstring).

    Parameters
    ----------
    evidence : dict
        A notice's readings evidence: ``points``, ``limit``, ``comparison``, ``unit``,
        ``parameter``, ``start``, ``end``, ``peak``, ``peak_time``, ``sensor``.
    tz_name : str
        The village's time zone.
    """
    tz = ZoneInfo(tz_name)
    fig = Figure(figsize=(7.2, 3.0), dpi=100)
    ax = fig.subplots()
    t = [_local(p[0], tz) for p in evidence["points"]]
    y = [p[1] for p in evidence["points"]]
    wins = evidence.get("maintenance") or []
    # the line breaks at each maintenance window: nothing in it was judged
    line = sorted([(a, b) for a, b in zip(t, y)] + [(_local(w["start"], tz), float("nan")) for w in wins],
                  key=lambda p: p[0])
    unit = evidence.get("unit") or ""
    name = PARAMETER_NAMES.get(evidence["parameter"], evidence["parameter"])
    ax.plot([p[0] for p in line], [p[1] for p in line], color="#1d3d63", linewidth=1.2, marker="." if len(t) < 200 else None, markersize=3,
            label=f"{evidence.get('sensor') or name} readings")
    if evidence.get("limit") is not None:
        ax.axhline(evidence["limit"], color="#b00000", linestyle="--", linewidth=1.2,
                   label=f"limit: {evidence.get('comparison') or ''} {evidence['limit']:g} {unit}".replace("  ", " "))
    ax.axvspan(_local(evidence["start"], tz), _local(evidence["end"], tz), color="#b00000", alpha=0.08,
               label="the episode")
    mp = evidence.get("maintenance_points") or []
    if mp:
        ax.plot([_local(p[0], tz) for p in mp], [p[1] for p in mp], color="#8a8f96", linewidth=0, marker=".",
                markersize=3, label="readings in maintenance (not judged)")
    for i, w in enumerate(wins):
        a = _local(w["start"], tz)
        b = _local(w["end"], tz) if w.get("end") else _local(evidence.get("to") or evidence["end"], tz)
        ax.axvspan(a, b, facecolor=(0.54, 0.56, 0.59, 0.15), hatch="///", edgecolor=(0.36, 0.40, 0.45, 0.6),
                   linewidth=0.0, label=f"maintenance window ({w['reason']})" if i == 0 else None)
    if evidence.get("peak_time") and evidence.get("peak") is not None:
        ax.plot([_local(evidence["peak_time"], tz)], [evidence["peak"]], marker="o", color="#b00000", linestyle="none",
                label=f"peak {evidence['peak']:g} {unit}")
    if t:
        ax.set_xlim(min(t), max(t))
    ax.set_ylabel(f"{name} [{unit}]" if unit else name)
    ax.set_xlabel(f"local time ({tz_name})")
    ax.xaxis.set_major_locator(AutoDateLocator(maxticks=8))
    ax.xaxis.set_major_formatter(DateFormatter("%m-%d %H:%M"))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7.5, frameon=False)
    if not t:
        ax.text(0.5, 0.5, "no readings stored for this episode", ha="center", va="center", transform=ax.transAxes)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def episode_svg(evidence: dict, tz_name: str) -> str:
    """The ``<svg>`` element of :func:`episode_figure`."""
    fig = episode_figure(evidence, tz_name)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, transparent=True)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]
