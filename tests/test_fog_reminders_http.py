"""The office's "Reminders of devices coming due" page, in process against the real database
and a real SMTP server: the list of who gets what (and who has no address), the form as served
sending them once (a double submission and a second sending mail nothing new), the log, the
viewer reading without the form, a hauler's account refused.

The village (T today in America/Chicago; every device an interceptor taken on by the program
on T - 80, pumped every 90 days, never pumped, so due on T + 10, within the program's 14 days):
R0001 Rose Cafe, contact rose@cafe.example, Badger Grease Service hired (badger@haul.example);
R0002 Birch Bakery, no contact address, Badger hired. So 3 reminders to send (Rose, Badger
twice) and 1 without an address.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

from foundation.actor import Actor
from portal_support import ADMIN, PASSWORD, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, form_key, mail, no_more_mail, signin, wait_mail  # noqa: F401,E402

STAFF = Actor("coord", "web")
HEADER = "licence,name,address,contact,category,device,kind,capacity_gal,liquid_depth_in,location,installed," \
         "interval_days"


def _village(db_url: str):
    from fog import haulers, imports, reminders, store
    from fog.rules import for_pack
    from identity import accounts

    today = datetime.now(ZoneInfo("America/Chicago")).date()
    rows = [HEADER, "R0001,Rose Cafe,1 Main St,Rosa Reyes,restaurant,GI-1,interceptor,1000,48,,2020-06-01,90",
            "R0002,Birch Bakery,2 Main St,,bakery,GI-1,interceptor,1000,48,,2020-06-01,90"]
    with psycopg.connect(db_url, autocommit=True) as conn:
        rep = imports.import_establishments(conn, "\n".join(rows) + "\n", "licences.csv", for_pack("palmyra-wi"),
                                            STAFF, commit=True, registered_on=today - timedelta(days=80))
        assert not rep.rejected
        store.add_hauler(conn, "Badger Grease Service", "WI-GH-101", STAFF)
        reminders.set_hauler_email(conn, "WI-GH-101", "badger@haul.example", STAFF)
        for lic in ("R0001", "R0002"):
            haulers.assign(conn, "WI-GH-101", lic, "GI-1", STAFF)
        reminders.set_contact_email(conn, "R0001", "rose@cafe.example", STAFF)
        accounts.add(conn, "badger", "Bea Badger", None, PASSWORD, actor=ADMIN, kind="grease-hauler",
                     hauler="WI-GH-101", portal={"email": "bea@haul.example"})
    return today


def test_the_coordinator_sends_the_reminders_once_from_the_office(db, tmp_path, mail):
    two_users(db.url)
    today = _village(db.url)
    due = today + timedelta(days=10)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "grease@palmyra.example")) as c:
        signin(c, "coord")
        listing = c.get("/grease")
        assert 'href="/grease/reminders"' in listing.text
        page = c.get("/grease/reminders")
        assert page.status_code == 200
        assert f"The devices due from {today} to {today + timedelta(days=14)} (14 days ahead)" in page.text
        assert page.text.count("to send</td>") == 3 and "not sent: no address on record" in page.text
        assert "Send 3 reminders" in page.text and "None yet." in page.text
        form = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "ahead": "14"}
        r = c.post("/grease/reminders/send", data=form, follow_redirects=False)
        assert r.status_code == 303, r.text[:500]
        shown = c.get(r.headers["location"])
        assert "3 reminders sent; 0 sent before (not sent again); 1 without an address." in shown.text
        assert len(wait_mail(mail, "rose@cafe.example")) == 1 and len(wait_mail(mail, "badger@haul.example", 2)) == 2
        assert f"is due to be pumped by {due:%B} {due.day}, {due.year}" in wait_mail(mail, "rose@cafe.example")[0]["subject"]
        # the same form again (a double click): the first outcome, nothing mailed again
        r = c.post("/grease/reminders/send", data=form, follow_redirects=False)
        assert r.status_code == 303 and "again=1" in r.headers["location"]
        assert "This form had been sent already: then 3 reminders sent" in c.get(r.headers["location"]).text
        # the page again: each sent, nothing left to send; the log names whom and who
        page = c.get("/grease/reminders")
        assert page.text.count("to send</td>") == 0 and "Nothing to send" in page.text
        assert page.text.count("coord</td>") == 3 and "rose@cafe.example <span" in page.text
        assert no_more_mail(mail, "rose@cafe.example", 1) and no_more_mail(mail, "badger@haul.example", 2)
        # a window typed wrong: said, the program's window shown
        bad = c.get("/grease/reminders?ahead=soon")
        assert bad.status_code == 200 and "days ahead: expected a whole number of days, got &#39;soon&#39;" in bad.text
        # the viewer reads it without the form; a hauler's account does not reach it
        signin(c, "viewer")
        page = c.get("/grease/reminders")
        assert page.status_code == 200 and 'id="reminders-form"' not in page.text and "rose@cafe.example" in page.text
        assert c.post("/grease/reminders/send", data={"_csrf_token": csrf_of(page.text), "_form_key": "k" * 22,
                                                 "ahead": "14"}, follow_redirects=False).status_code == 403
        signin(c, "badger")
        assert c.get("/grease/reminders", follow_redirects=False).status_code in (403, 404)
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*), min(sent_by) FROM fog_reminders").fetchone() == (3, "coord")
