"""Plain builders for Grafana dashboard JSON (dashboard schema version 41).

Small functions that return the dicts Grafana stores, for the three panel types the
dashboards use (``timeseries``, ``table``, ``stat``). The output is checked against
Grafana's own JSON schemas (``../shared/grafana-jsonschema``, the grafana-foundation-sdk
build 1769699241) by the tests; these builders exist instead of the SDK because the
dashboards need a handful of fields and the JSON is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Grafana's PostgreSQL data source plugin id (the core plugin since Grafana 10.2).
DATASOURCE_TYPE = "grafana-postgresql-datasource"
#: The data source uid the provisioning file creates and the panels refer to.
DATASOURCE_UID = "sewerwatch-timescaledb"
DATASOURCE_NAME = "sewerwatch TimescaleDB"
SCHEMA_VERSION = 41

DS = {"type": DATASOURCE_TYPE, "uid": DATASOURCE_UID}


@dataclass
class Target:
    """One SQL query of a panel.

    Attributes
    ----------
    ref_id : str
        ``A``, ``B``, ...
    sql : str
        Raw SQL with Grafana macros and template variables.
    format : str
        ``"time_series"`` (needs a ``time`` column) or ``"table"``.
    """

    ref_id: str
    sql: str
    format: str = "time_series"

    def to_json(self) -> dict:
        return {
            "refId": self.ref_id, "datasource": dict(DS), "editorMode": "code",
            "format": self.format, "rawQuery": True, "rawSql": self.sql.strip(),
        }


@dataclass
class Panel:
    """A panel: its type, title, queries, grid position and plugin options."""

    type: str
    title: str
    targets: list[Target]
    grid: tuple[int, int, int, int]          # x, y, w, h
    description: str = ""
    options: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    overrides: list = field(default_factory=list)
    transformations: list = field(default_factory=list)
    id: int = 0
    interval: str | None = None              # Grafana's "min interval": the query's bucket width


    def to_json(self) -> dict:
        x, y, w, h = self.grid
        out = {
            "type": self.type, "id": self.id, "title": self.title,
            "datasource": dict(DS),
            "gridPos": {"x": x, "y": y, "w": w, "h": h},
            "targets": [t.to_json() for t in self.targets],
            "options": self.options,
            "fieldConfig": {"defaults": self.defaults, "overrides": self.overrides},
        }
        if self.description:
            out["description"] = self.description
        if self.transformations:
            out["transformations"] = self.transformations
        if self.interval:
            out["interval"] = self.interval
        return out


def thresholds(*steps: tuple[float | None, str]) -> dict:
    """Absolute threshold steps; the first step's value is ``None`` (minus infinity)."""
    return {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in steps]}


def timeseries(title: str, targets: list[Target], grid, *, unit: str = "short",
               description: str = "", draw: str = "line", threshold_style: str = "off",
               steps: dict | None = None, overrides: list | None = None,
               transformations: list | None = None, interval: str | None = None) -> Panel:
    """A ``timeseries`` panel (``draw`` is ``line`` or ``bars``; ``interval``: a fixed bucket
    width of its query, e.g. ``1d``, as Grafana's min interval)."""
    custom = {
        "drawStyle": draw, "lineWidth": 1, "fillOpacity": 80 if draw == "bars" else 10,
        "showPoints": "never", "spanNulls": False, "lineInterpolation": "linear",
        "axisPlacement": "auto", "gradientMode": "none",
        "thresholdsStyle": {"mode": threshold_style},
    }
    return Panel("timeseries", title, targets, grid, description,
                 options={"legend": {"displayMode": "list", "placement": "bottom",
                                     "showLegend": True, "calcs": []},
                          "tooltip": {"mode": "multi", "sort": "none"}},
                 defaults={"unit": unit, "custom": custom,
                           "thresholds": steps or thresholds((None, "green"))},
                 overrides=overrides or [], transformations=transformations or [], interval=interval)


def table(title: str, targets: list[Target], grid, *, description: str = "",
          overrides: list | None = None, sort_by: str | None = None, desc: bool = True,
          mappings: list | None = None) -> Panel:
    """A ``table`` panel."""
    options = {"frameIndex": 0, "showHeader": True, "cellHeight": "sm",
               "footer": {"show": False, "reducer": ["sum"], "countRows": False}}
    if sort_by:
        options["sortBy"] = [{"displayName": sort_by, "desc": desc}]
    return Panel("table", title, targets, grid, description, options=options,
                 defaults={"custom": {"align": "auto", "inspect": False},
                           "thresholds": thresholds((None, "green")),
                           **({"mappings": mappings} if mappings else {})},
                 overrides=overrides or [])


def stat(title: str, targets: list[Target], grid, *, description: str = "", unit: str = "short",
         steps: dict | None = None) -> Panel:
    """A ``stat`` panel showing the last value of its query."""
    return Panel("stat", title, targets, grid, description,
                 options={"graphMode": "none", "colorMode": "background", "justifyMode": "auto",
                          "textMode": "value", "wideLayout": True, "showPercentChange": False,
                          "percentChangeColorMode": "standard", "orientation": "auto",
                          "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
                 defaults={"unit": unit, "thresholds": steps or thresholds((None, "green"))})


def override_by_names(names: list[str], **properties) -> dict:
    """Field override for the fields called ``names``.

    Grafana's schema types a matcher's options and a property's value as objects, so
    the ``byNames`` matcher (options ``{"mode", "names"}``) is used rather than
    ``byName``, and only object-valued properties (``color``, ``thresholds``,
    ``custom.lineStyle``, ``custom.cellOptions``) are overridden.
    """
    for k, v in properties.items():
        if not isinstance(v, dict):
            raise ValueError(f"override property {k} must be an object for Grafana's schema, got {v!r}")
    return {"matcher": {"id": "byNames", "options": {"mode": "include", "names": list(names)}},
            "properties": [{"id": k.replace("__", "."), "value": v} for k, v in properties.items()]}


@dataclass
class QueryVariable:
    """A template variable filled by a SQL query (``__text``/``__value`` columns)."""

    name: str
    label: str
    sql: str
    multi: bool = False
    include_all: bool = False

    def to_json(self) -> dict:
        return {
            "type": "query", "name": self.name, "label": self.label,
            "datasource": dict(DS), "query": self.sql, "definition": self.sql,
            "refresh": 1, "sort": 1, "multi": self.multi, "includeAll": self.include_all,
            "current": {"text": "All" if self.include_all else "", "value": "$__all" if self.include_all else ""},
            "options": [], "hide": 0, "skipUrlSync": False, "regex": "",
        }


@dataclass
class Dashboard:
    """A dashboard: uid, title, panels and template variables."""

    uid: str
    title: str
    description: str
    panels: list[Panel]
    variables: list[QueryVariable] = field(default_factory=list)
    time_from: str = "now-24h"
    refresh: str = "1m"
    tags: tuple[str, ...] = ("sewerwatch",)

    def to_json(self) -> dict:
        for i, p in enumerate(self.panels, start=1):
            p.id = i
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": list(self.tags), "timezone": "browser", "editable": True,
            "graphTooltip": 1, "schemaVersion": SCHEMA_VERSION, "version": 1,
            "refresh": self.refresh, "time": {"from": self.time_from, "to": "now"},
            "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
            "timepicker": {}, "links": [],
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                "name": "Annotations & Alerts", "type": "dashboard",
            }]},
            "templating": {"list": [v.to_json() for v in self.variables]},
            "panels": [p.to_json() for p in self.panels],
        }
