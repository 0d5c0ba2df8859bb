"""The formula kinds a rule pack may name, and each village's charges read from its pack.

A pack says which formulas its village adopted and with which of the ordinance's numbers
(``[[charges]]``, ``[late_charge]``, ``[residential_equivalents]``; the format is in
:mod:`limits.packs`). The formulas are pure functions in :mod:`lab.formulas`; this module
maps each formula kind by name to them (:data:`FORMULAS`): the parameters it takes from the
pack, with their units; the rates it takes from the rates file, by the names the pack maps
to the file's keys; and how it makes a line of a bill. A pack naming an unknown kind, a
parameter the kind does not take or a number of the wrong shape fails with one line naming
the pack file and the key.

Kinds: ``epa-model-2`` (surcharge on high-strength waste), ``per-1000-gal`` (use charge on
the volume), ``sewer-rent-units`` (sewer rents by units of use), ``re-user-and-debt``
(user and debt charges per residential equivalent); ``flat`` and ``monthly-interest`` (late
charges); ``sic-employee-hours`` (residential equivalent connections).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, Callable

import numpy as np

from foundation.errors import InputError
from lab.formulas.late import FlatLateCharge, MonthlyInterest, late_days
from lab.formulas.nondetect import DEFAULT_BILLING
from lab.formulas.re_charges import ReChargeTerms, service_charge
from lab.formulas.rec import RecTerms, sic_ranges
from lab.formulas.sewer_rents import SewerRentTerms, quarterly_sewer_rent
from lab.formulas.surcharge import SiteSurcharge, group_results, model_2_surcharge
from lab.formulas.use_charge import UseChargeTerms, use_charge
from lab.ordinance import normal_strength, pack_of
from lab.results_table import LabTable
from limits.packs import ANALYTES as _ANALYTES
from limits.packs import Cited, Pack, Provision, RateKey, available_packs, load_pack

#: the catalogue's analyte ids (a surcharge's rates may be named by them)
ANALYTE_IDS = frozenset(_ANALYTES)

#: billing periods a year: sewerwatch bills by quarter
PERIODS_PER_YEAR = 4

#: parameter units -> what a pack may write for them: numbers (``int`` for whole days and
#: years), ``usd-by-year`` a table year -> dollars, ``table`` names -> numbers, ``rows``
#: an array of [code, description, number]
NUMBER_UNITS = ("gal", "fraction", "usd", "count", "days", "year")
#: a ``definition`` rule's unit -> the divisor into a parameter's unit
FROM_DEFINITION = {("fraction", "fraction"): 1.0, ("fraction", "percent"): 100.0, ("gal", "gal"): 1.0,
                   ("usd", "usd"): 1.0}


@dataclass(frozen=True)
class Param:
    """A parameter a formula kind takes from the pack: its unit and whether it may be absent."""

    unit: str
    optional: bool = False


@dataclass
class BillInputs:
    """What a charge on one site's quarterly bill is computed from.

    Attributes
    ----------
    site, pack : str
        The site and its rule pack.
    year : int
        The year of the quarter.
    volume_mg : float or None
        The quarter's volume [million gallons]; None when unknown.
    table : LabTable
        The site's lab results of the quarter.
    per_lb : dict
        analyte -> surcharge rate [$/lb] of the rates file.
    rates_source : str
        The rates file, for messages.
    non_detect : str
        The billing non-detect policy.
    notes : list of str
        Where a charge that cannot be computed says why.
    """

    site: str
    pack: str
    year: int
    volume_mg: float | None
    table: LabTable
    per_lb: dict[str, float]
    rates_source: str
    non_detect: str
    notes: list[str]

    def volume_or_note(self, p: Provision) -> float | None:
        """The volume, or None after noting that ``p`` was not computed without one."""
        if self.volume_mg is None:
            self.notes.append(f"{p.name} not computed: no volume for the quarter")
        return self.volume_mg


@dataclass(frozen=True)
class FormulaKind:
    """A formula a pack may adopt by name.

    Attributes
    ----------
    name : str
        The name packs use (``formula = "..."``).
    section : str
        The pack section it serves: ``charges``, ``late_charge`` or ``residential_equivalents``.
    params : dict
        Parameter name -> :class:`Param`, given by the pack.
    rates : tuple of str
        Numbers the rates file gives, each mapped by the pack to a key of the file.
    terms : callable
        ``terms(params, provision, pack)`` -> the terms object of the formula.
    per_analyte : bool
        Its rates may also be named by analyte (a surcharge's rate per pound the ordinance
        fixes, e.g. ``bod5``); the rates file's own rate for the analyte overrides it.
    line : callable or None
        For a charge: ``line(provision, terms, inputs, rates)`` -> a bill line
        (``charge``, ``citation``, ``dollars``, ``detail``) or None when it does not apply.
    """

    name: str
    section: str
    params: dict[str, Param]
    rates: tuple[str, ...]
    terms: Callable[[dict, Provision, Pack], Any]
    line: Callable[..., dict | None] | None = None
    per_analyte: bool = False


# --- bill lines, one per charge kind -----------------------------------------------------

def _surcharge_line(p: Provision, bases: dict, b: BillInputs, rates: dict) -> dict | None:
    if not len(b.table):
        return None
    volume_mg = b.volume_or_note(p)
    if volume_mg is None:
        return None
    grouped = {a: (b.table.value_mg_l[b.table.analyte == a], b.table.non_detect[b.table.analyte == a])
               for a in set(b.table.analyte)}
    # the rates file's rate per pound, else the one the ordinance fixes (the pack's rates by analyte)
    priced = {**{a: r for a, r in rates.items() if a in bases}, **{a: r for a, r in b.per_lb.items() if a in bases}}
    missing = sorted(a for a in grouped if a in bases and a not in priced)
    if missing:
        raise InputError(f"{b.rates_source}: no rate for {', '.join(missing)} (site '{b.site}' has results)")
    s = model_2_surcharge(b.site, volume_mg, grouped, priced, bases, p.citation, b.non_detect, b.rates_source)
    return {"charge": p.name, "citation": s.citation, "dollars": s.total_dollars, "detail": s.as_json()}


def _use_charge_line(p: Provision, terms: UseChargeTerms, b: BillInputs, rates: dict) -> dict | None:
    volume_mg = b.volume_or_note(p)
    if volume_mg is None:
        return None
    u = use_charge(volume_mg * 1e6, rates["per_1000_gal"], terms)
    detail = {"volume_gal": u.volume_gal, "per_1000_gal": u.per_1000_gal}
    if terms.minimum_dollars is not None:
        detail["minimum_applied"] = u.minimum_applied
    return {"charge": p.name, "citation": p.citation, "dollars": u.dollars, "detail": detail}


def _sewer_rent_line(p: Provision, terms: SewerRentTerms, b: BillInputs, rates: dict) -> dict | None:
    volume_mg = b.volume_or_note(p)
    if volume_mg is None:
        return None
    r = quarterly_sewer_rent(volume_mg * 1e6, rates["unit_rent"], terms)
    return {"charge": p.name, "citation": p.citation, "dollars": r.dollars,
            "detail": {"units": r.units, "use_gal": r.use_gal, "unit_rent": rates["unit_rent"],
                       "minimum_applied": r.minimum_applied}}


def _re_charge_line(p: Provision, terms: ReChargeTerms, b: BillInputs, rates: dict) -> dict | None:
    sc = service_charge(b.year, rates["re"], terms, annual_debt_budget=rates["annual_debt_budget"],
                        total_re=rates["total_re"], periods_per_year=PERIODS_PER_YEAR)
    return {"charge": p.name, "citation": p.citation, "dollars": sc.dollars,
            "detail": {"re": sc.re, "user_per_re": sc.user_per_re, "debt_per_re": sc.debt_per_re}}


def _bases(params: dict, p: Provision, pack: Pack) -> dict[str, tuple[float, str]]:
    """The surcharge's bases: the normal-strength rules of the billed site's own pack."""
    if not pack.by_kind("normal-strength"):
        raise InputError(f"{pack.path}: {p.where}: a surcharge ({p.formula}) needs the pack's "
                         "normal-strength rules (the bases); there are none")
    return {a: (s.value, s.citation) for a, s in normal_strength(pack.path or pack.id).items()}


#: what each formula kind computes, in words (the reference page, :mod:`lab.reference`)
DESCRIPTIONS = {
    "epa-model-2": "EPA Model No. 2 surcharge: the period's mean of each analyte over the pack's normal strength "
                   "x volume [MG] x 8.34 x the rate per pound (the rates file's `bod = ...`, or a rate the "
                   "ordinance fixes, named by the analyte)",
    "per-1000-gal": "a use charge per 1,000 gallons of the quarter's volume, with an optional quarterly minimum",
    "sewer-rent-units": "sewer rents by units of use: the quarter's use / `gallons_per_unit` x the unit rent, at "
                        "least `quarterly_minimum` of the annual per-unit fee; a first quarter billed at "
                        "`first_quarter_factor` of the previous year's use; dwellings count fixed units",
    "re-user-and-debt": "user and debt charges per residential equivalent: the user charge per RE in effect that "
                        "year, and the fixed debt charge per RE until `debt_charge_computed_since`, then the "
                        "annual debt budget shared over the total REs",
    "flat": "a late charge of `rate` of the bill once `grace_days` have passed",
    "monthly-interest": "a late charge of `rate` a month (of `days_per_month` days) after `grace_days`",
    "sic-employee-hours": "residential equivalent connections from a table of flow by SIC code, employees and "
                          "hours, at least `minimum`, rounded to `round_to`",
}


#: every formula kind a pack may name, by name
FORMULAS: dict[str, FormulaKind] = {k.name: k for k in (
    FormulaKind("epa-model-2", "charges", {}, (), _bases, _surcharge_line, per_analyte=True),
    FormulaKind("per-1000-gal", "charges", {"minimum_dollars": Param("usd", optional=True)}, ("per_1000_gal",),
                lambda v, p, pack: UseChargeTerms(**v), _use_charge_line),
    FormulaKind("sewer-rent-units", "charges",
                {"gallons_per_unit": Param("gal"), "quarterly_minimum": Param("fraction"),
                 "first_quarter_factor": Param("fraction"), "one_family_units": Param("count"),
                 "two_family_units": Param("count")}, ("unit_rent",),
                lambda v, p, pack: SewerRentTerms(**v), _sewer_rent_line),
    FormulaKind("re-user-and-debt", "charges",
                {"user_charge_per_re": Param("usd-by-year"), "debt_charge_per_re": Param("usd"),
                 "debt_charge_computed_since": Param("year")}, ("re", "annual_debt_budget", "total_re"),
                lambda v, p, pack: ReChargeTerms(**v), _re_charge_line),
    FormulaKind("flat", "late_charge", {"grace_days": Param("days"), "rate": Param("fraction")}, (),
                lambda v, p, pack: FlatLateCharge(**v)),
    FormulaKind("monthly-interest", "late_charge",
                {"grace_days": Param("days"), "rate": Param("fraction"), "days_per_month": Param("days")}, (),
                lambda v, p, pack: MonthlyInterest(**v)),
    FormulaKind("sic-employee-hours", "residential_equivalents",
                {"minimum": Param("count"), "round_to": Param("count"), "residential": Param("table"),
                 "sic": Param("rows")}, (),
                lambda v, p, pack: RecTerms(v["minimum"], v["round_to"], v["residential"], sic_ranges(v["sic"]),
                                            p.section, p.citation)),
)}


# --- reading a provision's parameters ----------------------------------------------------

def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _param_value(p: Provision, name: str, spec: Param, v):
    """A parameter as the formula takes it, or a one-line error naming the pack file and key."""
    def bad(expected: str):
        raise InputError(f"{p.path}: {p.where}.params.{name}: expected {expected}, got {v!r}")

    if isinstance(v, Cited):
        divisor = FROM_DEFINITION.get((spec.unit, v.unit))
        if divisor is None:
            bad(f"a {spec.unit} (rule {v.rule.id} is in {v.unit})")
        return v.value / divisor
    if spec.unit in NUMBER_UNITS:
        if not _is_number(v):
            bad(f"a number [{spec.unit}]")
        if spec.unit in ("days", "year"):
            if v != int(v):
                bad(f"a whole number of {spec.unit}s")
            return int(v)
        return float(v)
    if spec.unit == "usd-by-year":
        if not isinstance(v, dict) or not v or not all(k.isdigit() and _is_number(x) for k, x in v.items()):
            bad("a table year -> dollars, such as { 2024 = 45.0 }")
        return {int(k): float(x) for k, x in v.items()}
    if spec.unit == "table":
        if not isinstance(v, dict) or not v or not all(_is_number(x) for x in v.values()):
            bad("a table name -> number")
        return {k: float(x) for k, x in v.items()}
    if spec.unit == "rows":
        ok = isinstance(v, list) and v and all(
            isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) and isinstance(r[1], str)
            and _is_number(r[2]) for r in v)
        if not ok:
            bad('an array of ["code", "description", number] rows')
        return tuple((r[0], r[1], float(r[2])) for r in v)
    raise AssertionError(f"unit {spec.unit!r} of formula parameter {name}")  # pragma: no cover


def kind_of(p: Provision, section: str) -> FormulaKind:
    """The formula kind ``p`` names, checked against the section it stands in."""
    kind = FORMULAS.get(p.formula)
    if kind is None or kind.section != section:
        known = ", ".join(k for k, f in FORMULAS.items() if f.section == section)
        raise InputError(f"{p.path}: {p.where}.formula: unknown formula kind {p.formula!r} for [{section}] "
                         f"(known: {known})")
    return kind


def terms_of(p: Provision, pack: Pack, section: str) -> tuple[FormulaKind, Any]:
    """The formula kind of ``p`` and its terms built from the pack's parameters."""
    kind = kind_of(p, section)
    unknown = sorted(set(p.params) - set(kind.params))
    if unknown:
        raise InputError(f"{p.path}: {p.where}.params.{unknown[0]}: unknown parameter of {kind.name} "
                         f"(expected: {', '.join(kind.params) or 'none'})")
    values = {}
    for name, spec in kind.params.items():
        if name in p.params:
            values[name] = _param_value(p, name, spec, p.params[name])
        elif not spec.optional:
            raise InputError(f"{p.path}: {p.where}.params.{name}: missing (required by {kind.name})")
    for name in sorted(set(kind.rates) ^ set(p.rates)):
        if kind.per_analyte and name in ANALYTE_IDS and name not in kind.rates:
            continue            # a surcharge's rate per pound of an analyte the ordinance fixes
        expected = ", ".join(kind.rates) or ("an analyte id (its rate per pound)" if kind.per_analyte else "none")
        problem = ("missing (the rates file's key for it)" if name in kind.rates
                   else f"unknown rate of {kind.name} (expected: {expected})")
        raise InputError(f"{p.path}: {p.where}.rates.{name}: {problem}")
    return kind, kind.terms(values, p, pack)


# --- a formula the ordinance leaves to the village ----------------------------------------

#: the rates file's table stating the formulas a village adopted where its ordinance sets none
ADOPTED = "adopted"
#: keys of an ``[adopted.<charge id>]`` entry
ADOPTED_KEYS = ("formula", "model", "by", "note")


def adopted(p: Provision, pk: Pack, rates_doc: dict | None, rates_source: str = "rates") -> Provision | None:
    """``p`` with the formula the village adopted, where the ordinance sets none.

    A charge whose pack entry says ``formula_from = "rates"`` (e.g. webster-wi,
    000_68bc5aa0322c9423.txt §240-8(4): "Require payment to cover the added cost of handling
    and treating the waste not covered by existing taxes or sewer charges") takes its
    formula from the rates file's ``[adopted.<charge id>]``: ``formula`` (a formula kind of
    :data:`FORMULAS`, its numbers from the village's own pack) or ``model`` (a pack whose
    charge of the same id serves, e.g. ``palmyra-wi``'s §13.45(4) Model No. 2), ``by`` (the
    Village Board's resolution or ordinance that adopted it, cited on the bill) and an
    optional ``note``; ``formula = "none"`` states that the village adopted none (the charge
    is not billed: returns None). sewerwatch never borrows a formula by default.

    Raises
    ------
    InputError
        Without the entry: naming the rates file and citing the ordinance's words.
    """
    if p.formula_from is None:
        return p
    table = (rates_doc or {}).get(ADOPTED, {})
    entry = table.get(p.id) if isinstance(table, dict) else None
    where = f"{rates_source}: {ADOPTED}.{p.id}"
    if entry is None:
        raise InputError(
            f"{rates_source}: {pk.id} sets no {p.name} formula ({p.citation}: \"{p.words}\"); "
            f"state the one the village adopted in the rates file: [{ADOPTED}.{p.id}] formula = \"epa-model-2\" "
            f"(or model = \"<pack>\", or formula = \"none\") and by = \"<the resolution adopting it>\"")
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a table with formula (or model) and by, got {entry!r}")
    unknown = sorted(set(entry) - set(ADOPTED_KEYS))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown key (expected: {', '.join(ADOPTED_KEYS)})")
    if ("formula" in entry) == ("model" in entry):
        raise InputError(f"{where}: give exactly one of formula (a formula kind) or model (a pack id)")
    by = entry.get("by")
    if not isinstance(by, str) or not by.strip():
        raise InputError(f"{where}.by: missing: who adopted the formula and when (e.g. \"Village Board "
                         f"resolution 2026-04\"), cited on the bill")
    if entry.get("formula") == "none":
        return None
    note = entry.get("note") or p.note
    if "model" in entry:
        model = entry["model"]
        if model not in available_packs() or model == pk.id:
            raise InputError(f"{where}.model: unknown rule pack {model!r}, or this one (known: "
                             f"{', '.join(k for k in available_packs() if k != pk.id)})")
        try:
            src = load_pack(model).charge(p.id)
        except KeyError:
            raise InputError(f"{where}.model: pack {model!r} has no charge {p.id!r}") from None
        if src.formula_from is not None or src.model is not None:
            raise InputError(f"{where}.model: {model}'s {p.id} is not a formula of its own")
        return replace(p, formula=src.formula, params=src.params, rates=src.rates, note=note, model=model,
                       citation=f"{p.citation}; {src.citation} as adopted by {by}")
    formula = entry["formula"]
    if formula not in FORMULAS or FORMULAS[formula].section != "charges":
        raise InputError(f"{where}.formula: unknown formula kind {formula!r} (known: "
                         f"{', '.join(k for k, f in FORMULAS.items() if f.section == 'charges')}, none)")
    if FORMULAS[formula].params and any(not v.optional for v in FORMULAS[formula].params.values()):
        raise InputError(f"{where}.formula: {formula} needs numbers from the ordinance; name a model pack "
                         "that states them (model = \"<pack>\")")
    rates = {r: RateKey(f"{ADOPTED}.{p.id}.rates.{r}") for r in FORMULAS[formula].rates}
    return replace(p, formula=formula, note=note, rates=rates,
                   citation=f"{p.citation}; {FORMULA_NAMES.get(formula, formula)} as adopted by {by}")


#: how a bill names a formula kind adopted by the village rather than by its ordinance
FORMULA_NAMES = {"epa-model-2": "EPA Model No. 2 (Federal Register, Vol. 39, No. 29, p. 5270)",
                 "per-1000-gal": "a charge per 1,000 gallons"}


# --- a village's charges -----------------------------------------------------------------

def charges(pack: str, rates_doc: dict | None = None, rates_source: str = "rates"
            ) -> list[tuple[Provision, FormulaKind, Any]]:
    """The charges of ``pack`` in bill order: (provision, formula kind, terms) each.

    A charge whose formula the ordinance leaves to the village takes the one the rates file
    says it adopted (:func:`adopted`; one it adopted none for is left out).
    """
    pk = pack_of(pack)
    out = []
    for p in pk.charges:
        q = adopted(p, pk, rates_doc, rates_source)
        if q is not None:
            out.append((q, *terms_of(q, pk, "charges")))
    return out


def charge_terms(pack: str, charge_id: str):
    """The terms of one charge of ``pack`` (e.g. ``webster-ny``'s ``sewer-rent``)."""
    pk = pack_of(pack)
    try:
        p = pk.charge(charge_id)
    except KeyError:
        raise InputError(f"pack '{pack}' has no charge '{charge_id}' (charges: "
                         f"{', '.join(c.id for c in pk.charges) or 'none'})") from None
    return terms_of(p, pk, "charges")[1]


def late_terms(pack: str) -> tuple[Provision, FlatLateCharge | MonthlyInterest] | None:
    """The late-payment provision of ``pack`` and its terms, or None where it has none."""
    pk = pack_of(pack)
    if pk.late_charge is None:
        return None
    return pk.late_charge, terms_of(pk.late_charge, pk, "late_charge")[1]


def rec_terms(pack: str) -> RecTerms:
    """How ``pack`` counts residential equivalent connections."""
    pk = pack_of(pack)
    if pk.residential_equivalents is None:
        raise InputError(f"pack '{pack}' has no [residential_equivalents]")
    return terms_of(pk.residential_equivalents, pk, "residential_equivalents")[1]


#: a rate's name in the pack -> its words on a bill
RATE_WORDS = {"per_1000_gal": "the rate per 1,000 gallons", "unit_rent": "the unit rent", "re": "the residential "
              "equivalents", "annual_debt_budget": "the annual debt budget", "total_re": "the total residential "
              "equivalents"}


def rate_words(name: str) -> str:
    """A rate's name in words ("per_1000_gal": "the rate per 1,000 gallons"; an analyte's rate
    per pound by the analyte's name)."""
    if name in RATE_WORDS:
        return RATE_WORDS[name]
    from limits.words import analyte_name
    return f"the rate per pound of {analyte_name(name)}" if name in ANALYTE_IDS else name.replace("_", " ")


def rates_applied(p: Provision, rates_doc: dict, site: str, rates_source: str
                  ) -> tuple[dict[str, float], list[dict], list[str]]:
    """The numbers ``p`` takes, which applied, and which are missing.

    Each rate is the utility's where its rates give it under the pack's key (``{site}``
    replaced by the site id); else the one the ordinance fixes (``value``, with its section and
    effective date); else a ``default``; else it is missing.

    Returns
    -------
    values : dict
        name -> number.
    applied : list of dict
        ``name``, ``words``, ``value``, ``by`` (``rates``, ``ordinance`` or ``default``) and,
        for the ordinance's, ``citation`` and ``effective``: what the bill states.
    missing : list of str
        The names neither gives (the charge bills nothing for them, and says so).
    """
    values, applied, missing = {}, [], []
    for name, rk in p.rates.items():
        key = rk.key.replace("{site}", site)
        v: Any = rates_doc
        for part in key.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        row = {"name": name, "words": rate_words(name)}
        if v is not None:
            if not _is_number(v) or v < 0:
                raise InputError(f"{rates_source}: {key}: expected a number >= 0, got {v!r}")
            row.update(value=float(v), by="rates")
        elif rk.value is not None:
            row.update(value=rk.value, by="ordinance", citation=rk.citation,
                       effective=rk.effective.isoformat() if rk.effective else None)
        elif rk.default is not None:
            row.update(value=rk.default, by="default")
        else:
            missing.append(name)
            continue
        values[name] = row["value"]
        applied.append(row)
    return values, applied, missing


def rates_given(p: Provision, rates_doc: dict, site: str, rates_source: str) -> dict[str, float] | None:
    """The numbers ``p`` takes from the rates file, or None when one without a default is absent.

    Each is looked up by the key the pack maps it to (``{site}`` replaced by the site id).
    """
    out = {}
    for name, rk in p.rates.items():
        key = rk.key.replace("{site}", site)
        v: Any = rates_doc
        for part in key.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if v is None:
            if rk.default is None:
                return None
            v = rk.default
        elif not _is_number(v) or v < 0:
            raise InputError(f"{rates_source}: {key}: expected a number >= 0, got {v!r}")
        out[name] = float(v)
    return out


# --- the pack-aware forms of the formulas ------------------------------------------------

def surcharged(pack: str) -> bool:
    """Whether ``pack`` charges a strength surcharge priced per pound (its formula ``epa-model-2``,
    or one the ordinance leaves to the rates file)."""
    return any(c.formula == "epa-model-2" or c.formula_from for c in load_pack(pack).charges)


def surcharge_provision(pack: str, rates_doc: dict | None = None, rates_source: str = "rates"
                        ) -> tuple[Provision, dict]:
    """The pack's surcharge (its ``epa-model-2`` charge, or the one the village adopted where
    the ordinance sets no formula: :func:`adopted`) and its bases."""
    for p, kind, terms in charges(pack, rates_doc, rates_source):
        if kind.name == "epa-model-2":
            return p, terms
    raise InputError(f"pack '{pack}' adopts no surcharge formula (no [[charges]] entry with formula "
                     "\"epa-model-2\")")


def site_surcharge(site: str, volume_mg: float, results: dict[str, tuple[np.ndarray, np.ndarray]],
                   rates: dict[str, float], pack: str, non_detect: str = DEFAULT_BILLING,
                   rates_source: str = "rates", rates_doc: dict | None = None) -> SiteSurcharge:
    """The surcharge of one site under ``pack`` (see :func:`lab.formulas.surcharge.model_2_surcharge`).

    ``rates_doc`` is the whole rates file: where the ordinance sets no formula, it states the
    one the village adopted (:func:`adopted`).

    Raises
    ------
    InputError
        For a pack without normal sewage strength or surcharge, or a missing rate.
    """
    normal_strength(pack)  # a pack without bases says so first
    p, bases = surcharge_provision(pack, rates_doc, rates_source)
    return model_2_surcharge(site, volume_mg, results, rates, bases, p.citation, non_detect, rates_source)


def surcharges(rows, volumes: dict[str, float], rates: dict[str, float], pack: str,
               non_detect: str = DEFAULT_BILLING, lab_source: str = "lab file",
               volume_source: str = "volumes", rates_source: str = "rates",
               rates_doc: dict | None = None) -> list[SiteSurcharge]:
    """Surcharges of every site in ``volumes`` under ``pack``, sorted by site.

    Raises
    ------
    InputError
        A site with lab results but no volume, or a volume but no lab results.
    """
    grouped = group_results(rows)
    no_volume = sorted(set(grouped) - set(volumes))
    if no_volume:
        raise InputError(f"{volume_source}: no volume for site(s) {', '.join(no_volume)} "
                         f"(they have results in {lab_source})")
    no_results = sorted(set(volumes) - set(grouped))
    if no_results:
        raise InputError(f"{lab_source}: no results for site(s) {', '.join(no_results)} "
                         f"(given a volume in {volume_source})")
    return [site_surcharge(s, volumes[s], grouped[s], rates, pack, non_detect, rates_source, rates_doc)
            for s in sorted(volumes)]


@dataclass(frozen=True)
class LateCharge:
    days_late: int
    dollars: float
    citation: str


def late_charge(pack: str, amount: float, billed: date, paid: date) -> LateCharge:
    """The late charge under ``pack`` on ``amount`` [$] billed on ``billed``, paid on ``paid``.

    Days count from the billing date: paid on day 20 after a Palmyra statement is on time, on
    day 21 it is 3 % more. A Superior bill paid 75 days after billing owes 45 days of
    interest: 45/30 × 1 % of the amount.
    """
    late = late_terms(pack)
    if late is None:
        have = [k for k in available_packs() if load_pack(k).late_charge is not None]
        raise InputError(f"pack '{pack}' has no late charge in the ordinance (packs that do: {', '.join(have)})")
    p, terms = late
    if amount < 0:
        raise InputError(f"billed amount must be >= 0, got {amount}")
    if paid < billed:
        raise InputError(f"paid {paid} is before billed {billed}")
    days = late_days((paid - billed).days, terms.grace_days)
    return LateCharge(days, terms.dollars(amount, days), p.citation)
