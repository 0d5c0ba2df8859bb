"""Reports owed by industrial users: due, received, late.

Two sorts of report (table ``user_reports``, migration 0090):

* periodic and one-off reports the utility requires (self-monitoring reports, baseline
  monitoring reports, 90-day compliance reports, reports on a compliance schedule), each
  with its due date: ``sewerwatch user-reports require``. One received more than 45 days
  after its due date, or not received 46 days after it, is a finding (kind ``late-report``,
  40 CFR 403.8(f)(2)(viii)(F): "Failure to provide, within 45 days after the due date,
  required reports"): day 45 is in time, day 46 is late. The finding arises on day 46.
* the accidental-discharge report the ordinance requires after an episode of a rule its
  ``[report_duty]`` names (palmyra-wi, 003_44f871d49a02d8f5.txt §13.49: "shall immediately
  report such discharge to the Approving Authority"): owed for each alert of such an episode,
  linked to it, due ``[enforcement] accidental_report_hours`` after the discharge began
  (:func:`sync_accidental`). Not received by then, it is a noncompliance not reported
  (kind ``unreported-noncompliance``, (G): "Failure to accurately report noncompliance").

:func:`check` does both, storing each finding once; every enforcement command runs it first.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone

from foundation.errors import InputError
from enforcement.findings import actor, site, sites, store_finding
from enforcement.periods import local_date
from lab.ordinance import pack_timezone
from limits.packs import load_pack
from limits.words import rule_name

#: 40 CFR 403.8(f)(2)(viii)(F): "within 45 days after the due date"; a report received (or
#: still missing) on day 46 after its due date is late.
LATE_AFTER_DAYS = 45

KINDS = ("self-monitoring", "accidental-discharge", "baseline", "90-day-compliance", "compliance-schedule", "other")
KIND_TITLES = {"self-monitoring": "Self-monitoring report", "accidental-discharge": "Accidental-discharge report",
               "baseline": "Baseline monitoring report", "90-day-compliance": "90-day compliance report",
               "compliance-schedule": "Report on a compliance schedule", "other": "Report"}


def days_late(due_on: date, received_on: date | None, today: date) -> int:
    """Days after its due date that a report came (or, not received, that it is overdue
    ``today``); 0 or less when in time."""
    return ((received_on or today) - due_on).days


def late_finding_day(due_on: date) -> date:
    """The day a report still missing becomes a late-report finding: day 46 after it was due."""
    return due_on + timedelta(days=LATE_AFTER_DAYS + 1)


def is_late(due_on: date, received_on: date | None, today: date) -> bool:
    """A late-report finding: received more than 45 days after its due date, or still missing
    on day 46 or later (a report received on day 45 is in time)."""
    if received_on is not None and received_on <= today:
        return days_late(due_on, received_on, today) > LATE_AFTER_DAYS
    return today >= late_finding_day(due_on)


def _end_of_day(d: date, tz) -> datetime:
    nxt = d + timedelta(days=1)
    return datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz)


def require(conn, site_key: str, kind: str, due_on: date, *, title: str | None = None,
            period: tuple[date, date] | None = None, citation: str | None = None, words: str | None = None,
            by: str | None = None) -> int:
    """Record that ``site_key`` owes a report of ``kind`` due on the local day ``due_on``."""
    if kind not in KINDS or kind == "accidental-discharge":
        raise InputError(f"--kind: expected one of {', '.join(k for k in KINDS if k != 'accidental-discharge')} "
                         "(accidental-discharge reports are owed from the alerts), got " + repr(kind))
    s = site(conn, site_key)
    tz = pack_timezone(s.pack)
    title = title or (f"{KIND_TITLES[kind]} {period[0].isoformat()} to {period[1].isoformat()}" if period
                      else KIND_TITLES[kind])
    with conn.transaction():
        rid = conn.execute(
            "INSERT INTO user_reports (site_id, kind, title, period_start, period_end, due_on, due_at, citation, words, "
            "created_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (s.id, kind, title, period[0] if period else None, period[1] if period else None, due_on,
             _end_of_day(due_on, tz), citation, words, actor(by))).fetchone()[0]
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'user-report.require', %s, %s)",
                     (actor(by), f"user_report:{rid}", json.dumps({"site": site_key, "kind": kind,
                                                                     "due_on": due_on.isoformat(), "title": title})))
    return rid


def receive(conn, report_id: int, received_on: date, *, by: str | None = None, note: str | None = None,
            at: datetime | None = None) -> dict:
    """Record that report ``report_id`` was received on the local day ``received_on``
    (at the instant ``at``, default the end of that day in the site's time zone)."""
    row = conn.execute("SELECT r.id, r.received_on, s.pack FROM user_reports r JOIN sites s ON s.id = r.site_id "
                       "WHERE r.id = %s", (report_id,)).fetchone()
    if row is None:
        raise InputError(f"no report {report_id} owed (sewerwatch user-reports list shows them)")
    if row[1] is not None:
        raise InputError(f"report {report_id} was received already, on {row[1].isoformat()}")
    tz = pack_timezone(row[2])
    at = at or _end_of_day(received_on, tz) - timedelta(microseconds=1)
    with conn.transaction():
        conn.execute("UPDATE user_reports SET received_on = %s, received_at = %s, received_by = %s, note = %s "
                     "WHERE id = %s", (received_on, at, actor(by), note, report_id))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'user-report.receive', %s, %s)",
                     (actor(by), f"user_report:{report_id}", json.dumps({"received_on": received_on.isoformat(),
                                                                          "note": note})))
    return report(conn, report_id)


def owed_accidental(conn, hours: float, now: datetime | None = None) -> list[dict]:
    """The accidental-discharge reports the violation alerts call for that are not owed in
    ``user_reports`` yet (each alert of a rule its site's pack's ``[report_duty]`` names, opened
    by ``now``): the rows :func:`sync_accidental` would insert, as :data:`REPORT_COLS` dicts
    without an ``id``. Reads only."""
    rows = conn.execute(
        "SELECT a.id, a.rule, a.violation_id, coalesce(v.start_time, a.opened_at), s.id, s.key, s.name, s.pack "
        "FROM alerts a JOIN sites s ON s.id = a.site_id LEFT JOIN violations v ON v.id = a.violation_id "
        "WHERE a.kind = 'violation' AND NOT EXISTS (SELECT 1 FROM user_reports r WHERE r.alert_id = a.id) "
        "AND (%s::timestamptz IS NULL OR a.opened_at <= %s) ORDER BY a.id", (now, now)).fetchall()
    out = []
    duties: dict = {}
    for alert_id, rule, violation_id, began, site_id, key, name, pack in rows:
        if pack not in duties:
            try:
                duties[pack] = load_pack(pack).report_duty
            except InputError:
                duties[pack] = None
        duty = duties[pack]
        if duty is None or rule not in duty.rules:
            continue
        due_at = began + timedelta(hours=hours)
        tz = pack_timezone(pack)
        title = f"Accidental-discharge report: {rule_name(rule)} from {began.astimezone(tz):%Y-%m-%d %H:%M %Z} (alert #{alert_id})"
        out.append({"id": None, "site": key, "site_id": site_id, "site_name": name, "pack": pack,
                    "kind": "accidental-discharge", "title": title, "period_start": None, "period_end": None,
                    "due_on": local_date(due_at, tz), "due_at": due_at, "received_on": None, "received_at": None,
                    "received_by": None, "note": None, "alert_id": alert_id, "violation_id": violation_id,
                    "citation": duty.citation, "words": duty.words})
    return out


def sync_accidental(conn, hours: float) -> list[int]:
    """Owe an accidental-discharge report for each violation alert of a rule the site's
    pack's ``[report_duty]`` names, due ``hours`` after the episode began
    (:func:`owed_accidental`); return the new ids."""
    new = []
    for r in owed_accidental(conn, hours):
        rid = conn.execute(
            "INSERT INTO user_reports (site_id, kind, title, due_on, due_at, alert_id, violation_id, citation, words, "
            "created_by) VALUES (%s, 'accidental-discharge', %s, %s, %s, %s, %s, %s, %s, 'sewerwatch') "
            "ON CONFLICT (alert_id) DO NOTHING RETURNING id",
            (r["site_id"], r["title"], r["due_on"], r["due_at"], r["alert_id"], r["violation_id"], r["citation"],
             r["words"])).fetchone()
        if rid:
            new.append(rid[0])
    return new


REPORT_COLS = ("id", "site", "site_name", "pack", "kind", "title", "period_start", "period_end", "due_on", "due_at",
               "received_on", "received_at", "received_by", "note", "alert_id", "violation_id", "citation", "words")


def _rows(conn, where: str = "true", params=()) -> list[dict]:
    rows = conn.execute(
        "SELECT r.id, s.key, s.name, s.pack, r.kind, r.title, r.period_start, r.period_end, r.due_on, r.due_at, "
        "r.received_on, r.received_at, r.received_by, r.note, r.alert_id, r.violation_id, r.citation, r.words "
        f"FROM user_reports r JOIN sites s ON s.id = r.site_id WHERE {where} ORDER BY r.due_at, r.id", params).fetchall()
    return [dict(zip(REPORT_COLS, r)) for r in rows]


def report(conn, report_id: int) -> dict:
    rows = _rows(conn, "r.id = %s", (report_id,))
    if not rows:
        raise InputError(f"no report {report_id} owed (sewerwatch user-reports list shows them)")
    return rows[0]


def status(r: dict, now: datetime) -> dict:
    """Where a report stands at ``now``: ``state`` (``received``, ``due``, ``overdue``),
    ``days_late`` (periodic: days after the due date), ``late`` (a finding) and ``standing``
    (all that in words)."""
    tz = pack_timezone(r["pack"])
    today = local_date(now, tz)
    if r["kind"] == "accidental-discharge":
        received = r["received_at"]
        late = (received is None and now >= r["due_at"]) or (received is not None and received > r["due_at"])
        if received is not None:
            words = (f"received {received.astimezone(tz):%Y-%m-%d %H:%M %Z}"
                     + (f", after it was due ({r['due_at'].astimezone(tz):%Y-%m-%d %H:%M %Z})" if late else ", in time"))
            state = "received"
        elif late:
            words, state = f"not received; due {r['due_at'].astimezone(tz):%Y-%m-%d %H:%M %Z}", "overdue"
        else:
            words, state = f"due by {r['due_at'].astimezone(tz):%Y-%m-%d %H:%M %Z}", "due"
        return {"state": state, "late": late, "days_late": None, "standing": words}
    n = days_late(r["due_on"], r["received_on"], today)
    late = is_late(r["due_on"], r["received_on"], today)
    if r["received_on"] is not None:
        state = "received"
        words = f"received {r['received_on'].isoformat()}" + (f", {n} days after its due date" if n > 0 else ", in time")
    elif n > 0:
        state, words = "overdue", f"not received, {n} days after its due date {r['due_on'].isoformat()}"
    else:
        state, words = "due", f"due {r['due_on'].isoformat()}"
    return {"state": state, "late": late, "days_late": max(n, 0), "standing": words}


def list_reports(conn, now: datetime, site_key: str | None = None, open_only: bool = False,
                 accidental_hours: float | None = None) -> list[dict]:
    """The reports owed, each as it stood at ``now`` (:func:`as_of`) with its :func:`status`;
    with ``accidental_hours`` also those the alerts call for that are not stored yet
    (:func:`owed_accidental`, ``id`` None). Reads only."""
    rows = _rows(conn, "(%s::text IS NULL OR s.key = %s)", (site_key, site_key))
    if accidental_hours is not None:
        rows += [r for r in owed_accidental(conn, accidental_hours, now) if site_key in (None, r["site"])]
    out = []
    for r in rows:
        r = as_of(r, now)
        r = {**r, **status(r, now)}
        if open_only and r["state"] == "received":
            continue
        out.append(r)
    return out


def as_of(r: dict, now: datetime) -> dict:
    """A report as it stood at ``now``: a receipt recorded for a later day (or instant) is not
    there yet."""
    tz = pack_timezone(r["pack"])
    if r["received_on"] is not None and r["received_on"] > local_date(now, tz):
        return {**r, "received_on": None, "received_at": None, "received_by": None, "note": None}
    if r["received_at"] is not None and r["received_at"] > now:
        return {**r, "received_on": None, "received_at": None, "received_by": None, "note": None}
    return r


def findings_at(conn, now: datetime, accidental_hours: float, site_key: str | None = None) -> list[dict]:
    """The late-report and unreported-noncompliance findings as things stood at ``now``: every
    report owed (those the alerts call for included, stored or not) with its receipt as of
    ``now`` (:func:`as_of`), judged by :func:`status`. Reads only; each finding is a dict of
    :func:`enforcement.findings.store_finding`'s arguments (``site``, ``site_id``, ``kind``,
    ``occurred``, ``summary``, ``key``, ``citation``, ``words``, ``period``,
    ``violation_id``, ``evidence``)."""
    out = []
    rows = _rows(conn) + owed_accidental(conn, accidental_hours, now)
    ids = {k: s.id for k, s in sites(conn).items()}
    for r in rows:
        if site_key is not None and r["site"] != site_key:
            continue
        r = as_of(r, now)
        st = status(r, now)
        if not st["late"]:
            continue
        tz = pack_timezone(r["pack"])
        if r["kind"] == "accidental-discharge":
            key = f"unreported:{r['id']}" if r["id"] is not None else f"unreported:alert-{r['alert_id']}"
            out.append({"site": r["site"], "site_id": ids[r["site"]], "kind": "unreported-noncompliance",
                        "occurred": local_date(r["due_at"], tz), "summary": f"{r['title']}: {st['standing']}",
                        "key": key, "citation": r["citation"], "words": r["words"], "period": None,
                        "violation_id": r["violation_id"],
                        "evidence": {"report_id": r["id"], "alert_id": r["alert_id"], "due_at": r["due_at"].isoformat(),
                                     "received_at": r["received_at"].isoformat() if r["received_at"] else None}})
        else:
            # the report was still missing on day 46: the finding arose then, whenever it came
            out.append({"site": r["site"], "site_id": ids[r["site"]], "kind": "late-report",
                        "occurred": late_finding_day(r["due_on"]), "summary": f"{r['title']}: {st['standing']}",
                        "key": f"late-report:{r['id']}", "citation": r["citation"], "words": r["words"],
                        "period": (r["period_start"], r["period_end"]) if r["period_start"] else None,
                        "violation_id": None,
                        "evidence": {"report_id": r["id"], "kind": r["kind"], "due_on": r["due_on"].isoformat(),
                                     "received_on": r["received_on"].isoformat() if r["received_on"] else None,
                                     "days_late": days_late(r["due_on"], r["received_on"], local_date(now, tz))}})
    return out


def check(conn, now: datetime, accidental_hours: float) -> list[int]:
    """Owe the accidental-discharge reports the alerts call for, then store a finding for each
    report late at ``now`` (:func:`findings_at`; once); return the ids of the new findings.
    The enforcement round does this at the present (``sewerwatch due``, ``findings list``,
    ``run``); questions about another day ask :func:`findings_at` and write nothing."""
    new = []
    with conn.transaction():
        sync_accidental(conn, accidental_hours)
        for f in findings_at(conn, now, accidental_hours):
            fid = store_finding(conn, f["site_id"], f["kind"], f["occurred"], f["summary"], key=f["key"],
                                citation=f["citation"], words=f["words"], period=f["period"],
                                violation_id=f["violation_id"], evidence=f["evidence"], by="sewerwatch")
            if fid:
                new.append(fid)
    return new


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
