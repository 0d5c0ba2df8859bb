"""What the evaluators read of a rule pack: :class:`Pack`, its :class:`Rule` items, the
charge and report provisions (:class:`Provision`, :class:`ReportDuty`), the comparison words
and the bases of averages, and :func:`cite`.

Made from a checked file (:mod:`limits.pack_file`) by :func:`limits.packs.parse_pack`; the
packs' model apart from their loading, so a reader of the model need not read the loader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import numpy as np


from foundation import units
from foundation.schema import Internal, IntRange, OneOf, Strings, Table, Text, table
from limits import analytes
from limits.core import exceeds


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


@table
class ContentItem(Table):
    """``[[report_duty.contents]]``: one item the discharger's report must give."""

    fill: OneOf(*REPORT_FILLS, what="fill")
    """What sewerwatch pre-fills from the readings."""
    words: Text
    """The ordinance's words for the item."""


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
