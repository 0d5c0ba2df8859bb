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
}

#: other spellings labs use -> analyte id (compared lower-case)
ALIASES: dict[str, str] = {
    "bod": "bod5", "cbod5": "bod5", "ss": "tss", "p": "tp", "total_p": "tp",
    "og": "fog", "o&g": "fog", "oil_grease": "fog", "cyanide": "cn", "total_cn": "cn",
}

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


def unit_id(text: str) -> str | None:
    """The canonical spelling of a concentration unit (``mg/L`` -> ``mg/l``), or None."""
    key = text.strip().lower().replace("µ", "u").replace("μ", "u").replace(" ", "")
    return key if key in UNIT_TO_MG_L else None
