"""Sewer rents by units of use (formula kind ``sewer-rent-units``), as Webster, New York
sets them for commercial, industrial and rental properties.

A sewer rent unit is a volume of use (Webster NY: 60,000 gallons). The quarterly charge is
the quarter's use divided by the unit volume times the per-unit rent fixed each year by
resolution, and at least a fraction (25 %) of that annual per-unit fee. A property's first
quarterly charge uses the previous year's annual water use times a factor (0.25).
One- and two-family dwellings count 1 and 2 units whatever their use.

References
----------
webster-ny, 001_344667c7b04e812e.txt §113-75 C (SEWER RENT UNIT), D(2), D(4)(a)-(c). The
numbers are the pack's (``limits/packs/webster-ny.toml``).
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import InputError
from lab.formulas.money import cents


@dataclass(frozen=True)
class SewerRentTerms:
    """What the ordinance fixes of a sewer rent.

    Attributes
    ----------
    gallons_per_unit : float
        One sewer rent unit of use [gal] (§113-75 C: 60,000).
    quarterly_minimum : float
        The least quarterly charge as a fraction of the annual per-unit fee (D(4)(c): 0.25).
    first_quarter_factor : float
        Fraction of the previous year's use billed as the first quarter (D(4)(a): 0.25).
    one_family_units, two_family_units : float
        Units of a one- and a two-family dwelling (C: 1 and 2).
    """

    gallons_per_unit: float
    quarterly_minimum: float
    first_quarter_factor: float
    one_family_units: float
    two_family_units: float


@dataclass(frozen=True)
class SewerRent:
    units: float
    dollars: float
    minimum_applied: bool
    use_gal: float


def quarterly_sewer_rent(quarter_use_gal: float | None, per_unit_rent: float, terms: SewerRentTerms, *,
                         previous_year_use_gal: float | None = None) -> SewerRent:
    """The quarterly sewer rent of a commercial/industrial/rental property.

    Parameters
    ----------
    quarter_use_gal : float or None
        Metered use in the quarter [gal]; None for the first quarter of a property billed
        quarterly, which then uses ``previous_year_use_gal`` × the first-quarter factor.
    per_unit_rent : float
        The annual per-unit sewer rent set by resolution [$ per unit].
    terms : SewerRentTerms
        The ordinance's unit volume, minimum and first-quarter factor.
    previous_year_use_gal : float, optional
        Annual water use of the previous year [gal].

    Returns
    -------
    SewerRent
        Units (use / unit volume), the charge [$] rounded to the cent, and whether the
        minimum (a fraction of the annual per-unit fee) applied.
    """
    if per_unit_rent < 0:
        raise InputError(f"per-unit sewer rent must be >= 0, got {per_unit_rent}")
    if quarter_use_gal is None:
        if previous_year_use_gal is None:
            raise InputError("first quarter: give the previous year's annual water use")
        quarter_use_gal = previous_year_use_gal * terms.first_quarter_factor
    if quarter_use_gal < 0:
        raise InputError(f"quarterly use must be >= 0 gal, got {quarter_use_gal}")
    units = quarter_use_gal / terms.gallons_per_unit
    charge = units * per_unit_rent
    minimum = terms.quarterly_minimum * per_unit_rent
    return SewerRent(units, cents(max(charge, minimum)), charge < minimum, float(quarter_use_gal))


def residential_units(family: int, terms: SewerRentTerms) -> float:
    """Sewer rent units of a one- or two-family dwelling (regardless of use)."""
    if family == 1:
        return terms.one_family_units
    if family == 2:
        return terms.two_family_units
    raise InputError(f"residential properties are one- or two-family dwellings, got {family}-family "
                     f"(others are commercial/industrial/rental: units = use / {terms.gallons_per_unit:,.0f} gal)")
