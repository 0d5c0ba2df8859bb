"""A sensor's page in the office: the maintenance window started and ended in two
taps (the sensor in the list, then the reason), one window for a form sent twice, the
calibration form; who may act. In process (Litestar's test client) against the real
database; the phone-sized round in Chromium is in tests/test_web_field_browser.py."""

from __future__ import annotations

import re

import psycopg
import pytest

from web_support import add_people, cheap_hashes, csrf_of, office_client, sign_in, village


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _key(html: str) -> str:
    return re.search(r'name="_form_key" value="([^"]+)"', html).group(1)


def _windows(db):
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT id, reason, person, opened_by, closed_by, source, end_time IS NULL "
                            "FROM maintenance_windows ORDER BY id").fetchall()


def test_two_taps_start_a_window_a_second_send_starts_none_and_one_tap_ends_it(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        listing = c.get("/sensors")
        assert 'href="/sensors/plater/ph"' in listing.text                     # tap one
        page = c.get("/sensors/plater/ph")
        assert page.status_code == 200 and "No maintenance window open" in page.text
        assert 'id="start-calibration"' in page.text and 'id="start-cleaning"' in page.text
        form = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "reason": "calibration"}
        r = c.post("/sensors/plater/ph/maintenance", data=form)                # tap two
        assert r.status_code == 200 and "Maintenance window 1 started" in r.text
        assert 'id="end-window"' in r.text and "in maintenance" in r.text
        again = c.post("/sensors/plater/ph/maintenance", data=form)            # the same form again
        assert "This form had been sent already" in again.text
        assert _windows(db) == [(1, "calibration", "Ines Inspector", "inspector", None, "web", True)]
        end = {"_csrf_token": csrf_of(r.text), "_form_key": _key(r.text), "end": "1"}
        r = c.post("/sensors/plater/ph/maintenance", data=end)
        assert "Maintenance window 1 ended" in r.text and "No maintenance window open" in r.text
        assert _windows(db) == [(1, "calibration", "Ines Inspector", "inspector", "inspector", "web", False)]
        site = c.get("/sites/plater")                                        # the user's page: the window drawn
        assert site.status_code == 200 and 'class="maintenance"><title>maintenance window from' in site.text
        # no reason: refused in words, nothing opened
        page = c.get("/sensors/plater/ph")
        r = c.post("/sensors/plater/ph/maintenance", data={"_csrf_token": csrf_of(page.text),
                                                           "_form_key": _key(page.text), "reason": ""})
        assert r.status_code == 400 and "a maintenance window needs a reason" in r.text
        assert len(_windows(db)) == 1
        assert c.get("/sensors/plater/nope").status_code == 404


def test_a_viewer_and_a_clerk_may_look_but_not_start_a_window(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        for user in ("viewer", "clerk"):
            c.cookies.clear()
            sign_in(c, user)
            page = c.get("/sensors/plater/ph")
            assert page.status_code == 200 and 'id="start-calibration"' not in page.text
            r = c.post("/sensors/plater/ph/maintenance", data={"_csrf_token": csrf_of(page.text),
                                                               "_form_key": "k" * 30, "reason": "calibration"})
            assert r.status_code == 403, user
            assert c.get("/sensors/plater/ph/calibration").status_code == 403
    assert _windows(db) == []


def test_the_calibration_form_records_a_ph_calibration_and_keeps_what_was_typed_when_refused(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        page = c.get("/sensors/plater/ph/calibration")
        assert page.status_code == 200 and 'id="buffer0_found"' in page.text
        base = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text)}
        bad = {**base, "buffer0_nominal": "4.00", "buffer0_found": "4.1o", "buffer0_left": "4.01"}
        r = c.post("/sensors/plater/ph/calibrations", data=bad)
        assert r.status_code == 400 and "buffer 1: as found: not a number: &#39;4.1o&#39;" in r.text
        assert 'value="4.1o"' in r.text                                         # nothing lost
        good = {**base, "buffer0_nominal": "4.00", "buffer0_found": "4.12", "buffer0_left": "4.01",
                "buffer1_nominal": "10.00", "buffer1_found": "9.80", "buffer1_left": "10.15", "slope": "97"}
        r = c.post("/sensors/plater/ph/calibrations", data=good)
        assert r.status_code == 200 and "Calibration 1 recorded" in r.text
        assert "FAIL plater/ph by Ines Inspector" in r.text and "buffer 10.00 read 10.15" in r.text
        r = c.post("/sensors/plater/ph/calibrations", data=good)
        assert "This form had been sent already" in r.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT result, technician, recorded_by FROM calibrations").fetchall() == [
            ("fail", "Ines Inspector", "inspector")]
        assert conn.execute("SELECT count(*) FROM findings WHERE kind = 'calibration-failed'").fetchone()[0] == 1


def _png(w=64, h=48) -> bytes:
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (10, 120, 200)).save(buf, "PNG")
    return buf.getvalue()


def test_an_inspection_form_with_photos_and_who_sees_them(db, tmp_path):
    from identity import accounts
    from web_support import ADMIN, PASSWORD, demo_users
    demo_users(db.url, permits=False)
    add_people(db.url)
    with psycopg.connect(db.url, autocommit=True) as conn:
        accounts.add(conn, "candyman", "Cal Candy", None, PASSWORD, actor=ADMIN, kind="industrial-user",
                     site_key="candy")
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        page = c.get("/inspections/new?site=candy")
        assert page.status_code == 200 and "2. Grease interceptors maintained" in page.text
        base = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "site": "candy", "item2": "deficient",
                "note2": "no cleaning records since March", "sampled": "1", "representative": "Pat Owner"}
        # a text file named like a photo: refused by its bytes, the form kept
        r = c.post("/inspections/visits", data=base, files={"photos": ("IMG_0001.jpg", b"GIF89a not really", "image/jpeg")})
        assert r.status_code == 400 and "not a photo: expected a JPEG, PNG or WebP image" in r.text
        assert "no cleaning records since March" in r.text
        r = c.post("/inspections/visits", data=base, files=[("photos", ("../../etc/passwd.png", _png(), "image/png")),
                                                     ("photos", ("b.png", _png(32, 32), "image/png"))])
        assert r.status_code == 200 and "Inspection of Sweet Creek Confections" in r.text, r.text[:2000]
        assert "deficient</strong>: no cleaning records since March" in r.text
        ids = re.findall(r'/inspections/photos/(\d+)"', r.text)
        assert len(ids) == 2
        again = c.post("/inspections/visits", data=base, files={"photos": ("a.png", _png(), "image/png")})
        assert "the visit was recorded once" in again.text
        p = c.get(f"/inspections/photos/{ids[0]}")
        assert p.status_code == 200 and p.headers["content-type"] == "image/png" and p.content[:8] == b"\x89PNG\r\n\x1a\n"
        assert p.headers["x-content-type-options"] == "nosniff" and "passwd" not in p.headers["content-disposition"]
        c.cookies.clear()
        sign_in(c, "candyman")                    # the industrial user's own account: refused, even its own site's
        assert c.get(f"/inspections/photos/{ids[0]}").status_code == 403
        assert c.get("/inspections").status_code == 403
        c.cookies.clear()
        sign_in(c, "viewer")
        assert c.get(f"/inspections/photos/{ids[0]}").status_code == 200
        page = c.get("/inspections")
        assert page.status_code == 200 and 'id="start-inspection"' not in page.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM inspections").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM inspection_photos").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM findings WHERE kind = 'inspection-deficiency'").fetchone()[0] == 1


def _instruments(db):
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT make, model, serial, owner, range_low, range_high, calibration_interval_days, "
                            "removed IS NULL, recorded_by, source FROM instruments ORDER BY id").fetchall()


def test_the_instrument_form_records_changes_and_a_replacement_keeps_the_history(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        page = c.get("/sensors/plater/ph")
        assert "No instrument recorded." in page.text and 'id="instrument-link"' in page.text
        assert "sewerwatch instruments" not in page.text                    # no command for a person to type
        form_page = c.get("/sensors/plater/ph/instrument")
        assert form_page.status_code == 200 and "No instrument recorded yet." in form_page.text
        form = {"_csrf_token": csrf_of(form_page.text), "_form_key": _key(form_page.text), "make": "Hach",
                "model": "pHD sc", "serial": "S-1001", "range_low": "0", "range_high": "14", "owner": "industrial-user",
                "calibration_interval_days": "14", "installed": "2026-01-05", "note": ""}
        r = c.post("/sensors/plater/ph/instrument/save", data=form)
        assert r.status_code == 200 and "The instrument is recorded in the register." in r.text
        assert "Hach pHD sc, serial S-1001" in r.text and "Change the instrument" in r.text
        again = c.post("/sensors/plater/ph/instrument/save", data=form)         # the same form again: once
        assert "This form had been sent already" in again.text
        assert _instruments(db) == [("Hach", "pHD sc", "S-1001", "industrial-user", 0.0, 14.0, 14, True, "inspector",
                                     "web")]
        # a bad number: refused in one line, what was typed kept, nothing stored
        page = c.get("/sensors/plater/ph/instrument")
        bad = {**form, "_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "range_high": "fourteen"}
        r = c.post("/sensors/plater/ph/instrument/save", data=bad)
        assert r.status_code == 400 and "range, high end: not a number: &#39;fourteen&#39;" in r.text
        assert 'value="fourteen"' in r.text and len(_instruments(db)) == 1
        # another serial number: a new instrument, the old one kept with its removed date
        page = c.get("/sensors/plater/ph/instrument")
        assert 'value="S-1001"' in page.text                                     # the form starts from the register
        new = {**form, "_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "serial": "S-2002",
               "installed": ""}
        r = c.post("/sensors/plater/ph/instrument/save", data=new)
        assert r.status_code == 200 and "serial S-2002" in r.text
        rows = _instruments(db)
        assert [(x[2], x[7]) for x in rows] == [("S-1001", False), ("S-2002", True)]
        hist = c.get("/sensors/plater/ph/instrument").text
        assert hist.count("<tr><td>Hach pHD sc</td>") == 2 and "in place" in hist
    with psycopg.connect(db.url) as conn:
        acts = [a for (a,) in conn.execute("SELECT action FROM audit_log WHERE actor = 'inspector' AND action LIKE "
                                           "'instrument-%%' ORDER BY id").fetchall()]
    assert acts == ["instrument-install", "instrument-install"]
    with office_client(db, tmp_path) as c:                                       # a viewer looks, records nothing
        sign_in(c, "viewer")
        assert 'id="instrument-link"' not in c.get("/sensors/plater/ph").text
        assert c.get("/sensors/plater/ph/instrument").status_code == 403
        page = c.get("/sensors/plater/ph")
        r = c.post("/sensors/plater/ph/instrument/save", data={"_csrf_token": csrf_of(page.text), "serial": "X"})
        assert r.status_code == 403 and len(_instruments(db)) == 2


def _qualities(db, where: str = "TRUE"):
    """(sensor name, quality) -> count of the village's readings (``where``)."""
    with psycopg.connect(db.url) as conn:
        return dict(((n, q), k) for n, q, k in conn.execute(
            "SELECT se.name, r.quality, count(*) FROM readings r JOIN sensors se ON se.id = r.sensor_id "
            f"WHERE {where} GROUP BY 1, 2").fetchall())


def test_a_window_for_the_whole_site_in_two_taps_covers_every_sensor_and_ends_in_one(db, tmp_path):
    from foundation.quality import MAINTENANCE
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        page = c.get("/sites/plater")                                          # tap one (the user on Today)
        assert page.status_code == 200 and "No maintenance window open" in page.text
        assert 'id="site-start-cleaning"' in page.text
        form = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "reason": "cleaning"}
        r = c.post("/sites/plater/maintenance", data=form)                     # tap two
        assert r.status_code == 200 and "Maintenance window 1 started for the whole site" in r.text
        assert 'id="end-site-window"' in r.text and "whole site in maintenance" in r.text
        again = c.post("/sites/plater/maintenance", data=form)                 # the same form again: nothing more
        assert "This form had been sent already" in again.text
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT id, sensor_id, reason, person, opened_by, source, end_time IS NULL FROM "
                                "maintenance_windows").fetchall() == [(1, None, "cleaning", "Ines Inspector",
                                                                       "inspector", "web", True)]
            # both sensors of the site read during the window (stored unmarked: the window marks them;
            # the village's own readings are 7.0 +- 0.2, so 7.5 names these)
            conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT clock_timestamp(), id, 7.5 FROM "
                         "sensors WHERE name IN ('ph', 'temp')")
            audit = conn.execute("SELECT actor, detail->>'sensor', detail->>'via' FROM audit_log WHERE action = "
                                 "'maintenance-open'").fetchall()
        assert audit == [("inspector", None, "web")]
        # the sensor's own page shows the site's window, and no second window can start on it
        assert "in maintenance" in c.get("/sensors/plater/temp").text
        end = {"_csrf_token": csrf_of(r.text), "_form_key": _key(r.text), "end": "1"}
        r = c.post("/sites/plater/maintenance", data=end)                      # one tap ends it
        assert r.status_code == 200 and "Maintenance window 1 ended" in r.text
        assert "No maintenance window open" in r.text
    assert _qualities(db, "r.value = 7.5") == {("ph", MAINTENANCE): 1, ("temp", MAINTENANCE): 1}   # every sensor's, marked
    assert _qualities(db, "r.value <> 7.5") == {("ph", 0): 3600}           # before the window: judged
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT closed_by, end_time IS NOT NULL FROM maintenance_windows").fetchall() == [
            ("inspector", True)]
        assert conn.execute("SELECT actor FROM audit_log WHERE action = 'maintenance-close'").fetchall() == [
            ("inspector",)]


def test_a_site_window_refused_in_words_and_to_a_viewer(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")
        page = c.get("/sensors/plater/ph")                   # a sensor's own window open: the site's is refused
        c.post("/sensors/plater/ph/maintenance", data={"_csrf_token": csrf_of(page.text),
                                                       "_form_key": _key(page.text), "reason": "calibration"})
        page = c.get("/sites/plater")
        assert 'id="sensor-window-1"' in page.text and 'id="site-start-cleaning"' not in page.text
        # (the page offers no start then; a form sent anyway, from an older page)
        r = c.post("/sites/plater/maintenance", data={"_csrf_token": csrf_of(page.text),
                                                      "_form_key": "s" * 30, "reason": "cleaning"})
        assert r.status_code == 400 and "is in maintenance window 1 already" in r.text and "Traceback" not in r.text
        r = c.post("/sites/plater/maintenance", data={"_csrf_token": csrf_of(page.text),
                                                      "_form_key": "e" * 30, "end": "1"})
        assert r.status_code == 400 and "is not a window of the whole site plater" in r.text
        c.cookies.clear()
        sign_in(c, "viewer")
        page = c.get("/sites/plater")
        assert page.status_code == 200 and 'action="/sites/plater/maintenance"' not in page.text
        for data in ({"reason": "cleaning"}, {"end": "1"}):
            r = c.post("/sites/plater/maintenance", data={"_csrf_token": csrf_of(page.text), "_form_key": "k" * 30,
                                                          **data})
            assert r.status_code == 403
        r = c.post("/maintenance/1/decision", data={"_csrf_token": csrf_of(page.text), "_form_key": "k" * 30,
                                                    "decision": "approve"})
        assert r.status_code == 403
        assert 'href="/maintenance"' in page.text                              # the viewer sees the list
        assert c.get("/maintenance").status_code == 200
    assert [w[6] for w in _windows(db)] == [True]                            # one window, still open


def _after_the_fact(db, opener: str) -> int:
    """A window opened on the package's (the CLI's) function by ``opener`` 30 minutes back over
    the village's judged pH readings: it waits for a second person."""
    from datetime import datetime, timedelta, timezone

    from field import windows
    from foundation.actor import Actor
    with psycopg.connect(db.url) as conn:
        [w] = windows.open_window(conn, "plater", ["ph"], reason="calibration", actor=Actor(opener, "cli"),
                                  start=datetime.now(timezone.utc) - timedelta(minutes=30))
    assert w["approval"] == "pending" and w["judged_readings"] > 1700
    return w["id"]


def _decide(c, wid: int, decision: str, note: str):
    page = c.get("/maintenance")
    assert page.status_code == 200 and f'id="pending-{wid}"' in page.text
    key = _key(page.text) if f'id="approve-{wid}"' in page.text else "k" * 30     # no form shown: one sent anyway
    return c.post(f"/maintenance/{wid}/decision", data={"_csrf_token": csrf_of(page.text), "_form_key": key,
                                                        "decision": decision, "note": note})


def test_a_window_after_the_fact_is_approved_on_the_maintenance_page_by_a_second_person_only(db, tmp_path):
    from foundation.quality import MAINTENANCE
    village(db)
    add_people(db.url)
    wid = _after_the_fact(db, "coord")
    with office_client(db, tmp_path) as c:
        sign_in(c, "inspector")                        # may see it, may not decide
        page = c.get("/maintenance")
        assert f'id="pending-{wid}"' in page.text and f'id="approve-{wid}"' not in page.text
        assert _decide(c, wid, "approve", "x").status_code == 403
        c.cookies.clear()
        sign_in(c, "coord")                            # the opener: refused in the package's words
        r = _decide(c, wid, "approve", "mine")
        assert r.status_code == 400 and "Traceback" not in r.text
        assert re.search(r'id="problem">maintenance window 1 was opened by coord: a second person must approve or '
                         r'reject it</p>', r.text)
        assert _qualities(db).get(("ph", MAINTENANCE)) is None                 # still excludes nothing
        c.cookies.clear()
        sign_in(c, "super")
        r = _decide(c, wid, "approve", "buffers in the log")
        assert r.status_code == 200 and f"Maintenance window {wid} approved" in r.text
        assert f'id="pending-{wid}"' not in r.text
        assert re.search(rf'id="window-{wid}">[^\n]*<strong>approved</strong> by super \(buffers in the log\)', r.text)
        again = c.post(f"/maintenance/{wid}/decision", data={"_csrf_token": csrf_of(r.text), "_form_key": "a" * 30,
                                                              "decision": "approve"})     # an older page's form
        assert again.status_code == 400 and "awaits no approval (it is approved)" in again.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT approval, approved_by, approval_note FROM maintenance_windows").fetchone() == (
            "approved", "super", "buffers in the log")
        assert conn.execute("SELECT actor, detail->>'opened_by' FROM audit_log WHERE action = "
                            "'maintenance-approve'").fetchall() == [("super", "coord")]
    assert _qualities(db).get(("ph", MAINTENANCE), 0) > 1700                  # approved: its readings marked


def test_a_window_after_the_fact_rejected_with_a_note_excludes_nothing(db, tmp_path):
    from foundation.quality import MAINTENANCE
    village(db)
    add_people(db.url)
    wid = _after_the_fact(db, "super")
    with office_client(db, tmp_path) as c:
        sign_in(c, "super")
        r = _decide(c, wid, "reject", "no")
        assert r.status_code == 400 and "was opened by super: a second person must approve or reject it" in r.text
        c.cookies.clear()
        sign_in(c, "coord")
        r = _decide(c, wid, "reject", "no calibration was logged that day")
        assert r.status_code == 200 and f"Maintenance window {wid} rejected" in r.text
        assert "<strong>rejected</strong> by coord (no calibration was logged that day)" in r.text
        again = c.post(f"/maintenance/{wid}/decision", data={"_csrf_token": csrf_of(r.text), "_form_key": "k" * 30,
                                                              "decision": "approve"})
        assert again.status_code == 400 and "it is rejected" in again.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT approval, approved_by, approval_note FROM maintenance_windows").fetchone() == (
            "rejected", "coord", "no calibration was logged that day")
        assert conn.execute("SELECT actor FROM audit_log WHERE action = 'maintenance-reject'").fetchall() == [
            ("coord",)]
    assert _qualities(db).get(("ph", MAINTENANCE)) is None
