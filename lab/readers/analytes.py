"""The lab analytes sewerwatch knows and the units their results may come in.

The analytes are the catalogue's (``limits/analytes.csv``, :mod:`limits.analytes`: EPA's 126
priority pollutants, the conventional pollutants and what local limits commonly name), with
those a village adds in its pack (``[[analytes]]``; passed here as ``extra``). A lab file may
name an analyte by its id or by another spelling labs use (the catalogue's ``aliases``,
compared lower-case). A result is stored and judged in its analyte's canonical unit (mg/l
for a concentration, :mod:`foundation.units`); one reported in ug/l is divided by 1000 on
import.
"""

from __future__ import annotations

from limits import analytes as catalogue

#: analyte id -> what the lab measured (the catalogue's names)
ANALYTES: dict[str, str] = {k: a.name for k, a in catalogue.catalogue().items()}

#: non-detect qualifier in the lab CSV: the value is the detection limit
NON_DETECT = "<"


def analyte_id(text: str, extra=()) -> str | None:
    """The analyte id for a name in a lab file, or None when unknown."""
    return catalogue.lookup(text, extra)


def unknown(text: str, extra=()) -> str:
    """Why ``text`` is no analyte, naming the closest known ids."""
    return catalogue.unknown(str(text).strip(), extra)


def units_of(analyte: str | None, extra=()) -> dict[str, float]:
    """The units a result of ``analyte`` may be in -> factor into its stored unit."""
    a = catalogue.known(extra).get(analyte) if analyte else None
    if a is None:
        a = catalogue.catalogue()["tss"]          # a concentration
    return {u.lower(): catalogue.unit_factor(a, u) for u in a.units}


def unit_id(text: str, analyte: str | None = None, extra=()) -> str | None:
    """The spelling of a unit as the catalogue writes it in lower case (``mg/L`` -> ``mg/l``,
    ``SU`` -> ``su``), or None when ``analyte`` is not measured in it."""
    key = text.strip().lower().replace("µ", "u").replace("μ", "u").replace(" ", "")
    return key if key in units_of(analyte, extra) else None


def to_stored(value: float, unit: str, analyte: str | None = None, extra=()) -> float:
    """A result in the stored unit (mg/l; pH units for pH). A factor below 1 divides by its
    inverse (ug/l: value / 1000), so a result given in ug/l is the same float as the mg/l
    figure written out (120 ug/l is 0.12 mg/l exactly, not 0.12000000000000001)."""
    f = units_of(analyte, extra)[unit]
    if 0 < f < 1:
        return value / round(1.0 / f)
    return value * f
