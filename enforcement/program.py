"""The pretreatment program's year in the figures of EPA's ICIS-NPDES Pretreatment
Performance Summary (schema 5.8, the PretreatmentPerformanceSummary data family; the NPDES
electronic reporting rule, 40 CFR Part 127, Appendix A), each derived from the annual
report's own data (:func:`enforcement.annual.annual_report`) so the two never disagree.

Which users count (40 CFR 403.3(v)): the significant industrial users are those the config
names (``[enforcement.program] significant_users``), else every user with a discharge permit
on record. What each figure counts, in the words of the schema's documentation:

============================================  =============================================================
``NumberSIUs``                                the significant industrial users
``SIUsWithoutControlMechanism``               SIUs without a discharge permit in force on the year's last day
``SIUsNotInspected``                          SIUs with no inspection recorded in the year (field.inspections;
                                              always written, 0 included: 40 CFR 403.8(f)(2)(v) requires
                                              an inspection of each at least once a year)
``SIUsNotSampled``                            SIUs with no sample taken by the POTW in the year (by the
                                              village or its contractor, ``lab_samples.sampled_by``;
                                              403.8(f)(2)(v): the control authority's own sampling, at
                                              least once a year; the user's self-monitoring does not count)
``SIUsSNCWithPretreatmentStandards``          SIUs in SNC in a period ending in the year under (A), (B), (C),
                                              (D) or (H) of 40 CFR 403.8(f)(2)(viii)
``SIUsSNCWithReportingRequirements``          ... under (F) or (G) (reports 45 days late, noncompliance not
                                              reported)
``SIUsSNCWithPretreatmentSchedule``           ... under (E) (a milestone 90 days late)
``SIUsSNCPublishedNewspaper``                 SIUs whose names a recorded publication of the year's list
                                              named (:mod:`enforcement.publication`)
``ViolationNoticesIssuedSIUs``                notices of violation issued to SIUs in the year
``AdministrativeOrdersIssuedSIUs``            administrative orders and orders to show cause issued to SIUs
``DollarAmountPenaltiesCollectedPPS``         penalties collected in the year [whole dollars], every user
``IUsWhichPenaltiesHaveBeenCollectedPPS``     users a penalty was collected from in the year
``NumberCIUs``, ``CIUsInSNC``                 categorical users (where the config names them), those in SNC
``PassThroughInterferenceIndicator``          Y when a pass through or interference finding ((C)) arose
============================================  =============================================================

Civil and criminal suits and the budget are not recorded by sewerwatch: those elements are
left out (all are optional in the schema).
"""

from __future__ import annotations

from datetime import date

#: SNC criteria (40 CFR 403.8(f)(2)(viii)) by the kind of requirement ICIS counts them under.
STANDARDS, REPORTING, SCHEDULES = ("A", "B", "C", "D", "H"), ("F", "G"), ("E",)
#: The guide's actions ICIS counts as notices of violation and as administrative orders.
NOTICE_ACTIONS, ORDER_ACTIONS = ("notice-of-violation",), ("administrative-order", "show-cause")


def significant(rep: dict, program) -> list[str]:
    """The significant industrial users of the report (site ids), as :mod:`module docstring
    <enforcement.program>` says."""
    if program.significant_users is not None:
        known = {u["site"] for u in rep["users"]}
        return [s for s in program.significant_users if s in known]
    return [u["site"] for u in rep["users"] if u.get("permit_effective")]


def _inspections(u: dict) -> list:
    """A user's inspections of the year in the annual report (its field work)."""
    return (u.get("field") or {}).get("inspections") or u.get("inspections") or []


def _in_year(iso: str | None, year: int) -> bool:
    return bool(iso) and date.fromisoformat(iso).year == year


def _snc_by_criteria(rep: dict, criteria: tuple[str, ...]) -> set[str]:
    return {u["site"] for u in rep["snc"]["users"] for p in u["periods"]
            if any(c["criterion"] in criteria for c in p["criteria"])}


def performance_summary(rep: dict, program) -> dict:
    """The figures, in the schema's order (:data:`enforcement.icis.ELEMENTS`), each with what
    it counts and the users behind it.

    Returns
    -------
    dict
        ``permit`` (the POTW's NPDES permit, or None), ``start``, ``end`` (ISO dates), and
        ``elements``: a list of ``{"element", "value", "words", "users"}``; an element sewerwatch
        cannot know is absent.
    """
    year = rep["year"]
    users = {u["site"]: u for u in rep["users"]}
    siu = significant(rep, program)
    sset = set(siu)
    out: list[dict] = []

    def add(element: str, value, words: str, who=()):
        out.append({"element": element, "value": value, "words": words, "users": sorted(who)})

    if program.ordinance:
        add("SUOReference", program.ordinance, "the sewer use ordinance")
    if program.ordinance_adopted:
        add("SUODate", program.ordinance_adopted.isoformat(), "the ordinance's latest adoption")
    add("NumberSIUs", len(siu), "significant industrial users", siu)
    without = [s for s in siu if not users[s].get("permit_in_force_at_year_end")]
    add("SIUsWithoutControlMechanism", len(without), "significant users without a discharge permit in force on "
        f"the year's last day ({year}-12-31)", without)
    not_inspected = [s for s in siu if not _inspections(users[s])]
    add("SIUsNotInspected", len(not_inspected), "significant users not inspected in the year", not_inspected)
    not_sampled = [s for s in siu if not users[s].get("samples_by_potw")]
    add("SIUsNotSampled", len(not_sampled), "significant users the village (or its contractor) took no sample "
        "from in the year", not_sampled)
    for element, crit, words in (
            ("SIUsSNCWithPretreatmentStandards", STANDARDS, "in SNC with pretreatment standards: (A), (B), (C), (D), (H)"),
            ("SIUsSNCWithReportingRequirements", REPORTING, "in SNC with reporting requirements: (F), (G)"),
            ("SIUsSNCWithPretreatmentSchedule", SCHEDULES, "in SNC with a compliance schedule: (E)")):
        who = sorted(_snc_by_criteria(rep, crit) & sset)
        add(element, len(who), f"significant users {words}", who)
    published = sorted(set((rep["snc"].get("published") or {}).get("sites", ())) & sset)
    add("SIUsSNCPublishedNewspaper", len(published), "significant users whose names a recorded publication of the "
        "year's list in a newspaper named", published)
    for element, actions, words in (("ViolationNoticesIssuedSIUs", NOTICE_ACTIONS, "notices of violation"),
                                    ("AdministrativeOrdersIssuedSIUs", ORDER_ACTIONS,
                                     "administrative orders and orders to show cause")):
        ns = [(s, n["number"]) for s in siu for n in users[s]["notices"]
              if n.get("action") in actions and _in_year(n["issued_on"], year)]
        add(element, len(ns), f"{words} issued to significant users in the year", {s for s, _ in ns})
    paid = [(u["site"], n["penalty_dollars"]) for u in rep["users"] for n in u["notices"]
            if n.get("penalty_dollars") and _in_year(n.get("penalty_collected_on"), year)]
    add("DollarAmountPenaltiesCollectedPPS", int(round(sum(d for _, d in paid))),
        "penalties collected in the year [$, whole dollars]", {s for s, _ in paid})
    add("IUsWhichPenaltiesHaveBeenCollectedPPS", len({s for s, _ in paid}), "users penalties were collected from",
        {s for s, _ in paid})
    if program.categorical_users is not None:
        cius = [s for s in program.categorical_users if s in users]
        add("NumberCIUs", len(cius), "categorical industrial users", cius)
        in_snc = sorted({u["site"] for u in rep["snc"]["users"]} & set(cius))
        add("CIUsInSNC", len(in_snc), "categorical users in SNC in the year", in_snc)
    pti = sorted(_snc_by_criteria(rep, ("C",)))
    add("PassThroughInterferenceIndicator", "Y" if pti else "N", "pass through or interference in the year", pti)
    local = None
    if program.local_limits_evaluated or program.local_limits_adopted or program.local_limits_pollutants:
        local = {"evaluated": program.local_limits_evaluated.isoformat() if program.local_limits_evaluated else None,
                 "adopted": program.local_limits_adopted.isoformat() if program.local_limits_adopted else None,
                 "pollutants": list(program.local_limits_pollutants)}
    return {"permit": program.npdes_permit, "start": rep["period"]["start"],
            "end": date.fromordinal(date.fromisoformat(rep["period"]["end"]).toordinal() - 1).isoformat(),
            "significant_users": siu, "elements": out, "local_limits": local}
