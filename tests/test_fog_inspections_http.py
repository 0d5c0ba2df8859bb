"""Grease inspections through the office's form as served, in process against the real
database (``tests/hauler_support.py``: Corner Cafe's interceptor GI-1, 48 in liquid depth):
each bad field refused in one line with nothing stored, a visit below the 25 % reading stored
without a finding, a double submission stored once, and who may record one (the inspector;
not the clerk, the viewer or a hauler's account).

By hand: FOG 4 in + solids 3 in = 7 in of 48 in = 14.6 %, below 25 % (12 in): no finding."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from hauler_support import grease_village
from portal_support import ADMIN, PASSWORD, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, form_key, signin  # noqa: F401,E402 (fixtures)


def _send(c, est: int, **fields):
    page = c.get(f"/grease/{est}/inspect")
    assert page.status_code == 200, page.text[:300]
    data = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "device": "GI-1",
            "baffles": "in place", "cover": "sound", "fog_depth_in": "4", "solids_depth_in": "3", "scraping": "yes",
            "strainers": "yes", "training_records": "no", "notes": "", **fields}
    return c.post(f"/grease/{est}/inspections", data=data, follow_redirects=False), data


def _count(db_url: str) -> int:
    with psycopg.connect(db_url) as conn:
        return conn.execute("SELECT count(*) FROM fog_inspections").fetchone()[0]


def test_inspections_refuse_bad_fields_store_once_and_only_for_the_field_staff(db, tmp_path):
    from identity import accounts
    two_users(db.url)
    g = grease_village(db.url)
    est, today = g["establishments"]["H0001"], g["today"]
    with psycopg.connect(db.url, autocommit=True) as conn:
        for user, role in (("ines", "inspector"), ("clara", "clerk")):
            accounts.add(conn, user, user.title(), role, PASSWORD, actor=ADMIN)
    with office_client(db, tmp_path) as c:
        signin(c, "ines")
        for fields, words in (({"date": (today + timedelta(days=1)).isoformat()},
                               f"date of the visit: {today + timedelta(days=1)} is after today ({today})"),
                              ({"date": today.isoformat(), "fog_depth_in": "deep"},
                               "FOG depth: expected a number of inches, got &#39;deep&#39;"),
                              ({"date": today.isoformat(), "solids_depth_in": ""}, "solids depth: missing"),
                              ({"date": today.isoformat(), "baffles": "gone"}, "baffles: one of in place, damaged"),
                              ({"date": today.isoformat(), "strainers": "maybe"},
                               "Strainers in the sinks&#39; drains: answer yes or no"),
                              ({"date": today.isoformat(), "device": "GI-9"}, "Corner Cafe has no device &#39;GI-9&#39;")):
            r, _ = _send(c, est, **fields)
            assert r.status_code == 400 and words in r.text, (fields, r.text[:300])
        assert _count(db.url) == 0
        r, data = _send(c, est, date=today.isoformat())
        assert r.status_code == 303 and "inspected=" in r.headers["location"]
        again = c.post(f"/grease/{est}/inspections", data=data, follow_redirects=False)
        assert again.status_code == 303 and "again=1" in again.headers["location"]
        page = c.get(f"/grease/{est}")
        assert "Grease inspections (1)" in page.text and "4 + 3 in of 48 in: 15%" in page.text
        assert "Inspection reading" not in page.text and "reached</span>" not in page.text
        assert _count(db.url) == 1
        # the clerk and the viewer: no link, no form; a hauler's account: not its page
        for user in ("clara", "viewer"):
            signin(c, user)
            assert 'id="inspect-link"' not in c.get(f"/grease/{est}").text
            assert c.get(f"/grease/{est}/inspect", follow_redirects=False).status_code == 403
        signin(c, "badger")
        assert c.get(f"/grease/{est}/inspect", follow_redirects=False).status_code in (403, 404)
        token = csrf_of(c.get("/portal/grease").text)
        assert c.post(f"/grease/{est}/inspections", data={"_csrf_token": token, "_form_key": "k" * 22},
                      follow_redirects=False).status_code in (403, 404)
    assert _count(db.url) == 1
