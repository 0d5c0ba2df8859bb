"""Rule packs: one TOML file per jurisdiction, shipped in ``limits/packs/`` (more folders:
``$SEWERWATCH_PACK_PATH`` and the config's ``[utility] pack_dirs``, searched first).

A pack names the village, the title people cite its ordinance by (``code``: "Village of
Palmyra Code"; documents cite ``<code> <section>``, :func:`cite`), its IANA time zone
(calendar days of violation are counted in it) and the seed file of its ordinance (kept as
each rule's ``provenance``), and lists ``[[rules]]``, each of a ``kind`` (``range``, ``slug``,
``lab-limit``, ``loading-limit``, ``normal-strength``, ``permit-threshold``,
``permit-characteristics`` (a permit required where the discharge shows a prohibited
characteristic: palmyra-wi §13.54(1)(f)), ``flow-threshold``, ``default-strength``,
``definition`` (with a ``reading`` where its words read two ways, :data:`READINGS`),
``narrative``) with its ``id``, the
``section`` of the seed it comes from and the ordinance's ``words``. Besides its rules, a pack
says which charge formulas the village adopted (``[[charges]]``, ``[late_charge]``,
``[residential_equivalents]``; the formulas are code in ``lab/formulas/``, named by a formula
kind of ``lab.charges``; ``formula_from = "rates"`` where the ordinance sets none: the rates
file must state the one adopted, nothing is borrowed by default), the sampling it requires
(``[[monitoring]]``) and the discharger's duty to report (``[report_duty]``). Where a
village's seed gives no such provision but sewerwatch applies another village's as a model,
the entry is ``model = "<pack id>"``: the model pack's entry applies, cited as that pack's.

Each table and key is a field of the file's model below (:class:`PackFile`), with its
description; ``docs/reference/pack.md`` and the JSON Schema ``docs/reference/pack.schema.json``
are generated from them. Any unknown key, kind, unit, parameter, analyte or comparison is an
:class:`InputError` naming the file, the rule and the key, never a guess. Adding a village is
adding a TOML file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union
from zoneinfo import ZoneInfo

import numpy as np

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, model_validator

from foundation import config, tomlfile, units
from foundation.errors import InputError
from foundation.schema import (SLUG, UNION_TAGS, Internal, IntRange, Number, OneOf, Positive, Strings, Table, Tables,
                               Text, TextList, TimeZone, check, duplicates, fail, fail_all, is_text, item_label,
                               known_unit, one_of, refusing, table, then, validate)
from limits import analytes
from limits.core import exceeds
from limits.pack_rates import RATE_KEY, RateKey, Rates  # noqa: F401 - RATE_KEY, RateKey: part of this module's API
from limits.sample_types import SAMPLE_TYPES

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
    "exceed": ">",              # "shall not exceed 0.05 mg/l"
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

#: Units a ``definition`` may carry (they are not readings, so not in :mod:`foundation.units`).
DEFINITION_UNITS = ("gal", "percent", "fraction", "usd", "days", "years")

#: Units of a loading limit (a discharge permit's pounds a day, palmyra-wi §13.54(3)(g)).
LOADING_UNITS = ("lb/d",)

#: The bases of a lab limit: each result, the period's average (the period checked: the permit's
#: reporting period), the calendar month's average (a permit's monthly average), the calendar
#: week's (Sunday to Saturday), the rolling 30 days' ending on each day sampled; of a loading
#: limit: each day's.
BASES = {"lab-limit": ("sample", "average", "monthly", "weekly", "rolling-30-day"), "loading-limit": ("daily",)}
#: each basis in words, and the days of violation of an average over it (the reference page)
BASIS_WORDS = {
    "sample": ("each result", "the day it was collected"),
    "average": ("the average of the period checked (the reporting period: `lab check --since --until`, a "
                "bill's quarter)", "the days of its samples, or every day of the period"),
    "monthly": ("each calendar month's average, in the pack's time zone", "the days of its samples, or every "
                "day of the month"),
    "weekly": ("each calendar week's average, Sunday to Saturday", "the days of its samples, or the 7 days"),
    "rolling-30-day": ("for each day a result was collected on, the average of the 30 days ending on it (that "
                       "day included)", "the days of its samples, or its 30 days"),
    "daily": ("each day's loading (a `loading-limit`)", "that day"),
}

#: The catalogue's analytes (``limits/analytes.csv``, :mod:`limits.analytes`) -> the
#: parameter their units belong to; a pack may add its own (``[[analytes]]``).
ANALYTES = {k: a.parameter for k, a in analytes.catalogue().items()}

#: The kinds of municipality a pack's ``municipality`` may be (documents write "the City finds").
MUNICIPALITY_KINDS = ("city", "village", "town", "township", "borough", "county", "district", "authority",
                      "utility")

#: the periods a sampling frequency of ``[[monitoring]]`` counts in
SAMPLING_PERIODS = ("day", "week", "month", "quarter", "year")
#: the values of ``formula_from``: where the formula of a charge the ordinance sets none for is stated
FORMULA_FROM = ("rates",)
#: what the alert's report form can pre-fill from the readings, per field of the report
REPORT_FILLS = ("location", "date-time", "measured", "concentration-volume", "blank")
RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
#: definition id -> the readings its words allow, the program's default first (``reading``):
#: palmyra-wi §13.54(4) "unless the person is notified by the Village within 60 days prior to
#: the expiration": ``window`` (a notice given before the term ends, in the 60 days before it
#: or earlier, ends that term) or ``deadline`` (the notice must come at least 60 days before
#: the term ends; a later one ends the next term) (:func:`limits.permits.renewal`).
READINGS = {"permit-notice": ("window", "deadline")}


def cite(code: str, section: str) -> str:
    """An ordinance cited by its title and section: ``Village of Palmyra Code §13.45(4)``;
    a section named in words follows a comma (``Village of Westfield Code, definitions,
    SLUG``)."""
    numbered = section.startswith(("§", "Sec.", "Sec ", "Section ", "Art.", "Chapter ")) or section[:1].isdigit()
    return f"{code} {section}" if numbered else f"{code}, {section}"


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
    multiple, window_h : float or None
        Slug rule: the multiple of the trailing average, the window [h].
    longer_than_min : float or None
        The strict minimum duration of an episode [min]: a slug's, or a range rule's duration
        qualifier ("for more than one hour"). Shorter episodes are no violation; a longer
        one starts at its first reading over the limit.
    quantity : str or None
        The :mod:`foundation.units` parameter of an analyte's unit (``concentration``, ...).
    basis, category, note : str or None
        ``lab-limit`` basis (``sample``, ``average`` or ``monthly``; a permit's daily
        maximum ``daily``), ``loading-limit`` basis (``daily``), ``default-strength``
        category, and a free note.
    rules : tuple of str
        ``permit-characteristics``: the ids of the prohibitions it refers to.
    reading : str or None
        ``definition``: which reading of its words the program takes (:data:`READINGS`).
    sample_type : str or None
        ``lab-limit``: the sample type it applies to (``grab``, ``composite``; None: any,
        :mod:`limits.sample_types`).
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
    quantity: str | None = None
    rules: tuple[str, ...] = ()
    reading: str | None = None
    sample_type: str | None = None

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
        param = self.parameter or self.quantity or (ANALYTES.get(self.analyte) if self.analyte else None)
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
    formula: str = ""
    params: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)
    section: str = ""
    words: str = ""
    citation: str = ""
    provenance: str = ""
    formula_from: str | None = None
    note: str | None = None
    model: str | None = None
    where: str
    path: str


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
    contents : tuple of ContentItem
        What the report must give.
    contents_citation : str
        Where the contents are listed (the duty's own citation, or ``contents_from``'s).
    note, model : str or None
    """

    citation: str
    words: str
    rules: tuple[str, ...]
    contents: tuple[ContentItem, ...]
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
    monitoring: tuple[SamplingEntry, ...] = ()
    checklist: tuple[CheckEntry, ...] = ()
    municipality: "Municipality | None" = None
    analytes: tuple[analytes.Analyte, ...] = ()

    @property
    def the(self) -> str:
        """How documents name the municipality in a sentence: ``the City``, ``the Village``."""
        return (self.municipality or Municipality.of(self.name)).the

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

    def permit_characteristics(self) -> Rule | None:
        """The ``permit-characteristics`` rule (a permit is required where the discharge
        shows a prohibited characteristic), or None."""
        found = self.by_kind("permit-characteristics")
        return found[0] if found else None

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


# --- the file, checked: one table class per entry -------------------------------------------

rule_id = refusing(lambda v: isinstance(v, str) and bool(RULE_ID.match(v)), "a lowercase rule id (letters, digits, -)")
charge_id = refusing(lambda v: isinstance(v, str) and bool(RULE_ID.match(v)), "a lowercase charge id (letters, digits, -)")
#: an analyte id (the pack's own analytes are known too: PackFile checks them)
Analyte = Annotated[str, check(is_text, "an analyte id")]
RuleId = Annotated[str, BeforeValidator(rule_id), Field(pattern=RULE_ID.pattern)]
ChargeId = Annotated[str, BeforeValidator(charge_id), Field(pattern=RULE_ID.pattern)]
Parameter = OneOf(*units.CONVERSIONS, what="parameter")
Comparison = OneOf(*COMPARISONS, what="comparison")


@table(kw_only=True)
class Entry(Table):
    """What every rule has."""

    id: RuleId
    """The rule's id, unique in the pack (``ph-min``); alerts and findings name it."""
    section: Text
    """Where the ordinance says it (``§13.48(2)(g)``); documents cite ``<code> <section>``."""
    words: Text
    """The ordinance's words, quoted exactly (documents and alerts quote them)."""
    note: Text | None = None
    """Why and how, where the ordinance leaves something open."""

    @classmethod
    def _unknown_key_words(cls) -> str:
        return f" for a {cls.__pydantic_fields__['kind'].annotation.__args__[0]} rule"

    @model_validator(mode="after")
    def _units(self):       # an analyte's units: PackFile checks them (the pack may define it)
        if "unit" in type(self).__pydantic_fields__ and self.kind not in ("loading-limit", "definition") and \
                getattr(self, "parameter", None) is not None:
            known_unit(self.unit, self.parameter)
        return self


@table(kw_only=True)
class Limited(Entry):
    """What every rule with a limit has."""

    comparison: Comparison
    """The ordinance's comparison words: a value is on the wrong side when ``value <comparison> limit``
    (for a threshold or a normal strength: above it)."""
    limit: Number
    """The number [unit]."""
    unit: Text
    """The unit the ordinance states it in (one of its parameter's units)."""


@table(kw_only=True)
class RangeRule(Limited):
    """A continuous parameter checked reading by reading."""

    kind: Literal["range"]
    parameter: Parameter
    """The parameter (``ph``, ``temperature``, ``flow``, ...)."""
    longer_than_min: Positive | None = None
    """A duration qualifier ("exceeds these limits for more than one hour": 60): an episode is a
    violation only when it lasts strictly longer [min]; its start stays the first reading over."""


@table(kw_only=True)
class SlugRule(Entry):
    """A slug: readings above a multiple of their trailing average for longer than a time."""

    kind: Literal["slug"]
    parameters: Strings("parameters", one_of(units.CONVERSIONS, "parameter"))
    """The continuous parameters it applies to."""
    comparison: Comparison
    """The ordinance's comparison words."""
    multiple: Positive
    """The multiple of the trailing average."""
    window_h: Positive
    """The averaging window [h]."""
    longer_than_min: Positive
    """The strict minimum duration [min]."""


@table(kw_only=True)
class LabLimit(Limited):
    """A prohibited concentration in a lab result."""

    kind: Literal["lab-limit"]
    analyte: Analyte
    """The analyte (an id of the lab CSV)."""
    basis: OneOf(*BASES["lab-limit"])
    """What is judged: ``sample``, each result; ``average``, the average of the period checked (the reporting
    period: ``lab check --since --until``, a bill's quarter); ``monthly``, each calendar month's average;
    ``weekly``, each calendar week's (Sunday to Saturday); ``rolling-30-day``, for each day a result was
    collected on, the average of the 30 days ending on it. Where the words say "30 day average" without
    saying which, the pack says which it reads in ``note`` (a calendar month is the common reading: the
    average of a month's samples a permit reports)."""
    sample_type: OneOf(*SAMPLE_TYPES, what="sample type") | None = None
    """The sample type it applies to: ``grab`` or ``composite`` (24-hour, flow- or time-proportional); absent:
    any. An analyte has one limit per sample type and basis; a result of a type no limit of its analyte names is
    judged by the limits naming none, and an average is taken over the results of the type the limit names."""


@table(kw_only=True)
class LoadingLimit(Limited):
    """A prohibited loading."""

    kind: Literal["loading-limit"]
    analyte: Analyte
    """The analyte."""
    basis: OneOf(*BASES["loading-limit"])
    """``daily``: each day's loading."""
    unit: OneOf(*LOADING_UNITS, what="unit for a loading")
    """``lb/d``."""


@table(kw_only=True)
class NormalStrength(Limited):
    """The strength of normal (domestic) sewage, the base of surcharges."""

    kind: Literal["normal-strength"]
    analyte: Analyte
    """The analyte."""


@table(kw_only=True)
class PermitThreshold(Limited):
    """A discharge permit is required above it."""

    kind: Literal["permit-threshold"]
    analyte: Analyte | None = None
    """The analyte (or give ``parameter``)."""
    parameter: Parameter | None = None
    """The parameter (``flow``; or give ``analyte``)."""

    @model_validator(mode="after")
    def _one(self):
        if (self.analyte is None) == (self.parameter is None):
            raise fail((), "a permit-threshold names exactly one of analyte or parameter")
        return self


@table(kw_only=True)
class PermitCharacteristics(Entry):
    """A discharge permit is required where the discharge shows any of the characteristics the
    named prohibitions describe (palmyra-wi §13.54(1)(f): "Any of the characteristics listed
    under §13.48")."""

    kind: Literal["permit-characteristics"]
    rules: Strings("rule ids", rule_id)
    """The ids of this pack's prohibitions whose violation shows such a characteristic."""


@table(kw_only=True)
class FlowThreshold(Limited):
    """A volume that changes a user's class or duties."""

    kind: Literal["flow-threshold"]
    parameter: Parameter
    """``flow``."""


@table(kw_only=True)
class DefaultStrength(Entry):
    """The strength assumed when a waste is not sampled."""

    kind: Literal["default-strength"]
    analyte: Analyte
    """The analyte."""
    category: Text
    """The category of waste."""
    limit: Number
    """The strength [unit]."""
    unit: Text
    """Its unit."""


@table(kw_only=True)
class Definition(Entry):
    """Another number the ordinance defines (a forfeiture, a permit term, a rate)."""

    kind: Literal["definition"]
    value: Number
    """The number [unit]."""
    unit: OneOf(*DEFINITION_UNITS, what="unit for a definition")
    """Its unit."""
    comparison: Text
    """The words that govern it."""
    reading: Text | None = None
    """Where the words read two ways, the reading the program takes: for ``permit-notice``
    (§13.54(4) "within 60 days prior to the expiration") ``window`` or ``deadline``."""

    @model_validator(mode="after")
    def _reading(self):
        if self.reading is not None:
            choices = READINGS.get(self.id)
            if choices is None:
                raise fail(("reading",), f"rule {self.id!r} has no readings to choose from "
                           f"(definitions with readings: {', '.join(READINGS)})")
            if self.reading not in choices:
                raise fail(("reading",), f"expected one of {', '.join(choices)}, got {self.reading!r}")
        return self


@table(kw_only=True)
class Narrative(Entry):
    """A provision without a number, kept so a report can quote it."""

    kind: Literal["narrative"]


RULE_KINDS = (RangeRule, SlugRule, LabLimit, LoadingLimit, NormalStrength, PermitThreshold, PermitCharacteristics,
              FlowThreshold, DefaultStrength, Definition, Narrative)
KINDS = tuple(c.__pydantic_fields__["kind"].annotation.__args__[0] for c in RULE_KINDS)
UNION_TAGS.update(KINDS)
AnyRule = Annotated[Union[RULE_KINDS], Field(discriminator="kind")]


Params = dict[str, Annotated[Any, check(lambda v: not isinstance(v, (bool, str)),
                                        'a number, a table, a list or { rule = "<id>" }')]]


@table(kw_only=True)
class FormulaEntry(Table):
    """A formula the ordinance adopts: ``formula`` names a formula kind of ``lab.charges``."""

    formula: Text
    """The formula kind (``epa-model-2``, ``per-1000-gal``, ``monthly-interest``, ...)."""
    section: Text
    """Where the ordinance adopts it."""
    words: Text
    """The ordinance's words."""
    note: Text | None = None
    """Why and how, where the ordinance leaves something open."""
    params: Params = None
    """The ordinance's numbers the formula takes: a number or table of numbers stated in the words,
    or ``{ rule = "<id>" }`` naming a ``definition`` rule of the pack."""
    rates: Rates = None
    """The numbers the utility sets each year, by the rates file's key (``"bill.x.y"``, ``{site}``
    standing for the site id), or ``{ key = "...", default = N }``; a rate the ordinance itself fixes
    ``{ key = "...", value = N, section = "§...", effective = YYYY-MM-DD }`` (the utility's rates
    override it under ``key``; the bill says which applied). A rate neither gives is billed nothing,
    and the bill says so. The rates each formula kind reads: the formula kinds table below."""


@table(kw_only=True)
class ModelEntry(Table):
    """Another village's provision applied as a model: ``model`` names its pack."""

    model: Text
    """The model pack's id."""
    note: Text | None = None
    """Why."""


@table(kw_only=True)
class ChargeFormula(FormulaEntry):
    """``[[charges]]``: what a bill charges, by a formula."""

    id: ChargeId
    """The charge's id."""
    name: Text
    """Its line on the bill."""


@table(kw_only=True)
class ChargeFromRates(Table):
    """``[[charges]]`` where the ordinance provides for a charge but sets no formula: the rates file
    must state the one the village adopted (``[adopted.<id>]``), or the charge is refused."""

    id: ChargeId
    """The charge's id."""
    name: Text
    """Its line on the bill."""
    formula_from: OneOf(*FORMULA_FROM)
    """``rates``."""
    section: Text
    """Where the ordinance provides for it."""
    words: Text
    """The ordinance's words."""
    note: Text | None = None
    """Why and how."""


@table(kw_only=True)
class ChargeModel(ModelEntry):
    """``[[charges]]`` applying another village's charge."""

    id: ChargeId
    """The charge's id (the model pack's charge of that id applies)."""


def _which(*forms):
    def pick(v):
        if isinstance(v, dict):
            return next((tag for key, tag in forms if key in v), forms[-1][1])
        return type(v).__name__
    return Discriminator(pick)


UNION_TAGS.update(("model-entry", "rates-entry", "formula-entry"))
Charge = Annotated[Union[Annotated[ChargeModel, Tag("model-entry")], Annotated[ChargeFromRates, Tag("rates-entry")],
                         Annotated[ChargeFormula, Tag("formula-entry")]],
                   _which(("model", "model-entry"), ("formula_from", "rates-entry"), (None, "formula-entry"))]
Provided = Annotated[Union[Annotated[ModelEntry, Tag("model-entry")], Annotated[FormulaEntry, Tag("formula-entry")]],
                     _which(("model", "model-entry"), (None, "formula-entry"))]


@table
class ContentItem(Table):
    """``[[report_duty.contents]]``: one item the discharger's report must give."""

    fill: OneOf(*REPORT_FILLS, what="fill")
    """What sewerwatch pre-fills from the readings."""
    words: Text
    """The ordinance's words for the item."""


@table(kw_only=True)
class DutyOwn(Table):
    """``[report_duty]``: the discharger's duty to report a slug or an accidental discharge."""

    section: Text
    """Where the ordinance sets the duty."""
    words: Text
    """Its words."""
    rules: Strings("rule ids")
    """The ids of the rules whose episodes call for the report."""
    contents: Tables(ContentItem) | None = None
    """What the report must give (or ``contents_from``)."""
    contents_from: Text | None = None
    """A pack whose report contents serve, where the ordinance lists none."""
    note: Text | None = None
    """Why and how."""

    @model_validator(mode="after")
    def _one(self):
        if (self.contents is None) == (self.contents_from is None):
            raise fail((), "give exactly one of contents (the report's items) or contents_from (a pack id)")
        if self.contents is not None and not self.contents:
            raise fail(("contents",), "expected a non-empty array of tables, got []")
        return self


@table(kw_only=True)
class DutyModel(ModelEntry):
    """``[report_duty]`` applying another village's duty to this pack's ``rules``."""

    rules: Strings("rule ids")
    """The ids of this pack's rules whose episodes call for the report."""


Duty = Annotated[Union[Annotated[DutyModel, Tag("model-entry")], Annotated[DutyOwn, Tag("formula-entry")]],
                 _which(("model", "model-entry"), (None, "formula-entry"))]


@table(kw_only=True)
class SamplingEntry(Table):
    """``[[monitoring]]``: sampling the ordinance requires of every industrial user."""

    section: Text
    """Where the ordinance says it."""
    words: Text
    """Its words."""
    parameters: Strings("analytes")
    """The analytes each sample is analysed for."""
    times: IntRange(1, 10_000, "a whole number >= 1")
    """Samples per ``per``."""
    per: OneOf(*SAMPLING_PERIODS)
    """The period."""
    note: Text | None = None
    """Why and how."""
    citation: Internal = ""
    """``section`` as documents cite it (``Village of Webster Code §240-8``), set by the loader (e.g.
    webster-wi §240-8: "A minimum of at least quarterly sampling shall be necessary to determine
    sewer service charges.")."""


@table(kw_only=True)
class CheckEntry(Table):
    """``[[checklist]]``: an item an inspector checks at every industrial user's visit."""

    item: Text
    """What is checked, in words."""
    section: Text
    """Where the ordinance requires it."""
    words: Text
    """Its words."""
    citation: Internal = ""
    """``section`` as documents cite it, set by the loader (e.g. Palmyra §13.51: "All grease, oil and
    sand interceptors shall be maintained by the owner, at his expense, in continuous, efficient
    operation at all times.")."""


@table
class Municipality(Table):
    """``municipality``: who enforces the ordinance, as its documents name it."""

    kind: OneOf(*MUNICIPALITY_KINDS)
    """``city``, ``village``, ``town``, ...: documents say "the City finds"."""
    name: Text
    """The name without its kind (``Palmyra``)."""

    @property
    def the(self) -> str:
        """``the City`` (a sentence capitalises it)."""
        return f"the {self.kind.capitalize()}"

    @property
    def title(self) -> str:
        """``City of Examplehaven``."""
        return f"{self.kind.capitalize()} of {self.name}"

    @classmethod
    def of(cls, name: str) -> "Municipality":
        """The municipality a pack's ``name`` states (``Village of Palmyra`` -> village)."""
        head, _, rest = name.partition(" of ")
        kind = head.strip().lower()
        if kind in MUNICIPALITY_KINDS and rest:
            return cls(kind, rest.split(",")[0].split(" (")[0].strip())
        return cls("utility", name)


@table(kw_only=True)
class AnalyteEntry(Table):
    """``[[analytes]]``: an analyte of the village's own, beside the catalogue's (``limits/analytes.csv``)."""

    id: Annotated[str, check(lambda v: isinstance(v, str) and bool(SLUG.match(v)),
                             "a lowercase analyte id (letters, digits, - and _)"),
                  then(lambda v: v not in analytes.catalogue(), lambda v: f"{v!r} is in the catalogue "
                       f"({analytes.catalogue()[v].name}): name it, or give your own id")]
    """The id its rules and the lab CSV name it by."""
    name: Text
    """What it is."""
    parameter: Parameter = "concentration"
    """The parameter its units belong to."""
    unit: Text = "mg/l"
    """The unit results are stored and judged in (the parameter's canonical unit)."""
    units: TextList | None = None
    """The units results and limits may be written in (default: all of the parameter's)."""
    cas: str = ""
    """Its CAS registry number, where it has one."""
    method: str = ""
    """The 40 CFR 136 method family a lab would use."""

    @model_validator(mode="after")
    def _units_known(self):
        if self.unit != units.CANONICAL[self.parameter]:
            raise fail(("unit",), f"expected {units.CANONICAL[self.parameter]!r}, the canonical unit of "
                       f"{self.parameter}, got {self.unit!r}")
        for u in self.units or ():
            known_unit(u, self.parameter, ("units",))
        return self

    def analyte(self) -> analytes.Analyte:
        return analytes.Analyte(self.id, self.name, self.parameter, self.unit,
                                tuple(self.units or units.CONVERSIONS[self.parameter]), self.cas, "local", self.method)


@table(kw_only=True)
class PackFile(Table):
    """A rule pack: one TOML file per jurisdiction."""

    id: Text
    """The pack's id, the file's name without ``.toml`` (``palmyra-wi``)."""
    name: Text
    """The jurisdiction (``Village of Palmyra``)."""
    code: Text
    """The title people cite its ordinance by (``Village of Palmyra Code``)."""
    timezone: TimeZone
    """IANA time zone: calendar days of violation are counted in it."""
    seed: Text
    """The file the ordinance's words were copied from (each rule's provenance)."""
    municipality: Municipality | None = None
    """Who enforces it: ``{ kind = "city", name = "Examplehaven" }`` (default: read from ``name``,
    "Village of Palmyra")."""
    analytes: Tables(AnalyteEntry) = ()
    """Analytes of the village's own, beside the catalogue's."""
    rules: Tables(AnyRule)
    """The ordinance's provisions (``[[rules]]``), each of one ``kind``."""
    charges: Tables(Charge) = ()
    """What a bill charges, in order."""
    late_charge: Provided | None = None
    """The late-payment terms."""
    residential_equivalents: Provided | None = None
    """How a user's residential equivalents are counted."""
    report_duty: Duty | None = None
    """The discharger's duty to report a slug or an accidental discharge."""
    monitoring: Tables(SamplingEntry) = ()
    """Sampling the ordinance requires of every industrial user, where it sets a frequency."""
    checklist: Tables(CheckEntry) = ()
    """What an inspector checks at a visit (pretreatment equipment, grease interceptors, the sampling point)."""

    @model_validator(mode="after")
    def _references(self, info: ValidationInfo):
        found: list[tuple[tuple, str]] = []          # every problem, one line each
        expected = (info.context or {}).get("expected_id")
        if expected is not None and self.id != expected:
            found.append((("id",), f"pack id {self.id!r} does not match the file name {expected!r}"))
        for what in ("rule", "charge"):
            found += [((f"{what}s", i, "id"), f"duplicate {what} id {k!r} (first at {what}s[{j}])")
                      for i, k, j in duplicates(getattr(self, f"{what}s"), lambda r: r.id)]
        ids = dict.fromkeys(r.id for r in self.rules)
        own = tuple(a.analyte() for a in self.analytes)
        table_ = analytes.known(own)
        for i, r in enumerate(self.rules):
            a, unit = getattr(r, "analyte", None), getattr(r, "unit", None)
            if a is not None and a not in table_:
                found.append((("rules", i, "analyte"), analytes.unknown(a, own)))
            elif a is not None and unit is not None and r.kind != "loading-limit" and unit not in table_[a].units:
                found.append((("rules", i, "unit"), f"unknown unit {unit!r} for {a} (known: {', '.join(table_[a].units)})"))
        for i, m in enumerate(self.monitoring):
            found += [(("monitoring", i, "parameters"), analytes.unknown(a, own)) for a in m.parameters if a not in table_]
        definitions = [r.id for r in self.rules if r.kind == "definition"]
        provisions = [(("charges", i), c) for i, c in enumerate(self.charges)] + [
            ((k,), getattr(self, k)) for k in ("late_charge", "residential_equivalents") if getattr(self, k)]
        for at, c in provisions:
            for k, v in (getattr(c, "params", None) or {}).items():
                if isinstance(v, dict) and "rule" in v and (set(v) != {"rule"} or v["rule"] not in definitions):
                    found.append(((*at, "params", k), f"expected {{ rule = \"<id>\" }} naming a definition rule of "
                                  f"this pack (definitions: {', '.join(definitions) or 'none'}), got {v!r}"))
        refs = [(("rules", i, "rules"), r.rules) for i, r in enumerate(self.rules) if hasattr(r, "rules")]
        refs += [(("report_duty", "rules"), self.report_duty.rules)] if self.report_duty is not None else []
        found += [(at, f"no rule {x!r} in this pack (rules: {', '.join(ids)})") for at, xs in refs for x in xs
                  if x not in ids]
        if found:
            raise fail_all(type(self), found)
        return self


# --- the checked file -> the pack the evaluators read -------------------------------------------

def _fail(path, where: str, problem: str):
    raise InputError(f"{path}: {where}: {problem}")


def _rule(e, seed: str, code: str, table_: dict) -> Rule:
    """A checked rule as the evaluators read it: its keys, the operator of its comparison, its
    limit in the canonical unit (a loading's in lb/d; a definition's value as its ``limit``)."""
    f = {k: getattr(e, k) for k in e.__pydantic_fields__ if k in Rule.__dataclass_fields__}
    f.update(seed=seed, code=code, quantity=table_[e.analyte].parameter if getattr(e, "analyte", None) else None)
    if e.kind == "definition":
        return Rule(**f, limit=e.value)
    limit, param = getattr(e, "limit", None), getattr(e, "parameter", None) or f["quantity"]
    canonical = limit if limit is None or e.kind == "loading-limit" else float(units.to_canonical(param, e.unit, limit))
    return Rule(**f, op=COMPARISONS.get(getattr(e, "comparison", None)), limit_canonical=canonical)


def _model_pack(path, where: str, model_id: str, own_id: str) -> "Pack":
    """The pack a model entry names, parsed without following its own model references
    (a model's entries must be its own, so references never chain or loop)."""
    found = config.find_pack(model_id) if model_id != own_id else None
    if found is None:
        _fail(path, where, f"unknown rule pack {model_id!r}, or this one "
              f"(known: {', '.join(p for p in available_packs() if p != own_id)})")
    return _load_cached(str(found.resolve()), found.stat().st_mtime_ns, False)


def _provision(path, where: str, e, pack: Pack, rules: dict, resolve: bool, section_key: str) -> Provision:
    """One ``[[charges]]`` entry, ``[late_charge]`` or ``[residential_equivalents]``."""
    cid = getattr(e, "id", None)
    if isinstance(e, ModelEntry):
        if not resolve:  # the pack is read as a model: its model entries cannot serve
            return Provision(where=where, path=str(path), id=cid, model=e.model)
        model = _model_pack(path, f"{where}.model", e.model, pack.id)
        src = next((c for c in model.charges if c.id == cid), None) if cid else getattr(model, section_key)
        if src is None:
            _fail(path, f"{where}.model", f"pack {model.id!r} has no {f'charge {cid!r}' if cid else section_key} to apply here")
        if src.model is not None:
            _fail(path, f"{where}.model", f"{model.id}'s {src.where} is itself a model entry")
        return replace(src, note=e.note, model=model.id)
    params = {k: (Cited(float(rules[v['rule']].limit), rules[v['rule']].unit, rules[v['rule']])
                  if isinstance(v, dict) and "rule" in v else v) for k, v in (getattr(e, "params", None) or {}).items()}
    own = {k: getattr(e, k) for k in ("id", "name", "formula", "formula_from", "note", "words") if hasattr(e, k)}
    rates = {k: replace(r, citation=cite(pack.code, r.section)) if r.section else r
             for k, r in (getattr(e, "rates", None) or {}).items()}
    return Provision(**own, where=where, path=str(path), section=e.section, citation=cite(pack.code, e.section),
                     provenance=f"{pack.seed} {e.section}", params=params, rates=rates)


def _report_duty(path, e, pack: Pack, resolve: bool) -> ReportDuty:
    where = "report_duty"
    if isinstance(e, DutyModel):
        if not resolve:
            return ReportDuty("", "", (), (), "", model=e.model)
        model = _model_pack(path, f"{where}.model", e.model, pack.id)
        if model.report_duty is None or model.report_duty.model is not None:
            _fail(path, f"{where}.model", f"pack {model.id!r} has no report duty of its own to apply here")
        return replace(model.report_duty, rules=e.rules, note=e.note, model=model.id)
    citation = cite(pack.code, e.section)
    if e.contents is not None:
        contents, contents_citation = e.contents, citation
    elif not resolve:
        contents, contents_citation = (), ""
    else:
        model = _model_pack(path, f"{where}.contents_from", e.contents_from, pack.id)
        if model.report_duty is None or not model.report_duty.contents or model.report_duty.model:
            _fail(path, f"{where}.contents_from", f"pack {model.id!r} lists no report contents of its own")
        contents, contents_citation = model.report_duty.contents, model.report_duty.contents_citation
    return ReportDuty(citation, e.words, e.rules, contents, contents_citation, note=e.note)


def not_a_pack(data, path) -> None:
    """Refuse a config file given as a pack, in one line."""
    if isinstance(data, dict) and "rules" not in data and {"utility", "sites", "sensors", "services"} & set(data):
        raise InputError(f"{path}: a sewerwatch config, not a rule pack (a pack has id, name, code, timezone, seed "
                         "and [[rules]]; the config's [utility] pack names the utility's pack)")


def parse_pack(data: dict, path: str = "<pack>", expected_id: str | None = None, resolve: bool = True) -> Pack:
    """Validate an already-parsed pack (see :func:`load_pack`).

    ``resolve=False`` reads it as another pack's model: its own model references are kept
    unresolved (a model entry names its model pack's own entry, never a chain).
    """
    not_a_pack(data, path)
    f = validate(PackFile, data, str(path), lambda p, k, m: InputError(f"{p}: {k}: {m}" if k else f"{p}: {m}"),
                 context={"expected_id": expected_id}, label=item_label(("rules",), data))
    own = tuple(a.analyte() for a in f.analytes)
    rules = tuple(_rule(r, f.seed, f.code, analytes.known(own)) for r in f.rules)
    pack = Pack(id=f.id, name=f.name, timezone=f.timezone, seed=f.seed, rules=rules, path=str(path), code=f.code,
                municipality=f.municipality or Municipality.of(f.name), analytes=own)
    by_id = {r.id: r for r in rules}
    extra = {"charges": tuple(_provision(path, f"charges[{i}]", c, pack, by_id, resolve, "charges")
                              for i, c in enumerate(f.charges)),
             "monitoring": tuple(replace(m, citation=cite(f.code, m.section)) for m in f.monitoring),
             "checklist": tuple(replace(c, citation=cite(f.code, c.section)) for c in f.checklist)}
    for key in ("late_charge", "residential_equivalents"):
        if getattr(f, key) is not None:
            extra[key] = _provision(path, key, getattr(f, key), pack, by_id, resolve, key)
    if f.report_duty is not None:
        extra["report_duty"] = _report_duty(path, f.report_duty, pack, resolve)
    return replace(pack, **extra)


def _limits_what(r: Rule):
    """What a rule limits, and how: two rules with the same key overlap (None: nothing to compare)."""
    direction = "from below" if r.op in ("<", "<=") else "from above"
    if r.kind == "range":
        return (r.kind, r.parameter, direction, r.longer_than_min), f"{r.parameter} {direction}" + (
            f" for more than {r.longer_than_min:g} min" if r.longer_than_min else "")
    if r.kind in ("lab-limit", "loading-limit"):
        typed = f", {r.sample_type} samples" if r.sample_type else ""
        return (r.kind, r.analyte, r.basis, r.sample_type), f"{r.analyte} ({r.kind}, basis {r.basis}{typed})"
    if r.kind in ("normal-strength", "permit-threshold"):   # flow thresholds set different duties
        return (r.kind, r.analyte or r.parameter), f"the {r.kind} of {r.analyte or r.parameter}"
    return None, ""


def overlaps(pack: Pack) -> list[tuple[str, str]]:
    """Rules of ``pack`` that limit the same thing the same way (a parameter in one direction
    and duration, an analyte on one basis): ``[(key, problem), ...]``, the later rule blamed."""
    first: dict = {}
    out = []
    for i, r in enumerate(pack.rules):
        key, said = _limits_what(r)
        if key is None:
            continue
        if key in first:
            j, q = first[key]
            out.append((f"rules[{i}] ({r.id})", f"overlaps rules[{j}] ({q.id}): both limit {said} ({r.section} and "
                        f"{q.section}); an ordinance states one limit for it (a stricter one for a user belongs in "
                        "the user's permit)"))
        else:
            first[key] = (i, r)
    return out


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
        problem = config.pack_dirs_problem()
        raise InputError(f"unknown rule pack {name_or_path!r} (known: {', '.join(available_packs())}; "
                         f"searched {', '.join(map(str, config.pack_dirs()))}"
                         + (f"; the config's pack_dirs were not read: {problem}" if problem else "") + ")")
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
