"""Inviting an industrial user's people through the portal's pages, in process against the real
database and a real SMTP server: an invitation signed, expiring, used once and revocable; an
expired or withdrawn one refused; a header that cannot be steered through a name; the same
invitation sent twice mailing once, and a new one to the same address replacing the one still
open. ``tests/test_portal_browser.py`` walks the same flow in Chromium."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import psycopg
import pytest

from portal_support import PASSWORD, code, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, mail, wait_mail, signin, form_key, no_more_mail  # noqa: F401 (fixtures)


def test_invitation_mailed_signed_single_use_and_revocable(db, tmp_path, mail):
    two_users(db.url)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "sewer@palmyra.example"),
                       public_url="http://127.0.0.1") as c:
        signin(c, "coord")
        page = c.get("/portal-people")
        r = c.post("/portal-people/invite", data={
            "_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "site": "plater",
            "email": "r.alvarez@acme.example",
            "full_name": "Rosa Alvarez", "signatory": "yes", "title": "Plant manager", "agreement_on": ""})
        assert r.status_code == 400 and "subscriber agreement" in r.text         # a signatory needs it
        r = c.post("/portal-people/invite", data={
            "_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "site": "plater",
            "email": "r.alvarez@acme.example",
            "full_name": "Rosa Alvarez", "signatory": "yes", "title": "Plant manager",
            "agreement_on": datetime.now(timezone.utc).date().isoformat()})
        assert r.status_code == 200 and "The invitation was mailed to r.alvarez@acme.example" in r.text
        msg = wait_mail(mail, "r.alvarez@acme.example")[0]
        assert msg["to"] == ["r.alvarez@acme.example"] and "invitation" in msg["subject"]
        link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", msg["body"]).group(1)
        assert link not in r.text                                       # mailed: the page does not show it
        c.cookies.clear()
        page = c.get(link)
        assert page.status_code == 200 and "Acme Plating" in page.text and "<svg" in page.text
        secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', page.text).group(1)
        import pyotp
        form = {"_csrf_token": csrf_of(page.text), "username": "ralvarez", "password": "a new long password",
                "password_again": "a new long password", "code": "000000"}
        r = c.post(link + "/accept", data=form)
        assert r.status_code == 400 and "authenticator app is not right" in r.text
        form["code"] = pyotp.TOTP(secret).now()
        r = c.post(link + "/accept", data=form, follow_redirects=False)
        assert r.status_code == 303 and "account-made" in r.headers["location"]
        r = c.post(link + "/accept", data=form)                                     # a link works once
        assert r.status_code == 410 and "used already" in r.text
        assert c.get(link[:-3] + "AAA").status_code == 410              # a changed token is refused
        with psycopg.connect(db.url) as conn:
            row = conn.execute("SELECT kind, site_id = (SELECT id FROM sites WHERE key = 'plater'), signatory, email, "
                               "totp_secret = %s FROM web_accounts WHERE username = 'ralvarez'", (secret,)).fetchone()
        assert row == ("industrial-user", True, True, "r.alvarez@acme.example", True)
        # a signatory signs in with the second factor and lands in the portal, never the office
        r = signin(c, "ralvarez", secret, db.url) if False else None
        c.cookies.clear()
        p = c.get("/login")
        r = c.post("/login", data={"username": "ralvarez", "password": "a new long password", "next": "/",
                                   "_csrf_token": csrf_of(p.text)})
        r = c.post("/login/code", data={"code": code(db.url, "ralvarez", secret), "next": "/",
                                        "_csrf_token": csrf_of(r.text)})
        assert r.status_code == 200 and str(r.url).endswith("/portal") and "Acme Plating" in r.text
        assert c.get("/", follow_redirects=False).status_code == 403
        # revoked: its session ends at the next click
        c2 = c
        with psycopg.connect(db.url, autocommit=True) as conn:
            from ereport import invitations
            from foundation.actor import Actor
            invitations.revoke(conn, "ralvarez", actor=Actor("coord", "web"))
        r = c2.get("/portal", follow_redirects=False)
        assert r.status_code == 303 and "/login" in r.headers["location"]


def test_an_expired_or_withdrawn_invitation_is_refused(db, tmp_path):
    import time as _time

    from ereport import invitations
    from ereport.invitations import InviteLinks
    from ereport.mail import Mailer
    from foundation.actor import Actor
    two_users(db.url)
    old = InviteLinks("k" * 32, "http://x", 3600.0, clock=lambda: _time.time() - 7200)
    links = InviteLinks("k" * 32, "http://x", 3600.0)
    with psycopg.connect(db.url, autocommit=True) as conn:
        made = invitations.invite(conn, "candy", "pat@sweet.example", "Pat Doe", signatory=False, title=None,
                                  subscriber_agreement_on=None, actor=Actor("coord", "web"), links=links,
                                  mailer=Mailer(None), utility="Village of Palmyra")
        inv, url = made.invitation, made.url
        assert not inv.mailed and "no mail server" in inv.mail_error                  # said, and the link shown
        token = url.rsplit("/", 1)[1]
        with pytest.raises(invitations.InvitationError, match="expired"):
            invitations.open_invitation(conn, old.token(inv.id, inv.token_id), links)
        invitations.revoke_invitation(conn, inv.id, actor=Actor("coord", "web"))
        with pytest.raises(invitations.InvitationError, match="withdrawn"):
            invitations.accept(conn, token, "pat", PASSWORD, PASSWORD, "", links=links)
        assert conn.execute("SELECT count(*) FROM web_accounts WHERE username = 'pat'").fetchone()[0] == 0


def test_header_injection_is_refused_and_names_are_cleaned(db, tmp_path, mail):
    two_users(db.url, names=("Acme\r\nBcc: evil@attacker.example\r\nX: Plating", "Sweet Creek"))
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        signin(c, "coord")
        page = c.get("/portal-people")
        for bad in ("r@acme.example\r\nBcc: evil@attacker.example", "r@acme.example, evil@attacker.example",
                    "Rosa <r@acme.example>", "r@acme.example%0d%0abcc:evil@attacker.example"):
            r = c.post("/portal-people/invite", data={"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text),
                                                      "site": "plater", "email": bad, "full_name": "Rosa",
                                                      "agreement_on": ""})
            assert r.status_code == 400 and "E-mail address" in r.text.replace("e-mail", "E-mail"), bad
        r = c.post("/portal-people/invite", data={"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text),
                                                  "site": "plater", "email": "r@acme.example",
                                                  "full_name": "Rosa\r\nBcc: evil@x.example", "agreement_on": ""})
        assert r.status_code == 200
        msg = wait_mail(mail, "r@acme.example")[0]
    assert all(m["to"] == ["r@acme.example"] for m in mail.messages) and len(mail.messages) == 1
    assert "\n" not in msg["subject"] and "\r" not in msg["subject"]
    assert not mail.to("evil@attacker.example") and not mail.to("evil@x.example")


def _open_invitations(db_url, email: str) -> list[int]:
    with psycopg.connect(db_url) as conn:
        return [i for (i,) in conn.execute("SELECT id FROM portal_invitations WHERE email = %s AND revoked_at IS NULL "
                                           "AND accepted_at IS NULL AND expires_at > now() ORDER BY id", (email,))]


def test_an_invitation_sent_twice_mails_once_and_a_new_one_replaces_the_open_one(db, tmp_path, mail):
    """One form, one invitation (``forms.once``): the same submission again (a double click, a
    reload) mails nothing and shows the first one's outcome. A new invitation to the same
    address for the same user (the person lost the mail) revokes the one still open, with the
    reason in the audit trail: its link is refused, one new mail goes out, the page says so."""
    two_users(db.url)
    to = "r.alvarez@acme.example"
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "sewer@palmyra.example"),
                       public_url="http://127.0.0.1") as c:
        signin(c, "coord")
        page = c.get("/portal-people")
        form = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text), "site": "plater", "email": to,
                "full_name": "Rosa Alvarez", "agreement_on": ""}
        first = c.post("/portal-people/invite", data=form)
        assert first.status_code == 200 and f"The invitation was mailed to {to}" in first.text
        assert 'id="again"' not in first.text and 'id="superseded-' not in first.text
        again = c.post("/portal-people/invite", data=form)                 # the double click
        assert again.status_code == 200 and 'id="again"' in again.text and "had been sent already" in again.text
        assert f"The invitation was mailed to {to}" in again.text           # what the first one did
        assert no_more_mail(mail, to, 1)                                  # one mail
        opened = _open_invitations(db.url, to)
        assert len(opened) == 1                                            # one open invitation
        old_link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", mail.to(to)[0]["body"]).group(1)
        assert c.get(old_link).status_code == 200
        # the person lost the mail: the coordinator invites again (a new form, a new key)
        page = c.get("/portal-people")
        form2 = {**form, "_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text)}
        assert form2["_form_key"] != form["_form_key"]
        r = c.post("/portal-people/invite", data=form2)
        assert r.status_code == 200 and f"The invitation was mailed to {to}" in r.text and 'id="again"' not in r.text
        gone = re.search(rf'id="superseded-{opened[0]}">The invitation of ([^<]+) to {re.escape(to)} no longer '
                         r"works: this one replaces it\.", r.text)
        assert gone and re.search(r"\d{4}-\d{2}-\d{2}", gone.group(1)), r.text[:2000]
        assert len(wait_mail(mail, to, 2)) == 2
        assert c.post("/portal-people/invite", data=form2).status_code == 200   # and that form again: no mail
        assert no_more_mail(mail, to, 2)                                  # two mails in all
        new_link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", mail.to(to)[1]["body"]).group(1)
        assert new_link != old_link
        now_open = _open_invitations(db.url, to)
        assert len(now_open) == 1 and now_open[0] != opened[0]
        # the first link is refused: 410, the page says a newer one replaced it, and it makes no account
        c.cookies.clear()
        r = c.get(old_link)
        assert r.status_code == 410 and "replaced by a newer one sent to the same address" in r.text
        assert 'name="password"' not in r.text
        r = c.post(old_link + "/accept", data={"_csrf_token": csrf_of(c.get(new_link).text), "username": "rosa",
                                                "password": "a new long password",
                                                "password_again": "a new long password", "code": ""})
        assert r.status_code == 410 and "replaced by a newer one" in r.text
        assert c.get(new_link).status_code == 200
        # the same address for another industrial user is another invitation: nothing superseded
        signin(c, "coord")
        page = c.get("/portal-people")
        r = c.post("/portal-people/invite", data={**form, "site": "candy", "_csrf_token": csrf_of(page.text),
                                                  "_form_key": form_key(page.text)})
        assert r.status_code == 200 and 'id="superseded-' not in r.text
        assert len(_open_invitations(db.url, to)) == 2
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT revoked_at IS NOT NULL, accepted_at FROM portal_invitations WHERE id = %s",
                            (opened[0],)).fetchone() == (True, None)
        assert conn.execute("SELECT count(*) FROM web_accounts WHERE username = 'rosa'").fetchone()[0] == 0
        audit = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'portal-invitation-revoked'"
                             ).fetchall()
        assert audit == [("coord", {"via": "web", "invitation": opened[0], "superseded_by": now_open[0],
                                    "reason": f"superseded by invitation {now_open[0]} to the same address"})]
        keys = conn.execute("SELECT count(*) FROM web_form_submissions WHERE action = 'portal.invite'").fetchone()[0]
        assert keys == 3                                                  # three forms acted, each once
