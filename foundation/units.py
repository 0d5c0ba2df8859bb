"""Canonical units per parameter and vectorised conversions into them.

Every reading is stored and judged in its parameter's canonical unit: pH in pH units,
temperature in degrees Fahrenheit (the unit the ordinances state first), flow in US
gallons per minute (the ``generic-manhole`` Modbus profile's unit) and concentrations in
mg/l. An unknown unit is an error, never a guess.
"""

from __future__ import annotations

import numpy as np

from foundation.errors import InputError

#: US gallons in one cubic metre (NIST Handbook 44, Appendix C: 1 gal = 3.785411784 l).
GALLONS_PER_M3 = 1000.0 / 3.785411784
#: US gallons in one cubic foot (231 in^3 per gallon, 1728 in^3 per ft^3).
GALLONS_PER_FT3 = 1728.0 / 231.0

#: parameter -> canonical unit
CANONICAL = {
    "ph": "pH",
    "temperature": "degF",
    "flow": "gpm",
    "level": "ft",
    "concentration": "mg/l",
    "bacteria": "cfu/100ml",
    "asbestos": "mf/l",
}

#: parameter -> unit -> (scale, offset): canonical = value * scale + offset
CONVERSIONS: dict[str, dict[str, tuple[float, float]]] = {
    "ph": {"pH": (1.0, 0.0), "SU": (1.0, 0.0), "s.u.": (1.0, 0.0)},     # standard units: a lab's word for pH
    "temperature": {"degF": (1.0, 0.0), "degC": (9.0 / 5.0, 32.0)},
    "flow": {
        "gpm": (1.0, 0.0),
        "mgd": (1e6 / 1440.0, 0.0),
        # gallons per day: the unit of the ordinances' volume thresholds (palmyra-wi
        # §13.52(3), §13.54(1)(e); westfield-wi INDUSTRIAL USE B).
        "gpd": (1.0 / 1440.0, 0.0),
        "m3/d": (GALLONS_PER_M3 / 1440.0, 0.0),
        "l/s": (GALLONS_PER_M3 / 1000.0 * 60.0, 0.0),
        "cfs": (GALLONS_PER_FT3 * 60.0, 0.0),
    },
    "level": {"ft": (1.0, 0.0), "in": (1.0 / 12.0, 0.0), "m": (1.0 / 0.3048, 0.0), "cm": (1.0 / 30.48, 0.0)},
    # For dilute aqueous waste 1 ppm by weight is 1 mg/l; the ordinances use both words
    # for the same fat/oil/grease limit (webster-wi §240-5, palmyra-wi §13.48(2)(k)).
    "concentration": {"mg/l": (1.0, 0.0), "ug/l": (1e-3, 0.0), "ng/l": (1e-6, 0.0), "pg/l": (1e-9, 0.0),
                      "ppm": (1.0, 0.0)},
    # fecal coliform, a conventional pollutant (40 CFR 401.16): colonies (or the most probable
    # number) per 100 ml; asbestos: million fibers per litre (40 CFR 136, Table IB)
    "bacteria": {"cfu/100ml": (1.0, 0.0), "mpn/100ml": (1.0, 0.0)},
    "asbestos": {"mf/l": (1.0, 0.0)},
}

PARAMETERS = tuple(CONVERSIONS)
#: The parameters a sensor may measure (the others are lab analytes' only).
SENSOR_PARAMETERS = ("ph", "temperature", "flow", "level", "concentration")

#: parameter -> (lowest, highest) physically plausible value [canonical unit]. A reading outside it is kept with quality 1 (out of range) and never
#: judged as a violation: a probe reading pH 15 is broken or mis-wired, not evidence of a
#: caustic discharge. Flow and level have no upper bound of their own: a sensor's
#: configured full scale (``[[sensors]] full_scale``) is theirs.
PHYSICAL_RANGE: dict[str, tuple[float, float]] = {
    "ph": (0.0, 14.0),                # the pH scale of aqueous solutions
    "temperature": (-40.0, 250.0),    # [degF]: from frozen brine to superheated condensate
    "flow": (0.0, float("inf")),      # [gpm]; a negative flow is a meter fault
    "level": (0.0, float("inf")),     # [ft]
    "concentration": (0.0, float("inf")),   # [mg/l]
    "bacteria": (0.0, float("inf")),
    "asbestos": (0.0, float("inf")),
}


def check_unit(parameter: str, unit: str) -> None:
    """Raise :class:`InputError` unless ``unit`` is known for ``parameter``."""
    if parameter not in CONVERSIONS:
        raise InputError(f"unknown parameter '{parameter}' (known: {', '.join(PARAMETERS)})")
    if unit not in CONVERSIONS[parameter]:
        known = ", ".join(CONVERSIONS[parameter])
        raise InputError(f"unknown unit '{unit}' for {parameter} (known: {known})")


def to_canonical(parameter: str, unit: str, values):
    """Convert values of one parameter from ``unit`` into the canonical unit.

    Parameters
    ----------
    parameter : str
        One of :data:`PARAMETERS`.
    unit : str
        The unit the values are in.
    values : array_like
        Values [unit].

    Returns
    -------
    numpy.ndarray
        float64 values [canonical unit of the parameter].
    """
    check_unit(parameter, unit)
    scale, offset = CONVERSIONS[parameter][unit]
    out = np.asarray(values, dtype=np.float64)
    if scale == 1.0 and offset == 0.0:
        return out.copy() if out is values else out
    return out * scale + offset


def from_canonical(parameter: str, unit: str, values):
    """Convert canonical values of ``parameter`` into ``unit`` (inverse of :func:`to_canonical`)."""
    check_unit(parameter, unit)
    scale, offset = CONVERSIONS[parameter][unit]
    return (np.asarray(values, dtype=np.float64) - offset) / scale
