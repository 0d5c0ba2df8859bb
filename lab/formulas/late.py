"""Late charges on unpaid sewer bills: a flat charge once a grace period has passed (formula
kind ``flat``) or interest a month, prorated by day, from the end of the grace period
(``monthly-interest``).

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.46(8) (flat: 3 % after 20 days); superior-wi,
002_32e890e17155ca0d.txt payment and penalty A(1) (1 % a month from 30 days after billing).
The numbers are the packs' (``[late_charge]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.formulas.money import cents


@dataclass(frozen=True)
class FlatLateCharge:
    """A charge of ``rate`` × the bill once it is not paid within ``grace_days`` [days]."""

    grace_days: int
    rate: float

    def dollars(self, amount: float, late_days: int) -> float:
        """The late charge [$] on ``amount`` [$] paid ``late_days`` after the grace period."""
        return cents(amount * self.rate) if late_days > 0 else 0.0

    def if_late(self, amount: float) -> float | None:
        """What a bill of ``amount`` [$] owes once late [$]."""
        return cents(amount * self.rate)

    def terms(self) -> str:
        return f"{self.rate * 100:g} % added if not paid within {self.grace_days} days"


@dataclass(frozen=True)
class MonthlyInterest:
    """Interest of ``rate`` a month on the bill, prorated by day on ``days_per_month``-day
    months, from ``grace_days`` after billing (simple interest)."""

    grace_days: int
    rate: float
    days_per_month: float

    def dollars(self, amount: float, late_days: int) -> float:
        """The interest [$] on ``amount`` [$] paid ``late_days`` after the grace period."""
        return cents(amount * self.rate * late_days / self.days_per_month)

    def if_late(self, amount: float) -> float | None:
        """None: the interest depends on the day of payment."""
        return None

    def terms(self) -> str:
        return f"{self.rate * 100:g} % interest a month, prorated, from {self.grace_days} days after billing"


def late_days(days_since_billing: int, grace_days: int) -> int:
    """Days past the grace period: paid on day 20 of a 20-day grace period is on time."""
    return max(0, days_since_billing - grace_days)
