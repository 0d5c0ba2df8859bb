"""The forfeiture range the ordinance sets, times the days of violation.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.60(1): "shall be subject to a forfeiture of not less
than $100 nor more than $2,500 per violation, plus damages. Each day a condition is allowed
to exist which is contrary to all or any part of this subchapter shall constitute a new
violation." §13.60(2): a user who discharges "a waste or wastewater including septage that is
inhibiting to the sewer system or wastewater treatment facility such user shall pay a penalty
of up to $200 per violation upon conviction. Each day a violation occurs shall constitute a
separate violation."

The numbers are the pack's ``definition`` rules ``forfeiture-min``, ``forfeiture-max``
(§13.60(1)) and ``inhibiting-penalty-max`` (§13.60(2)), quoted with their words; a pack
without them has no range to state (the notice says so). §13.60(2) applies to a discharge
inhibiting the sewer system: a slug (§13.43 SLUG: a discharge "which adversely affects the
collection system and/or performance of the wastewater treatment facilities") and the findings
of pass through or interference.
"""

from __future__ import annotations

from dataclasses import dataclass

from limits.packs import load_pack

#: the rules and findings that are a discharge "inhibiting to the sewer system or wastewater
#: treatment facility" (palmyra-wi §13.60(2); §13.43 SLUG)
INHIBITING_RULES = ("slug", "slug-prohibited")
INHIBITING_FINDINGS = ("pass-through", "interference")


@dataclass(frozen=True)
class Forfeiture:
    """A penalty provision applied to a number of days of violation.

    Attributes
    ----------
    section, citation, words : str
        The provision (``§13.60(1)``), how documents cite it and its words.
    per_day_min, per_day_max : float or None
        Per violation, each day one [$]; None where the ordinance states no bound.
    days : int
        Days of violation.
    total_min, total_max : float or None
        ``days`` x the bounds [$].
    """

    section: str
    citation: str
    words: str
    per_day_min: float | None
    per_day_max: float | None
    days: int
    total_min: float | None
    total_max: float | None

    def sentence(self) -> str:
        """``$100 to $2,500 for each day: 2 days of violation, $200 to $5,000``."""
        d = f"{self.days} day{'s' if self.days != 1 else ''} of violation"
        if self.per_day_min is not None and self.per_day_max is not None:
            return (f"${self.per_day_min:,.0f} to ${self.per_day_max:,.0f} for each day: {d}, "
                    f"${self.total_min:,.0f} to ${self.total_max:,.0f}")
        if self.per_day_max is not None:
            return f"up to ${self.per_day_max:,.0f} for each day: {d}, up to ${self.total_max:,.0f}"
        return f"at least ${self.per_day_min:,.0f} for each day: {d}, at least ${self.total_min:,.0f}"

    def as_json(self) -> dict:
        return {"section": self.section, "citation": self.citation, "words": self.words,
                "per_day_min": self.per_day_min, "per_day_max": self.per_day_max, "days": self.days,
                "total_min": self.total_min, "total_max": self.total_max, "sentence": self.sentence()}


def _times(x: float | None, days: int) -> float | None:
    return None if x is None else x * days


def is_inhibiting(kind: str, rule: str | None) -> bool:
    """Whether a finding is a discharge inhibiting the sewer system (palmyra-wi §13.60(2))."""
    return kind in INHIBITING_FINDINGS or (rule or "") in INHIBITING_RULES


def forfeitures(pack: str, days: int, *, inhibiting: bool = False, cite=None) -> list[Forfeiture]:
    """The penalty provisions of ``pack`` for ``days`` days of violation.

    Parameters
    ----------
    pack : str
        The rule pack.
    days : int
        Days of violation (each a new violation).
    inhibiting : bool
        Also the provision for a discharge inhibiting the sewer system (§13.60(2)).
    cite : callable, optional
        ``cite(pack, rule) -> str``: how a document cites a rule (default ``rule.citation``).
    """
    p = load_pack(pack)
    rules = {r.id: r for r in p.rules}
    cite = cite or (lambda _p, r: r.citation)
    out = []
    lo, hi = rules.get("forfeiture-min"), rules.get("forfeiture-max")
    if lo is not None or hi is not None:
        r = hi or lo
        out.append(Forfeiture(r.section, cite(p, r), r.words, lo.limit if lo else None, hi.limit if hi else None,
                              days, _times(lo.limit if lo else None, days), _times(hi.limit if hi else None, days)))
    inh = rules.get("inhibiting-penalty-max")
    if inhibiting and inh is not None:
        out.append(Forfeiture(inh.section, cite(p, inh), inh.words, None, inh.limit, days, None,
                              _times(inh.limit, days)))
    return out
