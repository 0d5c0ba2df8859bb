"""The lab analytes sewerwatch knows and the units their results may come in.

A lab result is stored and judged in mg/l (the canonical concentration unit of
:mod:`foundation.units`); results reported in ug/l are divided by 1000 on import.
"""

from __future__ import annotations

from foundation.units import CONVERSIONS

#: analyte id -> what the lab measured (the names the lab CSV uses)
ANALYTES: dict[str, str] = {
    "bod5": "biochemical oxygen demand, 5-day 20 °C",
    "tss": "total suspended solids",
    "tkn": "total Kjeldahl nitrogen",
    "tp": "total phosphorus",
    "fog": "fat, oil and grease",
    "cn": "cyanide",
    # the toxic substances palmyra-wi (003_44f871d49a02d8f5.txt §13.48(2)(i)) leaves to "the
    # Wisconsin Administrative Code or WPDES Permit": limited by a user's discharge permit
    "cr6": "hexavalent chromium",
    "cr3": "trivalent chromium",
    "cu": "copper",
    "ni": "nickel",
    "cd": "cadmium",
    "zn": "zinc",
    "phenols": "phenols",
    "fe": "iron",
    "sn": "tin",
    # a grab sample's pH [pH units], judged against the pH range (SNC, 40 CFR 403.8(f)(2)(viii)(A))
    "ph": "pH",
}

#: other spellings labs use -> analyte id (compared lower-case)
ALIASES: dict[str, str] = {
    "bod": "bod5", "cbod5": "bod5", "ss": "tss", "p": "tp", "total_p": "tp",
    "og": "fog", "o&g": "fog", "oil_grease": "fog", "cyanide": "cn", "total_cn": "cn",
    "copper": "cu", "nickel": "ni", "cadmium": "cd", "zinc": "zn", "iron": "fe", "tin": "sn",
    "hexavalent_chromium": "cr6", "cr(vi)": "cr6", "trivalent_chromium": "cr3", "cr(iii)": "cr3",
}

#: analytes not measured as a concentration, and the units their results come in
PH_UNITS: dict[str, float] = {"ph": 1.0, "su": 1.0, "s.u.": 1.0}
NOT_CONCENTRATION = {"ph": PH_UNITS}

#: the concentration units a lab result may be in -> factor into mg/l
#: (``foundation.units``: 1 ug/l = 0.001 mg/l; 1 ppm = 1 mg/l for dilute aqueous waste)
UNIT_TO_MG_L: dict[str, float] = {u: s for u, (s, _o) in CONVERSIONS["concentration"].items()}

#: non-detect qualifier in the lab CSV: the value is the detection limit
NON_DETECT = "<"


def analyte_id(text: str) -> str | None:
    """The analyte id for a name in a lab file, or None when unknown."""
    key = text.strip().lower()
    if key in ANALYTES:
        return key
    return ALIASES.get(key)


def unit_id(text: str, analyte: str | None = None) -> str | None:
    """The canonical spelling of a concentration unit (``mg/L`` -> ``mg/l``), or of the unit
    of an analyte that is not a concentration (pH: ``pH``, ``SU``); None when unknown."""
    key = text.strip().lower().replace("µ", "u").replace("μ", "u").replace(" ", "")
    return key if key in units_of(analyte) else None


def units_of(analyte: str | None) -> dict[str, float]:
    """The units a result of ``analyte`` may be in -> factor into its stored unit (mg/l, or
    pH units for pH)."""
    return NOT_CONCENTRATION.get(analyte, UNIT_TO_MG_L)


def to_stored(value: float, unit: str, analyte: str | None = None) -> float:
    """A result in the stored unit (mg/l; pH units for pH). A factor below 1 divides by its
    inverse (ug/l: value / 1000), so a result given in ug/l is the same float as the mg/l
    figure written out (120 ug/l is 0.12 mg/l exactly, not 0.12000000000000001)."""
    f = units_of(analyte)[unit]
    if 0 < f < 1:
        return value / round(1.0 / f)
    return value * f
