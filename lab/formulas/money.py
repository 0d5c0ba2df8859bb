"""Rounding money the way a bill does: to the cent, halves up."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def cents(amount: float) -> float:
    """``amount`` [$] rounded to the cent, halves away from zero (0.125 -> 0.13).

    The shortest repr of the float is rounded, so 125.10000000000001 gives 125.10.
    """
    return float(Decimal(repr(float(amount))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
