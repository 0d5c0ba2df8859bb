"""Enforcement against the database, with hand-computed expectations: reports late on day 46
(not day 45), accidental-discharge reports owed from the alerts, every SNC criterion (A)-(H)
in its period, notices' lifecycle and audit trail, recurrence, and escalation after an
unanswered deadline with its alert."""

from __future__ import annotations

import threading
import time
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
import pytest

from enforcement import due, escalation, findings, milestones, notices, reports, snc
from enforcement.guide import load_guide
from enforcement.periods import snc_period
from enforcement.settings import DEFAULT_GUIDE, Settings
from foundation.errors import Conflict, InputError
from lab.documents.pdf import Letterhead

pytestmark = pytest.mark.services

CHI = ZoneInfo("America/Chicago")
GUIDE = load_guide(DEFAULT_GUIDE)
HEAD = Letterhead("Village of Palmyra (test)", ("123 Main Street",), "Pat Example", "Superintendent")
SETTINGS = Settings()


def at(d: date, hour: int = 12) -> datetime:
    """Noon (or ``hour``) of a local day in Palmyra."""
    return datetime(d.year, d.month, d.day, hour, tzinfo=CHI)


def add_sites(conn, *keys: str) -> dict[str, int]:
    return {k: conn.execute("INSERT INTO sites (key, name, pack, permit) VALUES (%s, %s, 'palmyra-wi', %s) RETURNING id",
                            (k, f"{k.title()} Inc.", f"PAL-IU-{k}")).fetchone()[0] for k in keys}


def add_lab(conn, site_id: int, analyte: str, values: list[tuple[date, float]], prefix: str) -> None:
    for i, (d, v) in enumerate(values):
        sid = conn.execute("INSERT INTO lab_samples (sample_key, site_id, collected, laboratory) VALUES (%s, %s, %s, %s) "
                           "RETURNING id", (f"{prefix}-{i + 1}", site_id, at(d, 9), "Rock River Lab")).fetchone()[0]
        conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l) VALUES (%s, %s, %s)", (sid, analyte, v))


def ph_violation_with_alert(conn, site_id: int, start: datetime) -> tuple[int, int]:
    sensor = conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source) VALUES (%s, 'ph', 'ph', 'pH', "
                          "'mqtt') ON CONFLICT (site_id, name) DO UPDATE SET unit = 'pH' RETURNING id",
                          (site_id,)).fetchone()[0]
    vid = conn.execute(
        "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time, end_time, peak, "
        "limit_value, unit, days_of_violation, evidence, source) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', "
        "'§13.48(2)(g)', 'pH words', %s, %s, 3.5, 6.0, 'pH', 1, '{\"comparison\": \"lower than\"}', 'stream') "
        "RETURNING id", (site_id, sensor, start, start + timedelta(minutes=30))).fetchone()[0]
    aid = conn.execute("INSERT INTO alerts (kind, violation_id, site_id, sensor_id, rule, summary, opened_at) "
                       "VALUES ('violation', %s, %s, %s, 'ph-min', 'acid', %s) RETURNING id",
                       (vid, site_id, sensor, start)).fetchone()[0]
    return vid, aid


# --- reports owed -------------------------------------------------------------------------

def test_a_missing_report_is_a_finding_on_day_46_not_day_45(db):
    with db.connect() as conn:
        ids = add_sites(conn, "fisk")
        rid = reports.require(conn, "fisk", "self-monitoring", date(2026, 4, 30),
                              period=(date(2026, 1, 1), date(2026, 4, 1)))
        assert reports.check(conn, at(date(2026, 6, 14), 23), 24) == []            # day 45: in time
        r = reports.report(conn, rid)
        assert reports.status(r, at(date(2026, 6, 14)))["state"] == "overdue"
        [fid] = reports.check(conn, at(date(2026, 6, 15), 0), 24)                   # day 46: late
        f = findings.finding(conn, fid)
        assert (f["kind"], f["snc_criterion"], f["occurred"]) == ("late-report", "F", date(2026, 6, 15))
        assert f["evidence"]["days_late"] == 46
        assert reports.check(conn, at(date(2026, 6, 20)), 24) == []                  # found once
        assert conn.execute("SELECT count(*) FROM findings WHERE site_id = %s", (ids["fisk"],)).fetchone()[0] == 1


def test_a_report_received_on_day_45_is_never_a_finding_and_on_day_46_is(db):
    with db.connect() as conn:
        add_sites(conn, "iris", "jade")
        in_time = reports.require(conn, "iris", "self-monitoring", date(2026, 4, 30))
        late = reports.require(conn, "jade", "self-monitoring", date(2026, 4, 30))
        reports.receive(conn, in_time, date(2026, 6, 14), by="clerk")
        reports.receive(conn, late, date(2026, 6, 15), by="clerk")
        new = reports.check(conn, at(date(2026, 12, 1)), 24)
        [f] = [findings.finding(conn, i) for i in new]
        assert f["site"] == "jade" and f["evidence"]["days_late"] == 46
        with pytest.raises(Exception, match="received already"):
            reports.receive(conn, in_time, date(2026, 6, 20))


def test_the_accidental_discharge_report_is_owed_from_the_alert_and_unreported_is_a_finding(db):
    start = at(date(2026, 5, 1), 10)      # 10:00 CDT
    with db.connect() as conn:
        ids = add_sites(conn, "gale", "hale")
        vid, aid = ph_violation_with_alert(conn, ids["gale"], start)
        vid2, aid2 = ph_violation_with_alert(conn, ids["hale"], start)
        # palmyra-wi §13.49: ph-min is a rule of its [report_duty]: one report per alert, due 24 h on
        assert reports.check(conn, start + timedelta(hours=23, minutes=59), 24) == []
        owed = reports.list_reports(conn, start + timedelta(hours=1))
        assert [(r["site"], r["kind"], r["alert_id"], r["violation_id"], r["due_at"]) for r in owed] == \
            [("gale", "accidental-discharge", aid, vid, start + timedelta(hours=24)),
             ("hale", "accidental-discharge", aid2, vid2, start + timedelta(hours=24))]
        assert owed[0]["citation"].endswith("§13.49") and "shall immediately report" in owed[0]["words"]
        # hale reports by phone 3 hours after the discharge: in time
        reports.receive(conn, owed[1]["id"], date(2026, 5, 1), at=start + timedelta(hours=3), note="phoned")
        [fid] = reports.check(conn, start + timedelta(hours=24), 24)
        f = findings.finding(conn, fid)
        assert (f["site"], f["kind"], f["snc_criterion"], f["occurred"]) == \
            ("gale", "unreported-noncompliance", "G", date(2026, 5, 2))
        assert f["violation_id"] == vid and f["evidence"]["alert_id"] == aid
        # a configured 48 hours: the next alert's report is due two days on
        vid3, aid3 = ph_violation_with_alert(conn, ids["gale"], at(date(2026, 5, 10), 10))
        reports.sync_accidental(conn, 48)
        [r3] = [r for r in reports.list_reports(conn, start) if r["alert_id"] == aid3]
        assert r3["due_at"] == at(date(2026, 5, 12), 10)


# --- SNC, criterion by criterion ------------------------------------------------------------------

def test_each_snc_criterion_with_its_evidence(db):
    h1 = snc_period("2026H1")
    with db.connect() as conn:
        ids = add_sites(conn, "acme", "bolt", "cora", "dyna", "eton", "fisk", "gale", "hale", "iris")
        # (A) cyanide 0.55, 0.52, 0.30 against 0.5 mg/l (§13.48(2)(l)): 2 of 3 exceed = 66.7 % >= 66 %;
        # none reaches 1.2 x 0.5 = 0.6: no TRC
        add_lab(conn, ids["acme"], "cn", [(date(2026, 1, 5), 0.55), (date(2026, 2, 5), 0.52), (date(2026, 3, 5), 0.30)], "A")
        # (B) 0.60, 0.40, 0.30: 1 of 3 exceeds (33.3 %: not chronic); 0.60 equals 1.2 x 0.5: 1 of 3 = 33.3 % >= 33 %
        add_lab(conn, ids["bolt"], "cn", [(date(2026, 1, 5), 0.60), (date(2026, 2, 5), 0.40), (date(2026, 3, 5), 0.30)], "B")
        # none: 0.40, 0.30 and a result in July (outside the half year) at 0.9
        add_lab(conn, ids["iris"], "cn", [(date(2026, 1, 5), 0.40), (date(2026, 2, 5), 0.30), (date(2026, 7, 5), 0.9)], "I")
        findings.record(conn, "cora", "interference", date(2026, 3, 10), "nitrification upset at the plant", by="supt")
        findings.record(conn, "dyna", "endangerment", date(2026, 4, 2), "solvent odour in the lift station", by="supt")
        findings.record(conn, "hale", "designated", date(2026, 5, 20), "grease trap not maintained", by="supt")
        # (E) a milestone due January 15 not met: day 91 is April 16; iris met hers on day 90
        milestones.add(conn, "eton", "pretreatment system in operation", date(2026, 1, 15), source="AO-2025-004")
        m = milestones.add(conn, "iris", "equalisation tank built", date(2026, 1, 15))
        milestones.met(conn, m, date(2026, 4, 15))
        # (F) a report due April 30, not received: late on June 15; iris's came on day 45
        reports.require(conn, "fisk", "self-monitoring", date(2026, 4, 30))
        rid = reports.require(conn, "iris", "self-monitoring", date(2026, 4, 30))
        reports.receive(conn, rid, date(2026, 6, 14))
        # (G) an acid dump on May 1 not reported
        ph_violation_with_alert(conn, ids["gale"], at(date(2026, 5, 1), 10))

        now = at(date(2026, 7, 1))
        reports.check(conn, now, 24)
        milestones.check(conn, now)
        res = {r["site"]: r for r in snc.evaluate(conn, h1)}
        assert {k: r["criteria_met"] for k, r in res.items()} == {
            "acme": ["A"], "bolt": ["B"], "cora": ["C"], "dyna": ["D"], "eton": ["E"], "fisk": ["F"], "gale": ["G"],
            "hale": ["H"], "iris": []}
        a = res["acme"]["criteria"]["A"]
        assert a["explanation"] == ["cn: 2 of 3 measurements (66.7 %) exceed 0.5 mg/l (66 % makes it chronic): "
                                    "A-1 2026-01-05 0.55, A-2 2026-02-05 0.52"]
        assert a["evidence"]["cn"]["n_exceed"] == 2 and a["evidence"]["cn"]["n"] == 3
        b = res["bolt"]["criteria"]["B"]
        assert b["explanation"] == ["cn: 1 of 3 (33.3 %) equal or exceed 1.2 x 0.5 mg/l = 0.6 mg/l (33 % makes it a "
                                    "TRC violation): B-1 2026-01-05 0.6"]
        assert res["iris"]["criteria"]["A"]["evidence"]["cn"]["n"] == 2     # July's 0.9 is the next period's
        assert res["eton"]["criteria"]["E"]["evidence"][0]["occurred"] == "2026-04-16"
        assert res["fisk"]["criteria"]["F"]["evidence"][0]["occurred"] == "2026-06-15"
        assert res["cora"]["criteria"]["C"]["explanation"][0].endswith("nitrification upset at the plant")
        assert not res["iris"]["snc"] and all(not c["met"] for c in res["iris"]["criteria"].values())
        text = snc.explain(res["bolt"])
        assert text.startswith("Bolt Inc. (bolt): IN SIGNIFICANT NONCOMPLIANCE, criteria (B)")   # no permit stored
        assert "  (A) chronic violations: not met" in text and "  (B) technical review criteria (TRC) violations: MET" in text
        # rolling quarters: fisk's June 15 finding is in the six months ending with Q2 and Q3, not Q1
        for name, met in (("2026Q1", False), ("2026Q2", True), ("2026Q3", True), ("2026Q4", False)):
            [r] = snc.evaluate(conn, snc_period(name), "fisk")
            assert r["snc"] is met, name


def test_a_late_report_is_no_snc_until_day_46(db):
    with db.connect() as conn:
        add_sites(conn, "fisk")
        reports.require(conn, "fisk", "self-monitoring", date(2026, 4, 30))
        # day 45 (June 14) in time, day 46 (June 15) late: asked as of each, whatever is stored
        assert snc.evaluate(conn, snc_period("2026H1"), now=at(date(2026, 6, 14), 23))[0]["snc"] is False
        assert snc.evaluate(conn, snc_period("2026H1"), now=at(date(2026, 6, 15), 1))[0]["criteria_met"] == ["F"]
        reports.check(conn, at(date(2026, 6, 15), 1), 24)      # recorded at the time: the same answers
        assert snc.evaluate(conn, snc_period("2026H1"), now=at(date(2026, 6, 14), 23))[0]["snc"] is False


# --- notices: lifecycle, recurrence, escalation after an unanswered deadline ---------------------

def _late_report_finding(conn, site: str) -> int:
    reports.require(conn, site, "self-monitoring", date(2026, 4, 30))
    [fid] = reports.check(conn, at(date(2026, 6, 15)), 24)
    return fid


def test_a_notice_unanswered_by_its_deadline_raises_an_alert_and_is_escalated(db):
    with db.connect() as conn:
        add_sites(conn, "fisk")
        fid = _late_report_finding(conn, "fisk")
        n = notices.draft(conn, GUIDE, HEAD, date(2026, 6, 16), finding_id=fid, by="supt")
        # the guide: a late report, the first in a year -> notice of violation, 15 days to respond
        assert (n["number"], n["state"], n["action"], n["respond_within_days"], n["recurrence"]) == \
            ("NOV-2026-001", "drafted", "notice-of-violation", 15, 1)
        n = notices.issue(conn, n["id"], date(2026, 7, 1), by="supt", pdf=b"%PDF-1.7 test")
        assert n["response_due"] == date(2026, 7, 16)
        items = due.due_items(conn, at(date(2026, 7, 16), 23), SETTINGS, GUIDE)
        [i] = [x for x in items if x.kind.startswith("notice")]
        assert (i.kind, i.overdue) == ("notice-awaiting", False)
        # the report itself is long overdue (an alert of its own), the notice not yet
        assert [a[3]["kind"] for a in due.raise_alerts(conn, at(date(2026, 7, 16), 23), SETTINGS, GUIDE)] == \
            ["report-overdue"]
        # July 17: the deadline has passed without a response
        items = due.due_items(conn, at(date(2026, 7, 17), 8), SETTINGS, GUIDE)
        [i] = [x for x in items if x.kind.startswith("notice")]
        assert (i.kind, i.overdue) == ("notice-unanswered", True)
        assert i.proposal.startswith("Administrative order, response within 15 days (guide escalations[0])")
        [(aid, title, body, payload)] = [a for a in due.raise_alerts(conn, at(date(2026, 7, 17), 8), SETTINGS, GUIDE)
                                         if a[3]["kind"] == "notice-unanswered"]
        assert "NOV-2026-001" in title and "no response by its deadline 2026-07-16" in title
        assert "Proposed next action: Administrative order" in body
        row = conn.execute("SELECT kind, rule, state FROM alerts WHERE id = %s", (aid,)).fetchone()
        assert row == ("enforcement", "notice-unanswered", "open")
        assert not [a for a in due.raise_alerts(conn, at(date(2026, 7, 18)), SETTINGS, GUIDE)
                    if a[3]["kind"] == "notice-unanswered"]                                   # once
        old, new = escalation.escalate(conn, "NOV-2026-001", date(2026, 7, 17), GUIDE, HEAD, by="supt")
        assert (old["state"], old["escalated_to"]) == ("escalated", new["id"])
        assert (new["number"], new["action"], new["respond_within_days"], new["escalated_from"], new["state"]) == \
            ("AO-2026-001", "administrative-order", 15, old["id"], "drafted")
        assert new["document"]["escalated_from"]["response_due"] == "2026-07-16"
        trail = [(e["event"], e["from"], e["to"]) for e in notices.events(conn, old["id"])]
        assert trail == [("drafted", None, "drafted"), ("issued", "drafted", "issued"), ("alerted", None, None),
                         ("escalated", "issued", "escalated")]
        assert notices.events(conn, old["id"])[-1]["note"] == "unanswered by its deadline"
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE notice_events SET note = 'x'")
        conn.rollback()


def test_notice_lifecycle_to_closed_and_refused_moves(db):
    with db.connect() as conn:
        add_sites(conn, "fisk")
        fid = _late_report_finding(conn, "fisk")
        n = notices.draft(conn, GUIDE, HEAD, date(2026, 6, 16), finding_id=fid)
        with pytest.raises(Exception, match="is drafted: it can go to issued, not response-received"):
            notices.respond(conn, n["id"], date(2026, 6, 20))
        notices.issue(conn, n["number"], date(2026, 6, 17))
        n = notices.respond(conn, n["number"], date(2026, 6, 30), note="report enclosed")
        assert n["state"] == "response-received"
        n = notices.close(conn, n["number"], date(2026, 7, 2), note="report accepted")
        assert (n["state"], n["closed_on"]) == ("closed", date(2026, 7, 2))
        with pytest.raises(Exception, match="is closed: it can go to nothing: it is final, not escalated"):
            escalation.escalate(conn, n["number"], date(2026, 7, 3), GUIDE, HEAD)
        assert [e["event"] for e in notices.events(conn, n["id"])] == ["drafted", "issued", "response-received", "closed"]
        assert conn.execute("SELECT count(*) FROM audit_log WHERE object = %s", (f"notice:{n['id']}",)).fetchone()[0] == 4


def _issued_rows(conn, nid: int) -> tuple[int, int]:
    """The notice's ``issued`` events and audit rows."""
    return (conn.execute("SELECT count(*) FROM notice_events WHERE notice_id = %s AND event = 'issued'",
                         (nid,)).fetchone()[0],
            conn.execute("SELECT count(*) FROM audit_log WHERE object = %s AND action = 'notice.issued'",
                         (f"notice:{nid}",)).fetchone()[0])


def test_a_notice_is_issued_only_at_the_revision_its_issuer_read(db):
    """An edit saved after the issuer read revision 1 refuses the issue (who saved which
    revision when), nothing issued; revision 2 issues, its event naming it; once issued, a
    stale revision is told the notice is issued, not that it changed."""
    with db.connect() as conn:
        add_sites(conn, "fisk")
        fid = _late_report_finding(conn, "fisk")
        n = notices.draft(conn, GUIDE, HEAD, date(2026, 6, 16), finding_id=fid, by="supt")
        notices.edit(conn, n["id"], {"remarks": "Call J. Kowalski first."}, expected_revision=1, guide=GUIDE,
                     by="coord")
        for call in (notices.issue, notices.issue_rendered):
            with pytest.raises(Conflict) as exc:
                call(conn, n["id"], date(2026, 6, 17), by="supt", expected_revision=1)
            assert (exc.value.expected, exc.value.current, exc.value.by, exc.value.doing) == (1, 2, "coord", "issue")
            assert str(exc.value).startswith("notice NOV-2026-001: version 1 was read to be issued, but "
                                             "coord saved version 2 at ")
            assert str(exc.value).endswith(" meanwhile: nothing was issued; read version 2, then issue it")
        n = notices.notice(conn, n["id"])
        assert (n["state"], n["issued_on"], n["response_due"], n["pdf_sha256"]) == ("drafted", None, None, None)
        assert _issued_rows(conn, n["id"]) == (0, 0)
        # what the issuer of revision 1 has not seen
        [ch] = notices.changes_since(conn, n["id"], 1)
        assert (ch["revision"], ch["by"], ch["part"], ch["before"], ch["after"]) == \
            (2, "coord", "remarks", None, "Call J. Kowalski first.")
        assert notices.changes_since(conn, n["id"], 2) == []
        n = notices.issue(conn, n["id"], date(2026, 6, 17), by="supt", expected_revision=2)
        assert (n["state"], n["issued_on"], n["revision"]) == ("issued", date(2026, 6, 17), 2)
        assert n["document"]["remarks"] == "Call J. Kowalski first."
        [(detail,)] = conn.execute("SELECT detail FROM notice_events WHERE notice_id = %s AND event = 'issued'",
                                   (n["id"],)).fetchall()
        assert detail["revision"] == 2
        for rev in (1, 2, None):             # issued once: a second issue is refused whatever it read
            with pytest.raises(InputError, match="is issued: only a drafted notice is issued") as exc:
                notices.issue(conn, n["id"], date(2026, 6, 18), by="supt", expected_revision=rev)
            assert not isinstance(exc.value, Conflict)
        assert _issued_rows(conn, n["id"]) == (1, 1)


def test_an_edit_saved_while_an_issue_waits_for_the_lock_refuses_the_issue(db):
    """The revision is checked under the notice's lock: an issue of revision 1 that waits for
    an edit in progress sees the edit once it commits, and issues nothing."""
    with db.connect() as conn:
        add_sites(conn, "fisk")
        nid = notices.draft(conn, GUIDE, HEAD, date(2026, 6, 16), finding_id=_late_report_finding(conn, "fisk"))["id"]
        conn.commit()
    outcome = {}

    def issuer():
        with db.connect() as conn:
            try:
                notices.issue(conn, nid, date(2026, 6, 17), by="supt", expected_revision=1)
            except Conflict as exc:
                outcome["conflict"] = exc

    with db.connect() as editor, db.connect(autocommit=True) as watcher:
        with editor.transaction():
            notices.edit(editor, nid, {"remarks": "Sample again."}, expected_revision=1, guide=GUIDE, by="coord")
            t = threading.Thread(target=issuer)
            t.start()
            deadline = time.monotonic() + 30
            while not watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND wait_event_type = 'Lock'").fetchone()[0]:
                assert time.monotonic() < deadline and t.is_alive(), "the issue did not wait for the edit's lock"
                time.sleep(0.05)
        t.join(30)
        assert not t.is_alive() and outcome["conflict"].current == 2
        assert watcher.execute("SELECT state, revision FROM notices WHERE id = %s", (nid,)).fetchone() == ("drafted", 2)
        assert _issued_rows(watcher, nid) == (0, 0)


def test_recurrence_counts_the_notices_issued_in_the_guides_window(db):
    with db.connect() as conn:
        add_sites(conn, "fisk")
        reports.require(conn, "fisk", "self-monitoring", date(2026, 1, 31))
        reports.require(conn, "fisk", "self-monitoring", date(2026, 4, 30))
        f1, f2 = reports.check(conn, at(date(2026, 6, 15)), 24)
        n1 = notices.draft(conn, GUIDE, HEAD, date(2026, 3, 20), finding_id=f1)
        notices.issue(conn, n1["id"], date(2026, 3, 20))
        n2 = notices.draft(conn, GUIDE, HEAD, date(2026, 6, 16), finding_id=f2)
        # the second late report within 365 days: recurrence 2, an administrative order (guide row 2)
        assert (n2["recurrence"], n2["action"], n2["respond_within_days"], n2["number"]) == \
            (2, "administrative-order", 10, "AO-2026-001")
        assert notices.recurrence(conn, conn.execute("SELECT id FROM sites").fetchone()[0], "late-report",
                                  date(2027, 3, 21), 365) == 1   # a year and a day later: a first again


def test_a_notice_from_an_alert_covers_its_episodes_and_counts_their_days(db):
    """An alert whose episodes run across local midnight: two days of violation, so the
    §13.60(1) range is 2 x $100 to 2 x $2,500."""
    with db.connect() as conn:
        ids = add_sites(conn, "gale")
        first = at(date(2026, 5, 1), 23) + timedelta(minutes=50)              # 23:50 CDT
        vid, aid = ph_violation_with_alert(conn, ids["gale"], first)          # to 00:20 CDT, May 2
        sensor = conn.execute("SELECT sensor_id FROM violations WHERE id = %s", (vid,)).fetchone()[0]
        second = conn.execute(
            "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time, end_time, "
            "peak, limit_value, unit, days_of_violation, evidence, source) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', "
            "'x', 'y', %s, %s, 2.9, 6.0, 'pH', 1, '{\"comparison\": \"lower than\", \"readings\": 4}', 'stream') "
            "RETURNING id", (ids["gale"], sensor, first + timedelta(minutes=40), first + timedelta(minutes=44))).fetchone()[0]
        # a later episode of the same sensor the alert never saw
        conn.execute(
            "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time, end_time, "
            "peak, limit_value, unit, evidence, source) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', 'x', 'y', %s, %s, "
            "4.0, 6.0, 'pH', '{}', 'stream')", (ids["gale"], sensor, first + timedelta(days=3), first + timedelta(days=3, minutes=5)))
        conn.execute("INSERT INTO audit_log (action, object, detail) VALUES ('alert-episode-ended', %s, %s)",
                     (f"alert:{aid}", f'{{"end": "{(first + timedelta(minutes=44)).isoformat()}"}}'))
        assert [v["id"] for v in notices.alert_violations(conn, aid)] == [vid, second]
        n = notices.draft(conn, GUIDE, HEAD, date(2026, 5, 4), alert_id=aid)
        doc = n["document"]
        assert doc["finding"]["ref"] == f"alert {aid}: violations {vid}-{second}"
        assert doc["days_of_violation"]["days"] == 2
        assert doc["days_of_violation"]["dates"] == ["2026-05-01", "2026-05-02"]
        [f] = doc["forfeitures"]
        assert (f["total_min"], f["total_max"]) == (200.0, 5000.0)
        ev = doc["evidence"]
        assert (ev["peak"], ev["episodes"]) == (2.9, 2)
        assert (datetime.fromisoformat(ev["start"]), datetime.fromisoformat(ev["end"])) == \
            (first, first + timedelta(minutes=44))
        with pytest.raises(Exception, match="is a sensor-health alert"):
            hid = conn.execute("INSERT INTO alerts (kind, site_id, rule, summary) VALUES ('sensor-health', %s, "
                               "'no-data', 'x') RETURNING id", (ids["gale"],)).fetchone()[0]
            notices.draft(conn, GUIDE, HEAD, date(2026, 5, 4), alert_id=hid)


def test_the_periodic_hook_alerts_what_fell_overdue_once(db):
    """What ``sewerwatch run`` starts: every round opens the alerts of what fell overdue and
    hands each new one to the deliverer, once."""
    import asyncio

    from foundation import config

    with db.connect() as conn:
        add_sites(conn, "fisk")
        reports.require(conn, "fisk", "self-monitoring", date(2026, 4, 30))
        conn.commit()
    got = []

    async def deliver(aid, title, body, payload):
        got.append((aid, payload["kind"], payload["key"]))

    async def main():
        task = asyncio.create_task(due.run_periodically(db.url, config.from_dict({}, "<test>"), deliver, every_s=0.05,
                                                        first_delay_s=0, clock=lambda: at(date(2026, 6, 1))))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [(k, key) for _aid, k, key in got] == [("report-overdue", "report-overdue:1")]


# --- sampling schedules from the ordinance and a permit ------------------------------------------

def test_schedules_of_the_ordinance_and_a_permit_and_failure_to_monitor_findings(db):
    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import parse_permit

    from enforcement import schedules

    with db.connect() as conn:
        ids = add_sites(conn, "dairy", "plating")
        conn.execute("UPDATE sites SET pack = 'webster-wi' WHERE key = 'dairy'")   # §240-8: at least quarterly
        for key, d, analytes in (("Q1", date(2026, 2, 10), ("bod5", "tss")), ("Q2", date(2026, 5, 5), ("bod5",))):
            sid = conn.execute("INSERT INTO lab_samples (sample_key, site_id, collected) VALUES (%s, %s, %s) "
                               "RETURNING id", (key, ids["dairy"], at(d, 9))).fetchone()[0]
            for a in analytes:
                conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l) VALUES (%s, %s, 100)", (sid, a))
        # the plater's permit: one copper sample a month from February 1 (its effective date)
        permit = parse_permit({"number": "PAL-IU-2026-02", "site": "plating", "pack": "palmyra-wi",
                               "issued": date(2026, 1, 15), "effective": date(2026, 2, 1), "expires": date(2027, 1, 31),
                               "monitoring": [{"condition": "5(a)", "parameters": ["cu"], "sample_type": "composite-24h-flow",
                                               "frequency": {"times": 1, "per": "month"}}]},
                              "plating.toml", load_pack("palmyra-wi"))
        import_permit(conn, permit, actor="supt")
        add_lab(conn, ids["plating"], "cu", [(date(2026, 3, 2), 0.4)], "C")

        st = {(s.requirement.id, s.period.name): s.state for s in schedules.schedule(conn, at(date(2026, 6, 30), 23))}
        assert st[("webster-wi:§240-8", "2026Q1")] == "taken"
        assert st[("webster-wi:§240-8", "2026Q2")] == "due"                  # the quarter is not over yet
        assert [st[("PAL-IU-2026-02:5(a)", m)] for m in ("2026-02", "2026-03", "2026-04", "2026-05", "2026-06")] == \
            ["missing", "taken", "missing", "missing", "due"]
        assert ("PAL-IU-2026-02:5(a)", "2026-01") not in st                    # before the permit
        new = schedules.check(conn, at(date(2026, 6, 30), 23))
        got = sorted((findings.finding(conn, i)["site"], findings.finding(conn, i)["occurred"]) for i in new)
        assert got == [("plating", date(2026, 3, 1)), ("plating", date(2026, 5, 1)), ("plating", date(2026, 6, 1))]
        # July 1, the first day after the quarter: the dairy's missing TSS sample is found
        new = schedules.check(conn, at(date(2026, 7, 1), 0))
        fs = {findings.finding(conn, i)["site"]: findings.finding(conn, i) for i in new}
        assert set(fs) == {"dairy", "plating"}
        d = fs["dairy"]
        assert (d["kind"], d["occurred"], d["period_start"], d["period_end"]) == \
            ("failure-to-monitor", date(2026, 7, 1), date(2026, 4, 1), date(2026, 7, 1))
        assert d["citation"] == "Village of Webster (WI) Code §240-8" and d["evidence"]["counts"] == {"bod5": 1, "tss": 0}
        assert "tss: 1 of 1 not taken" in d["summary"]
        assert fs["plating"]["citation"] == "Permit PAL-IU-2026-02, condition 5(a)"
        assert schedules.check(conn, at(date(2026, 7, 2))) == []              # found once
        # a failure to monitor is a finding a notice is drafted from, citing the requirement
        n = notices.draft(conn, GUIDE, HEAD, date(2026, 7, 2), finding_id=d["id"])
        assert (n["action"], n["document"]["requirement"]["citation"]) == ("notice-of-violation",
                                                                            "Village of Webster (WI) Code §240-8")
        assert "A minimum of at least quarterly sampling" in n["document"]["requirement"]["words"]
