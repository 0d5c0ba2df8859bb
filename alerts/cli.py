"""CLI: ``sewerwatch alerts``."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("alerts", help="list and acknowledge alerts")
    p.set_defaults(func=not_built("alerts", "issue 6, live pipeline and alerts"))
