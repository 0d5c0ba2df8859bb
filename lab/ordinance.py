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
from limits.packs import Pack, available_packs, load_pack

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
        ``each`` (every result is judged) or ``period-average`` (the mean of a site's
        results over the period checked), from the pack's ``basis`` ``sample``/``average``.
    op : str
        Operator under which a value violates: ``value op limit`` (``>`` for "exceeding").
    """

    rule: str
    analyte: str
    limit: float
    statistic: str
    citation: str
    words: str
    unit: str = "mg/l"
    op: str = ">"


def pack_of(pack: str) -> Pack:
    """The rule pack with this id (:class:`InputError` naming the known ones if none)."""
    if pack not in available_packs():
        raise InputError(f"unknown pack '{pack}' (known: {', '.join(available_packs())})")
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


_BASIS = {"sample": "each", "average": "period-average"}


def lab_limits(pack: str) -> tuple[LabLimit, ...]:
    """The prohibitions of ``pack`` that are checked on lab results."""
    p = pack_of(pack)
    return tuple(LabLimit(r.id, r.analyte, float(r.limit_canonical), _BASIS[r.basis], _cite(p, r),
                          r.words, "mg/l", r.op) for r in p.lab_limits())


def pack_timezone(pack: str):
    """The pack's time zone (calendar days are counted in it)."""
    return pack_of(pack).tz
