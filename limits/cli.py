"""CLI: ``sewerwatch check`` (registered by :mod:`sewerwatch.cli`)."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("check", help="check readings against a village's ordinance limits")
    p.set_defaults(func=not_built("check", "issue 3, limits"))
