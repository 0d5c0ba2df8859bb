"""Rule packs: one TOML file per jurisdiction, shipped in ``limits/packs/`` (more folders:
``$SEWERWATCH_PACK_PATH`` and the config's ``[utility] pack_dirs``, searched first).

A pack names the village, the title people cite its ordinance by (``code``: "Village of
Palmyra Code"; documents cite ``<code> <section>``, :func:`cite`), its IANA time zone
(calendar days of violation are counted in it) and the seed file of its ordinance (kept as
each rule's ``provenance``), and lists ``[[rules]]``. Every rule has an ``id``, a ``kind``,
the ``section`` of the seed it comes from and the ordinance's ``words``. The kinds and the
keys each one takes:

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
    result; ``average``: the period's average; ``monthly``: each calendar month's average),
    ``comparison``, ``limit``, ``unit``.
``loading-limit``
    a prohibited loading (a discharge permit's, :mod:`limits.permits`): ``analyte``,
    ``basis`` (``daily``), ``comparison``, ``limit``, ``unit`` (``lb/d``).
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

Besides its rules, a pack says which charge formulas the village adopted and what it asks of
a discharger (``lab/`` and ``alerts/`` read these; the formulas themselves are code in
``lab/formulas/``, named by a formula kind of ``lab.charges``):

``[[charges]]``
    what a bill charges, in order: ``id``, ``name`` (the line on the bill), ``formula`` (a
    formula kind), ``section`` and ``words``, optional ``note``, ``[charges.params]`` (the
    ordinance's numbers the formula takes: a number or table of numbers stated in the
    quoted words, or ``{ rule = "<id>" }`` naming a ``definition`` rule of the pack, which
    carries its own section and words) and ``[charges.rates]`` (the numbers the utility
    sets each year, by the key the rates file gives them under: ``"bill.x.y"``, ``{site}``
    standing for the site id; or ``{ key = "...", default = N }``). A charge computes when
    the rates file gives every rate without a default. Where the ordinance provides for a
    charge but sets no formula, the entry says ``formula_from = "rates"`` (with ``id``,
    ``name``, ``section``, ``words``, ``note``) instead of ``formula``: the rates file must
    state the formula the village adopted (``[adopted.<id>]``, :func:`lab.charges.adopted`),
    or the charge is refused citing these words; nothing is borrowed by default.
``[late_charge]``
    the late-payment terms: ``formula``, ``section``, ``words``, ``note``, ``params``.
``[residential_equivalents]``
    how a user's residential equivalents are counted: ``formula``, ``section``, ``words``,
    ``note``, ``params``.
``[[monitoring]]``
    sampling the ordinance requires of every industrial user, where it sets a frequency:
    ``section``, ``words``, ``parameters`` (analytes), ``times`` and ``per`` (one of
    :data:`SAMPLING_PERIODS`), optional ``note`` (enforcement/ schedules it beside the
    permits' monitoring conditions).
``[report_duty]``
    the discharger's duty to report a slug or an accidental discharge: ``section``,
    ``words``, ``rules`` (the ids of the rules whose episodes call for the report) and the
    report's ``contents`` (``[[report_duty.contents]]`` with ``fill``, see
    :data:`REPORT_FILLS`, and the ordinance's ``words``) or ``contents_from`` (a pack whose
    report contents serve, where the ordinance lists none).

Where a village's seed gives no such provision but sewerwatch applies another village's as a
model, the entry is ``model = "<pack id>"`` (with ``id`` for a charge, ``rules`` for a report
duty, and a ``note`` saying why): the model pack's entry applies, cited as that pack's.

Any unknown key, kind, unit, parameter, analyte or comparison is an :class:`InputError`
naming the file and the rule, never a guess. Adding a village is adding a TOML file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
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
DEFINITION_UNITS = ("gal", "percent", "fraction", "usd", "days", "years")

#: Units of a loading limit (a discharge permit's pounds a day, palmyra-wi §13.54(3)(g)).
LOADING_UNITS = ("lb/d",)

#: The bases of a lab limit: each result, the period's average, the calendar month's average
#: (a permit's monthly average); of a loading limit: each day's.
BASES = {"lab-limit": ("sample", "average", "monthly"), "loading-limit": ("daily",)}

#: Lab analytes (the lab CSV's names) and the parameter their units belong to.
ANALYTES = {
    "bod5": "concentration", "tss": "concentration", "tkn": "concentration",
    "tp": "concentration", "fog": "concentration", "cn": "concentration",
    # palmyra-wi 003_44f871d49a02d8f5.txt §13.48(2)(i): limited by "the Wisconsin
    # Administrative Code or WPDES Permit", so by a user's discharge permit (limits/permits.py)
    "cr6": "concentration", "cr3": "concentration", "cu": "concentration", "ni": "concentration",
    "cd": "concentration", "zn": "concentration", "phenols": "concentration", "fe": "concentration",
    "sn": "concentration",
    "ph": "ph",
}

KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required keys, optional keys), besides id, kind, section, words
    "range": (("parameter", "comparison", "limit", "unit"), ()),
    "slug": (("parameters", "comparison", "multiple", "window_h", "longer_than_min"), ()),
    "lab-limit": (("analyte", "basis", "comparison", "limit", "unit"), ()),
    "loading-limit": (("analyte", "basis", "comparison", "limit", "unit"), ()),
    "normal-strength": (("analyte", "comparison", "limit", "unit"), ()),
    "permit-threshold": (("comparison", "limit", "unit"), ("analyte", "parameter")),
    "flow-threshold": (("parameter", "comparison", "limit", "unit"), ()),
    "default-strength": (("analyte", "category", "limit", "unit"), ()),
    "definition": (("value", "unit", "comparison"), ()),
    "narrative": ((), ()),
}
COMMON_KEYS = ("id", "kind", "section", "words", "note")
PACK_KEYS = ("id", "name", "code", "timezone", "seed", "rules")
#: optional sections of a pack (see the module docstring)
SECTION_KEYS = ("charges", "late_charge", "residential_equivalents", "report_duty", "monitoring")
#: the periods a sampling frequency of ``[[monitoring]]`` counts in
SAMPLING_PERIODS = ("day", "week", "month", "quarter", "year")
#: keys of an entry that names its own formula, and of one that applies a model pack's
PROVISION_KEYS = ("formula", "section", "words", "note", "params", "rates")
#: the values of ``formula_from``: where the formula of a charge the ordinance sets none for is stated
FORMULA_FROM = ("rates",)
MODEL_KEYS = ("model", "note")
#: what the alert's report form can pre-fill from the readings, per field of the report
REPORT_FILLS = ("location", "date-time", "measured", "concentration-volume", "blank")
RATE_KEY = re.compile(r"^([A-Za-z0-9_-]+|\{site\})(\.([A-Za-z0-9_-]+|\{site\}))*$")
RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def cite(code: str, section: str) -> str:
    """An ordinance cited by its title and section: ``Village of Palmyra Code §13.45(4)``;
    a section named in words follows a comma (``Village of Westfield Code, definitions,
    SLUG``)."""
    return f"{code} {section}" if section.startswith("§") else f"{code}, {section}"


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
        The seed file of the pack (provenance: :attr:`provenance`).
    code : str
        The title of the ordinance as people cite it (``Village of Palmyra Code``).
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
        ``lab-limit`` basis (``sample``, ``average`` or ``monthly``), ``loading-limit``
        basis (``daily``), ``default-strength`` category, and a free note.
    origin : str
        ``ordinance`` (a pack's rule) or ``permit`` (a discharge permit's limit,
        :mod:`limits.permits`).
    stricter_of : str or None
        Where a permit and the ordinance both limit the same thing, which applies and what
        it is stricter than (:func:`limits.permits.site_rules`), for the finding.
    """

    id: str
    kind: str
    section: str
    words: str
    seed: str
    parameter: str | None = None
    code: str = ""
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
    origin: str = "ordinance"
    stricter_of: str | None = None

    @property
    def citation(self) -> str:
        """The ordinance by its title and section, as documents for people cite it, e.g.
        ``Village of Palmyra Code §13.48(2)(g)`` (the seed file is :attr:`provenance`)."""
        return cite(self.code, self.section) if self.code else self.provenance

    @property
    def provenance(self) -> str:
        """``<seed file> <section>``, e.g. ``003_44f871d49a02d8f5.txt §13.48(2)(g)``: where
        the words were copied from."""
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
class Cited:
    """A number a ``definition`` rule gives, with its unit and where the ordinance says it.

    Attributes
    ----------
    value : float
        The number [unit].
    unit : str
        One of :data:`DEFINITION_UNITS`.
    rule : Rule
        The ``definition`` rule (its ``citation`` and ``words``).
    """

    value: float
    unit: str
    rule: Rule


@dataclass(frozen=True)
class RateKey:
    """Where the rates file gives a number the utility sets: a dotted ``key`` (``{site}``
    stands for the site id) and a ``default`` used when it is absent (None: required)."""

    key: str
    default: float | None = None


@dataclass(frozen=True, kw_only=True)
class Provision:
    """A formula the ordinance adopts: a charge, the late-payment terms, or the count of
    residential equivalents (``[[charges]]``, ``[late_charge]``, ``[residential_equivalents]``).

    Attributes
    ----------
    id, name : str or None
        A charge's id and its line on the bill.
    formula : str
        The formula kind (``lab.charges`` knows them).
    params : dict
        name -> a number, a table or list as written, or a :class:`Cited` definition.
    rates : dict
        name -> :class:`RateKey`.
    section, words : str
        Where the ordinance adopts it and its words.
    citation : str
        The ordinance whose provision it is (its own, or its model's) by title and section,
        e.g. ``Village of Palmyra Code §13.45(4)``.
    provenance : str
        ``<seed file> <section>`` of the same.
    formula_from : str or None
        ``rates``: the ordinance sets no formula (e.g. webster-wi §240-8(4): "payment to
        cover the added cost"); the rates file must state the one the village adopted
        (``[adopted.<id>]``, see :mod:`lab.charges`) or the charge is refused.
    note : str or None
        Why and how, where the ordinance leaves something open.
    model : str or None
        The model pack, where this village applies another's provision.
    where : str
        The entry in its pack file, for messages (``charges[1]``, ``late_charge``).
    path : str
        The pack file the entry stands in (the model pack's for a model entry).
    """

    id: str | None = None
    name: str | None = None
    formula: str
    params: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)
    section: str
    words: str
    citation: str
    provenance: str = ""
    formula_from: str | None = None
    note: str | None = None
    model: str | None = None
    where: str
    path: str


@dataclass(frozen=True)
class ReportField:
    """One item the discharger's report must give: what sewerwatch pre-fills (``fill``, one
    of :data:`REPORT_FILLS`) and the ordinance's words for it."""

    fill: str
    words: str


@dataclass(frozen=True)
class Sampling:
    """Sampling the ordinance requires of every industrial user (``[[monitoring]]``), e.g.
    webster-wi §240-8: "A minimum of at least quarterly sampling shall be necessary to
    determine sewer service charges."

    Attributes
    ----------
    section, words, citation : str
        Where the ordinance says it, its words, and the two as documents cite them.
    parameters : tuple of str
        The analytes each sample is analysed for.
    times : int
        Samples per ``per``.
    per : str
        One of :data:`SAMPLING_PERIODS`.
    note : str or None
    """

    section: str
    words: str
    citation: str
    parameters: tuple[str, ...]
    times: int
    per: str
    note: str | None = None


@dataclass(frozen=True)
class ReportDuty:
    """The discharger's duty to report a slug or an accidental discharge.

    Attributes
    ----------
    citation : str
        The duty by the ordinance's title and section (the model's, for a model entry),
        e.g. ``Village of Palmyra Code §13.49``.
    words : str
        The ordinance's words.
    rules : tuple of str
        Ids of this pack's rules whose episodes call for the report.
    contents : tuple of ReportField
        What the report must give.
    contents_citation : str
        Where the contents are listed (the duty's own citation, or ``contents_from``'s).
    note, model : str or None
    """

    citation: str
    words: str
    rules: tuple[str, ...]
    contents: tuple[ReportField, ...]
    contents_citation: str
    note: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Pack:
    """A jurisdiction's rule pack (see :func:`load_pack`)."""

    id: str
    name: str
    timezone: str
    seed: str
    rules: tuple[Rule, ...]
    path: str = ""
    code: str = ""
    charges: tuple[Provision, ...] = ()
    late_charge: Provision | None = None
    residential_equivalents: Provision | None = None
    report_duty: ReportDuty | None = None
    monitoring: tuple[Sampling, ...] = ()

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

    def charge(self, charge_id: str) -> Provision:
        """The ``[[charges]]`` entry with this id (``KeyError`` if the pack has none)."""
        for c in self.charges:
            if c.id == charge_id:
                return c
        raise KeyError(f"pack {self.id} has no charge {charge_id!r}")

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


def _rule(path, seed: str, i: int, t, code: str = "") -> Rule:
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
    f = dict(id=rid, kind=kind, seed=seed, code=code, section=_text(path, where, "section", t["section"]),
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
    elif kind == "loading-limit":
        f["limit"] = f["limit_canonical"] = _number(path, where, "limit", t["limit"])
        if t["unit"] not in LOADING_UNITS:
            _fail(path, f"{where}.unit", f"unknown unit {t['unit']!r} for a loading (known: {', '.join(LOADING_UNITS)})")
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
    if kind in BASES:
        if t["basis"] not in BASES[kind]:
            _fail(path, f"{where}.basis", f"expected one of {', '.join(BASES[kind])}, got {t['basis']!r}")
        f["basis"] = t["basis"]
    if kind == "default-strength":
        f["category"] = _text(path, where, "category", t["category"])
    return Rule(**f)


def _keys(path, where: str, t, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict:
    if not isinstance(t, dict):
        _fail(path, where, f"expected a table, got {t!r}")
    unknown = sorted(set(t) - set(allowed))
    if unknown:
        _fail(path, f"{where}.{unknown[0]}", f"unknown key (expected: {', '.join(allowed)})")
    for key in required:
        if key not in t:
            _fail(path, f"{where}.{key}", "missing (required)")
    return t


def _model_pack(path, where: str, key: str, model_id, own_id: str) -> "Pack":
    """The pack a model entry names, parsed without following its own model references
    (a model's entries must be its own, so references never chain or loop)."""
    _text(path, where, key, model_id)
    found = config.find_pack(model_id) if model_id != own_id else None
    if found is None:
        _fail(path, f"{where}.{key}", f"unknown rule pack {model_id!r}, or this one "
              f"(known: {', '.join(p for p in available_packs() if p != own_id)})")
    return _load_cached(str(found.resolve()), found.stat().st_mtime_ns, False)


def _param(path, where: str, key: str, v, rules: dict[str, Rule]):
    if isinstance(v, bool) or isinstance(v, str):
        _fail(path, f"{where}.{key}", f"expected a number, a table, a list or {{ rule = \"<id>\" }}, got {v!r}")
    if isinstance(v, dict) and "rule" in v:
        rid = v["rule"]
        if set(v) != {"rule"} or rid not in rules or rules[rid].kind != "definition":
            _fail(path, f"{where}.{key}", f"expected {{ rule = \"<id>\" }} naming a definition rule of this pack "
                  f"(definitions: {', '.join(r for r, x in rules.items() if x.kind == 'definition') or 'none'}), got {v!r}")
        r = rules[rid]
        return Cited(float(r.limit), r.unit, r)
    return v


def _rate(path, where: str, key: str, v) -> RateKey:
    if isinstance(v, dict):
        _keys(path, f"{where}.{key}", v, ("key", "default"), ("key", "default"))
        return RateKey(_rate(path, where, key, v["key"]).key, _number(path, f"{where}.{key}", "default", v["default"]))
    if not isinstance(v, str) or not RATE_KEY.match(v):
        _fail(path, f"{where}.{key}", f"expected the rates file's key such as \"bill.my-village.rate\" "
              f"(or {{ key = ..., default = N }}), got {v!r}")
    return RateKey(v)


def _provision(path, where: str, t, own: "Pack", rules: dict[str, Rule], charge: bool,
               section_key: str, resolve: bool) -> Provision:
    """One ``[[charges]]`` entry, ``[late_charge]`` or ``[residential_equivalents]``."""
    ids = ("id",) if charge else ()
    if isinstance(t, dict) and "model" in t:
        _keys(path, where, t, (*ids, *MODEL_KEYS), (*ids, "model"))
        if not resolve:  # the pack is read as a model: its model entries cannot serve
            return Provision(where=where, path=str(path), formula="", section="", words="", citation="",
                             id=t.get("id"), model=str(t["model"]))
        model = _model_pack(path, where, "model", t["model"], own.id)
        src = next((c for c in model.charges if c.id == t["id"]), None) if charge else getattr(model, section_key)
        if src is None:
            what = f"charge {t['id']!r}" if charge else section_key
            _fail(path, f"{where}.model", f"pack {model.id!r} has no {what} to apply here")
        if src.model is not None:
            _fail(path, f"{where}.model", f"{model.id}'s {src.where} is itself a model entry")
        return replace(src, note=_text(path, where, "note", t["note"]) if "note" in t else None, model=model.id)
    names = ("name",) if charge else ()
    if charge and isinstance(t, dict) and "formula_from" in t:
        # the ordinance sets no formula: the utility's rates file says which it adopted
        _keys(path, where, t, (*ids, *names, "formula_from", "section", "words", "note"),
              (*ids, *names, "formula_from", "section", "words"))
        if t["formula_from"] not in FORMULA_FROM:
            _fail(path, f"{where}.formula_from", f"expected one of {', '.join(FORMULA_FROM)}, got {t['formula_from']!r}")
        formula = ""
    else:
        _keys(path, where, t, (*ids, *names, *PROVISION_KEYS), (*ids, *names, "formula", "section", "words"))
        formula = _text(path, where, "formula", t["formula"])
    section = _text(path, where, "section", t["section"])
    f = dict(where=where, path=str(path), formula=formula, section=section,
             words=_text(path, where, "words", t["words"]), citation=cite(own.code, section),
             provenance=f"{own.seed} {section}", formula_from=t.get("formula_from"))
    if charge:
        if not isinstance(t["id"], str) or not RULE_ID.match(t["id"]):
            _fail(path, f"{where}.id", f"expected a lowercase charge id (letters, digits, -), got {t['id']!r}")
        f["id"], f["name"] = t["id"], _text(path, where, "name", t["name"])
    if "note" in t:
        f["note"] = _text(path, where, "note", t["note"])
    for key in ("params", "rates"):
        if not isinstance(t.get(key, {}), dict):
            _fail(path, f"{where}.{key}", f"expected a table, got {t[key]!r}")
    f["params"] = {k: _param(path, f"{where}.params", k, v, rules) for k, v in t.get("params", {}).items()}
    f["rates"] = {k: _rate(path, f"{where}.rates", k, v) for k, v in t.get("rates", {}).items()}
    return Provision(**f)


def _rule_ids(path, where: str, v, rules: dict[str, Rule]) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        _fail(path, where, f"expected a non-empty list of rule ids, got {v!r}")
    for x in v:
        if x not in rules:
            _fail(path, where, f"no rule {x!r} in this pack (rules: {', '.join(rules)})")
    return tuple(v)


def _report_duty(path, t, own: "Pack", rules: dict[str, Rule], resolve: bool) -> ReportDuty:
    where = "report_duty"
    if isinstance(t, dict) and "model" in t:
        _keys(path, where, t, ("model", "rules", "note"), ("model", "rules"))
        if not resolve:  # the pack is read as a model: its model entries cannot serve
            return ReportDuty("", "", (), (), "", model=str(t["model"]))
        model = _model_pack(path, where, "model", t["model"], own.id)
        if model.report_duty is None or model.report_duty.model is not None:
            _fail(path, f"{where}.model", f"pack {model.id!r} has no report duty of its own to apply here")
        return replace(model.report_duty, rules=_rule_ids(path, f"{where}.rules", t["rules"], rules),
                       note=_text(path, where, "note", t["note"]) if "note" in t else None, model=model.id)
    _keys(path, where, t, ("section", "words", "rules", "contents", "contents_from", "note"),
          ("section", "words", "rules"))
    citation = cite(own.code, _text(path, where, 'section', t['section']))
    if ("contents" in t) == ("contents_from" in t):
        _fail(path, where, "give exactly one of contents (the report's items) or contents_from (a pack id)")
    if "contents" in t:
        items = t["contents"]
        if not isinstance(items, list) or not items:
            _fail(path, f"{where}.contents", f"expected a non-empty array of tables, got {items!r}")
        contents = []
        for i, c in enumerate(items):
            _keys(path, f"{where}.contents[{i}]", c, ("fill", "words"), ("fill", "words"))
            if c["fill"] not in REPORT_FILLS:
                _fail(path, f"{where}.contents[{i}].fill",
                      f"unknown fill {c['fill']!r} (known: {', '.join(REPORT_FILLS)})")
            contents.append(ReportField(c["fill"], _text(path, f"{where}.contents[{i}]", "words", c["words"])))
        contents, contents_citation = tuple(contents), citation
    elif not resolve:
        contents, contents_citation = (), ""
    else:
        model = _model_pack(path, where, "contents_from", t["contents_from"], own.id)
        if model.report_duty is None or not model.report_duty.contents or model.report_duty.model:
            _fail(path, f"{where}.contents_from", f"pack {model.id!r} lists no report contents of its own")
        contents, contents_citation = model.report_duty.contents, model.report_duty.contents_citation
    return ReportDuty(citation, _text(path, where, "words", t["words"]),
                      _rule_ids(path, f"{where}.rules", t["rules"], rules), contents, contents_citation,
                      note=_text(path, where, "note", t["note"]) if "note" in t else None)


def _sections(path, data: dict, pack: Pack, resolve: bool) -> Pack:
    """The pack with its optional sections (charges, late charge, residential equivalents,
    report duty) parsed; with ``resolve`` a model reference reads the model pack."""
    rules = {r.id: r for r in pack.rules}
    charges = data.get("charges", [])
    if not isinstance(charges, list):
        _fail(path, "charges", "expected an array of tables ([[charges]])")
    f = {"charges": tuple(_provision(path, f"charges[{i}]", t, pack, rules, True, "charges", resolve)
                          for i, t in enumerate(charges))}
    seen: dict[str, int] = {}
    for i, c in enumerate(f["charges"]):
        if c.id in seen:
            _fail(path, f"charges[{i}].id", f"duplicate charge id {c.id!r} (first at charges[{seen[c.id]}])")
        seen[c.id] = i
    for key in ("late_charge", "residential_equivalents"):
        if key in data:
            f[key] = _provision(path, key, data[key], pack, rules, False, key, resolve)
    if "report_duty" in data:
        f["report_duty"] = _report_duty(path, data["report_duty"], pack, rules, resolve)
    monitoring = data.get("monitoring", [])
    if not isinstance(monitoring, list):
        _fail(path, "monitoring", "expected an array of tables ([[monitoring]])")
    f["monitoring"] = tuple(_sampling(path, f"monitoring[{i}]", t, pack) for i, t in enumerate(monitoring))
    return replace(pack, **f)


def _sampling(path, where: str, t, own: "Pack") -> Sampling:
    _keys(path, where, t, ("section", "words", "parameters", "times", "per", "note"),
          ("section", "words", "parameters", "times", "per"))
    ps = t["parameters"]
    if not isinstance(ps, list) or not ps or not all(isinstance(p, str) for p in ps):
        _fail(path, f"{where}.parameters", f"expected a non-empty list of analytes, got {ps!r}")
    for p in ps:
        if p not in ANALYTES:
            _fail(path, f"{where}.parameters", f"unknown analyte {p!r} (known: {', '.join(ANALYTES)})")
    times = t["times"]
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        _fail(path, f"{where}.times", f"expected a whole number >= 1, got {times!r}")
    if t["per"] not in SAMPLING_PERIODS:
        _fail(path, f"{where}.per", f"expected one of {', '.join(SAMPLING_PERIODS)}, got {t['per']!r}")
    section = _text(path, where, "section", t["section"])
    return Sampling(section, _text(path, where, "words", t["words"]), cite(own.code, section), tuple(ps), times,
                    t["per"], _text(path, where, "note", t["note"]) if "note" in t else None)


def parse_pack(data: dict, path: str = "<pack>", expected_id: str | None = None, resolve: bool = True) -> Pack:
    """Validate an already-parsed pack (see :func:`load_pack`).

    ``resolve=False`` reads it as another pack's model: its own model references are kept
    unresolved (a model entry names its model pack's own entry, never a chain).
    """
    if not isinstance(data, dict):
        _fail(path, "pack", "expected a TOML table")
    unknown = sorted(set(data) - set(PACK_KEYS) - set(SECTION_KEYS))
    if unknown:
        _fail(path, unknown[0], f"unknown key (expected: {', '.join(PACK_KEYS + SECTION_KEYS)})")
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
    code = _text(path, "pack", "code", data["code"])
    rules = tuple(_rule(path, seed, i, t, code) for i, t in enumerate(data["rules"]))
    seen: dict[str, int] = {}
    for i, r in enumerate(rules):
        if r.id in seen:
            _fail(path, f"rules[{i}].id", f"duplicate rule id {r.id!r} (first at rules[{seen[r.id]}])")
        seen[r.id] = i
    pack = Pack(id=pid, name=_text(path, "pack", "name", data["name"]), timezone=tzname,
                seed=seed, rules=rules, path=str(path), code=code)
    return _sections(path, data, pack, resolve)


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
    return _load_cached(str(path.resolve()), path.stat().st_mtime_ns, True)


@lru_cache(maxsize=64)
def _load_cached(path: str, _mtime: int, resolve: bool) -> Pack:
    return parse_pack(tomlfile.read(path, "rule pack"), path, expected_id=Path(path).stem, resolve=resolve)
