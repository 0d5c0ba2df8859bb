"""A sensor's page in the office (issue 26): the maintenance window started and ended in two
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
