"""CLI: ``sewerwatch surcharge``, ``sewerwatch lab``, ``sewerwatch bill``."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("surcharge", help="compute surcharges from lab results and volumes")
    p.set_defaults(func=not_built("surcharge", "issue 7, lab and billing"))
    p = sub.add_parser("lab", help="import lab results, list them, check them")
    p.set_defaults(func=not_built("lab", "issue 7, lab and billing"))
    p = sub.add_parser("bill", help="produce each industrial user's quarterly bill")
    p.set_defaults(func=not_built("bill", "issue 7, lab and billing"))
