"""Wastewater discharge permits as data, and the rules they add to a site's ordinance.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.54: a user above the §13.54(1) thresholds needs a
wastewater discharge permit; its conditions (§13.54(3)) include "(b) The average and maximum
wastewater, constituents and characteristics" and "(g) Average and maximum pollutant
concentrations and total daily average and maximum pollutant discharges"; toxic substances
are limited by "the Wisconsin Administrative Code or WPDES Permit" (§13.48(2)(i)) and a
loading "in excess of the wastewater discharge permit" is prohibited (§13.48(2)(m)3). "A
permit shall be issued for one year and shall be automatically renewed on a year to year
basis thereafter, unless the person is notified by the Village within 60 days prior to the
expiration of the permit" (§13.54(4)).

A permit is a TOML file (``examples/permits/plating.toml`` is a complete one; stored in the
database with every version by :mod:`limits.permit_store`): its number, site, pack and dates,
``[renewal]``, ``[flow]``, ``[[limits]]`` (a lab analyte's ``daily_maximum``,
``monthly_average``, ``daily_maximum_lb``, or a continuous parameter's ``minimum`` and
``maximum``), ``[[monitoring]]`` and ``[[conditions]]``; each table and key is a field of
:class:`PermitFile` below, from which ``docs/reference/permit.md`` and its JSON Schema are
generated.

:func:`load_permit` validates it (one-line errors naming file and key). :meth:`Permit.rules`
turns its limits into the same :class:`limits.packs.Rule` objects the packs hold, cited as
"Permit PAL-IU-2026-02, condition 3(a)", so the evaluators judge them unchanged;
:func:`site_rules` merges them with the site's pack, the stricter of the two where both
limit the same thing (the finding says which). :func:`renewal` tells when a permit's term
ends, whether it renews and whether it has expired; how it reads "notified ... within 60 days
prior to the expiration" is the pack's ``permit-notice`` ``reading`` (``window`` or
``deadline``), or the permit's own ``[renewal] notice_reading``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Discriminator, Tag, ValidationInfo, model_validator

from foundation import tomlfile, units
from foundation.errors import InputError
from foundation.schema import (UNION_TAGS, Bool, Date, IntRange, Number, OneOf, Positive, Strings, Table, Tables, Text,
                               check, duplicates, fail, is_int, is_text, known_unit, table, validate)
from limits import analytes
from limits.packs import READINGS, Pack, Rule, load_pack
from limits.sample_types import SAMPLE_TYPES as LIMIT_SAMPLE_TYPES

#: how a sample is taken (palmyra-wi §13.53(3): "a representative 24-hour flow proportional
#: sample"); ``continuous``: a sensor at the control manhole
SAMPLE_TYPES = ("grab", "composite-24h-flow", "composite-24h-time", "continuous")
#: the period a monitoring frequency counts samples in
PERIODS = ("day", "week", "month", "quarter", "year")
#: gallons per day in one gallon per minute
GPD_PER_GPM = 1440.0
#: §13.54(4) when the pack does not say
DEFAULT_TERM_YEARS, DEFAULT_NOTICE_DAYS = 1, 60


@dataclass(frozen=True)
class Renewal:
    """How the permit's term ends (palmyra-wi §13.54(4)).

    Attributes
    ----------
    term_years : int
        The length of a term.
    automatic : bool
        Renewed for another term unless notice is given.
    notice_days : int
        How many days before the end of a term the notice must come.
    notice_given : date or None
        The Village gave notice on this day: the permit ends with that term.
    citation, words : str
        Where the terms come from.
    notice_reading : str
        How "notified ... within 60 days prior to the expiration" (palmyra-wi §13.54(4)) is
        read: ``window`` (a notice before the term ends ends that term; the 60 days are when
        it comes due) or ``deadline`` (a notice must come at least ``notice_days`` before the
        term ends to end it); the pack's ``permit-notice`` reading, the permit's own where it
        says.
    """

    term_years: int = DEFAULT_TERM_YEARS
    automatic: bool = True
    notice_days: int = DEFAULT_NOTICE_DAYS
    notice_given: date | None = None
    citation: str = ""
    words: str = ""
    notice_reading: str = "window"


@dataclass(frozen=True)
class Permit:
    """A wastewater discharge permit (see the module docstring for the file format); its
    ``limits`` are the ``[[limits]]`` as written, :meth:`rules` their rules in canonical units."""

    number: str
    site: str
    issued: date
    effective: date
    expires: date
    renewal: Renewal
    pack: str | None = None
    average_daily_gpd: float | None = None
    maximum_daily_gpd: float | None = None
    limits: tuple[LimitEntry, ...] = ()
    monitoring: tuple[MonitoringEntry, ...] = ()
    conditions: tuple[ConditionEntry, ...] = ()
    calibration: tuple[CalibrationEntry, ...] = ()
    issued_by: str | None = None
    note: str | None = None
    path: str = ""
    document: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def title(self) -> str:
        """``Permit PAL-IU-2026-02``: how findings cite it."""
        return f"Permit {self.number}"

    def cite(self, condition: str) -> str:
        """``Permit PAL-IU-2026-02, condition 3(a)``."""
        return f"{self.title}, condition {condition}"

    @property
    def normal_flow_gpm(self) -> float | None:
        """The average daily flow as a flow rate [gpm]: the slug baseline before 24 hours of
        readings (palmyra-wi §13.43 SLUG, §13.54(2)(b))."""
        return None if self.average_daily_gpd is None else self.average_daily_gpd / GPD_PER_GPM

    def rules(self) -> tuple[Rule, ...]:
        """The permit's limits as rules (``range``, ``lab-limit``, ``loading-limit``), cited
        by the permit's number and condition."""
        out = []
        for lim in self.limits:
            out += _limit_rules(self, lim)
        return tuple(out)

    def as_document(self) -> dict:
        """The permit as JSON-ready data (dates as ISO text), as stored in the database."""
        return json.loads(json.dumps(self.document, default=_iso))


def _iso(x):
    if isinstance(x, date):
        return x.isoformat()
    raise TypeError(f"not JSON: {x!r}")


# --- the rules a permit adds -----------------------------------------------------------------

#: a limit's key -> the id its rule takes after the analyte or parameter, the rule's kind and basis
_FORMS = {"minimum": ("min", "range", None), "maximum": ("max", "range", None),
          "daily_maximum": ("daily-max", "lab-limit", "daily"),
          "monthly_average": ("monthly-avg", "lab-limit", "monthly"),
          "daily_maximum_lb": ("loading-max", "loading-limit", "daily")}


def _limit_rules(p: Permit, lim: LimitEntry) -> list[Rule]:
    """A limit's rules, their limits in canonical units (a loading's in lb/day)."""
    q, out = lim.parameter or "concentration", []
    for key, (suffix, kind, basis) in _FORMS.items():
        if (v := getattr(lim, key)) is None:
            continue
        if kind != "loading-limit":
            v = float(units.to_canonical(q, lim.unit, [v])[0])
        low = key == "minimum"
        typed = f"-{lim.sample_type}" if lim.sample_type else ""
        out.append(Rule(id=f"{lim.analyte or lim.parameter}{typed}-{suffix}", kind=kind,
                        sample_type=lim.sample_type if kind == "lab-limit" else None,
                        section=f"condition {lim.condition}",
                        words=lim.words, seed=Path(p.path).name if p.path else p.number, code=p.title, origin="permit",
                        parameter=lim.parameter, analyte=lim.analyte, basis=basis, op="<" if low else ">",
                        comparison="less than" if low else "more than", limit=v, limit_canonical=v,
                        unit="lb/d" if kind == "loading-limit" else units.CANONICAL[q]))
    return out


def _direction(r: Rule) -> str:
    return "low" if r.op in ("<", "<=") else "high"


def _stricter(a: Rule, b: Rule) -> bool:
    """Whether rule ``a`` is stricter than ``b`` (same parameter or analyte, same direction):
    it flags every value ``b`` flags. A tie goes to ``b``."""
    if _direction(a) == "high":
        return a.limit_canonical < b.limit_canonical or (
            a.limit_canonical == b.limit_canonical and a.op == ">=" and b.op == ">")
    return a.limit_canonical > b.limit_canonical or (
        a.limit_canonical == b.limit_canonical and a.op == "<=" and b.op == "<")


def _said(r: Rule) -> str:
    return f"{r.citation} ({r.comparison} {r.limit_canonical:g} {r.canonical_unit or r.unit})"


def _same_limit(a: Rule, b: Rule) -> bool:
    """Whether two rules limit the same thing: the same parameter and direction (range), or
    the same analyte and statistic (lab and loading limits)."""
    if a.kind != b.kind:
        return False
    if a.kind == "range":
        return a.parameter == b.parameter and _direction(a) == _direction(b)
    # a permit's daily maximum and an ordinance's limit on each sample limit the same thing,
    # of the same sample type (limits.sample_types)
    return a.analyte == b.analyte and a.sample_type == b.sample_type and \
        _PER_SAMPLE.get(a.basis, a.basis) == _PER_SAMPLE.get(b.basis, b.basis)


_PER_SAMPLE = {"daily": "sample"}


def site_rules(pack: Pack, permit: Permit | None) -> tuple[Rule, ...]:
    """The rules that judge one site: its pack's, with its permit's limits.

    Where the permit and the ordinance both limit the same thing (a continuous parameter in
    the same direction, or an analyte with the same statistic), the stricter applies, under
    the id of the pack's rule (so an alert about ``ph-min`` stays one alert), and its
    ``stricter_of`` says which applies and what it is stricter than. A permit limit the
    ordinance does not have is added (``cu-daily-max``, ``cu-monthly-avg``,
    ``cu-loading-max``, ...). A tie keeps the ordinance's rule.
    """
    if permit is None:
        return pack.rules
    mine = list(permit.rules())
    out = []
    for r in pack.rules:
        match = next((m for m in mine if _same_limit(m, r)), None)
        if match is None:
            out.append(r)
            continue
        mine.remove(match)
        if _stricter(match, r):
            out.append(replace(match, id=r.id, stricter_of=f"{_said(match)} applies: stricter than {_said(r)}"))
        else:
            out.append(replace(r, stricter_of=f"{_said(r)} applies: stricter than or as strict as {_said(match)}"))
    return tuple(out) + tuple(mine)


def site_pack(pack: Pack, permit: Permit | None) -> Pack:
    """The pack a site is judged by: ``pack`` with its permit's limits merged in
    (:func:`site_rules`); the same pack (id, time zone, charges) otherwise."""
    return pack if permit is None else replace(pack, rules=site_rules(pack, permit))


def continuous(rules) -> tuple[Rule, ...]:
    """The rules checked reading by reading (``range`` and ``slug``), in order."""
    return tuple(r for r in rules if r.kind in ("range", "slug"))


# --- renewal and expiry (§13.54(4)) --------------------------------------------------------------

@dataclass(frozen=True)
class RenewalStatus:
    """Where a permit stands on a day.

    Attributes
    ----------
    state : str
        ``not-yet-effective``, ``in-force``, ``renewal-due`` (its term ends within the notice
        days), ``expires-soon`` (notice was given, or it does not renew, and it ends within
        the notice days) or ``expired``.
    term_end : date
        The last day of the current term (the permit's ``expires``, or a renewal of it).
    ends : date or None
        The last day the permit is in force, where known (no automatic renewal, or notice given).
    days_left : int
        Days from ``today`` to ``term_end`` (negative when expired).
    notice_by : date or None
        The last day a notice from the Village ends the current term (``term_end`` under the
        ``window`` reading, ``notice_days`` before it under ``deadline``); None once notice
        was given or where the permit does not renew.
    """

    state: str
    term_end: date
    ends: date | None
    days_left: int
    notice_by: date | None = None


def _add_years(d: date, n: int) -> date:
    try:
        return d.replace(year=d.year + n)
    except ValueError:          # 29 February
        return d.replace(year=d.year + n, day=28)


def renewal(permit: Permit, today: date) -> RenewalStatus:
    """The permit's term and state on ``today`` (palmyra-wi §13.54(4)).

    An automatically renewing permit without notice is in force term after term: its term
    end moves on by ``term_years`` each time it passes. With notice given, "the permit shall
    expire on the end of that year": the end of the term the notice ends, which depends on
    the reading of "notified ... within 60 days prior to the expiration"
    (``permit.renewal.notice_reading``): under ``window`` a notice given before a term ends
    ends it, and the reminder (``renewal-due``) runs through that term's last 60 days; under
    ``deadline`` a notice ends a term only when given at least ``notice_days`` before its end
    (a later one ends the next term), and the reminder runs through the 60 days before that
    deadline. A permit that does not renew ends at ``expires``.
    """
    r = permit.renewal
    lead = timedelta(days=r.notice_days if r.notice_reading == "deadline" else 0)
    if today < permit.effective:
        return RenewalStatus("not-yet-effective", permit.expires, None, (permit.expires - today).days)
    term_end = permit.expires
    ends = None if r.automatic else permit.expires
    if r.automatic and r.notice_given is not None:
        ends = term_end
        while ends - lead < r.notice_given:
            ends = _add_years(ends, r.term_years)
    if ends is None:
        while term_end < today:
            term_end = _add_years(term_end, r.term_years)
    else:
        term_end = ends
    days = (term_end - today).days
    notice_by = term_end - lead if ends is None else None
    if ends is not None and today > ends:
        state = "expired"
    elif ends is None and 0 <= (notice_by - today).days <= r.notice_days:
        state = "renewal-due"
    elif ends is not None and days <= r.notice_days:
        state = "expires-soon"
    else:
        state = "in-force"
    return RenewalStatus(state, term_end, ends, days, notice_by)


# --- reading a permit ------------------------------------------------------------------------------

#: a condition's number: text, or a whole number
Cond = Annotated[str, check(lambda v: is_int(v) or is_text(v), "a non-empty string", str)]
CONTINUOUS = [p for p in units.SENSOR_PARAMETERS if p != "concentration"]


@table(kw_only=True)
class LimitEntry(Table):
    """``[[limits]]``: one limit condition (a lab analyte's concentrations and loading, or a
    continuous parameter's range)."""

    condition: Cond
    """The permit's number for the condition (its citation: "condition 3(a)")."""
    analyte: Text | None = None
    """A lab analyte (or give ``parameter``)."""
    parameter: OneOf(*CONTINUOUS, what="parameter") | None = None
    """A continuously measured parameter: ``ph``, ``temperature``, ``flow`` (or give ``analyte``)."""
    unit: Text
    """The unit the limits are written in."""
    words: Text
    """The permit's words."""
    sample_type: OneOf(*LIMIT_SAMPLE_TYPES, what="sample type") | None = None
    """A lab analyte's limits for one sample type only: ``grab`` or ``composite`` (absent: any); an analyte may
    have one entry per sample type, each judged against the ordinance's limit of the same type."""
    daily_maximum: Positive | None = None
    """Each sample's concentration may not exceed it [unit]."""
    monthly_average: Positive | None = None
    """The calendar month's average may not exceed it [unit]."""
    daily_maximum_lb: Positive | None = None
    """Each sample's concentration x its day's metered volume x 8.34 may not exceed it [lb/day]."""
    minimum: Number | None = None
    """A continuous parameter's lowest lawful value [unit]."""
    maximum: Number | None = None
    """A continuous parameter's highest lawful value [unit]."""

    @model_validator(mode="after")
    def _consistent(self):
        if (self.analyte is None) == (self.parameter is None):
            raise fail((), "give exactly one of analyte (a lab analyte) or parameter (measured continuously)")
        lab, live = ("daily_maximum", "monthly_average", "daily_maximum_lb"), ("minimum", "maximum")
        if self.analyte is not None:     # a known analyte: PermitFile checks it (the pack may define it)
            _only(self, live, "a lab analyte has daily_maximum, monthly_average and daily_maximum_lb")
            known_unit(self.unit, "concentration", what="a concentration")
            if all(getattr(self, k) is None for k in lab):
                raise fail((), "no limit: give daily_maximum, monthly_average [unit] or daily_maximum_lb [lb/day]")
            return self
        known_unit(self.unit, self.parameter)
        _only(self, lab, "a continuous parameter has minimum and maximum")
        _only(self, ("sample_type",), "a continuous parameter is measured, not sampled: a sample type is for a lab analyte")
        if self.minimum is None and self.maximum is None:
            raise fail((), "no limit: give minimum and/or maximum")
        if self.minimum is not None and self.maximum is not None and not self.minimum < self.maximum:
            raise fail((), f"minimum {self.minimum:g} is not below maximum {self.maximum:g}")
        return self


def _only(t, forbidden, why):
    for k in forbidden:
        if getattr(t, k) is not None:
            raise fail((k,), why)


UNION_TAGS.update(("continuous-frequency", "table-frequency"))


@table
class Frequency(Table):
    """How often a sample is taken: ``times`` per ``per``."""

    times: IntRange(1, 10_000, "a whole number >= 1")
    """Samples per period."""
    per: OneOf(*PERIODS)
    """The period."""


@table(kw_only=True)
class MonitoringEntry(Table):
    """``[[monitoring]]``: what to sample, how and how often."""

    condition: Cond
    """The permit's number for the condition."""
    parameters: Strings("analytes or parameters")
    """Lab analytes or continuous parameters."""
    sample_type: OneOf(*SAMPLE_TYPES, what="sample type")
    """How a sample is taken."""
    frequency: Annotated[Union[Annotated[Literal["continuous"], Tag("continuous-frequency")],
                               Annotated[Frequency, Tag("table-frequency")]],
                         Discriminator(lambda v: "continuous-frequency" if isinstance(v, str) else "table-frequency")]
    """``"continuous"`` or ``{ times = N, per = "month" }``."""
    words: Text | None = None
    """The permit's words."""

    @model_validator(mode="after")
    def _continuous(self):
        if (self.sample_type == "continuous") != (self.frequency == "continuous"):
            raise fail(("frequency",), "a continuous sample type goes with frequency = \"continuous\" and only it")
        return self

    @property
    def times(self) -> int | None:
        """Samples per :attr:`per` (None for ``continuous``)."""
        return None if self.frequency == "continuous" else self.frequency.times

    @property
    def per(self) -> str:
        """One of :data:`PERIODS`, or ``continuous``."""
        return "continuous" if self.frequency == "continuous" else self.frequency.per


@table(kw_only=True)
class CalibrationEntry(Table):
    """``[[calibration]]``: how often the instruments measuring some parameters are calibrated."""

    condition: Cond
    """The permit's number for the condition."""
    parameters: Strings("analytes or parameters")
    """The continuous parameters whose instruments it covers (``ph``, ``temperature``, ``flow``)."""
    every_days: IntRange(1, 36600, "a whole number of days >= 1")
    """At most this many days between calibrations."""
    words: Text | None = None
    """The permit's words."""


@table
class ConditionEntry(Table):
    """``[[conditions]]``: another condition of the permit, quoted."""

    number: Cond
    """Its number."""
    words: Text
    """Its words."""


@table
class RenewalEntry(Table):
    """``[renewal]``: how the permit's term ends (defaults from the pack, palmyra-wi §13.54(4))."""

    term_years: Positive | None = None
    """The length of a term [years]."""
    automatic: Bool = True
    """Renewed for another term unless notice is given."""
    notice_days: Positive | None = None
    """How many days before the end of a term the notice must come."""
    notice_given: Date | None = None
    """The utility gave notice on this day: the permit ends with that term."""
    notice_reading: OneOf(*READINGS["permit-notice"]) | None = None
    """How "notified ... within 60 days prior to the expiration" reads for this permit:
    ``window`` (a notice before the term ends ends it) or ``deadline`` (at least
    ``notice_days`` before the end); default: the pack's ``permit-notice`` reading."""
    note: Text | None = None
    """Why."""


@table
class FlowEntry(Table):
    """``[flow]``: the permitted flows (palmyra-wi §13.54(2)(b), (e); §13.54(3)(b))."""

    average_daily_gpd: Positive | None = None
    """The average daily flow [gal/day]; also the slug baseline before 24 hours of readings."""
    maximum_daily_gpd: Positive | None = None
    """The maximum daily flow [gal/day]."""

    @model_validator(mode="after")
    def _order(self):
        a, m = self.average_daily_gpd, self.maximum_daily_gpd
        if a is not None and m is not None and m < a:
            raise fail(("maximum_daily_gpd",), f"{m:g} is below the average daily flow {a:g}")
        return self


@table(kw_only=True)
class PermitFile(Table):
    """A wastewater discharge permit."""

    number: Text
    """The permit's number (``PAL-IU-2026-02``); findings cite "Permit <number>, condition <n>"."""
    site: Text
    """The config's site id."""
    pack: Text | None = None
    """The ordinance it is issued under (a pack id; default: the site's)."""
    issued: Date
    """The day it was issued."""
    effective: Date
    """The day it takes effect."""
    expires: Date
    """The end of the current term."""
    renewal: RenewalEntry = RenewalEntry()
    """How its term ends."""
    flow: FlowEntry = FlowEntry()
    """The permitted flows."""
    limits: Tables(LimitEntry) = ()
    """Concentrations and loadings (§13.54(3)(g)), and continuous parameters' ranges."""
    monitoring: Tables(MonitoringEntry) = ()
    """What to sample, how and how often."""
    conditions: Tables(ConditionEntry) = ()
    """Other conditions, quoted."""
    calibration: Tables(CalibrationEntry) = ()
    """How often instruments are calibrated (flow meters, pH probes)."""
    issued_by: Text | None = None
    """Who issued it."""
    note: Text | None = None
    """A free note."""

    @model_validator(mode="after")
    def _dates(self, info: ValidationInfo):
        own = (info.context or {}).get("analytes", ())
        known = analytes.known(own)
        for i, lim in enumerate(self.limits):
            if lim.analyte is None:
                continue
            if lim.analyte not in known:
                raise fail(("limits", i, "analyte"), analytes.unknown(lim.analyte, own))
            if known[lim.analyte].parameter != "concentration":
                raise fail(("limits", i, "analyte"), f"{lim.analyte} is not a concentration: a permit limits it "
                           "as a parameter (minimum, maximum)")
        for i, m in enumerate(self.monitoring):
            for p in m.parameters:
                if p not in known and p not in CONTINUOUS:
                    near = analytes.closest(p, own)
                    raise fail(("monitoring", i, "parameters"), f"unknown analyte or parameter {p!r} (parameters: "
                               f"{', '.join(CONTINUOUS)}; closest analytes: {', '.join(near) or 'none'})")
        for i, c in enumerate(self.calibration):
            for p in c.parameters:
                if p not in CONTINUOUS:
                    raise fail(("calibration", i, "parameters"), f"{p!r} is not a continuous parameter "
                               f"({', '.join(CONTINUOUS)})")
        if self.effective < self.issued:
            raise fail(("effective",), f"{self.effective} is before the permit was issued ({self.issued})")
        if self.expires <= self.effective:
            raise fail(("expires",), f"{self.expires} is not after the permit takes effect ({self.effective})")
        for i, k, first in duplicates(self.limits, lambda lim: (lim.analyte or lim.parameter, lim.sample_type)):
            what = f"{k[0]} in {k[1]} samples" if k[1] else k[0]
            raise fail(("limits", i), f"{what} is limited twice (first at limits[{first}]): one condition each")
        return self


def _renewal(e: RenewalEntry, pack: Pack | None) -> Renewal:
    term, notice, citation, words = DEFAULT_TERM_YEARS, DEFAULT_NOTICE_DAYS, "", ""
    reading = READINGS["permit-notice"][0]
    if pack is not None:
        try:
            term, rule = int(pack.definition("permit-term")), pack.rule("permit-term")
            notice = int(pack.definition("permit-notice"))
            citation, words = rule.citation, rule.words
            reading = pack.rule("permit-notice").reading or reading
        except KeyError:
            pass
    return Renewal(int(e.term_years or term), e.automatic, int(e.notice_days or notice), e.notice_given, citation, words,
                   e.notice_reading or reading)


def parse_permit(data: dict, path: str = "<permit>", site_pack: Pack | None = None) -> Permit:
    """Validate an already-parsed permit (see :func:`load_permit`).

    ``site_pack``: the pack of the permit's site, used where the permit names none (its
    renewal terms, palmyra-wi §13.54(4)).
    """
    pack = site_pack
    if isinstance(data, dict) and isinstance(data.get("pack"), str) and data["pack"].strip():
        try:
            pack = load_pack(data["pack"])
        except InputError as exc:
            raise InputError(f"{path}: pack: {exc}") from None
    f = validate(PermitFile, data, str(path), lambda p, k, m: InputError(f"{p}: {k}: {m}" if k else f"{p}: {m}"),
                 context={"analytes": pack.analytes if pack else ()})
    return Permit(number=f.number, site=f.site, pack=pack.id if pack else None, issued=f.issued, effective=f.effective,
                  expires=f.expires, renewal=_renewal(f.renewal, pack), average_daily_gpd=f.flow.average_daily_gpd,
                  maximum_daily_gpd=f.flow.maximum_daily_gpd, limits=f.limits, monitoring=f.monitoring,
                  conditions=f.conditions, calibration=f.calibration, issued_by=f.issued_by, note=f.note,
                  path=str(path), document=dict(data))


def load_permit(path, site_pack: Pack | None = None) -> Permit:
    """Load and validate a permit TOML file (``site_pack`` as for :func:`parse_permit`).

    Raises
    ------
    InputError
        ``<file>: <key>: <what is wrong>`` for anything unknown or malformed.
    """
    return parse_permit(tomlfile.read(path, "permit file"), str(path), site_pack)
