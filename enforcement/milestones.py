"""Compliance schedule milestones, and the one missed by more than 90 days.

A compliance schedule (in an administrative order, or a permit's condition) sets dates for
starting construction, completing it, attaining final compliance. 40 CFR
403.8(f)(2)(viii)(E): significant noncompliance is "Failure to meet, within 90 days after the
schedule date, a compliance schedule milestone": a milestone met on day 90 after its date is
in time; one not met by day 91 is a finding (kind ``compliance-schedule``), arising on day 91.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

from foundation.errors import InputError
from enforcement.findings import actor, site, store_finding
from enforcement.periods import local_date
from lab.ordinance import pack_timezone

#: 40 CFR 403.8(f)(2)(viii)(E): "within 90 days after the schedule date"
LATE_AFTER_DAYS = 90


def late_day(due_on: date) -> date:
    """The day an unmet milestone becomes a finding: day 91 after its date."""
    return due_on + timedelta(days=LATE_AFTER_DAYS + 1)


def is_late(due_on: date, met_on: date | None, today: date) -> bool:
    """Not met within 90 days after ``due_on`` (as far as ``today`` tells)."""
    if met_on is not None and met_on <= today:
        return (met_on - due_on).days > LATE_AFTER_DAYS
    return today >= late_day(due_on)


def add(conn, site_key: str, description: str, due_on: date, *, source: str | None = None,
        by: str | None = None) -> int:
    s = site(conn, site_key)
    with conn.transaction():
        mid = conn.execute("INSERT INTO compliance_milestones (site_id, description, due_on, source, created_by) "
                           "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                           (s.id, description, due_on, source, actor(by))).fetchone()[0]
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'milestone.add', %s, %s)",
                     (actor(by), f"milestone:{mid}", json.dumps({"site": site_key, "due_on": due_on.isoformat(),
                                                                  "description": description})))
    return mid


def met(conn, milestone_id: int, met_on: date, *, by: str | None = None) -> None:
    row = conn.execute("SELECT met_on FROM compliance_milestones WHERE id = %s", (milestone_id,)).fetchone()
    if row is None:
        raise InputError(f"no milestone {milestone_id} (sewerwatch milestones list shows them)")
    if row[0] is not None:
        raise InputError(f"milestone {milestone_id} was met already, on {row[0].isoformat()}")
    with conn.transaction():
        conn.execute("UPDATE compliance_milestones SET met_on = %s WHERE id = %s", (met_on, milestone_id))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'milestone.met', %s, %s)",
                     (actor(by), f"milestone:{milestone_id}", json.dumps({"met_on": met_on.isoformat()})))


COLS = ("id", "site", "site_id", "pack", "description", "due_on", "met_on", "source")


def list_milestones(conn, site_key: str | None = None) -> list[dict]:
    rows = conn.execute(
        "SELECT m.id, s.key, s.id, s.pack, m.description, m.due_on, m.met_on, m.source FROM compliance_milestones m "
        "JOIN sites s ON s.id = m.site_id WHERE (%s::text IS NULL OR s.key = %s) ORDER BY m.due_on, m.id",
        (site_key, site_key)).fetchall()
    return [dict(zip(COLS, r)) for r in rows]


def findings_at(conn, now: datetime, site_key: str | None = None) -> list[dict]:
    """The milestones more than 90 days late as things stood at ``now`` (one met after
    ``now``'s local day was not met then): finding dicts as
    :func:`enforcement.reports.findings_at`'s. Reads only."""
    out = []
    for m in list_milestones(conn, site_key):
        today = local_date(now, pack_timezone(m["pack"]))
        met_on = m["met_on"] if m["met_on"] is not None and m["met_on"] <= today else None
        if not is_late(m["due_on"], met_on, today):
            continue
        state = (f"met {met_on.isoformat()}, {(met_on - m['due_on']).days} days after its date"
                 if met_on else f"not met {(today - m['due_on']).days} days after its date")
        out.append({"site": m["site"], "site_id": m["site_id"], "kind": "compliance-schedule",
                    "occurred": late_day(m["due_on"]),
                    "summary": (f"Compliance schedule milestone '{m['description']}' due "
                                f"{m['due_on'].isoformat()}: {state}"),
                    "key": f"milestone:{m['id']}", "citation": m["source"], "words": None, "period": None,
                    "violation_id": None,
                    "evidence": {"milestone_id": m["id"], "due_on": m["due_on"].isoformat(),
                                 "met_on": met_on.isoformat() if met_on else None}})
    return out


def check(conn, now: datetime) -> list[int]:
    """Store a finding for each milestone more than 90 days late at ``now`` (the site's local
    day; once): :func:`findings_at`, recorded."""
    new = []
    with conn.transaction():
        for f in findings_at(conn, now):
            fid = store_finding(conn, f["site_id"], f["kind"], f["occurred"], f["summary"], key=f["key"],
                                citation=f["citation"], evidence=f["evidence"], by="sewerwatch")
            if fid:
                new.append(fid)
    return new
