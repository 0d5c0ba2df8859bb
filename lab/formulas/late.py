"""Late charges on unpaid sewer bills.

Palmyra: 3 % of the billing charge once a statement is not paid within 20 days of issuance.
Superior: 1 % interest a month, prorated by day, from 30 days after the billing date.

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.46(8); superior-wi, 002_32e890e17155ca0d.txt
payment and penalty A(1). The numbers are in ``lab/data/billing.toml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from lab.billing_data import billing
from lab.formulas.money import cents
from foundation.errors import InputError


@dataclass(frozen=True)
class LateCharge:
    days_late: int
    dollars: float
    citation: str


def late_charge(pack: str, amount: float, billed: date, paid: date) -> LateCharge:
    """The late charge on ``amount`` [$] billed on ``billed`` and paid on ``paid``.

    Days are counted from the billing date: paid on day 20 after a Palmyra statement is on
    time, on day 21 it is 3 % more. A Superior bill paid 75 days after billing owes 45 days
    of interest: 45/30 × 1 % of the amount.
    """
    table = billing().get("late", {})
    if pack not in table:
        raise InputError(f"pack '{pack}' has no late charge in the ordinance (packs that do: {', '.join(table)})")
    cfg = table[pack]
    if amount < 0:
        raise InputError(f"billed amount must be >= 0, got {amount}")
    if paid < billed:
        raise InputError(f"paid {paid} is before billed {billed}")
    days = (paid - billed).days
    late_days = max(0, days - int(cfg["grace_days"]))
    if cfg["kind"] == "flat":
        dollars = amount * cfg["rate"] if late_days > 0 else 0.0
    elif cfg["kind"] == "monthly-interest":
        dollars = amount * cfg["rate"] * late_days / cfg["days_per_month"]
    else:  # pragma: no cover - guarded by the data file
        raise InputError(f"unknown late-charge kind {cfg['kind']!r} in billing.toml")
    return LateCharge(late_days, cents(dollars), cfg["citation"])
