"""The rule-pack figures the dashboards draw: range limits and normal strengths.

Panels draw each site's own pack: the limits of every pack are written into the panel SQL
as a ``VALUES`` list and joined on ``sites.pack``, so the thresholds follow the ``site``
variable. The figures come from the rule packs through ``limits.packs`` (each rule cites
its seed file and section), range limits in the parameter's canonical unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from limits.packs import available_packs, load_pack


@dataclass(frozen=True)
class RangeLimit:
    """A continuous parameter's limit from a pack, in the parameter's canonical unit.

    Attributes
    ----------
    pack, rule, parameter : str
        e.g. ``palmyra-wi``, ``ph-min``, ``ph``.
    bound : str
        ``"min"`` or ``"max"``.
    value : float
        The limit [canonical unit of the parameter].
    unit : str
        The canonical unit.
    citation : str
        Seed file and section.
    """

    pack: str
    rule: str
    parameter: str
    bound: str
    value: float
    unit: str
    citation: str


@dataclass(frozen=True)
class NormalStrength:
    """A pack's normal domestic strength for an analyte [mg/l], the surcharge base."""

    pack: str
    analyte: str
    mg_l: float
    citation: str


@dataclass(frozen=True)
class Packs:
    range_limits: tuple[RangeLimit, ...]
    normal_strengths: tuple[NormalStrength, ...]
    names: tuple[str, ...]


def load_packs(names: list[str] | None = None) -> Packs:
    """Every shipped pack's range limits and normal strengths (``limits.packs.load_pack``).

    Raises
    ------
    InputError
        From the pack loader, naming the pack file, rule and key.
    """
    ranges: list[RangeLimit] = []
    normals: list[NormalStrength] = []
    names = list(names) if names is not None else available_packs()
    for name in names:
        pack = load_pack(name)
        for r in pack.by_kind("range"):
            ranges.append(RangeLimit(pack.id, r.id, r.parameter, "min" if r.op == "<" else "max",
                                     float(r.limit_canonical), r.canonical_unit, f"{pack.id}, {r.citation}"))
        for r in pack.by_kind("normal-strength"):
            normals.append(NormalStrength(pack.id, r.analyte, float(r.limit_canonical),
                                          f"{pack.id}, {r.citation}"))
    return Packs(tuple(ranges), tuple(normals), tuple(names))


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def range_limits_values(packs: Packs, parameter: str) -> str:
    """SQL ``VALUES`` rows ``(pack, bound, value, citation)`` for one parameter's limits."""
    rows = [f"({_lit(r.pack)}, {_lit(r.bound)}, {r.value!r}::float8, {_lit(r.citation)})"
            for r in packs.range_limits if r.parameter == parameter]
    if not rows:  # keep the SQL valid: a row that joins nothing
        rows = ["(NULL::text, NULL::text, NULL::float8, NULL::text)"]
    return ",\n    ".join(rows)


def normal_strength_values(packs: Packs) -> str:
    """SQL ``VALUES`` rows ``(pack, analyte, mg_l, citation)``."""
    rows = [f"({_lit(n.pack)}, {_lit(n.analyte)}, {n.mg_l!r}::float8, {_lit(n.citation)})"
            for n in packs.normal_strengths]
    if not rows:
        rows = ["(NULL::text, NULL::text, NULL::float8, NULL::text)"]
    return ",\n    ".join(rows)
