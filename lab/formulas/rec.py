"""Residential equivalent connections (REC) from a flow table by SIC code (formula kind
``sic-employee-hours``), as Palmyra §13.61 sets them.

A commercial or industrial user's wastewater flow is its SIC code's gallons per
employee-hour times its employee-hours; its REC is that flow divided by the flow of the
average residential user, at least a minimum (1.00), rounded to the nearest step (0.25).

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.61(1) (residential users), §13.61(2) (SIC table),
§13.45(2)(c) (flow per residential equivalent). The table and numbers are the pack's
(``limits/packs/palmyra-wi.toml`` ``[residential_equivalents]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from foundation.errors import InputError


@dataclass(frozen=True)
class RecTerms:
    """What the ordinance fixes of the REC count.

    Attributes
    ----------
    minimum : float
        The least REC of an account (§13.61(2): 1.00).
    round_to : float
        The step RECs are rounded to, halves up (§13.61(2): 0.25).
    residential : dict
        Residential user class -> REC (per unit where the table says /unit) (§13.61(1)).
    sic : tuple
        (first SIC, last SIC, description, gallons per employee-hour), see :func:`sic_ranges`.
    section, citation : str
        The table's section (``§13.61``) and full citation, for messages.
    """

    minimum: float
    round_to: float
    residential: dict[str, float]
    sic: tuple[tuple[int, int, str, float], ...]
    section: str = ""
    citation: str = ""


def sic_ranges(rows) -> tuple[tuple[int, int, str, float], ...]:
    """The rows of a SIC flow table as (first SIC, last SIC, description, gal/employee-hour).

    A range row (``5942-9``, ``6022-59``) covers every code from the first to the last, the
    suffix replacing the first code's last digits (5942-5949, 6022-6059).
    """
    out = []
    for code, description, gph in rows:
        if "-" in code:
            first, suffix = code.split("-")
            last = first[: len(first) - len(suffix)] + suffix
        else:
            first = last = code
        out.append((int(first), int(last), str(description), float(gph)))
    return tuple(out)


def gallons_per_employee_hour(sic: str, terms: RecTerms) -> tuple[float, str]:
    """The table's flow of a 4-digit SIC code [gal per employee-hour] and its description."""
    s = str(sic).strip()
    if not (len(s) == 4 and s.isdigit()):
        raise InputError(f"SIC code must be 4 digits, got {sic!r}")
    code = int(s)
    for first, last, desc, gph in terms.sic:
        if first <= code <= last:
            return gph, desc
    raise InputError(f"SIC code {s} is not in the {terms.section} table ({terms.citation}); "
                     "the Approving Authority assigns a flow")


def round_rec(value: float, terms: RecTerms) -> float:
    """At least the minimum, rounded to the nearest step, halves up (1.125 -> 1.25 for 0.25)."""
    steps = (Decimal(repr(float(value))) / Decimal(repr(terms.round_to))).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return max(terms.minimum, float(steps * Decimal(repr(terms.round_to))))


@dataclass(frozen=True)
class Rec:
    sic: str
    description: str
    gal_per_employee_hour: float
    flow_gal: float
    rec_unrounded: float
    rec: float


def rec_for_sic(sic: str, employee_hours: float, residential_flow_gal: float, terms: RecTerms) -> Rec:
    """The REC of a commercial or industrial user.

    Parameters
    ----------
    sic : str
        4-digit SIC code.
    employee_hours : float
        Employee-hours worked in the period (e.g. a day) [h].
    residential_flow_gal : float
        Flow of the average residential user in the same period [gal].
    terms : RecTerms
        The ordinance's table, minimum and rounding step.
    """
    if employee_hours < 0:
        raise InputError(f"employee-hours must be >= 0, got {employee_hours}")
    if residential_flow_gal <= 0:
        raise InputError(f"average residential flow must be > 0 gal, got {residential_flow_gal}")
    gph, desc = gallons_per_employee_hour(sic, terms)
    flow = gph * employee_hours
    raw = flow / residential_flow_gal
    return Rec(str(sic), desc, gph, flow, raw, round_rec(raw, terms))
