"""Render the dashboards' panels to PNG with matplotlib, from the same SQL Grafana runs.

Each panel's queries are expanded by :mod:`dashboards.macros` and run as the read-only
grafana role; the panels are laid out on Grafana's 24-column grid. Time series draw their
series (``metric`` column or value columns), thresholds from a ``configFromData`` query
as dashed red lines; tables show their first rows; stats show their value. One PNG per
dashboard, so a reader without Grafana sees what the superintendent sees.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Mapping

import matplotlib
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import matplotlib.ticker
import psycopg
from matplotlib.gridspec import GridSpec

from dashboards import queries as dq
from dashboards.definitions import build_all
from foundation import moments
from foundation.errors import DatabaseError, InputError

TABLE_ROWS = 12
#: a panel's ``interval`` (the bucket width of its query) as a bar width
PANEL_INTERVALS = {"1d": timedelta(days=1), "1M": timedelta(days=30)}
ROW_IN = 0.42          # inches per grid row
WIDTH_IN = 22.0


def parse_time(text: str, where: str, tz=timezone.utc) -> datetime:
    """A date or time (:func:`foundation.moments.instant`: a date is local midnight in ``tz``,
    the village's time zone; a time without an offset its clock)."""
    return moments.instant(text, where, tz)


def _range(dashboard: dict, tf: datetime | None, tt: datetime | None) -> tuple[datetime, datetime]:
    tt = tt or datetime.now(timezone.utc)
    if tf is None:
        spec = dashboard.get("time", {}).get("from", "now-24h")
        n, unit = int(spec[4:-1]), spec[-1]
        tf = tt - {"h": timedelta(hours=n), "d": timedelta(days=n), "y": timedelta(days=365 * n)}[unit]
    if not tf < tt:
        raise InputError(f"--from must be before --to (got {tf.isoformat()} and {tt.isoformat()})")
    return tf, tt


def _num(x):
    return float(x) if isinstance(x, (int, float, Decimal)) and not isinstance(x, bool) else None


#: Grafana's unit ids (``fieldConfig.defaults.unit``) as a reader says them
UNIT_WORDS = {"flowgpm": "gallons per minute", "masslb": "pounds", "fahrenheit": "°F", "celsius": "°C",
              "s": "seconds", "percent": "%", "currencyUSD": "dollars", "flowcms": "m³/s"}


def unit_words(unit: str | None) -> str | None:
    """A panel's unit in words (``flowgpm`` -> ``gallons per minute``); None for plain numbers."""
    if not unit or unit in ("short", "none"):
        return None
    return UNIT_WORDS.get(unit, unit)


def duration(seconds: float) -> str:
    """A duration as a person reads it: ``45 s``, ``12 min``, ``3.5 h``, ``1 d``, ``180 d``."""
    s = abs(seconds)
    for limit, div, unit in ((120, 1, "s"), (7200, 60, "min"), (2 * 86400, 3600, "h")):
        if s < limit:
            return f"{seconds / div:.3g} {unit}"
    return f"{seconds / 86400:,.3g} d" if s < 1000 * 86400 else f"{seconds / 86400:,.0f} d"


def number(x: float) -> str:
    """A number without exponents for the sizes a dashboard shows (``86,400``, ``7.21``)."""
    if x != x:
        return "NaN"
    if abs(x) >= 1e4:
        return f"{x:,.0f}" if abs(x) < 1e15 else f"{x:.4g}"
    return f"{x:.4g}"


def _cell(x, column: str = "") -> str:
    if x is None:
        return ""
    if isinstance(x, datetime):
        return x.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
    if isinstance(x, (int, float, Decimal)) and not isinstance(x, bool):
        if column.endswith("[s]"):
            return duration(float(x))
        return number(float(x)) if not isinstance(x, int) else f"{x:,}" if abs(x) >= 1e4 else str(x)
    s = str(x)
    return s if len(s) <= 40 else s[:37] + "..."


def _header(column: str) -> str:
    """A column header; an ``[s]`` column is shown as a duration, so its unit goes."""
    return column[:-3].rstrip() if column.endswith("[s]") else column


def describe_variables(variables: Mapping | None) -> str:
    """The chosen template variables in words: ``site: all``, ``site: site-001, site-002``."""
    out = []
    for name, var in (variables or {}).items():
        value = getattr(var, "value", var)
        if value == "$__all":
            shown = "all"
        elif isinstance(value, (list, tuple)):
            shown = ", ".join(map(str, value))
        else:
            shown = str(value)
        out.append(f"{name}: {shown}")
    return "; ".join(out)


def _series(result) -> dict[str, tuple[list, list]]:
    """Grafana's long-to-wide: one series per metric value (or per value column)."""
    cols = result.columns
    ti = cols.index("time")
    mi = cols.index("metric") if "metric" in cols else None
    out: dict[str, tuple[list, list]] = {}
    for row in result.rows:
        for j, name in enumerate(cols):
            if j in (ti, mi):
                continue
            v = _num(row[j])
            if v is None and row[j] is not None:
                continue
            key = (str(row[mi]) if mi is not None else name) if len([c for c in range(len(cols)) if c not in (ti, mi)]) == 1 \
                else f"{row[mi]} {name}" if mi is not None else name
            xs, ys = out.setdefault(key, ([], []))
            xs.append(row[ti])
            ys.append(v)
    return out


def _draw_timeseries(ax, panel, results, tf: datetime, tt: datetime):

    bars = panel.get("fieldConfig", {}).get("defaults", {}).get("custom", {}).get("drawStyle") == "bars"
    config_ref = {t["options"]["configRefId"]: t["options"] for t in panel.get("transformations", [])
                  if t.get("id") == "configFromData"}
    drawn = 0
    series = []
    for res in results:
        if res.query.ref_id in config_ref:
            opts = config_ref[res.query.ref_id]
            row = dict(zip(res.columns, res.rows[0])) if res.rows else {}
            for m in opts["mappings"]:
                v = _num(row.get(m["fieldName"]))
                if m.get("handlerKey") == "threshold1" and v is not None:
                    ax.axhline(v, color="red", linestyle="--", linewidth=1)
                    ax.annotate(f"{m['fieldName']} {v:g}", (0.995, v), xycoords=("axes fraction", "data"),
                                color="red", fontsize=7, va="bottom", ha="right")
            continue
        if "time" in res.columns:
            series.extend(sorted(_series(res).items()))
    if bars and series:
        # bars side by side: the bucket spacing shared among the series
        xs_all = sorted({x for _, (xs, _) in series for x in xs})
        gaps = [(b - a).total_seconds() for a, b in zip(xs_all, xs_all[1:])]
        # one bucket: the panel's own interval (Grafana's "min interval") says how wide
        spacing = (timedelta(seconds=min(gaps)) if gaps
                   else PANEL_INTERVALS.get(panel.get("interval"), timedelta(days=1)))
        width = spacing * 0.8 / len(series)
    for k, (name, (xs, ys)) in enumerate(series):
        if bars:
            ax.bar([x + width * k for x in xs], [y or 0 for y in ys], width=width, align="edge", label=name)
        else:
            style = {"linestyle": "--", "color": "red"} if "slug line" in name else {}
            ax.plot(xs, ys, linewidth=1, label=name, **style)
        drawn += 1
    # the dashboard's range, as Grafana shows it (a bucket that starts before it, a month's
    # bar, widens it so the bar is whole)
    lo, hi = tf, tt
    if series:
        xs_all = [x for _, (xs, _) in series for x in xs]
        lo = min(lo, min(xs_all))
        hi = max(hi, max(xs_all) + (width * len(series) if bars else timedelta(0)))
    ax.set_xlim(lo, hi)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    if drawn:
        ax.legend(fontsize=7, loc="best", framealpha=0.8)   # where it covers the least data
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    words = unit_words(panel.get("fieldConfig", {}).get("defaults", {}).get("unit"))
    if words:
        ax.set_ylabel(words, fontsize=8)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: number(v)))
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def _draw_table(ax, results):
    ax.axis("off")
    res = results[0] if results else None
    if not res or not res.rows:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
        return
    rows = [[_cell(x, c) for x, c in zip(r, res.columns)] for r in res.rows[:TABLE_ROWS]]
    table = ax.table(cellText=rows, colLabels=[_header(c) for c in res.columns], loc="upper center",
                     cellLoc="left")
    table.auto_set_font_size(False)
    # every column as wide as its longest text, header included, so no header is cut; a
    # table wider than its panel gets a smaller font (about 0.55 em a character)
    widest = [max([len(_header(c))] + [len(r[j]) for r in rows]) for j, c in enumerate(res.columns)]
    room_pt = ax.get_position().width * ax.figure.get_figwidth() * 72
    table.set_fontsize(max(5.0, min(7.0, room_pt / (sum(w + 2 for w in widest) * 0.55))))
    table.auto_set_column_width(list(range(len(res.columns))))
    if len(res.rows) > TABLE_ROWS:
        ax.text(1, 0, f"{len(res.rows) - TABLE_ROWS} more rows", ha="right", va="bottom",
                transform=ax.transAxes, fontsize=7, color="grey")


def _draw_stat(ax, panel, results):
    ax.axis("off")
    res = results[0] if results else None
    value = _num(res.rows[-1][-1]) if res and res.rows else None
    color = "grey"
    if value is not None:
        for step in panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", []):
            if step["value"] is None or value >= step["value"]:
                color = step["color"]
    ax.set_facecolor("white")
    ax.text(0.5, 0.45, "-" if value is None else number(value), ha="center", va="center",
            fontsize=28, color=color, transform=ax.transAxes, weight="bold")


def render(dashboard: dict, results: list, path: str | os.PathLike, tf: datetime, tt: datetime,
           variables: Mapping | None = None) -> Path:
    """Draw one dashboard's panels from their query results into ``path`` (PNG)."""

    matplotlib.use("Agg")

    panels = dashboard["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    fig = plt.figure(figsize=(WIDTH_IN, rows * ROW_IN + 1.0), layout="constrained")
    grid = GridSpec(rows, 24, figure=fig)
    chosen = describe_variables(variables)
    fig.suptitle(f"{dashboard['title']}   {tf:%Y-%m-%d %H:%M} to {tt:%Y-%m-%d %H:%M} UTC"
                 + (f"   ({chosen})" if chosen else ""), fontsize=12, x=0.01, ha="left")
    for p in panels:
        g = p["gridPos"]
        ax = fig.add_subplot(grid[g["y"]:g["y"] + g["h"], g["x"]:g["x"] + g["w"]])
        ax.set_title(p["title"], fontsize=9, loc="left")
        mine = [r for r in results if r.query.panel_id == p["id"]]
        if p["type"] == "timeseries":
            _draw_timeseries(ax, p, mine, tf, tt)
        elif p["type"] == "table":
            _draw_table(ax, mine)
        else:
            _draw_stat(ax, p, mine)
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _check_choices(vars_: Mapping, choices: Mapping) -> None:
    """A chosen value the variable's own query does not offer is a typo, not an empty page."""
    for name, value in choices.items():
        var = vars_.get(name)
        if var is None:
            continue
        unknown = [v for v in (value if isinstance(value, list) else [value]) if v not in var.options]
        if unknown:
            known = ", ".join(var.options) or "none: the database has no sites yet"
            raise InputError(f"--{name}: unknown {name} {', '.join(map(repr, unknown))} (known: {known})")


def render_all(directory: str | os.PathLike, db_url: str, tf: datetime | None = None,
               tt: datetime | None = None, choices: Mapping | None = None) -> list[Path]:
    """Render every dashboard to ``DIR/<uid>.png``; return the files."""


    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    try:
        conn = psycopg.connect(db_url, autocommit=True)
    except psycopg.OperationalError as exc:
        first = (str(exc).strip().splitlines() or ["unreachable"])[0]
        raise DatabaseError(f"cannot connect to the database ({first}); is it running? "
                            "try 'sewerwatch services up'") from None
    with conn:
        ts = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'").fetchone() is not None
        for dash in (d.to_json() for d in build_all(timescaledb=ts)):
            a, b = _range(dash, tf, tt)
            mine = dict(choices or {})
            for v in dash.get("templating", {}).get("list", []):
                if v["name"] in mine and not v.get("multi") and isinstance(mine[v["name"]], list):
                    mine[v["name"]] = mine[v["name"]][0]
            vars_ = dq.variables(dash, conn, mine)
            _check_choices(vars_, mine)
            results = [dq.run(conn, q, a, b, vars_, timescaledb=ts) for q in dq.queries(dash)]
            files.append(render(dash, results, out / f"{dash['uid']}.png", a, b, vars_))
    return files
