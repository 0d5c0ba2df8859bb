"""Palmyra residential equivalent connections (REC) from the §13.61 table.

A commercial or industrial user's wastewater flow is its SIC code's gallons per
employee-hour times its employee-hours; its REC is that flow divided by the flow of the
average residential user (§13.45(2)(c): the water used by residential customers minus
sprinkling credits divided by the number of residential water customers, computed each
October), at least 1.00, rounded to the nearest 0.25.

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.61(1) (residential users), §13.61(2) (SIC table),
§13.45(2)(c) (flow per residential equivalent).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from lab.billing_data import sic_table
from foundation.errors import InputError

CITATION = "palmyra-wi, 003_44f871d49a02d8f5.txt §13.61"

#: §13.61(1): residential users -> REC (per unit where the table says /unit)
RESIDENTIAL = {
    "condominium": 1.0, "single-family": 1.0, "duplex": 2.0,
    "multi-family-2br": 1.0, "multi-family-1br": 0.75, "parsonage": 1.0,
}


def gallons_per_employee_hour(sic: str) -> tuple[float, str]:
    """The §13.61(2) flow of a 4-digit SIC code [gal per employee-hour] and its description."""
    s = str(sic).strip()
    if not (len(s) == 4 and s.isdigit()):
        raise InputError(f"SIC code must be 4 digits, got {sic!r}")
    code = int(s)
    for first, last, desc, gph in sic_table():
        if first <= code <= last:
            return gph, desc
    raise InputError(f"SIC code {s} is not in the §13.61 table ({CITATION}); "
                     "the Approving Authority assigns a flow")


def round_rec(value: float) -> float:
    """At least 1.00, rounded to the nearest 0.25, halves up (1.125 -> 1.25) (§13.61(2))."""
    q = (Decimal(repr(float(value))) * 4).quantize(Decimal(1), rounding=ROUND_HALF_UP) / 4
    return max(1.0, float(q))


@dataclass(frozen=True)
class Rec:
    sic: str
    description: str
    gal_per_employee_hour: float
    flow_gal: float
    rec_unrounded: float
    rec: float
    citation: str = CITATION


def rec_for_sic(sic: str, employee_hours: float, residential_flow_gal: float) -> Rec:
    """The REC of a commercial or industrial user.

    Parameters
    ----------
    sic : str
        4-digit SIC code.
    employee_hours : float
        Employee-hours worked in the period (e.g. a day) [h].
    residential_flow_gal : float
        Flow of the average residential user in the same period [gal].
    """
    if employee_hours < 0:
        raise InputError(f"employee-hours must be >= 0, got {employee_hours}")
    if residential_flow_gal <= 0:
        raise InputError(f"average residential flow must be > 0 gal, got {residential_flow_gal}")
    gph, desc = gallons_per_employee_hour(sic)
    flow = gph * employee_hours
    raw = flow / residential_flow_gal
    return Rec(str(sic), desc, gph, flow, raw, round_rec(raw))
