"""The pretreatment program's annual report, and the annual list of users in significant
noncompliance that 40 CFR 403.8(f)(2)(viii) requires the utility to publish ("at least annual
public notification in a newspaper(s) of general circulation ... of Industrial Users which, at
any time during the previous twelve months, were in significant noncompliance").

:func:`annual_report` gathers the year from the database: the users and their permits, the
samples taken, the violations by kind with their episodes and days of violation, the
notices and their outcomes, the SNC status of each period ending in the year, and the
surcharges billed, and the field work of each user (:func:`field.annual.of_site`: every
maintenance window with the readings it kept from being judged, whether approved, pending or
rejected; calibrations; grab samples against the sensors; inspections and whether samples were
taken, 40 CFR 403.12(i)), so every exclusion is before the auditor; and the grease program's year
(establishments, devices, pump-outs, inspections, findings, notices: :func:`grease`). ``sewerwatch report annual --year Y`` writes it as JSON, HTML and PDF;
``sewerwatch report snc --year Y`` prints the publication list.
"""

from __future__ import annotations

from datetime import date, datetime, timezone

from enforcement import notice_evidence
from enforcement import notices as nts
from enforcement import publication
from enforcement import schedules
from enforcement import snc as snc_mod
from enforcement.findings import sites, violations_between
from enforcement.periods import Period, snc_periods_of_year, year_period
from enforcement.settings import Settings
from field import annual as field_annual
from lab.ordinance import pack_timezone
from limits.permit_store import current_permits
from limits.permits import renewal


#: The field-work counts of the totals (``field_<name>``; :func:`field.annual.of_site`).
FIELD_COUNTS = ("windows", "windows_pending", "readings_excluded", "calibrations", "calibrations_failed", "grab_checks",
                "drifted", "inspections", "inspections_with_sampling")


def snc_list(conn, year: int, mode: str, st: Settings | None = None, now: datetime | None = None) -> dict:
    """The users in SNC in any period ending in ``year``, with the criteria and periods, as
    things stood at ``now`` (default: the present; :func:`enforcement.snc.evaluate`)."""
    periods = snc_periods_of_year(year, mode)
    by_site: dict[str, dict] = {}
    for p in periods:
        for r in snc_mod.evaluate(conn, p, now=now, st=st):
            if not r["snc"]:
                continue
            e = by_site.setdefault(r["site"], {"site": r["site"], "name": r["name"], "permit": r["permit"],
                                               "periods": []})
            e["periods"].append({"period": p.name, "criteria": [
                {"criterion": c, "title": r["criteria"][c]["title"], "explanation": r["criteria"][c]["explanation"]}
                for c in r["criteria_met"]]})
    return {"year": year, "snc_periods": mode, "periods": [p.as_json() for p in periods],
            "citation": "40 CFR 403.8(f)(2)(viii)", "users": [by_site[k] for k in sorted(by_site)]}


def publication_text(lst: dict, utility: str) -> str:
    """The list as the newspaper prints it."""
    lines = [f"{utility}: public notice of industrial users in significant noncompliance",
             f"Industrial users of the {utility} sewerage system that were in significant noncompliance with "
             f"pretreatment standards and requirements at any time during {lst['year']} "
             f"({lst['citation']}):", ""]
    if not lst["users"]:
        lines.append("  none")
    for u in lst["users"]:
        what = "; ".join(f"{p['period']}: " + ", ".join(f"({c['criterion']}) {c['title']}" for c in p["criteria"])
                         for p in u["periods"])
        lines.append(f"  {u['name']}" + (f", permit {u['permit']}" if u.get("permit") else "") + f": {what}")
    return "\n".join(lines)


def _required(statuses) -> list[dict]:
    """Per requirement: the periods of the year it required samples in (whole periods, over or
    in progress), those with every sample taken, those missing them."""
    out: dict[str, dict] = {}
    for st in statuses:
        r = st.requirement
        if r.continuous or st.state == "not-required":
            continue
        e = out.setdefault(r.id, {"requirement": r.id, "citation": r.citation, "parameters": list(r.parameters),
                                  "times": r.times, "per": r.per, "periods": 0, "taken": 0, "missing": 0, "due": 0})
        e["periods"] += 1
        e[{"taken": "taken", "missing": "missing", "due": "due"}[st.state]] += 1
    return list(out.values())


#: Who took a sample (``lab_samples.sampled_by``) in words.
SAMPLED_BY_WORDS = {"potw": "the village", "potw-contractor": "a contractor for the village",
                    "user": "the user", "user-contractor": "a contractor for the user"}
#: Samples taken by the control authority (40 CFR 403.8(f)(2)(v): "sampling ... at least once a
#: year"): its own and its contractor's.
POTW_SAMPLERS = ("potw", "potw-contractor")


def _samples(conn, site_key: str, start: datetime, end: datetime) -> dict:
    row = conn.execute(
        "SELECT count(DISTINCT ls.id), count(r.*) FROM lab_samples ls JOIN sites s ON s.id = ls.site_id "
        "LEFT JOIN lab_results_current r ON r.sample_id = ls.id "
        "WHERE s.key = %s AND ls.collected >= %s AND ls.collected < %s", (site_key, start, end)).fetchone()
    by = dict(conn.execute(
        "SELECT ls.sampled_by, count(*) FROM lab_samples ls JOIN sites s ON s.id = ls.site_id "
        "WHERE s.key = %s AND ls.collected >= %s AND ls.collected < %s GROUP BY ls.sampled_by",
        (site_key, start, end)).fetchall())
    return {"samples_taken": int(row[0]), "results": int(row[1]),
            "samples_by": {k: int(by.get(k, 0)) for k in SAMPLED_BY_WORDS},
            "samples_by_potw": sum(int(by.get(k, 0)) for k in POTW_SAMPLERS)}


def _violations(conn, site_key: str, start: datetime, end: datetime, tz) -> list[dict]:
    """The year's violation episodes of a site by rule: their number, who found them (live,
    re-evaluated, lab), their days of violation (distinct local days,
    :func:`enforcement.notices.days_of_violation`) and the rule cited by the ordinance's title."""
    groups: dict[str, list[dict]] = {}
    for v in violations_between(conn, start, end, site_key):
        groups.setdefault(v["rule"], []).append(v)
    out = []
    for rule, vs in sorted(groups.items()):
        req = notice_evidence.requirement_of_violation(vs[0])
        source = ", ".join(sorted({v["source"] for v in vs}))
        out.append({"rule": rule, "parameter": vs[0]["parameter"], "source": source, "episodes": len(vs),
                    "days_of_violation": nts.days_of_violation(vs, tz, (start, end))["days"],
                    "citation": req["citation"]})
    return out


def _bills(conn, site_key: str, year: int) -> dict:
    rows = conn.execute(
        "SELECT DISTINCT ON (b.period) b.period, b.total_dollars, b.detail FROM bills b JOIN sites s ON s.id = b.site_id "
        "WHERE s.key = %s AND b.period LIKE %s AND b.superseded_by IS NULL ORDER BY b.period, b.issued_at DESC, b.id DESC",
        (site_key, f"{year}Q%")).fetchall()
    quarters = []
    for period, total, detail in rows:
        sur = sum(c["dollars"] for c in detail.get("charges", []) if "analytes" in c.get("detail", {}))
        quarters.append({"quarter": period, "total_dollars": float(total), "surcharge_dollars": round(sur, 2)})
    return {"quarters": quarters, "total_dollars": round(sum(q["total_dollars"] for q in quarters), 2),
            "surcharge_dollars": round(sum(q["surcharge_dollars"] for q in quarters), 2)}


def _in_force_at(permit, day: date) -> bool:
    """Whether ``permit`` (the current version) is in force on ``day``: effective by then and
    its term not ended (limits.permits.renewal, palmyra-wi §13.54(4))."""
    if permit is None or permit.effective > day:
        return False
    return renewal(permit, day).state != "expired"


def grease(conn, rules, year: int) -> dict:
    """The grease program's year (:func:`fog.store.counts`, as of the village's today or the
    year's end): establishments and devices on record, pump-outs and inspections, the
    findings by kind, the sewer crew's blockages, the notices issued by title (``actions``),
    their total (``notices``) and those escalated in the year (``escalated``)."""
    from fog import store

    c = store.counts(conn, rules, year, today_in(pack_timezone(rules.pack)))
    escalated = conn.execute("SELECT count(*) FROM fog_notices WHERE escalated_on BETWEEN %s AND %s",
                             (date(year, 1, 1), c["as_of"])).fetchone()[0]
    return {**c, "as_of": c["as_of"].isoformat(), "notices": sum(c["actions"].values()), "escalated": escalated}


def annual_report(conn, year: int, mode: str, utility: str, st: Settings | None = None,
                  program=None, grease_rules=None) -> dict:
    """The annual report's data (see the module docstring).

    ``grease_rules`` (:class:`fog.rules.Rules`): with them the report counts the grease
    program's year too (``grease``, :func:`grease`).

    ``st``: the enforcement settings (:func:`enforcement.snc.evaluate`). ``program``
    (:class:`enforcement.settings.Program`): the program's facts; with them the report carries the ICIS-NPDES pretreatment performance summary's figures
    (``performance_summary``, :func:`enforcement.program.performance_summary`), each derived
    from the report's own data.
    """
    yp: Period = year_period(year)
    statuses = schedules.schedule(conn, datetime.now(timezone.utc), yp.start, yp.end)
    permits = current_permits(conn)
    users = []
    for key, s in sites(conn).items():
        permit = permits.get(key)
        tz = pack_timezone(s.pack)
        start, end = yp.bounds(tz)
        ns = nts.list_notices(conn, site_key=key)
        ns = [n for n in ns if n["drafted_on"].year == year or (n["issued_on"] and n["issued_on"].year == year)]
        users.append({
            "site": key, "name": s.name, "permit": permit.number if permit else None, "sic": s.sic, "pack": s.pack,
            "permit_effective": permit.effective.isoformat() if permit else None,
            "permit_expires": permit.expires.isoformat() if permit else None,
            "permit_in_force_at_year_end": _in_force_at(permit, yp.last_day),
            **_samples(conn, key, start, end),
            "sampling": _required(st for st in statuses
                                  if st.requirement.site == key and st.period.start < today_in(tz)),
            "violations": _violations(conn, key, start, end, tz),
            "notices": [{"number": n["number"], "action": n["action"], "title": n["document"]["title"],
                         "finding": n["document"]["finding"]["summary"],
                         "penalty_dollars": n["penalty_dollars"],
                         "penalty_collected_on": n["penalty_collected_on"].isoformat() if n["penalty_collected_on"] else None,
                         "state": n["state"], "drafted_on": n["drafted_on"].isoformat(),
                         "issued_on": n["issued_on"].isoformat() if n["issued_on"] else None,
                         "response_due": n["response_due"].isoformat() if n["response_due"] else None,
                         "response_received_on": n["response_received_on"].isoformat() if n["response_received_on"] else None,
                         "closed_on": n["closed_on"].isoformat() if n["closed_on"] else None} for n in ns],
            "billed": _bills(conn, key, year),
            # every maintenance window of the year (what it kept from judging),
            # calibrations, grab checks and inspections (40 CFR 403.12(i))
            "field": field_annual.of_site(conn, key, start, end)})
    lst = snc_list(conn, year, mode, st)
    totals = {"samples_taken": sum(u["samples_taken"] for u in users),
              "sampling_periods_required": sum(x["periods"] for u in users for x in u["sampling"]),
              "sampling_periods_missing": sum(x["missing"] for u in users for x in u["sampling"]),
              "violation_episodes": sum(v["episodes"] for u in users for v in u["violations"]),
              "days_of_violation": sum(v["days_of_violation"] for u in users for v in u["violations"]),
              "notices": sum(len(u["notices"]) for u in users),
              "users_in_snc": len(lst["users"]),
              "billed_dollars": round(sum(u["billed"]["total_dollars"] for u in users), 2),
              "surcharge_dollars": round(sum(u["billed"]["surcharge_dollars"] for u in users), 2),
              **{f"field_{k}": sum(u["field"]["counts"][k] for u in users) for k in FIELD_COUNTS}}
    outcomes: dict[str, int] = {}
    for u in users:
        for n in u["notices"]:
            outcomes[n["state"]] = outcomes.get(n["state"], 0) + 1
    pubs = publication.publications(conn, year)
    published = sorted({s for p in pubs for s in p["sites"]})
    lst["published"] = {"publications": pubs, "sites": published,
                        "unpublished": [u["site"] for u in lst["users"] if u["site"] not in published]}
    totals["samples_by_potw"] = sum(u["samples_by_potw"] for u in users)
    rep = {"utility": utility, "year": year, "period": yp.as_json(), "users": users, "snc": lst,
           "notice_outcomes": outcomes, "totals": totals}
    if grease_rules is not None:
        rep["grease"] = grease(conn, grease_rules, year)
    if program is not None:
        from enforcement.program import performance_summary

        rep["performance_summary"] = performance_summary(rep, program)
    return rep


def today_in(tz) -> date:
    return datetime.now(tz).date()
