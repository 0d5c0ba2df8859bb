"""Findings as things stood at an instant: a pure question, and the present's record of them.

A question about a day (``sewerwatch snc --as-of D``, ``snc --period P``, ``report snc``,
``schedule --as-of D``, ``due --as-of D``) is answered from the records as they stood at the
end of that day and writes nothing: the findings sewerwatch computes (a report more than 45
days late, a noncompliance not reported, a milestone more than 90 days late, a failure to
monitor) are computed for that instant from the reports owed and received by then, the
milestones met by then and the samples taken by then (:func:`computed`), beside the findings
the superintendent recorded that arose by then. So asking in any order, any number of times,
for any site, gives the same answers, and an explanation counts its days from the day asked
about.

Recording them (:func:`record`: each computed finding stored once, by its key, so a notice can
be drafted from it) is a separate step that happens at the present only: ``sewerwatch
findings list``, ``due`` (without ``--as-of``), ``due --alert`` and ``run``'s enforcement round.
"""

from __future__ import annotations

from datetime import date, datetime

from enforcement import milestones, reports, schedules
from enforcement.findings import FINDING_COLS, KINDS, RECORDED, _finding_rows
from enforcement.periods import local_date
from enforcement.settings import Settings
from lab.ordinance import pack_timezone


def computed(conn, now: datetime, st: Settings, site_key: str | None = None) -> list[dict]:
    """Every computed finding as things stood at ``now`` (reads only): dicts of
    :func:`enforcement.findings.store_finding`'s arguments."""
    return (reports.findings_at(conn, now, st.accidental_report_hours, site_key)
            + milestones.findings_at(conn, now, site_key) + schedules.findings_at(conn, now, site_key))


def record(conn, now: datetime, st: Settings, cfg=None) -> None:
    """Store the computed findings of ``now`` (once each): the enforcement round, at the
    present only. With the config (``cfg``), the findings of field work too
    (:func:`enforcement.fieldwork.check`: calibrations failed or overdue, inspections'
    deficiencies)."""
    from enforcement import fieldwork   # lazy: field work's records sit on the floor below

    reports.check(conn, now, st.accidental_report_hours)
    milestones.check(conn, now)
    schedules.check(conn, now)
    fieldwork.check(conn, now, cfg)


def snc_day(f: dict, st: Settings) -> date:
    """The day that places a finding in an SNC period: the day it arose, or, for a report
    more than 45 days late under ``late_report_period = "due"``, its due date."""
    if f["kind"] == "late-report" and st.late_report_period == "due" and (f.get("evidence") or {}).get("due_on"):
        return date.fromisoformat(f["evidence"]["due_on"])
    return f["occurred"]


def findings_between(conn, first: date, end: date, now: datetime, st: Settings, site_key: str | None = None,
                     snc_periods: bool = False) -> list[dict]:
    """The findings that had arisen by ``now`` on local days ``first <= day < end``: those the
    superintendent recorded (stored, with their ``id``) and those computed at ``now``
    (:func:`computed`; ``id`` None, named by their ``key``, whether or not the round has
    recorded them: the answer does not depend on it), as rows of
    :data:`enforcement.findings.FINDING_COLS`. With ``snc_periods`` a finding's day is
    :func:`snc_day`."""
    packs = dict(conn.execute("SELECT key, pack FROM sites").fetchall())
    recorded = [f for f in _finding_rows(conn, "f.kind = ANY(%s) AND (%s::text IS NULL OR s.key = %s)",
                                         (list(RECORDED), site_key, site_key))
                if f["occurred"] <= local_date(now, pack_timezone(packs[f["site"]]))]
    names = dict(conn.execute("SELECT key, name FROM sites").fetchall())
    rows = list(recorded)
    for f in computed(conn, now, st, site_key):
        period = f.get("period") or (None, None)
        rows.append(dict(zip(FINDING_COLS, (
            None, f["site"], names.get(f["site"], f["site"]), f["kind"], KINDS[f["kind"]][1], f["occurred"],
            period[0], period[1], f["summary"], f["citation"], f["words"], f["violation_id"], f["evidence"], f["key"],
            "sewerwatch", None))))
    day = (lambda f: snc_day(f, st)) if snc_periods else (lambda f: f["occurred"])
    rows = [f for f in rows if first <= day(f) < end]
    rows.sort(key=lambda f: (f["occurred"], f["id"] if f["id"] is not None else 1 << 62, f["key"] or ""))
    return rows

