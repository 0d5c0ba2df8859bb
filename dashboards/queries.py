"""Run a dashboard's panel queries against the database the way Grafana would.

Used by the previews (``sewerwatch dashboards preview``) and by the tests that prove every
panel's SQL against the real TimescaleDB. The SQL is expanded by :mod:`dashboards.macros`
(Grafana's own expansion, ported) and run as the connection's role, normally the
read-only ``sewerwatch_grafana``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, Mapping

from dashboards.macros import Expanded, Variable, expand

#: Grafana's nice intervals (``rangeutil.roundInterval`` steps), smallest first [s]
_NICE_S = (1, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800,
           21600, 43200, 86400, 604800, 2592000, 31536000)


@dataclass(frozen=True)
class Query:
    """One panel target."""

    dashboard: str
    panel: str
    panel_type: str
    panel_id: int
    ref_id: str
    format: str
    sql: str


@dataclass
class Result:
    """The rows a query returned."""

    query: Query
    sql: str
    columns: list[str]
    rows: list[tuple]


def queries(dashboard: dict) -> Iterator[Query]:
    """Every panel target of a dashboard's JSON."""
    for panel in dashboard.get("panels", []):
        for t in panel.get("targets", []):
            yield Query(dashboard["uid"], panel["title"], panel["type"], panel.get("id", 0), t["refId"],
                        t.get("format", "time_series"), t["rawSql"])


def interval_for(time_from: datetime, time_to: datetime, max_points: int = 1000) -> str:
    """A ``$__interval`` for a range: the range over ``max_points``, rounded up to a nice step.

    Grafana derives it from the panel's width; this is the same idea for a fixed width.
    """
    want = (time_to - time_from).total_seconds() / max_points
    for s in _NICE_S:
        if s >= want:
            return f"{s}s"
    return f"{_NICE_S[-1]}s"


def variables(dashboard: dict, conn, choices: Mapping[str, object] | None = None) -> dict[str, Variable]:
    """The template variables' values: chosen ones, else All (multi) or the first option.

    The variable's own query is run on ``conn`` for its options (``__value`` column).
    """
    out: dict[str, Variable] = {}
    choices = choices or {}
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        with conn.cursor() as cur:
            cur.execute(v["query"])
            names = [d.name for d in cur.description]
            idx = names.index("__value") if "__value" in names else 0
            options = [str(r[idx]) for r in cur.fetchall()]
        multi, include_all = bool(v.get("multi")), bool(v.get("includeAll"))
        if v["name"] in choices:
            value = choices[v["name"]]
        elif include_all:
            value = "$__all"
        else:
            value = options[0] if options else ""
        out[v["name"]] = Variable(value, multi=multi, include_all=include_all,
                                  all_value=v.get("allValue") or None, options=tuple(options))
    return out


def run(conn, query: Query, time_from: datetime, time_to: datetime,
        vars_: Mapping[str, Variable], interval: str | None = None, timescaledb: bool = True) -> Result:
    """Expand one query as Grafana does (data source ``timescaledb`` on) and run it on ``conn``."""
    expanded: Expanded = expand(query.sql, time_from, time_to, variables=vars_,
                                interval=interval or interval_for(time_from, time_to),
                                timescaledb=timescaledb)
    with conn.cursor() as cur:
        cur.execute(expanded.sql)  # no parameters: psycopg sends the text as is, as Grafana does
        columns = [d.name for d in cur.description] if cur.description else []
        rows = cur.fetchall() if cur.description else []
    return Result(query, expanded.sql, columns, rows)


def run_dashboard(conn, dashboard: dict, time_from: datetime, time_to: datetime,
                  choices: Mapping[str, object] | None = None,
                  interval: str | None = None, timescaledb: bool = True) -> list[Result]:
    """Run every panel target of ``dashboard``."""
    vars_ = variables(dashboard, conn, choices)
    return [run(conn, q, time_from, time_to, vars_, interval, timescaledb) for q in queries(dashboard)]

