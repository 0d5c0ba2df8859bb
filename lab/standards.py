"""Lab-side numbers of each ordinance: normal-sewage strengths, permit thresholds and the
prohibitions checked on lab results, each with its citation.

These are read from the rule pack (``limits/packs/<pack>.toml``) when the pack gives them;
the constants below are the fallback and say where each number comes from.

References
----------
palmyra-wi: ``003_44f871d49a02d8f5.txt`` §13.43 NORMAL SEWAGE, §13.48(2)(k) and (l),
§13.54(1). webster-wi: ``000_68bc5aa0322c9423.txt`` §240-5, §240-7.
westfield-wi: ``004_736876c28764ff16.txt`` definition SANITARY SEWAGE.
superior-wi: ``002_32e890e17155ca0d.txt`` prohibited discharges (9).
"""

from __future__ import annotations

from dataclasses import dataclass

from sewerwatch.errors import InputError

PALMYRA = "palmyra-wi, 003_44f871d49a02d8f5.txt"
WEBSTER_WI = "webster-wi, 000_68bc5aa0322c9423.txt"
WESTFIELD = "westfield-wi, 004_736876c28764ff16.txt"
SUPERIOR = "superior-wi, 002_32e890e17155ca0d.txt"


@dataclass(frozen=True)
class Strength:
    """A concentration the ordinance names [mg/l] with its citation and words."""

    value: float
    citation: str
    words: str
    unit: str = "mg/l"


@dataclass(frozen=True)
class LabLimit:
    """A prohibition checked on lab results.

    Attributes
    ----------
    rule : str
        Rule id (``fog-max``, ``fog-average``, ``cyanide-max``).
    analyte : str
        Analyte id (see :mod:`lab.analytes`).
    limit : float
        The result must not exceed this [mg/l].
    statistic : str
        ``each`` (every result) or ``daily-average`` (the mean of a site's results of one day).
    """

    rule: str
    analyte: str
    limit: float
    statistic: str
    citation: str
    words: str
    unit: str = "mg/l"


#: pack -> analyte -> normal (domestic) strength, the base of a surcharge [mg/l]
NORMAL_STRENGTH: dict[str, dict[str, Strength]] = {
    "palmyra-wi": {
        "bod5": Strength(250.0, f"{PALMYRA} §13.43 NORMAL SEWAGE (a)",
                         "A 5-day 20°C BOD of not more than 250 parts per million."),
        "tss": Strength(250.0, f"{PALMYRA} §13.43 NORMAL SEWAGE (b)",
                        "A total suspended solids concentration of not more than 250 parts per million."),
        "tkn": Strength(40.0, f"{PALMYRA} §13.43 NORMAL SEWAGE (c)",
                        "A TKN concentration of not more than 40 parts per million."),
        "tp": Strength(7.0, f"{PALMYRA} §13.43 NORMAL SEWAGE (d)",
                       "A total phosphorus concentration of not more than 7 parts per million."),
    },
    "webster-wi": {
        "bod5": Strength(200.0, f"{WEBSTER_WI} §240-7 NORMAL DOMESTIC STRENGTH WASTEWATER",
                         "concentrations of BOD5 and suspended solids no greater than 200 and 250 mg/l"),
        "tss": Strength(250.0, f"{WEBSTER_WI} §240-7 NORMAL DOMESTIC STRENGTH WASTEWATER",
                        "concentrations of BOD5 and suspended solids no greater than 200 and 250 mg/l"),
    },
    "westfield-wi": {
        "bod5": Strength(200.0, f"{WESTFIELD} SANITARY SEWAGE A", "BOD: 200 millgrams per liter."),
        "tss": Strength(250.0, f"{WESTFIELD} SANITARY SEWAGE B", "Suspended solids: 250 milligrams per liter."),
    },
}

#: pack -> analyte -> concentration above which a discharge permit is required [mg/l]
PERMIT_CONCENTRATION: dict[str, dict[str, Strength]] = {
    "palmyra-wi": {
        "bod5": Strength(250.0, f"{PALMYRA} §13.54(1)(a)", "A BOD greater than 250 mg/L."),
        "tss": Strength(250.0, f"{PALMYRA} §13.54(1)(b)", "A suspended solids concentration greater than 250 mg/L."),
        "tkn": Strength(40.0, f"{PALMYRA} §13.54(1)(c)", "A TKN concentration greater than 40mg/L."),
        "tp": Strength(7.0, f"{PALMYRA} §13.54(1)(d)", "A total phosphorus concentration greater than 7 mg/L."),
    },
}

#: pack -> daily volume at or above which a discharge permit is required [gal/day]
PERMIT_VOLUME_GPD: dict[str, Strength] = {
    "palmyra-wi": Strength(5000.0, f"{PALMYRA} §13.54(1)(e)",
                           "A volume of 5,000 gallons per day or greater is discharged by any user "
                           "at one or more points of discharge.", unit="gal/d"),
}

#: pack -> prohibitions checked on lab results
LAB_LIMITS: dict[str, tuple[LabLimit, ...]] = {
    "palmyra-wi": (
        LabLimit("fog-average", "fog", 100.0, "daily-average", f"{PALMYRA} §13.48(2)(k)",
                 "Free or emulsified oil and grease exceeding on analysis an average of 100 mg/l"),
        LabLimit("cyanide-max", "cn", 0.5, "each", f"{PALMYRA} §13.48(2)(l)",
                 "Any cyanide or cyanogens compounds ... in excess of one-half (0.5) mg/l by weight "
                 "as cyanide in the wastes."),
    ),
    "webster-wi": (
        LabLimit("fog-max", "fog", 100.0, "each", f"{WEBSTER_WI} §240-5",
                 "Any water or wastes which may contain more than 100 parts per million by weight "
                 "of fat, oil, or grease."),
    ),
    "superior-wi": (
        LabLimit("fog-max", "fog", 100.0, "each", f"{SUPERIOR} prohibited discharges (9)",
                 "Any water or wastes which may contain more than 100 parts per million by weight "
                 "of fat, oil or grease."),
    ),
    "westfield-wi": (),
    "webster-ny": (),
}

KNOWN_PACKS = ("palmyra-wi", "webster-wi", "webster-ny", "superior-wi", "westfield-wi")


def _check_pack(pack: str) -> None:
    if pack not in KNOWN_PACKS:
        raise InputError(f"unknown pack '{pack}' (known: {', '.join(KNOWN_PACKS)})")


def normal_strength(pack: str) -> dict[str, Strength]:
    """Normal-sewage strength per analyte of ``pack`` (the surcharge base) [mg/l].

    Raises
    ------
    InputError
        For an unknown pack or one whose ordinance defines no surcharge base.
    """
    _check_pack(pack)
    from lab import packdata
    found = packdata.normal_strength(pack)
    if found is not None:
        return found
    if pack not in NORMAL_STRENGTH:
        raise InputError(f"pack '{pack}' defines no normal sewage strength to surcharge against "
                         f"(packs that do: {', '.join(NORMAL_STRENGTH)})")
    return NORMAL_STRENGTH[pack]


def permit_thresholds(pack: str) -> tuple[dict[str, Strength], Strength | None]:
    """Concentrations [mg/l] and daily volume [gal/d] above which ``pack`` requires a permit."""
    _check_pack(pack)
    from lab import packdata
    found = packdata.permit_thresholds(pack)
    if found is not None:
        return found
    return PERMIT_CONCENTRATION.get(pack, {}), PERMIT_VOLUME_GPD.get(pack)


def lab_limits(pack: str) -> tuple[LabLimit, ...]:
    """The prohibitions of ``pack`` that are checked on lab results."""
    _check_pack(pack)
    from lab import packdata
    found = packdata.lab_limits(pack)
    if found is not None:
        return found
    return LAB_LIMITS.get(pack, ())
