"""A self-monitoring report and the other submissions through the portal's pages, in process
against the real database and a real SMTP server: the same lab check as ``lab import`` before
anything is stored, signing with the password and the second factor again (a double click
signs once), the copy of record (its hash in the receipt, UPDATE and DELETE refused), review
(rejected with the reason, corrected, accepted: the copper result judged like the utility's
own), a notice's response and the §13.49 report recorded through enforcement's functions, and
a permit application with its renewal window becoming a permit version."""

from __future__ import annotations

import hashlib
import html
import json
import re
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from portal_support import LAB_PDF, PASSWORD, lab_csv, person, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, mail, wait_mail, signin, new_draft, upload, sign_form, sign, lab_counts, no_more_mail  # noqa: F401 (fixtures)


def test_sign_and_submit_sent_twice_signs_once_and_the_repeat_gets_the_receipt(db, tmp_path, mail):
    """A double click on "Sign and submit" (the same form twice) makes one submission and one
    receipt; the second answer is the first one's receipt page, saying the form had been sent
    already. A refused signature (a wrong password) is counted and leaves the form usable."""
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True, email="rosa@acme.example")
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        signin(c, "rosa", secret, db.url)
        d = new_draft(c, "self-monitoring")
        upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=0.3))
        data = sign_form(c, db.url, "rosa", secret, d)
        wrong = c.post(f"/portal/drafts/{d}/signature", data={**data, "password": "not the password"},
                       follow_redirects=False)
        assert wrong.status_code == 401 and "Nothing was signed" in wrong.text
        r1 = c.post(f"/portal/drafts/{d}/signature", data=data, follow_redirects=False)   # the same key: it acts
        assert r1.status_code == 303, r1.text[:600]
        assert r1.headers["location"].endswith("?done=signed")
        r2 = c.post(f"/portal/drafts/{d}/signature", data=data, follow_redirects=False)   # the double click
        assert r2.status_code == 303 and r2.headers["location"] == r1.headers["location"] + "&again=1"
        page = c.get(r2.headers["location"])
        sub_id = int(r1.headers["location"].split("/")[-1].split("?")[0])
        with psycopg.connect(db.url) as conn:
            number, sha = conn.execute("SELECT number, sha256 FROM portal_submissions WHERE id = %s",
                                       (sub_id,)).fetchone()
        assert page.status_code == 200 and 'id="again"' in page.text and "had been sent already" in page.text
        assert number in page.text and sha in page.text and 'id="verified"' in page.text     # the receipt
        assert len(wait_mail(mail, "rosa@acme.example")) == 1 and no_more_mail(mail, "rosa@acme.example", 1)
        # another form of the same draft (a second tab): refused, nothing signed twice
        r3 = sign(c, db.url, "rosa", secret, d)
        assert r3.status_code == 409 and "signed and submitted already" in r3.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM portal_submissions").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event = 'submitted'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event = 'receipt-mailed'").fetchone()[0] == 1
        assert conn.execute("SELECT submitted_as FROM portal_drafts WHERE id = %s", (d,)).fetchone()[0] == sub_id
        failures = conn.execute("SELECT detail->>'reason' FROM audit_log WHERE action = 'login-failed' "
                                "AND actor = 'rosa' ORDER BY id").fetchall()
        assert failures == [("signing: wrong password",)]                  # the refusal counted, the repeat not
        assert conn.execute("SELECT count(*) FROM web_form_submissions WHERE action = 'portal.sign'").fetchone()[0] == 1


def test_self_monitoring_report_checked_signed_recorded_rejected_corrected_accepted(db, tmp_path, mail):
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True, email="rosa@acme.example")
    person(db.url, "plater", "pete", "Pete Preparer", signatory=False)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        # a preparer uploads the lab's CSV with a spoiled row: the reason, and nothing stored
        signin(c, "pete")
        before = lab_counts(db.url)
        d = new_draft(c, "self-monitoring")
        r = upload(c, d, "lab-csv", "../../results.csv", lab_csv(spoiled=True))
        page = c.get(f"/portal/drafts/{d}")
        assert "1 row cannot be used" in page.text and "n/a" in page.text
        bad = re.search(r'id="bad-rows".*?</table>', page.text, re.S).group(0)
        assert "<th scope=\"row\">3</th>" in bad                                # line 3: the nickel row
        assert "results.csv" in page.text and "../" not in page.text            # the name cleaned
        assert lab_counts(db.url) == before                                       # nothing stored, no dead letter
        upload(c, d, "lab-csv", "results.csv", lab_csv("candy", spoiled=False))  # another user's rows
        page = c.get(f"/portal/drafts/{d}")
        assert "3 rows cannot be used" in page.text and "unknown site &#39;candy&#39; (known: plater)" in page.text
        assert "Sweet Creek" not in page.text and lab_counts(db.url) == before
        upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False))
        upload(c, d, "lab-report", "report.pdf", LAB_PDF)
        page = c.get(f"/portal/drafts/{d}")
        assert 'id="ready"' in page.text and "3 results can be used" in page.text and 'id="review-sign"' not in page.text
        r = c.post(f"/portal/drafts/{d}/signature", data={"_csrf_token": csrf_of(page.text), "password": PASSWORD,
                                                     "_form_key": "k" * 32, "code": "123456", "certify": "yes",
                                                     "reviewed": "x"})
        assert r.status_code == 403 and "Only an authorised signatory" in r.text  # the preparer cannot sign
        # the signatory signs: the wrong password first (counted), then right
        signin(c, "rosa", secret, db.url)
        assert f"/portal/drafts/{d}" in c.get("/portal").text
        r = sign(c, db.url, "rosa", secret, d, password="not the password")
        assert r.status_code == 401 and "Nothing was signed" in r.text
        r = sign(c, db.url, "rosa", secret, d, certify=False)
        assert r.status_code == 400 and "Tick the box" in r.text
        r = sign(c, db.url, "rosa", secret, d, reviewed="0" * 64)
        assert r.status_code == 409 and "changed after this page was shown" in r.text
        r = sign(c, db.url, "rosa", secret, d)
        assert r.status_code == 303, r.text[:600]
        sub_id = int(r.headers["location"].split("/")[-1].split("?")[0])
        page = c.get(r.headers["location"])
        assert "Signed and submitted" in page.text and 'id="verified"' in page.text
        with psycopg.connect(db.url) as conn:
            doc, sha, number = conn.execute("SELECT document, sha256, number FROM portal_submissions WHERE id = %s",
                                            (sub_id,)).fetchone()
            assert hashlib.sha256(bytes(doc)).hexdigest() == sha
            parsed = json.loads(bytes(doc))
            assert parsed["signer"]["name"] == "Rosa Alvarez" and "fine and imprisonment" in parsed["certification"][
                "statement"] and {f["name"] for f in parsed["files"]} == {"results.csv", "report.pdf"}
            assert [r["analyte"] for r in parsed["results"]] == ["cu", "ni", "tss"]
            for stmt in ("UPDATE portal_submissions SET sha256 = repeat('0', 64)", "DELETE FROM portal_submissions",
                         "UPDATE portal_submission_files SET content = 'x'", "DELETE FROM portal_events"):
                with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                    conn.execute(stmt)
                conn.rollback()
            failures = conn.execute("SELECT count(*) FROM audit_log WHERE action = 'login-failed' AND actor = 'rosa' "
                                    "AND detail->>'reason' LIKE 'signing:%%'").fetchone()[0]
            assert failures == 1
            from identity import accounts                 # the code just used signs nothing again
            step = conn.execute("SELECT totp_last_step FROM web_accounts WHERE username = 'rosa'").fetchone()[0]
            import pyotp
            used = pyotp.TOTP(secret).generate_otp(step)
            acc = accounts.get(conn, "rosa")
            again = accounts.reauthenticate(conn, acc.id, PASSWORD, used, client="test", lockout_after=5, lockout_min=1)
            assert again.outcome == "refused" and "a code works once" in again.message
            conn.commit()
        receipt = wait_mail(mail, "rosa@acme.example")[0]
        assert sha in receipt["body"] and number in receipt["subject"] and "Rosa Alvarez" in receipt["body"]
        assert lab_counts(db.url) == before                                       # waits for review: nothing stored
        # the coordinator rejects it with a reason; the user sees it and corrects it
        rosa = dict(c.cookies)
        signin(c, "coord")
        q = c.get("/review")
        assert number in q.text
        page = c.get(f"/review/{sub_id}")
        assert sha in page.text and "the stored document and files match it" in page.text
        r = c.post(f"/review/{sub_id}/reject", data={"_csrf_token": csrf_of(page.text), "reason": ""})
        assert r.status_code == 400
        r = c.post(f"/review/{sub_id}/reject", data={"_csrf_token": csrf_of(page.text),
                                                     "reason": "The lab report is for another sample; attach P-0601's."},
                   follow_redirects=False)
        assert r.status_code == 303
        c.cookies.clear()
        for k, v in rosa.items():               # back in rosa's session (a sign-in would spend a TOTP step)
            c.cookies.set(k, v, domain="127.0.0.1")
        page = c.get(f"/portal/submissions/{sub_id}")
        assert "rejected" in page.text and "attach P-0601" in page.text
        returned = wait_mail(mail, "rosa@acme.example", 2)[1]                 # and mailed to the signatory
        assert "returned to you" in returned["subject"] and "attach P-0601" in returned["body"]
        r = c.post(f"/portal/submissions/{sub_id}/correct", data={"_csrf_token": csrf_of(page.text)},
                   follow_redirects=False)
        d2 = int(r.headers["location"].rsplit("/", 1)[1])
        upload(c, d2, "lab-report", "report-p0601.pdf", LAB_PDF + b"% corrected\n")
        r = sign(c, db.url, "rosa", secret, d2)
        assert r.status_code == 303, r.text[:600]
        sub2 = int(r.headers["location"].split("/")[-1].split("?")[0])
        # the coordinator accepts the correction: results stored as the user's, copper judged
        signin(c, "coord")
        page = c.get(f"/review/{sub_id}")
        assert "superseded" in page.text and 'id="accept"' not in page.text
        page = c.get(f"/review/{sub2}")
        assert f"{number}" in page.text                                       # supersedes it
        r = c.post(f"/review/{sub2}/accept", data={"_csrf_token": csrf_of(page.text)}, follow_redirects=False)
        assert r.status_code == 303, r.text[:800]
        assert c.post(f"/review/{sub2}/accept", data={"_csrf_token": csrf_of(page.text)}).status_code == 409
        # the acceptance's line on the submission's page names the broken limit in its words and
        # citation, never the rule's id: on the coordinator's page and on the user's own
        with psycopg.connect(db.url) as conn:
            [(rule, cite, limit)] = conn.execute(
                "SELECT DISTINCT v.rule, v.citation, v.limit_value FROM violations v JOIN sites s ON s.id = v.site_id "
                "WHERE s.key = 'plater' AND v.parameter = 'cu'").fetchall()
        for who, url in (("coord", f"/review/{sub2}"), ("rosa", f"/portal/submissions/{sub2}")):
            if who == "rosa":
                signin(c, "rosa", secret, db.url)
            events = html.unescape(re.search(r'<ul id="events">(.*?)</ul>', c.get(url).text, re.S).group(1))
            [accepted] = [li for li in re.findall(r"<li>(.*?)</li>", events, re.S) if "accepted" in li]
            assert "Copper: " in accepted and f"{limit:g} mg/l" in accepted and f"({cite})" in accepted, accepted
            assert rule not in accepted and "cu-" not in accepted, accepted
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT r.analyte, r.value_mg_l, s.submission_id, r.source FROM lab_results r JOIN lab_samples s "
                            "ON s.id = r.sample_id ORDER BY r.analyte").fetchall()
        assert [(a, v, sid) for a, v, sid, _ in rows] == [("cu", 1.8, sub2), ("ni", 0.4, sub2), ("tss", 120.0, sub2)]
        assert all("SMR-" in src for *_, src in rows)
        # the user's own results: its self-monitoring, never the village's sampling (40 CFR 403.8(f)(2)(v))
        assert conn.execute("SELECT DISTINCT sampled_by FROM lab_samples").fetchall() == [("user",)]
        v = conn.execute("SELECT rule, peak, limit_value, source FROM violations v JOIN sites s ON s.id = v.site_id "
                         "WHERE s.key = 'plater'").fetchall()
        assert [x for x in v if x[1] == 1.8 and x[2] == 1.0], v                # copper 1.8 > 1.0: a violation


def test_notice_response_and_accidental_report_go_through_enforcement(db, tmp_path, mail):
    """Signed in the portal, the response is the notice's response-received (as ``notice
    response``) and the §13.49 report is received at the instant of signing (as ``user-reports
    receive``), so SNC (G) sees it in time."""
    from enforcement import reports
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    now = datetime.now(timezone.utc)
    with psycopg.connect(db.url, autocommit=True) as conn:
        site_id, sensor = conn.execute("SELECT s.id, n.id FROM sites s JOIN sensors n ON n.site_id = s.id "
                                       "WHERE s.key = 'plater'").fetchone()
        vid = conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, "
                           "end_time, peak, limit_value, unit, days_of_violation, source) VALUES (%s, %s, 'ph', 'ph-min', "
                           "'palmyra-wi', 'Village of Palmyra Code §13.48(2)(g)', %s, %s, 3.5, 6.0, 'pH', 1, 'batch') "
                           "RETURNING id", (site_id, sensor, now - timedelta(hours=3), now - timedelta(hours=2))
                           ).fetchone()[0]
        conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details, violation_id) VALUES "
                     "('violation', %s, %s, 'ph-min', 'notified', 'pH 3.5', '{}', %s)", (site_id, sensor, vid))
        rid = reports.sync_accidental(conn, 24.0)[0]
        number = _issued_notice(conn, vid)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        signin(c, "rosa", secret, db.url)
        home = c.get("/portal")
        assert number in home.text and f'id="answer-report-{rid}"' in home.text
        d = new_draft(c, "notice-response", f"notice:{number}")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={"_csrf_token": csrf_of(page.text), "cause": "A valve left open",
                                            "corrective_action": "Valve interlocked", "completed_on": "2026-11-20"})
        assert sign(c, db.url, "rosa", secret, d).status_code == 303
        d = new_draft(c, "accidental-discharge", f"report:{rid}")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={"_csrf_token": csrf_of(page.text), "began_at": "2026-11-30T10:30",
                                            "substances": "sulfuric acid rinse", "cause": "tank overflow",
                                            "actions": "pump stopped"})
        assert sign(c, db.url, "rosa", secret, d).status_code == 303
    with psycopg.connect(db.url) as conn:
        state = conn.execute("SELECT state, response_received_on FROM notices WHERE number = %s", (number,)).fetchone()
        assert state[0] == "response-received" and state[1] is not None
        ev = conn.execute("SELECT actor, note FROM notice_events WHERE event = 'response-received'").fetchone()
        assert ev[0] == "rosa" and "NR-" in ev[1] and "SHA-256" in ev[1]
        got = conn.execute("SELECT received_at, received_by FROM user_reports WHERE id = %s", (rid,)).fetchone()
        assert got[1] == "rosa" and abs((got[0] - datetime.now(timezone.utc)).total_seconds()) < 120
        r = reports.list_reports(conn, datetime.now(timezone.utc), "plater")[0]
        assert r["state"] == "received" and not r["late"]                     # in time: no (G) finding
        assert reports.check(conn, datetime.now(timezone.utc) + timedelta(days=2), 24.0) == []
        conn.commit()
        assert conn.execute("SELECT count(*) FROM findings WHERE kind = 'unreported-noncompliance'").fetchone()[0] == 0


def _issued_notice(conn, violation_id: int) -> str:
    """A notice drafted and issued today, the village's day (Palmyra's, America/Chicago: in the
    evening there the machine's UTC day is already the next, and the portal's response,
    received on the village's day, would come before it)."""
    from zoneinfo import ZoneInfo

    from enforcement import notices
    from enforcement.guide import load_guide
    from foundation.paths import PROJECT_ROOT
    from lab.documents.pdf import Letterhead
    guide = load_guide(PROJECT_ROOT / "enforcement" / "guides" / "epa-erp.toml")
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    n = notices.draft(conn, guide, Letterhead("Village of Palmyra"), today, violation_id=violation_id, by="coord")
    notices.issue(conn, n["number"], today, by="coord")
    return n["number"]


def test_permit_application_opens_60_days_before_the_term_ends_and_becomes_a_permit_version(db, tmp_path, mail):
    two_users(db.url, permit_days_left=90)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        signin(c, "rosa", secret, db.url)
        home = c.get("/portal")
        assert 'id="start-application" disabled' in home.text and "opens on" in home.text
        r = c.post("/portal/drafts", data={"_csrf_token": csrf_of(home.text), "kind": "permit-application",
                                           "target": "permit:PAL-IU-2026-02"}, follow_redirects=False)
        assert "refused" in r.headers["location"] and "13.54" in r.headers["location"]
        with psycopg.connect(db.url, autocommit=True) as conn:      # 30 days left: the renewal is open
            from portal_support import import_permit
            today = datetime.now(timezone.utc).date()
            import_permit(conn, today - timedelta(days=335), today + timedelta(days=30))
        d = new_draft(c, "permit-application", "permit:PAL-IU-2026-02")
        page = c.get(f"/portal/drafts/{d}")
        assert "(a) Name of applicant" in page.text and "(i) Number and type of employees" in page.text
        form = {"_csrf_token": csrf_of(page.text), "applicant_name": "Acme Plating", "address": "1 Mill St, Palmyra",
                "sic": "3471", "average_daily_gpd": "19000", "constituents": "Cu, Ni, CN by EPA 200.7",
                "time_duration": "06:00-18:00 weekdays", "average_flow_gpm": "13", "peak_flow_gpm": "40",
                "activities": "electroplating", "products": "plated parts, 2,000/day", "employees": "24 production",
                "hours": "two shifts"}
        c.post(f"/portal/drafts/{d}/save", data=form)
        page = c.get(f"/portal/drafts/{d}")
        assert "(f) Plans" in page.text                                    # the plans are missing
        upload(c, d, "attachment", "floor-plan.pdf", LAB_PDF)
        r = sign(c, db.url, "rosa", secret, d)
        assert r.status_code == 303, r.text[:500]
        sub = int(r.headers["location"].split("/")[-1].split("?")[0])
        signin(c, "coord")
        page = c.get(f"/review/{sub}")
        c.post(f"/review/{sub}/accept", data={"_csrf_token": csrf_of(page.text)})
        page = c.get(f"/review/{sub}")
        toml = re.search(r'<textarea id="permit" name="permit"[^>]*>(.*?)</textarea>', page.text, re.S).group(1)
        import html as _html
        toml = _html.unescape(toml)
        assert "average_daily_gpd = 19000" in toml and 'analyte = "cu"' in toml
        r = c.post(f"/review/{sub}/permit", data={"_csrf_token": csrf_of(page.text), "permit": toml},
                   follow_redirects=False)
        assert r.status_code == 303, r.text[:800]
    with psycopg.connect(db.url) as conn:
        v = conn.execute("SELECT version, reason, (document->'flow'->>'average_daily_gpd')::float FROM permits "
                         "WHERE number = 'PAL-IU-2026-02' ORDER BY version DESC LIMIT 1").fetchone()
        assert v[0] == 3 and "PA-" in v[1] and v[2] == 19000.0
