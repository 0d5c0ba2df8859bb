"""Westfield, Wisconsin sewer service charges per residential equivalent (RE).

The service charge is the user charge plus the debt charge, each per RE per billing period.
The user charge per RE is fixed by year ($61 in 2010 rising to $81 in 2014 and after); the
debt charge is the annual debt service budget (with reserve fund deposits) divided by the
total REs and by the billing periods per year. The ordinance's example: 500 RE, $35,000 +
$5,000 = $40,000 a year -> $80 per RE a year -> $20 a quarter; $81 + $20 = $101 a quarter.

References
----------
westfield-wi, 004_736876c28764ff16.txt sewer service charges A(1)-(7), B, C.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.billing_data import billing
from lab.formulas.money import cents
from foundation.errors import InputError

#: the year Ord. No. 16:02 added debt charges computed from the debt service budget (C)
DEBT_CHARGE_SINCE = 2016


def user_charge_per_re(year: int) -> float:
    """User charge per RE per billing period [$] effective in ``year`` (A(1)-(5), (7))."""
    table = {int(k): float(v) for k, v in billing()["westfield-wi"]["user_charge_per_re"].items()}
    first = min(table)
    if year < first:
        raise InputError(f"westfield-wi: no user charge per RE before {first} in the ordinance")
    return table[max(y for y in table if y <= year)]


def debt_charge_per_re(annual_debt_budget: float, total_re: float, periods_per_year: int) -> float:
    """Debt charge per RE per billing period [$] (C: budget / RE / periods), unrounded."""
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
    citation: str


def service_charge(year: int, re: float, *, annual_debt_budget: float = 0.0, total_re: float = 1.0,
                   periods_per_year: int = 4) -> ServiceCharge:
    """A Westfield user's sewer service charge for one billing period.

    Parameters
    ----------
    year : int
        Year of the billing period (picks the user charge per RE).
    re : float
        The user's residential equivalents.
    annual_debt_budget : float
        Debt service budget with reserve fund deposits [$ a year] (from 2016; before, $0).
    total_re : float
        Residential equivalents of the whole utility.
    periods_per_year : int
        Billing periods a year (4 = quarterly).
    """
    if re <= 0:
        raise InputError(f"residential equivalents must be > 0, got {re}")
    cfg = billing()["westfield-wi"]
    user = user_charge_per_re(year)
    if year >= DEBT_CHARGE_SINCE:
        debt = debt_charge_per_re(annual_debt_budget, total_re, periods_per_year)
    else:
        debt = float(cfg["debt_charge_before_2016"])
    per_re = user + debt
    return ServiceCharge(re, user, debt, cents(per_re), cents(re * per_re), cfg["citation"])
