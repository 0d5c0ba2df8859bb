"""CLI: ``sewerwatch dashboards``."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("dashboards", help="export, preview and push the Grafana dashboards")
    p.set_defaults(func=not_built("dashboards", "issue 8, Grafana dashboards"))
