"""Findings: what enforcement acts on.

Two tables hold them. ``violations`` has the episodes the evaluators found (a limit exceeded
by the live readings, by readings re-evaluated with ``check --store``, or by a lab result
with ``lab check --store``). ``findings`` (migration 0090) has the rest: the ones sewerwatch
computes from the schedules and the reports owed (failure to monitor, a report more than 45
days late, a noncompliance not reported, a compliance schedule milestone more than 90 days
late), and the ones the superintendent records, judging what no number shows: pass through
and interference (40 CFR 403.8(f)(2)(viii)(C)), endangerment (D), other violations
designated (H). A notice is drafted from either (``--violation ID`` or ``--finding ID``).

A computed finding has a ``key`` (e.g. ``late-report:17``): finding it again stores nothing.
"""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass
from datetime import date, datetime

from foundation.errors import InputError

#: kind -> (what it is in words, the SNC criterion of 40 CFR 403.8(f)(2)(viii) it counts for)
KINDS: dict[str, tuple[str, str | None]] = {
    "failure-to-monitor": ("failure to monitor: a sample the schedule requires was not taken", None),
    "late-report": ("a report more than 45 days late", "F"),
    "unreported-noncompliance": ("a noncompliance not reported", "G"),
    "compliance-schedule": ("a compliance schedule milestone more than 90 days late", "E"),
    "pass-through": ("a discharge that caused pass through", "C"),
    "interference": ("a discharge that caused interference", "C"),
    "endangerment": ("a discharge that caused imminent endangerment, or the exercise of emergency authority", "D"),
    "designated": ("a violation the superintendent designates as adversely affecting the pretreatment program", "H"),
    "snc": ("significant noncompliance", None),
    # instruments and inspections (field/)
    "calibration-failed": ("an instrument of the control manhole failed its calibration", None),
    "calibration-overdue": ("an instrument of the control manhole not calibrated by its due date", None),
    "inspection-deficiency": ("a deficiency an inspection found", None),
}
#: the kinds the superintendent records (the rest are computed)
RECORDED = ("pass-through", "interference", "endangerment", "designated")

#: 40 CFR 403.8(f)(2)(viii), the words of each SNC criterion sewerwatch records as a finding
SNC_WORDS = {
    "C": "Any other violation of a Pretreatment Standard or Requirement as defined by 40 CFR 403.3(l) (daily maximum, "
         "long-term average, instantaneous limit, or narrative standard) that the POTW determines has caused, alone "
         "or in combination with other Discharges, Interference or Pass Through (including endangering the health of "
         "POTW personnel or the general public);",
    "D": "Any discharge of a pollutant that has caused imminent endangerment to human health, welfare or to the "
         "environment or has resulted in the POTW's exercise of its emergency authority under paragraph (f)(1)(vi)(B) "
         "of this section to halt or prevent such a discharge;",
    "E": "Failure to meet, within 90 days after the schedule date, a compliance schedule milestone contained in a "
         "local control mechanism or enforcement order for starting construction, completing construction, or "
         "attaining final compliance;",
    "F": "Failure to provide, within 45 days after the due date, required reports such as baseline monitoring "
         "reports, 90-day compliance reports, periodic self-monitoring reports, and reports on compliance with "
         "compliance schedules;",
    "G": "Failure to accurately report noncompliance;",
    "H": "Any other violation or group of violations, which may include a violation of Best Management Practices, "
         "which the POTW determines will adversely affect the operation or implementation of the local pretreatment "
         "program.",
}
SNC_CITATION = "40 CFR 403.8(f)(2)(viii)"


@dataclass(frozen=True)
class Site:
    """An industrial user as the ``sites`` table holds it."""

    id: int
    key: str
    name: str
    pack: str
    sic: str | None
    permit: str | None


def sites(conn) -> dict[str, Site]:
    """Every site by key."""
    return {r[1]: Site(*r) for r in conn.execute(
        "SELECT id, key, name, pack, sic, permit FROM sites ORDER BY key").fetchall()}


def site(conn, key: str) -> Site:
    """The site ``key`` (an :class:`InputError` naming the known ones otherwise)."""
    all_ = sites(conn)
    if key not in all_:
        raise InputError(f"unknown site {key!r} (sites: {', '.join(all_) or 'none; run sewerwatch db migrate'})")
    return all_[key]


def actor(name: str | None) -> str:
    """Who acts (``--by``), else the login user."""
    return name or getpass.getuser()


def store_finding(conn, site_id: int, kind: str, occurred: date, summary: str, *, key: str | None = None,
                  citation: str | None = None, words: str | None = None, period: tuple[date, date] | None = None,
                  violation_id: int | None = None, evidence: dict | None = None, by: str | None = None) -> int | None:
    """Store a finding; return its id, or None when one with the same ``key`` is stored already."""
    if kind not in KINDS:
        raise InputError(f"unknown kind of finding {kind!r} (known: {', '.join(KINDS)})")
    row = conn.execute(
        "INSERT INTO findings (site_id, kind, snc_criterion, occurred, period_start, period_end, summary, citation, "
        "words, violation_id, evidence, key, recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (key) DO NOTHING RETURNING id",
        (site_id, kind, KINDS[kind][1], occurred, period[0] if period else None, period[1] if period else None,
         summary, citation, words, violation_id, json.dumps(evidence or {}), key, actor(by))).fetchone()
    if row is None:
        return None
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'finding.record', %s, %s)",
                 (actor(by), f"finding:{row[0]}", json.dumps({"kind": kind, "occurred": occurred.isoformat(),
                                                                "key": key, "summary": summary})))
    return row[0]


def record(conn, site_key: str, kind: str, occurred: date, summary: str, *, by: str | None = None,
           violation_id: int | None = None, evidence: dict | None = None) -> int:
    """Record a finding the superintendent makes (:data:`RECORDED`), e.g. interference.

    Its citation and words are the SNC criterion's (40 CFR 403.8(f)(2)(viii)(C), (D), (H)).
    """
    if kind not in RECORDED:
        raise InputError(f"--kind: a finding to record is one of {', '.join(RECORDED)} (the others are computed), "
                         f"got {kind!r}")
    s = site(conn, site_key)
    if violation_id is not None and conn.execute("SELECT 1 FROM violations WHERE id = %s AND site_id = %s",
                                                 (violation_id, s.id)).fetchone() is None:
        raise InputError(f"--violation: no violation {violation_id} of site {site_key!r}")
    crit = KINDS[kind][1]
    with conn.transaction():
        return store_finding(conn, s.id, kind, occurred, summary, citation=f"{SNC_CITATION}({crit})",
                             words=SNC_WORDS[crit], violation_id=violation_id, evidence=evidence, by=by)


FINDING_COLS = ("id", "site", "site_name", "kind", "snc_criterion", "occurred", "period_start", "period_end",
                "summary", "citation", "words", "violation_id", "evidence", "key", "recorded_by", "recorded_at")


def _finding_rows(conn, where: str, params) -> list[dict]:
    rows = conn.execute(
        "SELECT f.id, s.key, s.name, f.kind, f.snc_criterion, f.occurred, f.period_start, f.period_end, f.summary, "
        "f.citation, f.words, f.violation_id, f.evidence, f.key, f.recorded_by, f.recorded_at "
        f"FROM findings f JOIN sites s ON s.id = f.site_id WHERE {where} ORDER BY f.occurred, f.id", params).fetchall()
    return [dict(zip(FINDING_COLS, r)) for r in rows]


def finding(conn, finding_id: int) -> dict:
    rows = _finding_rows(conn, "f.id = %s", (finding_id,))
    if not rows:
        raise InputError(f"no finding {finding_id} (sewerwatch findings list shows them)")
    return rows[0]


def findings_between(conn, first: date, end: date, site_key: str | None = None) -> list[dict]:
    """Findings that arose on local days ``first <= occurred < end``."""
    return _finding_rows(conn, "f.occurred >= %s AND f.occurred < %s AND (%s::text IS NULL OR s.key = %s)",
                         (first, end, site_key, site_key))


VIOLATION_COLS = ("id", "site", "site_name", "pack", "sensor_id", "sensor", "parameter", "rule", "citation", "words",
                  "start", "end", "peak", "limit", "unit", "days_of_violation", "evidence", "source", "alert_id")


def _violation_rows(conn, where: str, params) -> list[dict]:
    rows = conn.execute(
        "SELECT v.id, s.key, s.name, v.pack, v.sensor_id, se.name, v.parameter, v.rule, v.citation, v.words, "
        "v.start_time, v.end_time, v.peak, v.limit_value, v.unit, v.days_of_violation, v.evidence, v.source, "
        "(SELECT min(a.id) FROM alerts a WHERE a.violation_id = v.id) "
        "FROM violations v JOIN sites s ON s.id = v.site_id LEFT JOIN sensors se ON se.id = v.sensor_id "
        f"WHERE {where} ORDER BY v.start_time, v.id", params).fetchall()
    return [dict(zip(VIOLATION_COLS, r)) for r in rows]


def violation(conn, violation_id: int) -> dict:
    rows = _violation_rows(conn, "v.id = %s", (violation_id,))
    if not rows:
        raise InputError(f"no violation {violation_id} (sewerwatch findings list shows them)")
    return rows[0]


def violations_between(conn, start: datetime, end: datetime, site_key: str | None = None) -> list[dict]:
    """The violations whose condition existed at some instant of ``[start, end)`` (the SQL
    ``violation_in`` of migration 0110, the rule of :func:`limits.days.intervals_of`): every
    command that takes a period asks this, so they agree on which records fall in it."""
    return _violation_rows(conn, "violation_in(v.start_time, v.end_time, v.evidence, %s, %s) "
                           "AND (%s::text IS NULL OR s.key = %s)", (start, end, site_key, site_key))


def violation_kind(v: dict) -> str:
    """``lab-violation`` for a lab result's, ``violation`` for the readings'."""
    return "lab-violation" if v["source"] == "lab" else "violation"
