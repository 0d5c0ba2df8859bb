"""The office over HTTP, in process (Litestar's test client) against the real database:
every route authorised, sessions, CSRF, the sign-in's rate limit
and lockout, the second factor, escaping, the error pages, one action one function (the audit
trail names the account), the pages' contents.

The browser tests (``tests/test_web_browser.py``) drive the same application in Chromium
through ``sewerwatch run``; these cover what a client can send that a browser would not.
"""

from __future__ import annotations

import json
import logging
import re
import time

import psycopg
import pyotp
import pytest

from foundation.actor import Actor
from identity import accounts, roles
from web.app import build_app
from web_support import ADMIN, PASSWORD, PEOPLE, add_people, cheap_hashes, csrf_of, office_client, sign_in, village

@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


#: Example values of the path parameters, to open every route.
PATH_VALUES = {"alert_id": "1", "letter_id": "1", "key": "plater", "token": "x.y.z", "file_path": "css/office.css",
               "upload_id": "1", "number": "PAL-IU-2026-02", "draft_id": "1", "submission_id": "1", "position": "1",
               "username": "coord", "invitation_id": "1", "violation_id": "1", "finding_id": "1", "notice_id": "1",
               "page": "1", "name": "ph", "run_id": "1", "site": "plater", "bill_id": "1", "inspection_id": "1",
               "photo_id": "1", "window_id": "1", "version": "1", "year": "2026", "publication_id": "1",
               "path": "office/lab/", "import_id": "1", "establishment_id": "1", "pumpout_id": "1",
               "contact_id": "1", "kind": "mailing", "batch_id": "1"}


def _routes(client):
    """(method, path with values, permission) of every route of the application."""
    app = client.litestar
    out = []
    for route in app.routes:
        for handler in route.route_handlers:
            path = route.path
            for name in re.findall(r"{(\w+):\w+}", path):
                path = re.sub(r"{" + name + r":\w+}", PATH_VALUES[name], path)
            for method in sorted(handler.http_methods - {"OPTIONS"}):   # Litestar's own OPTIONS answers
                out.append((method, path, handler.opt.get("permission")))
    return out


def test_every_route_names_a_permission_and_needs_a_session_but_the_sign_in_and_the_link(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        routes = _routes(c)
        assert len(routes) >= 14
        public = sorted({p for m, p, perm in routes if perm == roles.PUBLIC})
        assert public == ["/ack/x.y.z", "/calendar/feed/x.y.z", "/help", "/help/office/lab/", "/login", "/login/code",
                          "/portal/invite/x.y.z", "/portal/invite/x.y.z/accept", "/static/css/office.css"]   # the guide: no data
        assert [r for r in routes if r[2] != roles.PUBLIC and r[2] not in roles.PERMISSIONS] == []
        token = csrf_of(c.get("/login").text)
        for method, path, perm in routes:
            if perm == roles.PUBLIC:
                continue
            r = c.request(method, path, data={"_csrf_token": token, "note": "x"} if method == "POST" else None,
                          follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next="), (method, path, r.status_code)
    with psycopg.connect(db.url) as conn:            # nothing was done by the requests without a session
        assert conn.execute("SELECT acknowledged_by FROM alerts").fetchone()[0] is None
        assert conn.execute("SELECT count(*) FROM audit_log WHERE action LIKE 'alert-%%'").fetchone()[0] == 0


def test_roles_see_and_may_what_the_table_says(db, tmp_path):
    v = village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        for user, (name, role) in PEOPLE.items():
            c.cookies.clear()
            r = sign_in(c, user)
            assert r.status_code == 200 and "Acme Plating" in r.text and name in r.text, user
            may_ack = role in ("superintendent", "coordinator", "inspector")
            assert (f'id="ack-{v["alert"]}"' in r.text) == may_ack, user
            token = csrf_of(r.text)
            # the viewer and the clerk: refused, 403, nothing written
            if not may_ack:
                r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"_csrf_token": token, "note": "no"})
                assert r.status_code == 403 and "Not allowed for your role" in r.text and "Traceback" not in r.text
            r = c.post("/deadletters/replay", data={"_csrf_token": token, "ids": "1"})
            assert r.status_code == (200 if role in ("superintendent", "coordinator") else 403), user
        assert c.office.stats["forbidden"] == 2 + 3       # viewer, clerk acknowledging; three roles replaying
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT acknowledged_by FROM alerts").fetchone()[0] is None


def test_acknowledging_calls_the_same_function_as_the_cli_and_the_audit_names_the_account(db, tmp_path):
    v = village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        r = sign_in(c, "inspector")
        note = 'Called the plant <script>alert("x")</script>'
        r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"_csrf_token": csrf_of(r.text), "note": note,
                                                             "back": "today"})
        assert r.status_code == 200 and f"Alert #{v['alert']} is acknowledged" in r.text
        assert "Acknowledged by Ines Inspector" in r.text
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in r.text and '<script>alert("x")' not in r.text
        # a second acknowledgement changes nothing and says who did it
        r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"_csrf_token": csrf_of(r.text), "note": "again"})
        assert r.status_code == 409 and "had already been acknowledged by Ines Inspector" in r.text
    with psycopg.connect(db.url) as conn:
        row = conn.execute("SELECT state, acknowledged_by, ack_note FROM alerts").fetchone()
        audit = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'alert-acknowledged'").fetchall()
    assert row == ("acknowledged", "Ines Inspector", note)
    assert audit == [("inspector", {"from": "notified", "to": "acknowledged", "note": note, "via": "web",
                                    "by": "Ines Inspector"})]


def test_the_cli_acknowledgement_audits_the_operating_system_user(db):
    from alerts import store
    v = village(db)
    with psycopg.connect(db.url) as conn:
        store.acknowledge(conn, v["alert"], "Pat Jones", "on my way", actor=Actor("pjones-os", "cli"))
        assert conn.execute("SELECT actor, detail->>'via', detail->>'by' FROM audit_log WHERE action = "
                            "'alert-acknowledged'").fetchone() == ("pjones-os", "cli", "Pat Jones")


def test_a_form_without_its_csrf_token_is_refused(db, tmp_path):
    v = village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "super")
        for data in ({"note": "forged"}, {"note": "forged", "_csrf_token": "not-the-token"}):
            r = c.post(f"/alerts/{v['alert']}/acknowledge", data=data)
            assert r.status_code == 403 and "This form could not be accepted" in r.text
        r = c.post("/login", data={"username": "super", "password": PASSWORD})     # the sign-in form too
        assert r.status_code == 403
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT acknowledged_by FROM alerts").fetchone()[0] is None


def test_the_sign_in_gives_a_new_csrf_token_and_the_old_one_is_refused(db, tmp_path):
    """A CSRF cookie planted in the browser before the sign-in does not outlive it: the sign-in's
    response deletes it, the next page sets a new one; a form with the old token is refused."""
    from web import sessions
    v = village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        page = c.get("/login")
        before, old_token = c.cookies.get(sessions.CSRF_COOKIE), csrf_of(page.text)
        r = c.post("/login", data={"username": "super", "password": PASSWORD, "next": "/", "_csrf_token": old_token},
                   follow_redirects=False)
        assert r.status_code == 303
        assert any(h.startswith(sessions.CSRF_COOKIE + '=""') or h.startswith(sessions.CSRF_COOKIE + "=;")
                   for h in r.headers.get_list("set-cookie")), r.headers.get_list("set-cookie")
        c.cookies.delete(sessions.CSRF_COOKIE)          # as the browser does with the expired cookie
        body = c.get("/alerts").text
        after = c.cookies.get(sessions.CSRF_COOKIE)
        assert before and after and after != before
        # a token known from before the sign-in (one an attacker planted with its cookie) is worth nothing now
        r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"note": "planted", "_csrf_token": old_token})
        assert r.status_code == 403
        r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"note": "mine", "_csrf_token": csrf_of(body)},
                   follow_redirects=False)
        assert r.status_code in (200, 303), r.text[:300]
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT ack_note FROM alerts").fetchone()[0] == "mine"


def test_site_names_and_notes_are_shown_as_text(db, tmp_path):
    village(db, name='Acme <script>alert("site")</script> Plating')
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "super")
        for path in ("/", "/alerts", "/sites/plater", "/sensors", "/today/live"):
            body = c.get(path).text
            assert "Acme &lt;script&gt;alert(&#34;site&#34;)&lt;/script&gt; Plating" in body, path
            assert '<script>alert("site")' not in body, path
            assert re.findall(r"<script[^>]*>", body) in ([], ['<script src="/static/js/live.js" defer>']), path


def _session(c, value: str) -> None:
    """Send ``value`` as the session cookie (and only it)."""
    for cookie in list(c.cookies.jar):
        if cookie.name == "sewerwatch_session":
            c.cookies.jar.clear(cookie.domain, cookie.path, cookie.name)
    c.cookies.set("sewerwatch_session", value, domain="127.0.0.1")


def test_a_new_session_id_at_sign_in_and_the_old_one_is_gone(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        _session(c, "f" * 64)                                     # planted before the sign-in
        sign_in(c, "viewer")
        new = c.cookies.get("sewerwatch_session")
        assert new and new != "f" * 64 and len(new) == 64
        assert c.get("/", follow_redirects=False).status_code == 200
        first = new
        c.cookies.clear()
        sign_in(c, "viewer")
        second = c.cookies.get("sewerwatch_session")
        assert second != first
        c.cookies.clear()
        _session(c, first)                                        # the earlier session still stands (its own)
        assert c.get("/", follow_redirects=False).status_code == 200
        _session(c, second)
        token = csrf_of(c.get("/").text)
        assert c.post("/logout", data={"_csrf_token": token}, follow_redirects=False).status_code == 303
        _session(c, second)                                       # signed out: the id is worth nothing
        r = c.get("/", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_idle_and_absolute_expiry(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path, session_idle_min=1.5 / 60) as c:
        sign_in(c, "viewer")
        for _ in range(3):                                        # clicks keep it alive
            time.sleep(0.5)
            assert c.get("/sensors", follow_redirects=False).status_code == 200
        deadline = time.monotonic() + 6
        r = None
        while time.monotonic() < deadline:     # the page's own refreshes do not (passive)
            time.sleep(0.5)
            r = c.get("/today/live", headers={"X-Sewerwatch-Live": "1"}, follow_redirects=False)
            if r.status_code == 401:
                break
        assert r.status_code == 401 and r.json() == {"signed_out": True, "why": "idle"}
        r = c.get("/", follow_redirects=True)
        assert "Sign in" in r.text
    with office_client(db, tmp_path, session_max_h=1.0 / 3600) as c:
        sign_in(c, "viewer")
        time.sleep(1.2)
        r = c.get("/alerts", follow_redirects=True)
        assert "hours after you signed in" in r.text and 'id="sign-in"' in r.text


def test_a_page_that_leaves_the_session_as_it_was_does_not_rewrite_it(db, tmp_path):
    """Litestar writes the session back at every response; the office writes it only when it
    changed (a sign-in, a click past the idle clock's step: web.sessions.IDLE_STEP_S)."""
    from web import sessions
    village(db)
    add_people(db.url)
    store = tmp_path / "web-sessions"
    with office_client(db, tmp_path) as c:
        sign_in(c, "viewer")
        files = list(store.iterdir())              # the store's file of the one session
        assert len(files) == 1, files
        written = files[0].stat().st_mtime_ns, files[0].read_bytes()
        for path in ("/", "/sensors", "/"):
            r = c.get(path, follow_redirects=False)
            assert r.status_code == 200
            assert not [v for v in r.headers.get_list("set-cookie") if v.startswith(sessions.COOKIE + "=")]
        assert (files[0].stat().st_mtime_ns, files[0].read_bytes()) == written
        assert c.get("/", follow_redirects=False).status_code == 200          # still signed in
    # idle after 4 s, the step a hundredth of it: a click 1 s after signing in is past the step
    # and inside the idle time even on a loaded machine (1 s idle timed the session out there)
    with office_client(db, tmp_path, session_idle_min=4.0 / 60) as c:
        for old in store.iterdir():
            old.unlink()
        sign_in(c, "viewer")
        files = list(store.iterdir())
        before = files[0].read_bytes()
        time.sleep(1.0)
        assert c.get("/sensors", follow_redirects=False).status_code == 200
        assert files[0].read_bytes() != before                              # the click recorded


def test_reset_password_disable_and_role_end_the_sessions_at_the_next_request(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        for change, words in ((lambda conn: accounts.reset_password(conn, "coord", PASSWORD + "!", actor=ADMIN),
                               "was changed"),
                              (lambda conn: accounts.set_role(conn, "coord", "viewer", actor=ADMIN), "was changed"),
                              (lambda conn: accounts.disable(conn, "coord", actor=ADMIN), "has been disabled")):
            c.cookies.clear()
            with psycopg.connect(db.url) as conn:
                accounts.enable(conn, "coord", actor=ADMIN)
                pw = PASSWORD + "!" if accounts.get(conn, "coord").session_epoch > 1 else PASSWORD
            r = sign_in(c, "coord", pw)
            assert "Cora Coordinator" in r.text
            with psycopg.connect(db.url) as conn:
                change(conn)
            r = c.get("/alerts", follow_redirects=True)
            assert words in r.text and 'id="sign-in"' in r.text
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT detail->>'why' FROM audit_log WHERE action = 'logout' ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["changed", "changed", "disabled"]


def test_sign_ins_rate_limited_and_an_account_locked_after_repeated_failures(db, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="sewerwatch")
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path, lockout_after=3, lockout_min=10, login_per_min=4) as c:
        codes = [sign_in(c, "clerk", "wrong password!").status_code for _ in range(3)]
        assert codes == [401, 401, 401]                        # the third failure locks, and says nothing
        r = sign_in(c, "clerk")                                # the right password: still locked from here
        assert r.status_code == 401 and "The user name or the password is not right." in r.text
        r = sign_in(c, "super")                                # the fifth attempt from this address
        assert r.status_code == 429 and "Too many sign-in attempts" in r.text
    with psycopg.connect(db.url) as conn:
        acts = conn.execute("SELECT action, detail->>'reason' FROM audit_log WHERE object = 'account:clerk' AND "
                            "action <> 'account-added' "
                            "ORDER BY id").fetchall()
        assert acts[:4] == [("login-failed", "wrong password"), ("login-failed", "wrong password"),
                            ("login-failed", "wrong password"), ("account-locked", None)]
        assert acts[4] == ("login-failed", "locked from this address")
        accounts.enable(conn, "clerk", actor=ADMIN)            # unlocks
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "account clerk LOCKED from" in logged and "rate limited" in logged
    assert PASSWORD not in logged and "wrong password!" not in logged
    with office_client(db, tmp_path) as c:
        assert "Cliff Clerk" in sign_in(c, "clerk").text


def test_second_factor_for_the_roles_that_issue_notices(db, tmp_path):
    village(db)
    add_people(db.url)
    with psycopg.connect(db.url) as conn:
        acc, uri = accounts.totp_enable(conn, "super", actor=ADMIN)
        with pytest.raises(Exception, match="roles that can issue notices"):
            accounts.totp_enable(conn, "clerk", actor=ADMIN)
    secret = re.search(r"secret=([A-Z2-7]+)", uri).group(1)
    with office_client(db, tmp_path) as c:
        r = sign_in(c, "super")
        assert 'id="code"' in r.text and "Sam Super" not in r.text
        assert c.get("/", follow_redirects=False).status_code == 303     # no session yet
        r = c.post("/login/code", data={"_csrf_token": csrf_of(r.text), "code": "000000", "next": "/"})
        assert r.status_code == 401 and "not right" in r.text
        code = pyotp.TOTP(secret).now()
        r = c.post("/login/code", data={"_csrf_token": csrf_of(r.text), "code": code, "next": "/"})
        assert r.status_code == 200 and "Sam Super" in r.text
        c.cookies.clear()
        r = sign_in(c, "super")
        r = c.post("/login/code", data={"_csrf_token": csrf_of(r.text), "code": code, "next": "/"})
        assert r.status_code == 401                            # a code works once


def test_error_pages_say_what_to_do_never_a_traceback(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "super")
        r = c.get("/nowhere")
        assert r.status_code == 404 and "There is nothing here" in r.text
        r = c.get("/alerts/999999")
        assert r.status_code == 404 and "Traceback" not in r.text
        r = c.get("/sites/nosuchsite")
        assert r.status_code == 404
        r = c.get("/login?next=https://evil.example/")              # no open redirect
        assert 'value="/"' in r.text
    from dataclasses import replace

    from web.office import Office
    db_down = replace(db, urls={**db.urls, "owner": "postgresql://nobody:x@127.0.0.1:1/none"})
    with office_client(db_down, tmp_path) as c:
        r = c.get("/login")
        assert r.status_code == 200                               # the sign-in page needs no database
        r = sign_in(c, "super")
        assert r.status_code == 503 and "The database cannot be reached" in r.text and "Traceback" not in r.text
    assert Office  # the class the page is made from


def test_today_shows_limits_closeness_episodes_and_banners(db, tmp_path):
    v = village(db)
    add_people(db.url)
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (now(), %s, 6.4), "
                     "(now() - interval '20 minutes', %s, 70.0)", (v["ids"]["ph"], v["ids"]["temp"]))
        conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, peak, "
                     "limit_value, unit, source) SELECT site_id, id, 'ph', 'ph-min', 'palmyra-wi', 'Village of Palmyra "
                     "Code §13.48(2)(g)', '2026-06-01T15:30:00Z', 3.47, 6.0, 'pH', 'stream' FROM sensors WHERE id = %s",
                     (v["ids"]["ph"],))
    status = {"running": True, "state": "degraded", "problems": {"mqtt-network": "broker disconnected for 12 s"}}
    with office_client(db, tmp_path, status=status) as c:
        body = sign_in(c, "viewer").text
    text = re.sub(r"<[^>]+>", " ", body)
    text = re.sub(r"\s+", " ", text)
    # palmyra-wi §13.48(2)(g): pH lower than 6.0 or higher than 9.0; 6.4 is 0.40 pH inside the lower limit
    assert "6.40 pH" in text and "Violation if lower than 6.00 pH or higher than 9.00 pH" in text
    assert "0.40 pH inside the limit" in text and "Village of Palmyra Code §13.48(2)(g)" in text
    # §13.48(2)(a): temperature higher than 150 °F; 70 °F is 80 °F inside; 20 minutes old: stale
    assert "70.0 °F" in text and "80.0 °F inside the limit" in text and "20 min ago" in text
    assert "Violation since 10:30:00 CDT (pH, minimum): peak 3.47 pH, limit 6.00 pH" in text
    assert "sewerwatch run is degraded: mqtt-network." in text and "broker disconnected for 12 s" in text
    assert "Open alerts 1" in text and "lower than 6.00 pH" in text


def test_the_database_down_is_a_banner_on_the_live_part(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "viewer")
        c.office.pool.close()
        from psycopg_pool import ConnectionPool
        c.office.pool = ConnectionPool("postgresql://nobody:x@127.0.0.1:1/none", min_size=0, max_size=1, timeout=1.0,
                                       open=True)
        r = c.get("/today/live", headers={"X-Sewerwatch-Live": "1"})
    # the session's account cannot be read either: the request says the database is down
    assert r.status_code == 503 and "The database cannot be reached" in r.text


def test_the_today_page_reads_its_users_meanwhile_and_the_database_down_is_its_banner(db, tmp_path):
    """The Today page reads its users, episodes and alerts on a second connection while it
    streams its sensors (web.office.Office.read_meanwhile): the same page as one connection gives; and when the
    database goes down between the sign-in and the page, the page is a banner, never an error."""
    from web.pages import today
    from web.queries import today as today_q
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "viewer")
        both = today.gather(c.office)["today"]
        one = c.office.read(lambda conn: today_q.read(conn, base=c.office.prefix))
        def seen(page):
            return [(s.key, s.state, s.row_html, [(x.name, x.value_text, x.limits_text, x.margin_text, x.episode)
                                                  for x in s.sensors]) for s in page["sites"]]
        assert seen(both) == seen(one)
        assert both["sites"] and any(s.sensors for s in both["sites"])
        c.office.pool.close()
        from psycopg_pool import ConnectionPool
        c.office.pool = ConnectionPool("postgresql://nobody:x@127.0.0.1:1/none", min_size=0, max_size=2, timeout=1.0,
                                       open=True)
        c.office._cache.clear()
        ctx = today.gather(c.office)
    assert ctx["today"] is None
    assert any("database" in (b["title"] + b["text"]).lower() for b in ctx["banners"]), ctx["banners"]


def test_site_page_chart_draws_limits_and_episodes(db, tmp_path):
    v = village(db)
    add_people(db.url)
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, end_time,"
                     " peak, limit_value, unit, days_of_violation, source) SELECT site_id, id, 'ph', 'ph-min', "
                     "'palmyra-wi', 'Village of Palmyra Code §13.48(2)(g)', now() - interval '30 minutes', now() - "
                     "interval '20 minutes', 4.1, 6.0, 'pH', 1, 'stream' FROM sensors WHERE id = %s", (v["ids"]["ph"],))
    with office_client(db, tmp_path, grafana_url="http://grafana.village.example:3000") as c:
        sign_in(c, "viewer")
        body = c.get("/sites/plater").text
        week = c.get("/sites/plater?range=7d").text
        custom = c.get("/sites/plater?since=2026-06-01&until=2026-06-02").text
    svgs = re.findall(r"<svg [^>]*class=\"chart\".*?</svg>", body, re.S)
    assert len(svgs) == 2                                     # ph and temp
    ph = next(s for s in svgs if "ph (ph)" in s)
    assert "violation if lower than 6 pH · Village of Palmyra Code §13.48(2)(g)" in ph
    assert "violation if higher than 9 pH" in ph and ph.count('class="episode"') == 1
    assert ph.count('class="line"') >= 1 and "no readings in this range" not in ph
    assert "no readings in this range" in next(s for s in svgs if "temp" in s)
    assert "SIC" in body and "3471" in body and ">1<" in body                 # one day of violation
    assert "http://grafana.village.example:3000/d/sewerwatch-site?var-site=plater" in body
    assert "last 7 days" in week and "2026-06-01 00:00 CDT to 2026-06-03 00:00 CDT" in custom


def test_dead_letters_listed_shown_and_replayed_as_the_account(db, tmp_path):
    import paho  # noqa: F401 - the replay decodes MQTT payloads
    village(db)
    add_people(db.url)
    with psycopg.connect(db.url) as conn:
        lid = conn.execute("INSERT INTO dead_letters (source, topic, payload, reason) VALUES ('mqtt', "
                           "'sewerwatch/plater/ph', %s, 'unknown sensor') RETURNING id",
                           (b'{"t": "2026-06-01T12:00:00Z", "v": 7.3, "u": "pH"}',)).fetchone()[0]
        conn.execute("INSERT INTO dead_letters (source, topic, payload, reason) VALUES ('mqtt', 'junk', %s, "
                     "'not JSON <b>bold</b>')", (b"\xff\xfe",))
    with office_client(db, tmp_path) as c:
        sign_in(c, "coord")
        body = c.get("/deadletters").text
        assert "unknown sensor" in body and "not JSON &lt;b&gt;bold&lt;/b&gt;" in body and "2 matches" in body
        one = c.get(f"/deadletters/{lid}").text
        assert "&#34;v&#34;: 7.3" in one and "(text)" in one
        r = c.post("/deadletters/replay", data={"_csrf_token": csrf_of(one), "ids": str(lid)})
        assert r.status_code == 200 and f"#{lid} sewerwatch/plater/ph: stored 1 reading (1 new)" in r.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT replayed_at IS NOT NULL FROM dead_letters WHERE id = %s", (lid,)).fetchone()[0]
        actor, detail = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'deadletters-replay'"
                                     ).fetchone()
    assert actor == "coord" and detail["via"] == "web" and detail["ids"] == [lid] and detail["new"] == 1


def test_behind_a_proxy_path_every_link_and_redirect_has_it(db, tmp_path):
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path, public_url="https://sewer.example.org/sewerwatch",
                       base_url="https://127.0.0.1") as c:      # the proxy speaks https to the browser
        r = c.get("/alerts", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/sewerwatch/login?next=/alerts"
        page = c.get("/login")
        assert 'href="/sewerwatch/static/css/office.css"' in page.text and 'action="/sewerwatch/login"' in page.text
        r = c.post("/login", data={"username": "viewer", "password": PASSWORD, "next": "/alerts",
                                   "_csrf_token": csrf_of(page.text)}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/sewerwatch/alerts"
        assert "Secure" in r.headers["set-cookie"]                   # https: the session cookie is Secure
        body = c.get("/").text
        assert 'data-url="/sewerwatch/today/live"' in body and 'href="/sewerwatch/sites/plater"' in body
        assert 'href="/sites/' not in body and 'action="/alerts' not in body


def test_above_twelve_users_those_in_compliance_are_one_escaped_row_each(db, tmp_path):
    """Today's rows for the users in compliance are made in Python (web.queries.today.SiteView.row),
    not by the template: their names and keys are escaped there and their links carry the proxy path."""
    from support import add_site_and_sensors
    from web.queries.today import CARDS_MAX
    village(db)                                            # plater: an open alert, so a card
    add_people(db.url)
    keys = [f"iu{i:02d}" for i in range(CARDS_MAX + 1)]
    with psycopg.connect(db.url) as conn:
        for k in keys:
            ph = add_site_and_sensors(db.url, k, {"ph": ("ph", "pH")})["ph"]
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (now() - interval '5 s', %s, 7.25)", (ph,))
        conn.execute("UPDATE sites SET name = 'Bob''s <b>Bakery</b> & Sons' WHERE key = 'iu03'")
    add_site_and_sensors(db.url, "empty", {})            # no sensors: judged all the same (a card)
    with office_client(db, tmp_path, public_url="https://sewer.example.org/sw", base_url="https://127.0.0.1") as c:
        sign_in(c, "super")
        body = c.get("/").text
    rows = re.findall(r'<tr id="site-(iu\d\d)"><th scope="row"><a href="/sw/sites/(iu\d\d)">([^<]*)</a></th>'
                      r'<td>([^<]*)</td></tr>', body)
    assert sorted(r[0] for r in rows) == keys and all(a == b for a, b, _, _ in rows), rows
    assert dict((k, name) for k, _, name, _ in rows)["iu03"] == "Bob&#39;s &lt;b&gt;Bakery&lt;/b&gt; &amp; Sons"
    assert all(cell.startswith("ph 7.25 pH · ") and cell.endswith(" ago") for _, _, _, cell in rows), rows
    assert 'id="site-plater"' in body and '<article class="card site' in body   # the one needing attention
    assert re.search(r'<article class="card site state-no-data" id="site-empty".*?No sensors configured', body, re.S)


def test_the_cards_made_as_the_users_are_judged_are_the_templates_own(db, tmp_path):
    """Today makes each user's card as its last sensor arrives (web.queries.today.read with the
    template's macro): the page is the same as the template making the cards itself."""
    from web.app import templates
    from web.queries import today as today_q
    village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        office = c.office
        env = templates(office)
        card = env.get_template("_site_card.html").module.site_card
        now = office.read(lambda conn: conn.execute("SELECT now()").fetchone()[0])
        made = office.read(lambda conn: today_q.read(conn, now=now, tz=office.tz, card=card))
        plain = office.read(lambda conn: today_q.read(conn, now=now, tz=office.tz))
    assert made["sites"] and all(s.card_html for s in made["sites"]) and not any(s.card_html for s in plain["sites"])
    tpl = env.get_template("today_live.html")
    ctx = {"banners": [], "generated": 0, "alerts_full_max": 6, "account": None, "csrf_input": ""}
    html = tpl.render(today=made, **ctx)
    assert html == tpl.render(today=plain, **ctx)
    assert 'class="card site state-' in html and "Violation if" in html


def test_local_times_name_the_offset_in_the_repeated_hour():
    from web import formats
    # 2026-11-01: US daylight saving time ends at 02:00 CDT; 01:00-02:00 happens twice
    assert formats.local("2026-11-01T06:30:00Z", "America/Chicago") == "2026-11-01 01:30:00 CDT (UTC−05:00)"
    assert formats.local("2026-11-01T07:30:00Z", "America/Chicago") == "2026-11-01 01:30:00 CST (UTC−06:00)"
    assert formats.local("2026-06-01T15:30:00Z", "America/Chicago") == "2026-06-01 10:30:00 CDT"
    assert formats.num(1250.4, "gpm") == "1,250 gpm" and formats.num(68.04, "degF") == "68.0 °F"
    assert formats.age(4) == "4 s" and formats.age(3 * 3600 + 300) == "3 h 5 min"


def test_a_date_typed_into_a_form_is_read_or_refused_naming_the_field():
    from datetime import date

    from foundation.errors import InputError
    from web import formats
    assert formats.form_date(" 2026-04-30 ", "paid on") == date(2026, 4, 30)
    assert formats.form_date("", "paid on", date(2026, 5, 1)) == date(2026, 5, 1)
    with pytest.raises(InputError, match=r"^issue date: a date is needed \(such as 2026-04-30\)$"):
        formats.form_date("  ", "issue date")
    with pytest.raises(InputError, match=r"^received on: expected a date such as 2026-04-30, got '30/04/2026'$"):
        formats.form_date("30/04/2026", "received on", date(2026, 5, 1))


def test_the_permission_table(db):
    assert roles.may("inspector", "alerts.acknowledge") and not roles.may("clerk", "alerts.acknowledge")
    assert not any(roles.may("viewer", p) for p in roles.PERMISSIONS if p != "view")
    assert roles.may("clerk", "bills.issue") and not roles.may("inspector", "bills.issue")
    assert roles.second_factor_roles() == ("superintendent", "coordinator")
    assert build_app  # noqa: the application is built from these (tests above)
    assert json  # noqa
