"""A rule pack's file as checked: one table class per entry kind (:class:`PackFile` and the
tables it holds), with each key's description, from which ``docs/reference/pack.md`` and its
JSON Schema are generated.

Any unknown key, kind, unit, parameter, analyte or comparison is refused naming the file,
the rule and the key (:mod:`foundation.schema`); :func:`limits.packs.parse_pack` turns a checked
file into the :class:`limits.pack_model.Pack` the evaluators read.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union


from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, model_validator

from foundation import units
from foundation.schema import (SLUG, UNION_TAGS, Number, OneOf, Positive, Strings, Table, Tables, Text, TextList,
                               TimeZone, check, duplicates, fail, fail_all, is_text, known_unit, one_of, refusing,
                               table, then)
from limits import analytes
from limits.pack_rates import Rates
from limits.sample_types import SAMPLE_TYPES
from limits.pack_model import (BASES, COMPARISONS, DEFINITION_UNITS, FORMULA_FROM, LOADING_UNITS, READINGS, RULE_ID,
                               CheckEntry, ContentItem, Municipality, SamplingEntry)


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
