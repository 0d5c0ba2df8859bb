"""An establishment's people in the portal, in process against the real database and a real
SMTP server (``tests/hauler_support.py``): a person of Corner Cafe (H0001) is invited, signs up
through the mailed link and lands on its pump-out reports; confirms one and disputes another
with its reason through the forms as served (a dispute without a reason, and a second verdict,
refused in one line naming what exists); sees the hauler's photo. Tenancy: another
establishment's account and a hauler's account get "not found" or "forbidden" for every object
of Corner Cafe's, and the cafe's account for the office's and the hauler's pages. The
coordinator reads the dispute on the establishment's page."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import psycopg
import pytest

from foundation.actor import Actor
from hauler_support import grease_village
from portal_support import ADMIN, PASSWORD, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, mail, signin, wait_mail  # noqa: F401,E402 (fixtures)


def _reports(db_url: str, today) -> dict:
    """Two pump-outs of the cafe's GI-1 reported by Badger (K-1 three days ago, with a photo;
    K-2 two days ago); an account of the diner (H0002)."""
    from PIL import Image

    from ereport.grease_photos import attach
    from fog import haulers
    from identity import accounts
    with psycopg.connect(db_url, autocommit=True) as conn:
        hid, dev = conn.execute("SELECT a.hauler_id, d.id FROM web_accounts a, fog_devices d JOIN fog_establishments "
                                "e ON e.id = d.establishment_id WHERE a.username = 'badger' AND e.licence = 'H0001'"
                                ).fetchone()
        ids = {}
        for n, ago in ((1, 3), (2, 2)):
            ids[f"K-{n}"] = haulers.file_report(conn, hid, dev, {
                "date": (today - timedelta(days=ago)).isoformat(), "gallons": "900", "fog_depth_in": "4",
                "solids_depth_in": "3", "receiving_facility": "Palmyra WWTP", "manifest": f"K-{n}"},
                Actor("badger", "web"), today)["id"]
        buf = io.BytesIO()
        Image.new("RGB", (30, 20), (1, 2, 3)).save(buf, "PNG")
        ids["photo"] = attach(conn, hid, ids["K-1"], buf.getvalue(), max_bytes=1 << 20, max_pixels=10_000,
                              actor=Actor("badger", "web"))["id"]
        accounts.add(conn, "diner", "Dee Diner", None, PASSWORD, actor=ADMIN, kind="grease-establishment",
                     establishment="H0002", portal={"email": "dee@diner.example"})
    return ids


def _form(html: str, form_id: str) -> dict:
    part = html.split(f'id="{form_id}"', 1)[1].split("</form>", 1)[0]
    return {"_csrf_token": re.search(r'name="_csrf_token" value="([^"]+)"', part).group(1),
            "_form_key": re.search(r'name="_form_key" value="([^"]+)"', part).group(1)}


def test_an_establishment_confirms_and_disputes_its_reports_and_sees_only_its_own(db, tmp_path, mail):
    from ereport.invitations import InviteLinks, invite_establishment
    from ereport.mail import Mailer
    from foundation import secrets
    two_users(db.url)
    g = grease_village(db.url)
    ids = _reports(db.url, g["today"])
    cafe = g["establishments"]["H0001"]
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "sewer@palmyra.example")) as c:
        links = InviteLinks(secrets.load_or_create(tmp_path)["keys"]["portal_invites"], "http://127.0.0.1", 86400.0)
        with psycopg.connect(db.url, autocommit=True) as conn:
            with pytest.raises(Exception, match="no establishment with licence 'H9999'"):
                invite_establishment(conn, "H9999", "x@cafe.example", "X", actor=ADMIN, links=links,
                                     mailer=Mailer(mail.url("x@example.com")), utility="Village of Palmyra")
            invite_establishment(conn, "H0001", "carla@cafe.example", "Carla Chef", actor=ADMIN, links=links,
                                 mailer=Mailer(mail.url("x@example.com", "sewer@palmyra.example")),
                                 utility="Village of Palmyra")
        msg = wait_mail(mail, "carla@cafe.example")[0]
        assert "confirm your grease pump-outs" in msg["subject"] and "Corner Cafe" in msg["body"]
        link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", msg["body"]).group(1)
        page = c.get(link)
        assert page.status_code == 200 and "to confirm or dispute the pump-outs" in page.text
        r = c.post(link + "/accept", data={"_csrf_token": csrf_of(page.text), "username": "carla",
                                           "password": "a new long password", "password_again": "a new long password",
                                           "code": ""}, follow_redirects=False)
        assert r.status_code == 303, r.text[:500]
        c.cookies.clear()
        p = c.get("/login")
        r = c.post("/login", data={"username": "carla", "password": "a new long password", "next": "/",
                                   "_csrf_token": csrf_of(p.text)})
        assert str(r.url).endswith("/portal/kitchen"), (r.url, r.text[:300])
        assert "Corner Cafe" in r.text and "K-1" in r.text and "K-2" in r.text and "L-BAKERY-1" not in r.text
        assert c.get(f"/portal/kitchen/photos/{ids['photo']}").headers["content-type"] == "image/png"
        # a dispute needs its reason; then confirm K-2, dispute K-1
        home = c.get("/portal/kitchen").text
        r = c.post(f"/portal/kitchen/reports/{ids['K-1']}/dispute", data={**_form(home, f"dispute-{ids['K-1']}"),
                                                                         "reason": "  "}, follow_redirects=False)
        assert r.status_code == 400 and "reason: say what is wrong with the report" in r.text
        r = c.post(f"/portal/kitchen/reports/{ids['K-2']}/confirm", data=_form(home, f"confirm-{ids['K-2']}"),
                   follow_redirects=False)
        assert r.status_code == 303 and "done=confirmed" in r.headers["location"]
        home = c.get("/portal/kitchen").text
        r = c.post(f"/portal/kitchen/reports/{ids['K-1']}/dispute", data={
            **_form(home, f"dispute-{ids['K-1']}"), "reason": "Nobody came that day; the lid was never opened"},
            follow_redirects=False)
        assert r.status_code == 303
        home = c.get(r.headers["location"]).text
        assert "the pump-out of manifest K-1 is disputed" in home and "Nobody came that day" in home
        assert 'id="confirm-' not in home
        # a second verdict on K-1: refused, naming the first
        token = csrf_of(home)
        r = c.post(f"/portal/kitchen/reports/{ids['K-1']}/confirm", data={"_csrf_token": token, "_form_key": "q" * 22},
                   follow_redirects=False)
        assert r.status_code == 400 and "the pump-out of manifest K-1 was disputed already (on " in r.text
        assert "by carla): nothing was saved" in r.text
        # the cafe's account: not the office's, not the hauler's, not an industrial user's pages
        for path in ("/", f"/grease/{cafe}", "/portal/grease", "/portal", f"/grease/photos/{ids['photo']}"):
            assert c.get(path, follow_redirects=False).status_code in (403, 404), path
        # the diner: none of the cafe's objects
        signin(c, "diner")
        home = c.get("/portal/kitchen")
        assert "Dockside Diner" in home.text and "K-1" not in home.text and "Corner Cafe" not in home.text
        assert c.get(f"/portal/kitchen/photos/{ids['photo']}").status_code == 404
        for verb in ("confirm", "dispute"):
            r = c.post(f"/portal/kitchen/reports/{ids['K-2']}/{verb}", data={"_csrf_token": csrf_of(home.text),
                                                                             "_form_key": "d" * 22, "reason": "x"},
                       follow_redirects=False)
            assert r.status_code == 404 and "K-2" not in r.text
        # a hauler's account: not an establishment's pages
        signin(c, "badger")
        assert c.get("/portal/kitchen", follow_redirects=False).status_code == 403
        assert c.get(f"/portal/kitchen/photos/{ids['photo']}", follow_redirects=False).status_code == 403
        # the coordinator: the dispute on the establishment's page, the confirmation marked
        signin(c, "coord")
        page = c.get(f"/grease/{cafe}").text
        assert "Pump-outs the establishment disputes (1)" in page
        assert "manifest K-1 by Badger Grease Service: “Nobody came that day; the lid was never opened” (carla" in page
        assert "confirmed by the establishment" in page
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT p.manifest, v.verdict, v.given_by FROM fog_pumpout_verdicts v JOIN fog_pumpouts p "
                            "ON p.id = v.pumpout_id ORDER BY p.manifest").fetchall() == \
            [("K-1", "disputed", "carla"), ("K-2", "confirmed", "carla")]
