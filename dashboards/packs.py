"""The rule-pack figures the dashboards draw: range limits and normal strengths.

Panels draw each site's own pack: the limits of every pack are written into the panel SQL
as a ``VALUES`` list and joined on ``sites.pack``, so the thresholds follow the ``site``
variable. The figures come from ``limits/packs/*.toml`` (each rule cites its seed file and
section); ``limits`` has no pack loader yet, so :func:`load_packs` reads the TOML itself.
Range limits are converted to the parameter's canonical unit (``limits.units``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from limits.units import to_canonical, CANONICAL
from sewerwatch.errors import InputError
from sewerwatch.paths import PROJECT_ROOT

PACKS_DIR = PROJECT_ROOT / "limits" / "packs"

#: analyte -> unit the normal strengths are stated in after conversion
_CONCENTRATION_UNITS = {"mg/l": 1.0, "ppm": 1.0}


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


def _bound(rule: dict) -> str:
    rid, comparison = rule["id"], rule.get("comparison", "")
    if rid.endswith("-min") or comparison in ("lower than", "less than", "below"):
        return "min"
    return "max"


def load_packs(directory: Path | str = PACKS_DIR) -> Packs:
    """Read every pack's range limits and normal strengths.

    Raises
    ------
    InputError
        Naming the pack file and rule that cannot be read.
    """
    directory = Path(directory)
    ranges: list[RangeLimit] = []
    normals: list[NormalStrength] = []
    names = []
    for path in sorted(directory.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a readable rule pack: {exc}") from None
        pack = data.get("id", path.stem)
        seed = data.get("seed", "?")
        names.append(pack)
        for i, rule in enumerate(data.get("rules", [])):
            kind = rule.get("kind")
            where = f"{path}: rules[{i}] ({rule.get('id', '?')})"
            citation = f"{pack}, {seed} {rule.get('section', '')}".strip()
            if kind == "range":
                parameter, unit = rule.get("parameter"), rule.get("unit")
                if parameter not in CANONICAL or "limit" not in rule:
                    raise InputError(f"{where}: a range rule needs a known parameter and a limit")
                value = float(to_canonical(parameter, unit, [float(rule["limit"])])[0])
                ranges.append(RangeLimit(pack, rule["id"], parameter, _bound(rule), value,
                                         CANONICAL[parameter], citation))
            elif kind == "normal-strength":
                unit = rule.get("unit")
                if unit not in _CONCENTRATION_UNITS:
                    raise InputError(f"{where}: normal strength unit {unit!r} is not a concentration")
                normals.append(NormalStrength(pack, rule["analyte"],
                                              float(rule["limit"]) * _CONCENTRATION_UNITS[unit], citation))
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
