"""Lab-side numbers of each ordinance, read from its rule pack (``<pack>.toml`` on the pack
search path, see :func:`limits.packs.pack_path`): normal-sewage strengths (the surcharge
base), discharge-permit thresholds and the prohibitions checked on lab results, each with
its citation and the ordinance's words. (Its charges: :mod:`lab.charges`.)

The packs cite the seed files: e.g. palmyra-wi ``003_44f871d49a02d8f5.txt`` §13.43 NORMAL
SEWAGE (BOD 250, TSS 250, TKN 40, P 7 mg/l), §13.48(2)(k) (FOG average > 100 mg/l) and (l)
(cyanide > 0.5 mg/l), §13.54(1) (permit thresholds); webster-wi ``000_68bc5aa0322c9423.txt``
§240-5 (FOG > 100 ppm), §240-7 (BOD 200, SS 250 mg/l); superior-wi
``002_32e890e17155ca0d.txt`` (FOG > 100 ppm); westfield-wi ``004_736876c28764ff16.txt``
(sanitary sewage BOD 200, SS 250 mg/l).
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import InputError
from limits.packs import Pack, Rule, available_packs, load_pack
from limits.permits import Permit
from limits.permits import site_rules as permit_site_rules

#: gallons per day in one gallon per minute
_GPD_PER_GPM = 1440.0


@dataclass(frozen=True)
class Strength:
    """A number the ordinance names with its citation and words (default unit mg/l)."""

    value: float
    citation: str
    words: str
    unit: str = "mg/l"
    op: str = ">"


@dataclass(frozen=True)
class LabLimit:
    """A prohibition checked on lab results.

    Attributes
    ----------
    rule : str
        The pack's rule id (``fog-max``, ``cyanide-max``).
    analyte : str
        Analyte id (see :mod:`lab.readers.analytes`).
    limit : float
        The limit [mg/l].
    statistic : str
        ``each`` (every result is judged), ``daily-maximum`` (a permit's daily maximum: each
        local day's mean, or each result, as ``[enforcement] daily_maximum`` says),
        ``period-average`` (the mean of a site's results over the period checked) or
        ``monthly-average`` (the mean of each calendar month, in the village's time zone),
        from the rule's ``basis`` ``sample``/``daily``/``average``/``monthly``.
    origin, stricter_of : str
        ``ordinance`` or ``permit``; where both limit the analyte, which applies and what it
        is stricter than (:func:`limits.permits.site_rules`).
    op : str
        Operator under which a value violates: ``value op limit`` (``>`` for "exceeding").
    comparison : str
        The words of that operator as the ordinance or permit states the limit ("in excess
        of", "exceeding", "more than").
    sample_type : str or None
        The sample type the limit applies to (``grab``, ``composite``; None: any), see
        :mod:`limits.sample_types`.
    """

    rule: str
    analyte: str
    limit: float
    statistic: str
    citation: str
    words: str
    unit: str = "mg/l"
    op: str = ">"
    origin: str = "ordinance"
    stricter_of: str | None = None
    provenance: str = ""
    comparison: str = ""        # the ordinance's (or permit's) comparison words: "more than"
    sample_type: str | None = None


def pack_of(pack: str) -> Pack:
    """The rule pack with this id, or in this file (:func:`limits.packs.load_pack`: the one pack
    search path; an :class:`InputError` naming the known ones and where it looked if none)."""
    return load_pack(pack)


def _cite(p, rule) -> str:
    """The rule's ordinance by title and section (``Village of Palmyra Code §13.48(2)(l)``):
    what bills and notices print; the seed file stays in the pack (``rule.provenance``)."""
    return rule.citation


def normal_strength(pack: str) -> dict[str, Strength]:
    """Normal-sewage strength per analyte of ``pack``, the base of a surcharge [mg/l].

    Raises
    ------
    InputError
        For an unknown pack or one whose ordinance defines no normal strength.
    """
    p = pack_of(pack)
    rules = p.by_kind("normal-strength")
    if not rules:
        raise InputError(f"pack '{pack}' defines no normal sewage strength to surcharge against")
    return {r.analyte: Strength(float(r.limit_canonical), _cite(p, r), r.words, "mg/l", r.op) for r in rules}


def permit_thresholds(pack: str) -> tuple[dict[str, Strength], Strength | None]:
    """Concentrations [mg/l] and the daily volume [gal/d] at which ``pack`` requires a permit."""
    p = pack_of(pack)
    conc: dict[str, Strength] = {}
    volume = None
    for key, r in p.permit_thresholds().items():
        if r.analyte:
            conc[r.analyte] = Strength(float(r.limit_canonical), _cite(p, r), r.words, "mg/l", r.op)
        elif r.parameter == "flow":
            gpd = float(r.limit) if r.unit == "gpd" else float(r.limit_canonical) * _GPD_PER_GPM
            volume = Strength(gpd, _cite(p, r), r.words, "gal/d", r.op)
    return conc, volume


_BASIS = {"sample": "each", "average": "period-average", "monthly": "monthly-average", "daily": "daily-maximum",
          "weekly": "weekly-average", "rolling-30-day": "rolling-30-day"}


def site_rules(pack: str, permit: Permit | None = None) -> tuple[Rule, ...]:
    """The rules that judge a site: its pack's, with its discharge permit's limits merged in,
    the stricter applying where both limit the same thing (:func:`limits.permits.site_rules`)."""
    return permit_site_rules(pack_of(pack), permit)


def _lab_limit(p, r: Rule) -> LabLimit:
    return LabLimit(r.id, r.analyte, float(r.limit_canonical),
                    "each" if r.kind == "loading-limit" else _BASIS[r.basis], _cite(p, r), r.words,
                    r.unit if r.kind == "loading-limit" else (r.canonical_unit or "mg/l"), r.op, r.origin, r.stricter_of,
                    r.provenance, r.comparison or "", r.sample_type)


def lab_limits(pack: str, permit: Permit | None = None) -> tuple[LabLimit, ...]:
    """The prohibitions of ``pack`` (and the limits of the site's ``permit``) checked on lab
    results as concentrations."""
    return tuple(_lab_limit(pack, r) for r in site_rules(pack, permit) if r.kind == "lab-limit")


def loading_limits(pack: str, permit: Permit | None = None) -> tuple[LabLimit, ...]:
    """The loadings [lb/day] a site's ``permit`` (or its pack) limits: each sample's
    concentration x its day's metered volume x 8.34 (palmyra-wi §13.48(2)(m)3: "loading in
    excess of the wastewater discharge permit")."""
    return tuple(_lab_limit(pack, r) for r in site_rules(pack, permit) if r.kind == "loading-limit")


def pack_timezone(pack: str):
    """The pack's time zone (calendar days are counted in it)."""
    return pack_of(pack).tz
