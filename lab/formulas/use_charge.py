"""A use charge on the volume discharged: a unit cost per 1,000 gallons (formula kind
``per-1000-gal``), with the optional minimum a village may set per billing period.

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.45(2)(a): the Approving Authority computes each
October "the unit cost ($/1000 gallons, $/#) per use factor" of the sewer use charge.
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import InputError
from lab.formulas.money import cents


@dataclass(frozen=True)
class UseChargeTerms:
    """What the ordinance fixes of a use charge.

    Attributes
    ----------
    minimum_dollars : float or None
        The least charge of a billing period [$]; None where the ordinance sets none.
    """

    minimum_dollars: float | None = None


@dataclass(frozen=True)
class UseCharge:
    """A billing period's use charge: the volume [gal], the unit cost [$ per 1,000 gal], the
    charge [$] and whether the minimum raised it."""

    volume_gal: float
    per_1000_gal: float
    dollars: float
    minimum_applied: bool


def use_charge(volume_gal: float, per_1000_gal: float, terms: UseChargeTerms = UseChargeTerms()) -> UseCharge:
    """The use charge of a billing period: volume / 1,000 × unit cost, at least the minimum.

    Parameters
    ----------
    volume_gal : float
        Volume discharged in the period [gal].
    per_1000_gal : float
        Unit cost [$ per 1,000 gal].
    terms : UseChargeTerms
        The ordinance's minimum, if any.

    Returns
    -------
    UseCharge
        The charge [$] rounded to the cent, and whether the minimum raised it.
    """
    if volume_gal < 0:
        raise InputError(f"volume must be >= 0 gal, got {volume_gal}")
    if per_1000_gal < 0:
        raise InputError(f"unit cost per 1,000 gallons must be >= 0, got {per_1000_gal}")
    charge = volume_gal / 1000.0 * per_1000_gal
    raised = terms.minimum_dollars is not None and charge < terms.minimum_dollars
    return UseCharge(float(volume_gal), float(per_1000_gal), cents(terms.minimum_dollars if raised else charge),
                     bool(raised))
