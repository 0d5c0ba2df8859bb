"""Service charges per residential equivalent (RE) (formula kind ``re-user-and-debt``), as
Westfield, Wisconsin sets them.

The service charge is the user charge plus the debt charge, each per RE per billing period.
The user charge per RE is fixed by year (Westfield: $61 in 2010 rising to $81 in 2014 and
after); the debt charge is a fixed amount (Westfield A(6): $0) until the year the ordinance
computes it (Westfield C, 2016): the annual debt service budget (with reserve fund deposits)
divided by the total REs and by the billing periods per year. Westfield's example: 500 RE,
$35,000 + $5,000 = $40,000 a year -> $80 per RE a year -> $20 a quarter; $81 + $20 = $101.

References
----------
westfield-wi, 004_736876c28764ff16.txt sewer service charges A(1)-(7), B, C. The numbers are
the pack's (``limits/packs/westfield-wi.toml``).
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import InputError
from lab.formulas.money import cents


@dataclass(frozen=True)
class ReChargeTerms:
    """What the ordinance fixes of a service charge per RE.

    Attributes
    ----------
    user_charge_per_re : dict
        year -> user charge per RE per billing period [$] effective from that year.
    debt_charge_per_re : float
        The fixed debt charge per RE per billing period [$] before it is computed.
    debt_charge_computed_since : int
        The first year the debt charge is computed from the debt service budget.
    """

    user_charge_per_re: dict[int, float]
    debt_charge_per_re: float
    debt_charge_computed_since: int


def user_charge_per_re(year: int, terms: ReChargeTerms) -> float:
    """User charge per RE per billing period [$] effective in ``year`` (the latest year's
    figure stays in force after it)."""
    first = min(terms.user_charge_per_re)
    if year < first:
        raise InputError(f"no user charge per RE before {first} in the ordinance")
    return terms.user_charge_per_re[max(y for y in terms.user_charge_per_re if y <= year)]


def debt_charge_per_re(annual_debt_budget: float, total_re: float, periods_per_year: int) -> float:
    """Debt charge per RE per billing period [$]: budget / RE / periods, unrounded."""
    if total_re <= 0:
        raise InputError(f"total residential equivalents must be > 0, got {total_re}")
    if periods_per_year not in (1, 2, 4, 6, 12):
        raise InputError(f"billing periods per year must be 1, 2, 4, 6 or 12, got {periods_per_year}")
    if annual_debt_budget < 0:
        raise InputError(f"annual debt service budget must be >= 0, got {annual_debt_budget}")
    return annual_debt_budget / total_re / periods_per_year


@dataclass(frozen=True)
class ServiceCharge:
    re: float
    user_per_re: float
    debt_per_re: float
    per_re: float
    dollars: float


def service_charge(year: int, re: float, terms: ReChargeTerms, *, annual_debt_budget: float = 0.0,
                   total_re: float = 1.0, periods_per_year: int = 4) -> ServiceCharge:
    """A user's sewer service charge for one billing period.

    Parameters
    ----------
    year : int
        Year of the billing period (picks the user charge per RE).
    re : float
        The user's residential equivalents.
    terms : ReChargeTerms
        The ordinance's user charges by year and debt charge.
    annual_debt_budget : float
        Debt service budget with reserve fund deposits [$ a year] (used from the year the
        debt charge is computed).
    total_re : float
        Residential equivalents of the whole utility.
    periods_per_year : int
        Billing periods a year (4 = quarterly).

    Returns
    -------
    ServiceCharge
        User and debt charge per RE [$], their sum rounded to the cent, and RE × that sum.
    """
    if re <= 0:
        raise InputError(f"residential equivalents must be > 0, got {re}")
    user = user_charge_per_re(year, terms)
    if year >= terms.debt_charge_computed_since:
        debt = debt_charge_per_re(annual_debt_budget, total_re, periods_per_year)
    else:
        debt = float(terms.debt_charge_per_re)
    per_re = user + debt
    return ServiceCharge(re, user, debt, cents(per_re), cents(re * per_re))
