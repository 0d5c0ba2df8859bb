"""CLI: ``sewerwatch run`` and ``sewerwatch status``."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("run", help="run the live pipeline: collectors, writer, evaluator, alerts")
    p.set_defaults(func=not_built("run", "issue 6, live pipeline and alerts"))
    p = sub.add_parser("status", help="services, collectors, device health and open alerts")
    p.set_defaults(func=not_built("status", "issue 6, live pipeline and alerts"))
