"""Readable text tables of lab computations."""

from __future__ import annotations


def surcharge_table(result) -> str:
    """A plain-text table of :class:`lab.formulas.surcharge.SiteSurcharge` objects."""
    lines = [f"{'site':<16} {'analyte':<7} {'avg mg/l':>10} {'base mg/l':>10} {'pounds':>12} {'dollars':>12}"]
    for s in result:
        for a, c in s.analytes.items():
            lines.append(f"{s.site:<16} {a:<7} {c.average_mg_l:>10.2f} {c.base_mg_l:>10.2f} "
                         f"{c.pounds:>12.2f} {c.dollars:>12.2f}")
        lines.append(f"{s.site:<16} {'total':<7} {'':>10} {'':>10} {f'{s.volume_mg:g} MG':>12} "
                     f"{s.total_dollars:>12.2f}")
    if result:
        lines.append(f"({result[0].citation})")
    return "\n".join(lines)
