"""Rule packs: one TOML file per jurisdiction, shipped in ``limits/packs/`` (more folders:
``$SEWERWATCH_PACK_PATH`` and the config's ``[utility] pack_dirs``, searched first).

A pack names the village, its IANA time zone (calendar days of violation are counted in it)
and the seed file of its ordinance, and lists ``[[rules]]``. Every rule has an ``id``, a
``kind``, the ``section`` of the seed it comes from and the ordinance's ``words``. The kinds
and the keys each one takes:

``range``
    a continuous parameter checked reading by reading: ``parameter`` (``ph``,
    ``temperature``, ``flow``, ...), ``comparison`` (the ordinance's words, see
    :data:`COMPARISONS`), ``limit``, ``unit``.
``slug``
    ``parameters`` (continuous parameters it applies to), ``comparison``, ``multiple`` (of
    the trailing average), ``window_h`` (the averaging window [h]) and ``longer_than_min``
    (the strict minimum duration [min]).
``lab-limit``
    a prohibited concentration in a lab result: ``analyte``, ``basis`` (``sample``: each
    result; ``average``: the period's average), ``comparison``, ``limit``, ``unit``.
``normal-strength``
    the strength of normal (domestic) sewage, the base of surcharges: ``analyte``,
    ``comparison``, ``limit``, ``unit``; a result is above normal when the comparison holds.
``permit-threshold``
    a discharge permit is required above it: ``analyte`` or ``parameter`` (``flow``),
    ``comparison``, ``limit``, ``unit``.
``flow-threshold``
    a volume that changes a user's class or duties: ``parameter`` (``flow``),
    ``comparison``, ``limit``, ``unit``.
``default-strength``
    the strength assumed when a waste is not sampled: ``analyte``, ``category``, ``limit``,
    ``unit``.
``definition``
    another number the ordinance defines: ``value``, ``unit`` (see
    :data:`DEFINITION_UNITS`), ``comparison`` (the words that govern it).
``narrative``
    a provision without a number, kept so a report can quote it: no further keys.

Any unknown key, kind, unit, parameter, analyte or comparison is an :class:`InputError`
naming the file and the rule, never a guess. Adding a village is adding a TOML file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from foundation import config, tomlfile, units
from foundation.errors import InputError
from limits.core import exceeds

PACKS_DIR = Path(__file__).resolve().parent / "packs"

#: The ordinance's comparison words -> the operator under which a value is a violation
#: (or, for thresholds and definitions of normal strength, is above the threshold):
#: ``value OP limit``. "less than 5.0" flags 4.99 but not 5.0; "exceeds 104" flags 104.01
#: but not 104.0; "5,000 gallons per day or greater" flags 5,000.
COMPARISONS: dict[str, str] = {
    "less than": "<",
    "lower than": "<",
    "below": "<",
    "higher than": ">",
    "exceeds": ">",
    "exceeding": ">",
    "more than": ">",
    "greater than": ">",
    "in excess of": ">",
    "over": ">",
    # definitions of normal strength: a result is above normal when it is greater
    "not more than": ">",
    "no greater than": ">",
    "at or below": ">",
    "assumed to have": ">",
    # thresholds stated inclusively
    "or greater": ">=",
    "or more": ">=",
    # "25,000 gallons per day or less" is excluded, so a user above it is included
    "or less": ">",
}

#: Operators the core understands.
OPERATORS = ("<", "<=", ">", ">=")

#: Units a ``definition`` may carry (they are not readings, so not in :mod:`foundation.units`).
DEFINITION_UNITS = ("gal", "percent", "fraction", "usd")

#: Lab analytes (the lab CSV's names) and the parameter their units belong to.
ANALYTES = {
    "bod5": "concentration", "tss": "concentration", "tkn": "concentration",
    "tp": "concentration", "fog": "concentration", "cn": "concentration",
}

KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required keys, optional keys), besides id, kind, section, words
    "range": (("parameter", "comparison", "limit", "unit"), ()),
    "slug": (("parameters", "comparison", "multiple", "window_h", "longer_than_min"), ()),
    "lab-limit": (("analyte", "basis", "comparison", "limit", "unit"), ()),
    "normal-strength": (("analyte", "comparison", "limit", "unit"), ()),
    "permit-threshold": (("comparison", "limit", "unit"), ("analyte", "parameter")),
    "flow-threshold": (("parameter", "comparison", "limit", "unit"), ()),
    "default-strength": (("analyte", "category", "limit", "unit"), ()),
    "definition": (("value", "unit", "comparison"), ()),
    "narrative": ((), ()),
}
COMMON_KEYS = ("id", "kind", "section", "words", "note")
PACK_KEYS = ("id", "name", "timezone", "seed", "rules")
RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


@dataclass(frozen=True)
class Rule:
    """One provision of an ordinance.

    Attributes
    ----------
    id, kind : str
        Rule id (unique in the pack) and kind (see the module docstring).
    section, words : str
        Where in the seed file it stands and the ordinance's words.
    seed : str
        The seed file of the pack.
    parameter : str or None
        Continuous parameter (``range``, ``flow-threshold``, flow ``permit-threshold``).
    parameters : tuple of str
        Parameters a ``slug`` rule applies to.
    analyte : str or None
        Lab analyte (``bod5``, ``tss``, ``tkn``, ``tp``, ``fog``, ``cn``).
    comparison : str or None
        The ordinance's comparison words; ``op`` is the operator they mean.
    limit, unit : float, str
        The limit as the ordinance states it [unit]; ``value`` for a definition.
    limit_canonical : float or None
        The limit in the canonical unit of its parameter (see :mod:`foundation.units`).
    multiple, window_h, longer_than_min : float or None
        Slug rule: the multiple of the trailing average, the window [h], the strict
        minimum duration [min].
    basis, category, note : str or None
        ``lab-limit`` basis (``sample`` or ``average``), ``default-strength`` category, and
        a free note.
    """

    id: str
    kind: str
    section: str
    words: str
    seed: str
    parameter: str | None = None
    parameters: tuple[str, ...] = ()
    analyte: str | None = None
    comparison: str | None = None
    op: str | None = None
    limit: float | None = None
    unit: str | None = None
    limit_canonical: float | None = None
    multiple: float | None = None
    window_h: float | None = None
    longer_than_min: float | None = None
    basis: str | None = None
    category: str | None = None
    note: str | None = None

    @property
    def citation(self) -> str:
        """``<seed file> <section>``, e.g. ``003_44f871d49a02d8f5.txt §13.48(2)(g)``."""
        return f"{self.seed} {self.section}"

    @property
    def canonical_unit(self) -> str | None:
        """The canonical unit of ``limit_canonical``."""
        param = self.parameter or (ANALYTES.get(self.analyte) if self.analyte else None)
        return units.CANONICAL.get(param) if param else None

    def exceeded_by(self, values):
        """Which values [canonical unit] are on the wrong side of this rule's limit.

        For a lab limit that is a violation, for a normal strength "above normal", for a
        threshold "at or above the threshold" as the ordinance words it (``op``).
        """
        if self.op is None or self.limit_canonical is None:
            raise ValueError(f"rule {self.id} ({self.kind}) has no comparable limit")
        return exceeds(np.asarray(values, dtype=np.float64), self.limit_canonical, self.op)

    def applies_to(self, parameter: str) -> bool:
        """True if this continuous rule (``range`` or ``slug``) judges ``parameter``."""
        if self.kind == "range":
            return self.parameter == parameter
        if self.kind == "slug":
            return parameter in self.parameters
        return False


@dataclass(frozen=True)
class Pack:
    """A jurisdiction's rule pack (see :func:`load_pack`)."""

    id: str
    name: str
    timezone: str
    seed: str
    rules: tuple[Rule, ...]
    path: str = ""

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def rule(self, rule_id: str) -> Rule:
        """The rule with this id (``KeyError`` if the pack has none)."""
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(f"pack {self.id} has no rule {rule_id!r}")

    def continuous_rules(self) -> tuple[Rule, ...]:
        """The rules checked reading by reading: ``range`` and ``slug``."""
        return tuple(r for r in self.rules if r.kind in ("range", "slug"))

    def rules_for(self, parameter: str) -> tuple[Rule, ...]:
        """The continuous rules that judge ``parameter``."""
        return tuple(r for r in self.continuous_rules() if r.applies_to(parameter))

    def by_kind(self, kind: str) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.kind == kind)

    def lab_limits(self, analyte: str | None = None) -> tuple[Rule, ...]:
        """``lab-limit`` rules, optionally for one analyte."""
        return tuple(r for r in self.by_kind("lab-limit") if analyte in (None, r.analyte))

    def normal_strength(self) -> dict[str, float]:
        """analyte -> normal (domestic) strength [mg/l], the base of surcharges."""
        return {r.analyte: r.limit_canonical for r in self.by_kind("normal-strength")}

    def permit_thresholds(self) -> dict[str, Rule]:
        """analyte (or ``flow``) -> the ``permit-threshold`` rule."""
        return {(r.analyte or r.parameter): r for r in self.by_kind("permit-threshold")}

    def definition(self, rule_id: str) -> float:
        """The value of a ``definition`` rule [its unit]."""
        r = self.rule(rule_id)
        if r.kind != "definition":
            raise KeyError(f"rule {rule_id!r} of pack {self.id} is a {r.kind}, not a definition")
        return r.limit


def _fail(path, where: str, problem: str):
    raise InputError(f"{path}: {where}: {problem}")


def _number(path, where, key, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        _fail(path, f"{where}.{key}", f"expected a number, got {v!r}")
    return float(v)


def _text(path, where, key, v) -> str:
    if not isinstance(v, str) or not v.strip():
        _fail(path, f"{where}.{key}", f"expected a non-empty string, got {v!r}")
    return v


def _rule(path, seed: str, i: int, t) -> Rule:
    where = f"rules[{i}]"
    if not isinstance(t, dict):
        _fail(path, where, "expected a table ([[rules]])")
    rid = t.get("id")
    if not isinstance(rid, str) or not RULE_ID.match(rid):
        _fail(path, f"{where}.id", f"expected a lowercase rule id (letters, digits, -), got {rid!r}")
    where = f"rules[{i}] ({rid})"
    kind = t.get("kind")
    if kind not in KINDS:
        _fail(path, f"{where}.kind", f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    required, optional = KINDS[kind]
    allowed = set(COMMON_KEYS) | set(required) | set(optional)
    unknown = sorted(set(t) - allowed)
    if unknown:
        _fail(path, f"{where}.{unknown[0]}",
              f"unknown key for a {kind} rule (expected: {', '.join(sorted(allowed))})")
    for key in ("section", "words", *required):
        if key not in t:
            _fail(path, f"{where}.{key}", "missing (required)")
    f = dict(id=rid, kind=kind, seed=seed, section=_text(path, where, "section", t["section"]),
             words=_text(path, where, "words", t["words"]))
    if "note" in t:
        f["note"] = _text(path, where, "note", t["note"])
    if "comparison" in t:
        comp = t["comparison"]
        if kind == "definition":
            f["comparison"] = _text(path, where, "comparison", comp)
        else:
            if comp not in COMPARISONS:
                _fail(path, f"{where}.comparison",
                      f"unknown comparison {comp!r} (known: {', '.join(COMPARISONS)})")
            f["comparison"], f["op"] = comp, COMPARISONS[comp]
    param = None
    if "parameter" in t:
        param = t["parameter"]
        if param not in units.CONVERSIONS:
            _fail(path, f"{where}.parameter",
                  f"unknown parameter {param!r} (known: {', '.join(units.PARAMETERS)})")
        f["parameter"] = param
    if "analyte" in t:
        if t["analyte"] not in ANALYTES:
            _fail(path, f"{where}.analyte",
                  f"unknown analyte {t['analyte']!r} (known: {', '.join(ANALYTES)})")
        f["analyte"] = t["analyte"]
        param = ANALYTES[t["analyte"]]
    if kind == "permit-threshold" and ("analyte" in t) == ("parameter" in t):
        _fail(path, where, "a permit-threshold names exactly one of analyte or parameter")
    if kind == "definition":
        f["limit"] = _number(path, where, "value", t["value"])
        if t["unit"] not in DEFINITION_UNITS:
            _fail(path, f"{where}.unit",
                  f"unknown unit {t['unit']!r} for a definition (known: {', '.join(DEFINITION_UNITS)})")
        f["unit"] = t["unit"]
    elif "limit" in t:
        f["limit"] = _number(path, where, "limit", t["limit"])
        unit = t["unit"]
        known = units.CONVERSIONS[param]
        if unit not in known:
            _fail(path, f"{where}.unit", f"unknown unit {unit!r} for {param} (known: {', '.join(known)})")
        f["unit"] = unit
        f["limit_canonical"] = float(units.to_canonical(param, unit, f["limit"]))
    if kind == "slug":
        ps = t["parameters"]
        if not isinstance(ps, list) or not ps:
            _fail(path, f"{where}.parameters", f"expected a non-empty list of parameters, got {ps!r}")
        for p in ps:
            if p not in units.CONVERSIONS:
                _fail(path, f"{where}.parameters",
                      f"unknown parameter {p!r} (known: {', '.join(units.PARAMETERS)})")
        f["parameters"] = tuple(ps)
        for key in ("multiple", "window_h", "longer_than_min"):
            f[key] = _number(path, where, key, t[key])
            if not f[key] > 0:
                _fail(path, f"{where}.{key}", f"expected a positive number, got {t[key]!r}")
    if kind == "lab-limit":
        if t["basis"] not in ("sample", "average"):
            _fail(path, f"{where}.basis", f"expected 'sample' or 'average', got {t['basis']!r}")
        f["basis"] = t["basis"]
    if kind == "default-strength":
        f["category"] = _text(path, where, "category", t["category"])
    return Rule(**f)


def parse_pack(data: dict, path: str = "<pack>", expected_id: str | None = None) -> Pack:
    """Validate an already-parsed pack (see :func:`load_pack`)."""
    if not isinstance(data, dict):
        _fail(path, "pack", "expected a TOML table")
    unknown = sorted(set(data) - set(PACK_KEYS))
    if unknown:
        _fail(path, unknown[0], f"unknown key (expected: {', '.join(PACK_KEYS)})")
    for key in PACK_KEYS:
        if key not in data:
            _fail(path, key, "missing (required)")
    pid = _text(path, "pack", "id", data["id"])
    if expected_id is not None and pid != expected_id:
        _fail(path, "id", f"pack id {pid!r} does not match the file name {expected_id!r}")
    tzname = _text(path, "pack", "timezone", data["timezone"])
    try:
        ZoneInfo(tzname)
    except (ZoneInfoNotFoundError, ValueError):
        _fail(path, "timezone", f"unknown time zone {tzname!r} (expected an IANA name such as 'America/Chicago')")
    seed = _text(path, "pack", "seed", data["seed"])
    if not isinstance(data["rules"], list):
        _fail(path, "rules", "expected an array of tables ([[rules]])")
    rules = tuple(_rule(path, seed, i, t) for i, t in enumerate(data["rules"]))
    seen: dict[str, int] = {}
    for i, r in enumerate(rules):
        if r.id in seen:
            _fail(path, f"rules[{i}].id", f"duplicate rule id {r.id!r} (first at rules[{seen[r.id]}])")
        seen[r.id] = i
    return Pack(id=pid, name=_text(path, "pack", "name", data["name"]), timezone=tzname,
                seed=seed, rules=rules, path=str(path))


def pack_path(name_or_path: str) -> Path:
    """The TOML file of a pack given by id (``palmyra-wi``) or by path.

    An id is looked up on the pack search path (:func:`foundation.config.pack_dirs`:
    ``$SEWERWATCH_PACK_PATH``, the config's ``[utility] pack_dirs``, then ``limits/packs/``).
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.parent != Path("."):
        if not p.is_file():
            raise InputError(f"{p}: no such rule pack file")
        return p
    found = config.find_pack(name_or_path)
    if found is None:
        raise InputError(f"unknown rule pack {name_or_path!r} (known: {', '.join(available_packs())}; "
                         f"searched {', '.join(map(str, config.pack_dirs()))})")
    return found


def available_packs() -> list[str]:
    """Ids of the packs on the pack search path (those shipped in ``limits/packs/`` and any
    in the folders of ``$SEWERWATCH_PACK_PATH`` or the config's ``[utility] pack_dirs``)."""
    return config.known_packs()


def load_pack(name_or_path: str) -> Pack:
    """Load and validate a rule pack.

    Parameters
    ----------
    name_or_path : str
        A pack id (``palmyra-wi``, found on the pack search path, see :func:`pack_path`) or
        a path to a TOML file.

    Raises
    ------
    InputError
        Naming the file, the rule and the key for anything unknown or malformed.
    """
    path = pack_path(name_or_path)
    return _load_cached(str(path.resolve()), path.stat().st_mtime_ns)


@lru_cache(maxsize=64)
def _load_cached(path: str, _mtime: int) -> Pack:
    return parse_pack(tomlfile.read(path, "rule pack"), path, expected_id=Path(path).stem)
