"""The parts of the rule pack's reference page that the charge formulas own: each formula kind a
pack may name (:data:`lab.charges.FORMULAS`) with the section it serves, the parameters it takes
from the pack (with their units) and the rates it reads (each by the pack's name for it, mapped to
a key of the utility's rates), generated from the formula kinds themselves so the page cannot
drift from the code. :func:`pack_appendix` is appended to ``docs/reference/pack.md`` by
``sewerwatch pack reference`` (the shell passes it to :func:`limits.pack_cli.reference_files`).
"""

from __future__ import annotations

from lab.charges import DESCRIPTIONS, FORMULAS, rate_words

#: a parameter's unit -> how the page writes it
UNIT_WORDS = {"usd": "dollars", "usd-by-year": "a table year -> dollars", "gal": "gallons",
              "fraction": "a fraction (0.03 for 3 %), or `{ rule = \"<id>\" }` of a definition in percent",
              "count": "a whole number", "days": "whole days", "year": "a year", "table": "a table name -> number",
              "rows": "an array of [code, description, number]"}


def pack_appendix() -> str:
    """Markdown: the formula kinds with their parameters and the rates each reads."""
    out = ["## Formula kinds", "",
           "The `formula` of a `[[charges]]` entry, `[late_charge]` or `[residential_equivalents]` names one of "
           "these. `params` gives the ordinance's numbers (a number, a table, or `{ rule = \"<id>\" }` naming a "
           "`definition` rule); `rates` maps each rate the kind reads to a key of the utility's rates file "
           "(`\"bill.<pack>.<name>\"`, `{site}` standing for the site's id), or fixes it by the ordinance: "
           "`{ key = \"...\", value = N, section = \"...\", effective = YYYY-MM-DD }` (the utility's rates override "
           "it under `key`; the bill says which applied). A rate neither gives bills nothing for the charge, and "
           "the bill says so.", "",
           "| kind | table | what it computes | params (unit) | rates |", "|---|---|---|---|---|"]
    for name, k in FORMULAS.items():
        params = "; ".join(f"`{p}` ({UNIT_WORDS.get(spec.unit, spec.unit)}{', optional' if spec.optional else ''})"
                           for p, spec in k.params.items()) or "none"
        rates = "; ".join(f"`{r}`: {rate_words(r)}" for r in k.rates)
        if k.per_analyte:
            rates = (rates + "; " if rates else "") + "an analyte id (`bod5`, `tss`, ...): its rate per pound"
        table = {"charges": "`[[charges]]`"}.get(k.section, f"`[{k.section}]`")
        out.append(f"| `{name}` | {table} | {DESCRIPTIONS.get(name, '')} | {params} | {rates or 'none'} |")
    out.append("")
    return "\n".join(out)
