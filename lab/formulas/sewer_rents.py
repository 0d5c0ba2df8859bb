"""Webster, New York sewer rents for commercial, industrial and rental properties.

A sewer rent unit is 60,000 gallons of use. The quarterly charge is the quarter's use
divided by 60,000 gallons times the per-unit rent fixed each year by resolution, and at
least 25 % of that annual per-unit fee. A property's first quarterly charge uses the
previous year's annual water use × 0.25.

References
----------
webster-ny, 001_344667c7b04e812e.txt §113-75 C (SEWER RENT UNIT), D(2), D(4)(a)-(c).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.billing_data import billing
from lab.formulas.money import cents
from foundation.errors import InputError


@dataclass(frozen=True)
class SewerRent:
    units: float
    dollars: float
    minimum_applied: bool
    use_gal: float
    citation: str


def quarterly_sewer_rent(quarter_use_gal: float | None, per_unit_rent: float, *,
                         previous_year_use_gal: float | None = None) -> SewerRent:
    """The quarterly sewer rent of a commercial/industrial/rental property.

    Parameters
    ----------
    quarter_use_gal : float or None
        Metered use in the quarter [gal]; None for the first quarter of a property billed
        quarterly, which then uses ``previous_year_use_gal`` × 0.25 (§113-75 D(4)(a)).
    per_unit_rent : float
        The annual per-unit sewer rent set by resolution [$ per unit] (§113-75 D(2)).
    previous_year_use_gal : float, optional
        Annual water use of the previous year [gal].

    Returns
    -------
    SewerRent
        Units (use / 60,000 gal), the charge [$] rounded to the cent, and whether the
        minimum of 25 % of the annual per-unit fee applied (§113-75 D(4)(c)).
    """
    cfg = billing()["webster-ny"]
    if per_unit_rent < 0:
        raise InputError(f"per-unit sewer rent must be >= 0, got {per_unit_rent}")
    if quarter_use_gal is None:
        if previous_year_use_gal is None:
            raise InputError("first quarter: give the previous year's annual water use (§113-75 D(4)(a))")
        quarter_use_gal = previous_year_use_gal * cfg["first_quarter_fraction"]
    if quarter_use_gal < 0:
        raise InputError(f"quarterly use must be >= 0 gal, got {quarter_use_gal}")
    units = quarter_use_gal / cfg["gallons_per_unit"]
    charge = units * per_unit_rent
    minimum = cfg["quarterly_minimum_fraction"] * per_unit_rent
    return SewerRent(units, cents(max(charge, minimum)), charge < minimum, float(quarter_use_gal),
                     f"{cfg['citation']} D(4)(c)")


def residential_units(family: int) -> float:
    """Sewer rent units of a one- or two-family dwelling (§113-75 C: 1 and 2 regardless of use)."""
    cfg = billing()["webster-ny"]
    if family == 1:
        return cfg["one_family_units"]
    if family == 2:
        return cfg["two_family_units"]
    raise InputError(f"residential properties are one- or two-family dwellings, got {family}-family "
                     "(others are commercial/industrial/rental: units = use / 60,000 gal)")
