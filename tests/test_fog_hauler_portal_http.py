"""The grease haulers in the portal, in process against the real database and a real SMTP
server (``tests/hauler_support.py``): a hauler's person invited from the portal's people page
signs up and lands on the hauler's pages; a pump-out report through the form as served (the
date not after today, a manifest number twice refused naming the first, a double submission
stored once) with its findings on its page; the coordinator hires a hauler for a device; and
the tenancy: another hauler's account, and a hauler's account with an industrial user's
object ids, on every route of the application (403 or 404, never the other's data), and an
industrial user's account refused the hauler's pages."""

from __future__ import annotations

import re
from datetime import timedelta

import psycopg
import pytest

from hauler_support import BADGER, LAKESHORE, grease_village
from identity import roles
from portal_support import PASSWORD, person, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, form_key, mail, signin, wait_mail  # noqa: F401,E402 (fixtures)
from test_portal_tenancy_http import _routes  # noqa: E402


def _report(c, device: int, **fields):
    page = c.get("/portal/grease/report")
    assert page.status_code == 200, page.text[:500]
    data = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "device": str(device),
            "gallons": "950", "fog_depth_in": "4", "solids_depth_in": "3", "receiving_facility": "Palmyra WWTP",
            "manifest": "B-1", **fields}
    return c.post("/portal/grease/reports", data=data, follow_redirects=False), data


def test_a_haulers_person_is_invited_signs_up_and_lands_on_the_haulers_pages(db, tmp_path, mail):
    two_users(db.url)
    grease_village(db.url)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "sewer@palmyra.example"),
                       public_url="http://127.0.0.1") as c:
        signin(c, "coord")
        page = c.get("/portal-people")
        assert "Grease haulers" in page.text and "Badger Grease Service (licence WI-GH-101)" in page.text
        r = c.post("/portal-people/invite-hauler", data={
            "_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "hauler": "WI-GH-999",
            "email": "dan@badger.example", "full_name": "Dan Driver"})
        assert r.status_code == 400 and "no registered hauler &#39;WI-GH-999&#39;" in r.text
        r = c.post("/portal-people/invite-hauler", data={
            "_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "hauler": BADGER[1],
            "email": "dan@badger.example", "full_name": "Dan Driver"})
        assert r.status_code == 200 and "The invitation was mailed to dan@badger.example" in r.text, r.text[:800]
        msg = wait_mail(mail, "dan@badger.example")[0]
        assert "report grease pump-outs" in msg["subject"] and "Badger Grease Service" in msg["body"]
        link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", msg["body"]).group(1)
        c.cookies.clear()
        page = c.get(link)
        assert page.status_code == 200 and "Badger Grease Service" in page.text and "<svg" not in page.text
        form = {"_csrf_token": csrf_of(page.text), "username": "dan", "password": "a new long password",
                "password_again": "a new long password", "code": ""}
        r = c.post(link + "/accept", data=form, follow_redirects=False)
        assert r.status_code == 303 and "account-made" in r.headers["location"]
        with psycopg.connect(db.url) as conn:
            row = conn.execute("SELECT a.kind, h.licence, a.site_id, a.role, a.email FROM web_accounts a JOIN "
                               "fog_haulers h ON h.id = a.hauler_id WHERE a.username = 'dan'").fetchone()
        assert row == ("grease-hauler", BADGER[1], None, None, "dan@badger.example")
        c.cookies.clear()
        p = c.get("/login")
        r = c.post("/login", data={"username": "dan", "password": "a new long password", "next": "/",
                                   "_csrf_token": csrf_of(p.text)})
        assert r.status_code == 200 and str(r.url).endswith("/portal/grease"), (r.url, r.text[:500])
        assert "Badger Grease Service" in r.text and "Corner Cafe" in r.text and "Dockside Diner" not in r.text
        assert c.get("/", follow_redirects=False).status_code == 403
        assert c.get("/portal", follow_redirects=False).status_code == 403
        # the coordinator sees the account and can revoke it: its session ends at the next click
        signin(c, "coord")
        page = c.get("/portal-people")
        assert "Dan Driver" in page.text and 'id="revoke-dan"' in page.text
        c2_token = csrf_of(page.text)
        assert c.post("/portal-people/dan/revoke", data={"_csrf_token": c2_token},
                      follow_redirects=False).status_code == 303
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT disabled_at IS NOT NULL FROM web_accounts WHERE username = 'dan'").fetchone()[0]


def test_a_hauler_reports_a_pumpout_through_the_form_and_reads_its_findings(db, tmp_path):
    two_users(db.url)
    g = grease_village(db.url)
    cafe, diner = g["devices"]["H0001"], g["devices"]["H0002"]
    today = g["today"]
    with office_client(db, tmp_path) as c:
        signin(c, "badger")
        home = c.get("/portal/grease")
        assert "Corner Cafe" in home.text and "Dockside Diner" not in home.text and "L-BAKERY-1" not in home.text
        form = c.get("/portal/grease/report")
        assert f'value="{cafe}"' in form.text and f'value="{diner}"' not in form.text
        # one-line refusals, nothing stored
        r, _ = _report(c, cafe, date=(today + timedelta(days=1)).isoformat())
        assert r.status_code == 400 and f"date: {today + timedelta(days=1)} is after today ({today})" in r.text
        r, _ = _report(c, cafe, date="2026-13-01")
        assert r.status_code == 400 and "date: expected a date such as 2026-03-01, got &#39;2026-13-01&#39;" in r.text
        r, _ = _report(c, cafe, date=today.isoformat(), gallons="")
        assert r.status_code == 400 and "gallons: missing" in r.text
        assert 'value="Palmyra WWTP"' in r.text                      # the form keeps what was typed
        r, _ = _report(c, cafe, date=today.isoformat(), gallons="lots")
        assert r.status_code == 400 and "gallons: expected a number of gallons, got &#39;lots&#39;" in r.text
        r, _ = _report(c, cafe, date=today.isoformat(), fog_depth_in="deep")
        assert r.status_code == 400 and "FOG depth: expected a number of inches, got &#39;deep&#39;" in r.text
        # another hauler's device: not found, nothing said of it
        r, _ = _report(c, diner, date=today.isoformat())
        assert r.status_code == 404 and "Dockside" not in r.text
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT count(*) FROM fog_pumpouts").fetchone()[0] == 1
        # FOG 9 + solids 5 = 14 in of 48: pumped too late; 1,100 gal of 1,000: over capacity
        day = today - timedelta(days=2)
        r, data = _report(c, cafe, date=day.isoformat(), gallons="1100", fog_depth_in="9", solids_depth_in="5")
        assert r.status_code == 303, r.text[:800]
        where = r.headers["location"]
        assert re.search(r"/portal/grease/reports/\d+\?done=filed$", where)
        again = c.post("/portal/grease/reports", data=data, follow_redirects=False)      # the same form again
        assert again.status_code == 303 and again.headers["location"].startswith(where.split("?")[0])
        page = c.get(where)
        assert "Your pump-out report is recorded" in page.text
        assert "What the village finds in it (2)" in page.text
        assert ("pumped too late: FOG and solids 14 in of 48 in liquid depth (29%, the rule is 25%); the interval is "
                "now 45 days (was 90)") in page.text
        assert "1,100 gallons removed from a device that holds 1,000 gallons" in page.text
        with psycopg.connect(db.url) as conn:
            rows = conn.execute("SELECT p.source, p.recorded_by, h.licence, p.pumped_on FROM fog_pumpouts p JOIN "
                                "fog_haulers h ON h.id = p.hauler_id WHERE p.manifest = 'B-1'").fetchall()
        assert rows == [("portal", "badger", BADGER[1], day)]
        # the same manifest reported again (a new form): refused, naming the first
        r, _ = _report(c, cafe, date=today.isoformat(), manifest="B-1")
        assert r.status_code == 400
        assert (f"manifest B-1 is recorded already: Corner Cafe, GI-1, pumped on {day} by Badger Grease Service: "
                "nothing was saved") in r.text
        # a report in time, within what it holds, below 25 %: no finding
        r, _ = _report(c, cafe, date=today.isoformat(), manifest="B-2", gallons="900", fog_depth_in="2",
                       solids_depth_in="1")
        assert r.status_code == 303
        assert "No finding about this pump-out." in c.get(r.headers["location"]).text
        home = c.get("/portal/grease")
        assert "B-1" in home.text and "B-2" in home.text and "Your pump-out reports (2)" in home.text
        # the coordinator reads them on the establishment's page, with the finding
        signin(c, "coord")
        page = c.get(f"/grease/{g['establishments']['H0001']}")
        assert "B-1" in page.text and "(reported in the portal)" in page.text
        assert "pumped too late: FOG and solids 14 in" in page.text and "Hired haulers: Badger Grease Service." in page.text


def test_the_coordinator_hires_a_hauler_for_a_device_once(db, tmp_path):
    two_users(db.url)
    g = grease_village(db.url)
    bakery = g["establishments"]["H0003"]
    with office_client(db, tmp_path) as c:
        signin(c, "coord")
        page = c.get(f"/grease/{bakery}")
        assert 'id="assign-form"' in page.text
        data = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "hauler": BADGER[1],
                "device": "GI-1"}
        r = c.post(f"/grease/{bakery}/haulers", data=data, follow_redirects=False)
        assert r.status_code == 303 and "hired=GI-1" in r.headers["location"]
        page = c.get(f"/grease/{bakery}")
        assert "Hired haulers: Badger Grease Service." in page.text
        data["_form_key"] = form_key(page.text)
        r = c.post(f"/grease/{bakery}/haulers", data=data)
        assert r.status_code == 400 and "Badger Grease Service is assigned to Hilltop Bakery, GI-1 already (on " \
            in r.text and "by coord): nothing was saved" in r.text
        # the viewer has no form, and may not send it
        signin(c, "viewer")
        page = c.get(f"/grease/{bakery}")
        assert 'id="assign-form"' not in page.text
        assert c.post(f"/grease/{bakery}/haulers", data={"_csrf_token": csrf_of(page.text), "hauler": LAKESHORE[1]},
                      follow_redirects=False).status_code == 403
        # the hauler now sees the bakery's interceptor among those it was hired for
        signin(c, "badger")
        assert "Hilltop Bakery" in c.get("/portal/grease").text


def _photos(db_url: str, owners: dict) -> dict:
    """A photo attached to each report of ``owners`` (pump-out id -> its hauler's account), as
    the hauler attaches it; returns pump-out id -> photo id."""
    import io

    from PIL import Image

    from ereport.grease_photos import attach
    from foundation.actor import Actor
    out = {}
    with psycopg.connect(db_url, autocommit=True) as conn:
        for n, (pumpout, who) in enumerate(owners.items()):
            buf = io.BytesIO()
            Image.new("RGB", (20 + n, 20), (10, 20, 30)).save(buf, "PNG")
            hauler = conn.execute("SELECT hauler_id FROM web_accounts WHERE username = %s", (who,)).fetchone()[0]
            out[pumpout] = attach(conn, hauler, pumpout, buf.getvalue(), max_bytes=1 << 20, max_pixels=10_000,
                                  actor=Actor(who, "web"))["id"]
    return out


def test_tenancy_every_route_refuses_another_haulers_and_an_industrial_users_objects(db, tmp_path):
    """Lakeshore's account tries every route with Badger's object ids; Badger's account every
    route with an industrial user's; the industrial user's account the hauler's pages."""
    from ereport import drafts
    two_users(db.url)
    g = grease_village(db.url)
    cafe = g["devices"]["H0001"]
    person(db.url, "plater", "pat", "Pat Plater", signatory=False)
    with psycopg.connect(db.url, autocommit=True) as conn:
        pat = conn.execute("SELECT id, site_id FROM web_accounts WHERE username = 'pat'").fetchone()
        draft = drafts.create(conn, pat[1], pat[0], "self-monitoring", None)
    with office_client(db, tmp_path) as c:
        signin(c, "badger")
        r, _ = _report(c, cafe, date=g["today"].isoformat(), manifest="BADGER-SECRET-7")
        assert r.status_code == 303
        report = int(re.search(r"/reports/(\d+)", r.headers["location"]).group(1))
        with psycopg.connect(db.url) as conn:
            theirs = conn.execute("SELECT id FROM fog_pumpouts WHERE manifest = 'L-BAKERY-1'").fetchone()[0]
        photo_of = _photos(db.url, {report: "badger", theirs: "lakeshore"})
        values = {"draft_id": str(draft.id), "upload_id": "1", "submission_id": "1", "position": "1",
                  "invitation_id": "1", "token": "x.y.z", "key": "plater", "file_path": "css/office.css",
                  "number": "PAL-IU-2026-02", "site": "plater", "path": "office/lab/"}
        mine = {"/portal/grease", "/portal/grease/report"}
        # Lakeshore with Badger's report, establishment and device; Badger with Lakeshore's report
        # and establishment, the diner's device and the industrial user's draft
        for who, secrets, report_id, est, device in (
                ("lakeshore", ["BADGER-SECRET-7", "Corner Cafe", "Bea Badger"], report, "H0001", cafe),
                ("badger", ["Acme Plating", "Pat Plater", "L-BAKERY-1", "Hilltop Bakery", "Lee Lakeshore"],
                 theirs, "H0003", g["devices"]["H0002"])):
            routes = _routes(c, _Default({**values, "pumpout_id": str(report_id), "username": who,
                                          "establishment_id": str(g["establishments"][est]),
                                          "photo_id": str(photo_of[report_id])}))
            assert len([r for r in routes if r[2] == roles.HAULER]) == 6
            signin(c, who)
            token = csrf_of(c.get("/portal/grease").text)
            tried = 0
            for method, path, perm in routes:
                if perm == roles.PUBLIC:
                    continue
                form = {"_csrf_token": token, "device": str(device), "date": g["today"].isoformat(), "gallons": "1",
                        "fog_depth_in": "1", "solids_depth_in": "1", "receiving_facility": "X", "manifest": "Z-1",
                        "hauler": LAKESHORE[1], "reason": "x", "kind": "self-monitoring"}
                r = c.request(method, path, data=form if method == "POST" else None, follow_redirects=False)
                tried += 1
                if perm == roles.HAULER and method == "GET" and path in mine:
                    assert r.status_code == 200, (who, method, path, r.status_code)
                else:
                    assert r.status_code in (403, 404), (who, method, path, r.status_code, r.text[:300])
                for s in secrets:
                    assert s not in r.text, (who, method, path, s)
            assert tried >= 60
        # an industrial user's account: the hauler's pages are not its own
        signin(c, "pat")
        for path in ("/portal/grease", "/portal/grease/report", f"/portal/grease/reports/{report}"):
            r = c.get(path, follow_redirects=False)
            assert r.status_code == 403 and "BADGER-SECRET-7" not in r.text, (path, r.status_code)
        token = csrf_of(c.get("/portal").text)
        assert c.post("/portal/grease/reports", data={"_csrf_token": token, "device": str(cafe)},
                      follow_redirects=False).status_code == 403
    with psycopg.connect(db.url) as conn:       # nothing the others sent was stored
        assert conn.execute("SELECT count(*) FROM fog_pumpouts WHERE manifest = 'Z-1'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM fog_hauler_devices").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM portal_drafts").fetchone()[0] == 1


class _Default(dict):
    """Path values: those named, "1" for any other."""

    def __getitem__(self, key):
        return super().get(key, "1")
