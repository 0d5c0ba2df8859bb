"""A new discharge permit made from the site's rule pack: what the office's New permit form
offers, and the permit document (the format of :mod:`limits.permits`) its fields make.

palmyra-wi 003_44f871d49a02d8f5.txt §13.54(3): a permit's conditions include "(b) The average
and maximum wastewater, constituents and characteristics", "(g) Average and maximum pollutant
concentrations and total daily average and maximum pollutant discharges" and the sampling
(§13.53(3): "a representative 24-hour flow proportional sample"); §13.54(4): "A permit shall
be issued for one year" (the pack's ``permit-term`` definition gives the term).

:func:`template` reads the pack: its term, the analytes it names (its rules' and its own
``[[analytes]]``) by their names, then the catalogue's priority pollutants and the rest, the
continuous parameters it limits with the ordinance's limits beside them, the sample types
and periods. :func:`document` turns the form's fields into a permit document; each refusal
is one line naming the field as the form labels it. The document is then validated and
stored by :func:`limits.permit_store.import_permit`, as ``sewerwatch permit import`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from foundation.errors import InputError
from limits import analytes
from limits.packs import Pack
from limits.permits import DEFAULT_TERM_YEARS, PERIODS, SAMPLE_TYPES

#: How many limit rows the form offers.
LIMIT_ROWS = 8
#: The concentration units a limit may be written in on the form.
UNITS = ("mg/l", "ug/l")
#: The numbers of a lab limit, as the form labels them, with their units.
LAB_NUMBERS = (("daily_maximum", "daily maximum", ""), ("monthly_average", "monthly average", ""),
               ("daily_maximum_lb", "daily maximum loading", "lb/day"))
SAMPLE_WORDS = {"grab": "grab sample", "composite-24h-flow": "24-hour flow-proportional composite",
                "composite-24h-time": "24-hour time-proportional composite", "continuous": "measured continuously"}
PARAMETER_WORDS = {"ph": "pH", "temperature": "Temperature", "flow": "Flow"}
#: How a continuous parameter's unit reads after a number.
UNIT_WORDS = {"pH": "", "degF": " °F", "degC": " °C"}


@dataclass(frozen=True)
class Template:
    """What the New permit form offers for one site.

    Attributes
    ----------
    site, pack : str
        The site's id and its pack's.
    term_years : int
        The pack's permit term (palmyra-wi §13.54(4): one year).
    named : tuple of (id, name)
        The analytes the pack's rules and ``[[analytes]]`` name.
    priority, other : tuple of (id, name)
        The catalogue's priority pollutants, and every other concentration analyte.
    continuous : tuple of (parameter, words, unit, minimum, maximum)
        The continuous parameters the pack limits, with the ordinance's limits (None where
        it has none).
    """

    site: str
    pack: str
    term_years: int
    named: tuple
    priority: tuple
    other: tuple
    continuous: tuple

    def name(self, analyte_id: str) -> str:
        """An analyte's name (its id where unknown)."""
        for group in (self.named, self.priority, self.other):
            for k, n in group:
                if k == analyte_id:
                    return n
        return analyte_id

    def expires(self, effective: date) -> date:
        """The last day of the first term of a permit taking effect on ``effective``."""
        try:
            end = effective.replace(year=effective.year + self.term_years)
        except ValueError:          # 29 February
            end = effective.replace(year=effective.year + self.term_years, day=28)
        return end - timedelta(days=1)


def template(pack: Pack, site: str) -> Template:
    """The New permit form's offer for ``site`` under ``pack``."""
    known = analytes.known(pack.analytes)
    concentration = {k: a for k, a in known.items() if a.parameter == "concentration"}
    named_ids = [r.analyte for r in pack.rules if r.analyte in concentration] + [a.id for a in pack.analytes
                                                                                  if a.id in concentration]
    named_ids = list(dict.fromkeys(named_ids))
    rest = sorted((k for k in concentration if k not in named_ids), key=lambda k: concentration[k].name.lower())
    try:
        term = int(pack.definition("permit-term"))
    except KeyError:
        term = DEFAULT_TERM_YEARS
    limits: dict[str, list] = {}
    for r in pack.by_kind("range"):
        if r.parameter is None:
            continue
        row = limits.setdefault(r.parameter, [r.parameter, PARAMETER_WORDS.get(r.parameter, r.parameter), r.unit,
                                              None, None])
        row[3 if r.op in ("<", "<=") else 4] = r.limit
    return Template(site=site, pack=pack.id, term_years=term,
                    named=tuple((k, concentration[k].name) for k in named_ids),
                    priority=tuple((k, concentration[k].name) for k in rest if concentration[k].group == "priority"),
                    other=tuple((k, concentration[k].name) for k in rest if concentration[k].group != "priority"),
                    continuous=tuple(tuple(v) for v in limits.values()))


def _text(data: dict, key: str) -> str:
    return str(data.get(key, "") or "").strip()


def _number(data: dict, key: str, label: str) -> float | None:
    t = _text(data, key).replace(",", "")
    if not t:
        return None
    try:
        v = float(t)
    except ValueError:
        raise InputError(f"{label}: {t!r} is not a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise InputError(f"{label}: {t!r} is not a number")
    return int(v) if v.is_integer() and "." not in t else v


def _date(data: dict, key: str, label: str, default: date | None = None) -> date:
    t = _text(data, key)
    if not t:
        if default is None:
            raise InputError(f"{label}: missing: give a date such as 2027-01-01")
        return default
    try:
        return date.fromisoformat(t)
    except ValueError:
        raise InputError(f"{label}: expected a date such as 2027-01-01, got {t!r}") from None


def _words(name: str, unit: str, numbers: dict) -> str:
    parts = [f"{numbers[k]:g} {unit if k != 'daily_maximum_lb' else 'lb/day'}"
             + ("" if k == "daily_maximum_lb" else f" {words}") for k, words, _ in LAB_NUMBERS if k in numbers]
    return f"{name}: {', '.join(parts)}."


def document(t: Template, data: dict, today: date) -> dict:
    """The permit document the New permit form's fields ``data`` make (see the module
    docstring); :class:`InputError` in one line naming the field."""
    number = _text(data, "number")
    if not number:
        raise InputError("Permit number: missing (e.g. PAL-IU-2027-01)")
    issued = _date(data, "issued", "Issued", today)
    effective = _date(data, "effective", "Takes effect", issued)
    if effective < issued:
        raise InputError(f"Takes effect: {effective} is before the permit is issued ({issued})")
    expires = _date(data, "expires", "Term ends", t.expires(effective))
    if expires <= effective:
        raise InputError(f"Term ends: {expires} is not after the permit takes effect ({effective})")
    doc: dict = {"number": number, "site": t.site, "pack": t.pack, "issued": issued.isoformat(),
                 "effective": effective.isoformat(), "expires": expires.isoformat()}
    if _text(data, "issued_by"):
        doc["issued_by"] = _text(data, "issued_by")[:200]
    flow = {k: v for k, label in (("average_daily_gpd", "Average daily flow"),
                                  ("maximum_daily_gpd", "Maximum daily flow"))
            if (v := _number(data, k, f"{label} [gal/day]")) is not None}
    if any(v <= 0 for v in flow.values()):
        raise InputError("Flow: a permitted flow is more than 0 gal/day")
    if len(flow) == 2 and flow["maximum_daily_gpd"] < flow["average_daily_gpd"]:
        raise InputError(f"Maximum daily flow [gal/day]: {flow['maximum_daily_gpd']:g} is below the average daily "
                         f"flow {flow['average_daily_gpd']:g}")
    if flow:
        doc["flow"] = flow
    limits, lab_ids, seen = [], [], {}
    offered = {k for group in (t.named, t.priority, t.other) for k, _ in group}
    for i in range(LIMIT_ROWS):
        a = _text(data, f"analyte{i}")
        if a and a not in offered:
            raise InputError(f"Limit {i + 1}: {a!r} is not an analyte of this ordinance or the catalogue")
        name = t.name(a)
        label = f"Limit {i + 1} ({name})" if a else f"Limit {i + 1}"
        numbers = {k: v for k, words, _ in LAB_NUMBERS
                   if (v := _number(data, f"limit{i}_{k}", f"{label}: {words}")) is not None}
        if not a:
            if numbers:
                raise InputError(f"{label}: choose the analyte its numbers limit")
            continue
        if a in seen:
            raise InputError(f"{label}: limited already in limit {seen[a] + 1}: one limit each")
        seen[a] = i
        if not numbers:
            raise InputError(f"{label}: give a daily maximum, a monthly average or a daily maximum loading")
        for k, words, _ in LAB_NUMBERS:
            if k in numbers and numbers[k] <= 0:
                raise InputError(f"{label}: {words}: a limit is more than 0")
        unit = _text(data, f"unit{i}") or UNITS[0]
        if unit not in UNITS:
            raise InputError(f"{label}: unit: expected {' or '.join(UNITS)}, got {unit!r}")
        cond = _text(data, f"condition{i}") or f"L{len(limits) + 1}"
        limits.append({"condition": cond, "analyte": a, "unit": unit, **numbers,
                       "words": _text(data, f"words{i}") or _words(name, unit, numbers)})
        lab_ids.append(a)
    for p, words, unit, _lo, _hi in t.continuous:
        lo = _number(data, f"{p}_minimum", f"{words}: minimum [{unit}]")
        hi = _number(data, f"{p}_maximum", f"{words}: maximum [{unit}]")
        if lo is None and hi is None:
            continue
        if lo is not None and hi is not None and not lo < hi:
            raise InputError(f"{words}: minimum [{unit}]: {lo:g} is not below the maximum {hi:g}")
        span = (f"between {lo:g} and {hi:g}" if lo is not None and hi is not None else
                f"at least {lo:g}" if lo is not None else f"at most {hi:g}")
        limits.append({"condition": f"L{len(limits) + 1}", "parameter": p, "unit": unit,
                       **({"minimum": lo} if lo is not None else {}), **({"maximum": hi} if hi is not None else {}),
                       "words": f"The {words if p == 'ph' else words.lower()} of the discharge shall be {span}"
                                f"{UNIT_WORDS.get(unit, ' ' + unit)} at all times."})
    if limits:
        doc["limits"] = limits
    monitoring = []
    if lab_ids:
        sample = _text(data, "sample_type") or "composite-24h-flow"
        if sample not in SAMPLE_TYPES or sample == "continuous":
            raise InputError(f"Sampling: sample type: {sample!r} is not one of the choices")
        per = _text(data, "per") or "month"
        if per not in PERIODS:
            raise InputError(f"Sampling: per: {per!r} is not one of {', '.join(PERIODS)}")
        times = _number(data, "times", "Sampling: samples")
        times = 1 if times is None else times
        if not isinstance(times, int) or times < 1:
            raise InputError(f"Sampling: samples: expected a whole number 1 or more, got {times:g}")
        names = ", ".join(t.name(a) for a in lab_ids)
        monitoring.append({"condition": "M1", "parameters": lab_ids, "sample_type": sample,
                           "frequency": {"times": times, "per": per},
                           "words": f"{names}: {times} {SAMPLE_WORDS[sample]} sample{'s' if times > 1 else ''} "
                                    f"a {per} at the control manhole."})
    measured = [p for p in ("ph", "flow", "temperature") if _text(data, f"continuous_{p}")]
    if measured:
        monitoring.append({"condition": f"M{len(monitoring) + 1}", "parameters": measured,
                           "sample_type": "continuous", "frequency": "continuous",
                           "words": f"{', '.join(PARAMETER_WORDS[p] for p in measured)} measured continuously at "
                                    "the control manhole."})
    if monitoring:
        doc["monitoring"] = monitoring
    conditions = [line.strip() for line in _text(data, "conditions").splitlines() if line.strip()]
    if conditions:
        doc["conditions"] = [{"number": str(n), "words": w} for n, w in enumerate(conditions, 1)]
    return doc
