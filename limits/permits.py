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

A permit is a TOML file (``examples/permits/*.toml``; stored in the database with every
version by :mod:`limits.permit_store`)::

    number = "PAL-IU-2026-02"
    site = "plating"                    # the config's site id
    pack = "palmyra-wi"                 # the ordinance it is issued under (optional)
    issued = 2026-01-15
    effective = 2026-02-01
    expires = 2027-01-31                # the end of the current term

    [renewal]                           # optional; defaults from the pack (§13.54(4))
    term_years = 1
    automatic = true                    # renewed year to year ...
    notice_days = 60                    # ... unless notified this many days before
    notice_given = 2026-10-01           # optional: the Village gave notice; ends with the term

    [flow]                              # §13.54(2)(b), (e); §13.54(3)(b)
    average_daily_gpd = 18000
    maximum_daily_gpd = 30000

    [[limits]]                          # §13.54(3)(g): concentrations and loadings
    condition = "3(a)"
    analyte = "cu"
    unit = "mg/l"
    daily_maximum = 1.0
    monthly_average = 0.5
    daily_maximum_lb = 0.25             # loading [lb/day]
    words = "Copper: 1.0 mg/l daily maximum, 0.5 mg/l monthly average, 0.25 lb/day."

    [[limits]]                          # a continuously measured parameter
    condition = "4"
    parameter = "ph"
    unit = "pH"
    minimum = 6.5
    maximum = 9.0
    words = "pH between 6.5 and 9.0 at all times."

    [[monitoring]]                      # what to sample, how and how often
    condition = "5"
    parameters = ["cu", "ni", "zn", "tss"]
    sample_type = "composite-24h-flow"  # see SAMPLE_TYPES
    frequency = { times = 1, per = "month" }    # or "continuous"

    [[conditions]]                      # other conditions, quoted
    number = "1"
    words = "..."

:func:`load_permit` validates it (one-line errors naming file and key). :meth:`Permit.rules`
turns its limits into the same :class:`limits.packs.Rule` objects the packs hold, cited as
"Permit PAL-IU-2026-02, condition 3(a)", so the evaluators judge them unchanged;
:func:`site_rules` merges them with the site's pack, the stricter of the two where both
limit the same thing (the finding says which). :func:`renewal` tells when a permit's term
ends, whether it renews and whether it has expired.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from foundation import tomlfile, units
from foundation.errors import InputError
from limits.packs import ANALYTES, Pack, Rule, load_pack

#: how a sample is taken (palmyra-wi §13.53(3): "a representative 24-hour flow proportional
#: sample"); ``continuous``: a sensor at the control manhole
SAMPLE_TYPES = ("grab", "composite-24h-flow", "composite-24h-time", "continuous")
#: the period a monitoring frequency counts samples in
PERIODS = ("day", "week", "month", "quarter", "year")
PERMIT_KEYS = ("number", "site", "pack", "issued", "effective", "expires", "renewal", "flow", "limits",
               "monitoring", "conditions", "issued_by", "note")
LIMIT_KEYS = ("condition", "analyte", "parameter", "unit", "words", "daily_maximum", "monthly_average",
              "daily_maximum_lb", "minimum", "maximum")
#: gallons per day in one gallon per minute
GPD_PER_GPM = 1440.0
#: §13.54(4) when the pack does not say
DEFAULT_TERM_YEARS, DEFAULT_NOTICE_DAYS = 1, 60


@dataclass(frozen=True)
class PermitLimit:
    """One limit condition of a permit.

    Attributes
    ----------
    condition : str
        The permit's number for the condition (its citation: "condition 3(a)").
    analyte, parameter : str or None
        A lab analyte (concentration and loading limits) or a continuously measured
        parameter (``ph``, ``temperature``, ``flow``: minimum and maximum).
    unit : str
        The unit the limits are written in.
    daily_maximum, monthly_average : float or None
        Concentration [mg/l]: each sample; the calendar month's average.
    daily_maximum_lb : float or None
        Loading [lb/day]: each sample's concentration x its day's metered volume x 8.34.
    minimum, maximum : float or None
        A continuous parameter's range [canonical unit of the parameter].
    words : str
        The permit's words.
    """

    condition: str
    words: str
    unit: str
    analyte: str | None = None
    parameter: str | None = None
    daily_maximum: float | None = None
    monthly_average: float | None = None
    daily_maximum_lb: float | None = None
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class Monitoring:
    """Monitoring a permit requires: clean data for a sampling schedule.

    Attributes
    ----------
    condition : str
    parameters : tuple of str
        Lab analytes or continuous parameters.
    sample_type : str
        One of :data:`SAMPLE_TYPES`.
    times : int or None
        Samples per ``per`` (None for ``continuous``).
    per : str
        One of :data:`PERIODS`, or ``continuous``.
    words : str or None
    """

    condition: str
    parameters: tuple[str, ...]
    sample_type: str
    times: int | None
    per: str
    words: str | None = None


@dataclass(frozen=True)
class Condition:
    """A condition of the permit, quoted."""

    number: str
    words: str


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
    """

    term_years: int = DEFAULT_TERM_YEARS
    automatic: bool = True
    notice_days: int = DEFAULT_NOTICE_DAYS
    notice_given: date | None = None
    citation: str = ""
    words: str = ""


@dataclass(frozen=True)
class Permit:
    """A wastewater discharge permit (see the module docstring for the file format)."""

    number: str
    site: str
    issued: date
    effective: date
    expires: date
    renewal: Renewal
    pack: str | None = None
    average_daily_gpd: float | None = None
    maximum_daily_gpd: float | None = None
    limits: tuple[PermitLimit, ...] = ()
    monitoring: tuple[Monitoring, ...] = ()
    conditions: tuple[Condition, ...] = ()
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

def _rule(p: Permit, lim: PermitLimit, rid: str, kind: str, **f) -> Rule:
    return Rule(id=rid, kind=kind, section=f"condition {lim.condition}", words=lim.words,
                seed=Path(p.path).name if p.path else p.number, code=p.title, origin="permit", **f)


def _limit_rules(p: Permit, lim: PermitLimit) -> list[Rule]:
    out = []
    if lim.parameter is not None:
        cu = units.CANONICAL[lim.parameter]
        if lim.minimum is not None:
            out.append(_rule(p, lim, f"{lim.parameter}-min", "range", parameter=lim.parameter, comparison="less than",
                             op="<", limit=lim.minimum, unit=cu, limit_canonical=lim.minimum))
        if lim.maximum is not None:
            out.append(_rule(p, lim, f"{lim.parameter}-max", "range", parameter=lim.parameter, comparison="more than",
                             op=">", limit=lim.maximum, unit=cu, limit_canonical=lim.maximum))
        return out
    a = lim.analyte
    if lim.daily_maximum is not None:
        out.append(_rule(p, lim, f"{a}-daily-max", "lab-limit", analyte=a, basis="sample", comparison="more than",
                         op=">", limit=lim.daily_maximum, unit="mg/l", limit_canonical=lim.daily_maximum))
    if lim.monthly_average is not None:
        out.append(_rule(p, lim, f"{a}-monthly-avg", "lab-limit", analyte=a, basis="monthly", comparison="more than",
                         op=">", limit=lim.monthly_average, unit="mg/l", limit_canonical=lim.monthly_average))
    if lim.daily_maximum_lb is not None:
        out.append(_rule(p, lim, f"{a}-loading-max", "loading-limit", analyte=a, basis="daily", comparison="more than",
                         op=">", limit=lim.daily_maximum_lb, unit="lb/d", limit_canonical=lim.daily_maximum_lb))
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
    return a.analyte == b.analyte and a.basis == b.basis


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
    """

    state: str
    term_end: date
    ends: date | None
    days_left: int


def _add_years(d: date, n: int) -> date:
    try:
        return d.replace(year=d.year + n)
    except ValueError:          # 29 February
        return d.replace(year=d.year + n, day=28)


def renewal(permit: Permit, today: date) -> RenewalStatus:
    """The permit's term and state on ``today`` (palmyra-wi §13.54(4)).

    An automatically renewing permit without notice is in force term after term: its term
    end moves on by ``term_years`` each time it passes. With notice given, "the permit shall
    expire on the end of that year": the end of the term in which notice was given. A permit
    that does not renew ends at ``expires``.
    """
    r = permit.renewal
    if today < permit.effective:
        return RenewalStatus("not-yet-effective", permit.expires, None, (permit.expires - today).days)
    term_end = permit.expires
    ends = None if r.automatic else permit.expires
    if r.automatic and r.notice_given is not None:
        ends = term_end
        while ends < r.notice_given:
            ends = _add_years(ends, r.term_years)
    if ends is None:
        while term_end < today:
            term_end = _add_years(term_end, r.term_years)
    else:
        term_end = ends
    days = (term_end - today).days
    if ends is not None and today > ends:
        state = "expired"
    elif days <= r.notice_days:
        state = "renewal-due" if ends is None else "expires-soon"
    else:
        state = "in-force"
    return RenewalStatus(state, term_end, ends, days)


# --- reading a permit ------------------------------------------------------------------------------

def _fail(path, where: str, problem: str):
    raise InputError(f"{path}: {where}: {problem}")


def _keys(path, where, t, allowed, required=()):
    if not isinstance(t, dict):
        _fail(path, where, f"expected a table, got {t!r}")
    unknown = sorted(set(t) - set(allowed))
    if unknown:
        _fail(path, f"{where}.{unknown[0]}" if where else unknown[0], f"unknown key (expected: {', '.join(allowed)})")
    for k in required:
        if k not in t:
            _fail(path, f"{where}.{k}" if where else k, "missing (required)")


def _text(path, where, v) -> str:
    if not isinstance(v, str) or not v.strip():
        _fail(path, where, f"expected a non-empty string, got {v!r}")
    return v


def _date(path, where, v) -> date:
    if isinstance(v, date):
        return v
    if isinstance(v, str):
        try:
            return date.fromisoformat(v)
        except ValueError:
            pass
    _fail(path, where, f"expected a date such as 2026-02-01, got {v!r}")


def _num(path, where, v, positive=False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        _fail(path, where, f"expected a number, got {v!r}")
    if positive and not v > 0:
        _fail(path, where, f"expected a positive number, got {v!r}")
    return float(v)


def _renewal(path, t, pack: Pack | None) -> Renewal:
    term, notice, citation, words = DEFAULT_TERM_YEARS, DEFAULT_NOTICE_DAYS, "", ""
    if pack is not None:
        try:
            term, rule = int(pack.definition("permit-term")), pack.rule("permit-term")
            notice = int(pack.definition("permit-notice"))
            citation, words = rule.citation, rule.words
        except KeyError:
            pass
    _keys(path, "renewal", t, ("term_years", "automatic", "notice_days", "notice_given", "note"))
    if "term_years" in t:
        term = int(_num(path, "renewal.term_years", t["term_years"], positive=True))
    if "notice_days" in t:
        notice = int(_num(path, "renewal.notice_days", t["notice_days"], positive=True))
    automatic = t.get("automatic", True)
    if not isinstance(automatic, bool):
        _fail(path, "renewal.automatic", f"expected true or false, got {automatic!r}")
    given = _date(path, "renewal.notice_given", t["notice_given"]) if "notice_given" in t else None
    return Renewal(term, automatic, notice, given, citation, words)


def _limit(path, i: int, t) -> PermitLimit:
    where = f"limits[{i}]"
    _keys(path, where, t, LIMIT_KEYS, ("condition", "unit", "words"))
    cond = _text(path, f"{where}.condition", str(t["condition"]) if isinstance(t["condition"], int) else t["condition"])
    words = _text(path, f"{where}.words", t["words"])
    if ("analyte" in t) == ("parameter" in t):
        _fail(path, where, "give exactly one of analyte (a lab analyte) or parameter (measured continuously)")
    unit = t["unit"]
    f: dict[str, Any] = {"condition": cond, "words": words, "unit": unit}
    if "analyte" in t:
        a = t["analyte"]
        if a not in ANALYTES or ANALYTES[a] != "concentration":
            _fail(path, f"{where}.analyte", f"unknown analyte {a!r} (known: "
                  f"{', '.join(k for k, v in ANALYTES.items() if v == 'concentration')})")
        f["analyte"] = a
        for k in ("minimum", "maximum"):
            if k in t:
                _fail(path, f"{where}.{k}", "a lab analyte has daily_maximum, monthly_average and daily_maximum_lb")
        conc = units.CONVERSIONS["concentration"]
        if unit not in conc:
            _fail(path, f"{where}.unit", f"unknown unit {unit!r} for a concentration (known: {', '.join(conc)})")
        for k in ("daily_maximum", "monthly_average"):
            if k in t:
                f[k] = float(units.to_canonical("concentration", unit, [_num(path, f"{where}.{k}", t[k], True)])[0])
        if "daily_maximum_lb" in t:
            f["daily_maximum_lb"] = _num(path, f"{where}.daily_maximum_lb", t["daily_maximum_lb"], True)
        if not any(k in f for k in ("daily_maximum", "monthly_average", "daily_maximum_lb")):
            _fail(path, where, "no limit: give daily_maximum, monthly_average [unit] or daily_maximum_lb [lb/day]")
    else:
        prm = t["parameter"]
        if prm not in units.CONVERSIONS or prm == "concentration":
            _fail(path, f"{where}.parameter", f"unknown parameter {prm!r} (known: "
                  f"{', '.join(p for p in units.PARAMETERS if p != 'concentration')})")
        f["parameter"] = prm
        if unit not in units.CONVERSIONS[prm]:
            _fail(path, f"{where}.unit", f"unknown unit {unit!r} for {prm} (known: {', '.join(units.CONVERSIONS[prm])})")
        for k in ("daily_maximum", "monthly_average", "daily_maximum_lb"):
            if k in t:
                _fail(path, f"{where}.{k}", "a continuous parameter has minimum and maximum")
        for k in ("minimum", "maximum"):
            if k in t:
                f[k] = float(units.to_canonical(prm, unit, [_num(path, f"{where}.{k}", t[k])])[0])
        if "minimum" not in f and "maximum" not in f:
            _fail(path, where, "no limit: give minimum and/or maximum")
        if "minimum" in f and "maximum" in f and not f["minimum"] < f["maximum"]:
            _fail(path, where, f"minimum {t['minimum']} is not below maximum {t['maximum']}")
    return PermitLimit(**f)


def _monitoring(path, i: int, t) -> Monitoring:
    where = f"monitoring[{i}]"
    _keys(path, where, t, ("condition", "parameters", "sample_type", "frequency", "words"),
          ("condition", "parameters", "sample_type", "frequency"))
    ps = t["parameters"]
    known = set(ANALYTES) | (set(units.PARAMETERS) - {"concentration"})
    if not isinstance(ps, list) or not ps or not all(isinstance(p, str) for p in ps):
        _fail(path, f"{where}.parameters", f"expected a non-empty list of analytes or parameters, got {ps!r}")
    for p in ps:
        if p not in known:
            _fail(path, f"{where}.parameters", f"unknown analyte or parameter {p!r} (known: {', '.join(sorted(known))})")
    st = t["sample_type"]
    if st not in SAMPLE_TYPES:
        _fail(path, f"{where}.sample_type", f"unknown sample type {st!r} (known: {', '.join(SAMPLE_TYPES)})")
    fr = t["frequency"]
    if fr == "continuous":
        times, per = None, "continuous"
    else:
        _keys(path, f"{where}.frequency", fr, ("times", "per"), ("times", "per"))
        times = fr["times"]
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            _fail(path, f"{where}.frequency.times", f"expected a whole number >= 1, got {times!r}")
        per = fr["per"]
        if per not in PERIODS:
            _fail(path, f"{where}.frequency.per", f"expected one of {', '.join(PERIODS)}, got {per!r}")
    if (st == "continuous") != (per == "continuous"):
        _fail(path, f"{where}.frequency", "a continuous sample type goes with frequency = \"continuous\" and only it")
    cond = t["condition"]
    return Monitoring(str(cond), tuple(ps), st, times, per,
                      _text(path, f"{where}.words", t["words"]) if "words" in t else None)


def parse_permit(data: dict, path: str = "<permit>", site_pack: Pack | None = None) -> Permit:
    """Validate an already-parsed permit (see :func:`load_permit`).

    ``site_pack``: the pack of the permit's site, used where the permit names none (its
    renewal terms, palmyra-wi §13.54(4)).
    """
    _keys(path, "", data, PERMIT_KEYS, ("number", "site", "issued", "effective", "expires"))
    number = _text(path, "number", data["number"])
    site = _text(path, "site", data["site"])
    pack = site_pack
    if "pack" in data:
        try:
            pack = load_pack(_text(path, "pack", data["pack"]))
        except InputError as exc:
            _fail(path, "pack", str(exc))
    issued, effective, expires = (_date(path, k, data[k]) for k in ("issued", "effective", "expires"))
    if effective < issued:
        _fail(path, "effective", f"{effective} is before the permit was issued ({issued})")
    if expires <= effective:
        _fail(path, "expires", f"{expires} is not after the permit takes effect ({effective})")
    flow = data.get("flow", {})
    _keys(path, "flow", flow, ("average_daily_gpd", "maximum_daily_gpd"))
    avg = _num(path, "flow.average_daily_gpd", flow["average_daily_gpd"], True) if "average_daily_gpd" in flow else None
    mx = _num(path, "flow.maximum_daily_gpd", flow["maximum_daily_gpd"], True) if "maximum_daily_gpd" in flow else None
    if avg is not None and mx is not None and mx < avg:
        _fail(path, "flow.maximum_daily_gpd", f"{mx:g} is below the average daily flow {avg:g}")
    for key in ("limits", "monitoring", "conditions"):
        if not isinstance(data.get(key, []), list):
            _fail(path, key, f"expected an array of tables ([[{key}]])")
    limits = tuple(_limit(path, i, t) for i, t in enumerate(data.get("limits", [])))
    seen: dict = {}
    for i, lim in enumerate(limits):
        k = lim.analyte or lim.parameter
        if k in seen:
            _fail(path, f"limits[{i}]", f"{k} is limited twice (first at limits[{seen[k]}]): one condition each")
        seen[k] = i
    monitoring = tuple(_monitoring(path, i, t) for i, t in enumerate(data.get("monitoring", [])))
    conditions = []
    for i, t in enumerate(data.get("conditions", [])):
        _keys(path, f"conditions[{i}]", t, ("number", "words"), ("number", "words"))
        conditions.append(Condition(str(t["number"]), _text(path, f"conditions[{i}].words", t["words"])))
    return Permit(number=number, site=site, pack=pack.id if pack else None, issued=issued, effective=effective,
                  expires=expires, renewal=_renewal(path, data.get("renewal", {}), pack), average_daily_gpd=avg,
                  maximum_daily_gpd=mx, limits=limits, monitoring=monitoring, conditions=tuple(conditions),
                  issued_by=data.get("issued_by"), note=data.get("note"), path=str(path), document=dict(data))


def load_permit(path, site_pack: Pack | None = None) -> Permit:
    """Load and validate a permit TOML file (``site_pack`` as for :func:`parse_permit`).

    Raises
    ------
    InputError
        ``<file>: <key>: <what is wrong>`` for anything unknown or malformed.
    """
    return parse_permit(tomlfile.read(path, "permit file"), str(path), site_pack)
