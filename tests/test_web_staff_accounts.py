"""The staff's accounts on the office's Accounts page: added, role changed, disabled and
enabled, password reset, second factor turned on, each once per form and through the function
``sewerwatch users`` calls (identity.accounts), the audit trail naming the superintendent's account;
only ``accounts.manage`` may (the superintendent and the coordinator). In process (Litestar's test client) against the real database."""

from __future__ import annotations

import re

import psycopg
import pyotp
import pytest

from web_support import PASSWORD, add_people, cheap_hashes, csrf_of, office_client, sign_in


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _key(html: str, form_id: str) -> str:
    form = html[html.index(f'id="{form_id}"'):]
    return re.search(r'name="_form_key" value="([^"]+)"', form).group(1)


def _form(html: str, form_id: str, **fields) -> dict:
    return {"_csrf_token": csrf_of(html), "_form_key": _key(html, form_id), **fields}


def _row(db, username: str):
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT full_name, role, disabled_at IS NOT NULL, totp_secret IS NOT NULL, created_by "
                            "FROM web_accounts WHERE username = %s", (username,)).fetchone()


def _audit(db) -> list[tuple]:
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT actor, action, object FROM audit_log WHERE action LIKE 'account-%%' AND "
                            "actor = 'super' ORDER BY id").fetchall()


def test_the_superintendent_manages_the_staffs_accounts_in_the_office(db, tmp_path):
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "super")
        page = c.get("/accounts")
        assert page.status_code == 200 and 'id="acct-viewer"' in page.text and 'href="/accounts"' in page.text
        # added once, however often the form is sent
        form = _form(page.text, "add-form", username="nora", full_name="Nora New", role="clerk",
                     password="a long first password", password2="a long first password")
        r = c.post("/accounts/add", data=form)
        assert r.status_code == 200 and "Account nora added" in r.text and 'id="acct-nora"' in r.text
        assert "This form had been sent already" in c.post("/accounts/add", data=form).text
        assert _row(db, "nora") == ("Nora New", "clerk", False, False, "super")
        # refusals in one line, what was typed kept, nothing made
        page = c.get("/accounts")
        r = c.post("/accounts/add", data=_form(page.text, "add-form", username="Bad Name", full_name="X", role="clerk",
                                               password="a long first password", password2="a long first password"))
        assert r.status_code == 400 and "user name &#39;Bad Name&#39;: use lower-case letters" in r.text
        assert 'value="Bad Name"' in r.text and "a long first password" not in r.text
        r = c.post("/accounts/add", data=_form(page.text, "add-form", username="olga", full_name="Olga", role="clerk",
                                               password="a long first password", password2="another one"))
        assert r.status_code == 400 and "the two passwords differ" in r.text and _row(db, "olga") is None
        # the role, disabled and enabled, the password reset
        page = c.get("/accounts")
        r = c.post("/accounts/nora/change", data=_form(page.text, "role-nora", change="role", role="inspector"))
        assert r.status_code == 200 and "The role of nora changed" in r.text and _row(db, "nora")[1] == "inspector"
        r = c.post("/accounts/nora/change", data=_form(r.text, "state-nora", change="disable"))
        assert "nora is disabled" in r.text and _row(db, "nora")[2] is True
        with office_client(db, tmp_path) as other:                     # a disabled account cannot sign in
            assert sign_in(other, "nora", "a long first password").status_code == 403
        r = c.post("/accounts/nora/change", data=_form(r.text, "state-nora", change="enable"))
        assert "nora is enabled again" in r.text and _row(db, "nora")[2] is False
        r = c.post("/accounts/nora/change", data=_form(r.text, "reset-nora", change="reset-password",
                                                       password="a new long password", password2="a new long password"))
        assert "The password of nora is reset" in r.text
        with office_client(db, tmp_path) as other:
            assert sign_in(other, "nora", "a new long password").status_code == 200
            assert "Sign out" in other.get("/").text
        # a second factor for the coordinator: its key shown once, on this answer
        page = c.get("/accounts")
        r = c.post("/accounts/coord/change", data=_form(page.text, "totp-coord", change="totp-on"))
        assert r.status_code == 200 and 'id="totp"' in r.text and "<svg" in r.text
        uri = re.search(r'id="totp-uri">([^<]+)<', r.text).group(1).replace("&amp;", "&")
        assert uri.startswith("otpauth://totp/") and _row(db, "coord")[3] is True
        assert 'id="totp"' not in c.get("/accounts").text                 # never again
        code = pyotp.TOTP(pyotp.parse_uri(uri).secret).now()
        with office_client(db, tmp_path) as other:                      # the code it shows signs the coordinator in
            r = sign_in(other, "coord")
            page = other.get("/login/code")
            r = other.post("/login/code", data={"code": code, "_csrf_token": csrf_of(page.text)}, follow_redirects=True)
            assert r.status_code == 200 and "Cora Coordinator" in r.text
        page = c.get("/accounts")                                        # a role without notices: refused in words
        r = c.post("/accounts/clerk/change", data=_form(page.text, "totp-clerk", change="totp-on"))
        assert r.status_code == 400 and "clerk: users totp: the second factor is for the roles" in r.text
    assert [a[1] for a in _audit(db)] == ["account-added", "account-role", "account-disabled", "account-enabled",
                                          "account-password-reset", "account-totp-on"]
    for user in ("clerk", "viewer", "inspector"):                       # accounts.manage: superintendent, coordinator
        with office_client(db, tmp_path) as c:
            sign_in(c, user)
            assert c.get("/accounts").status_code == 403, user
            page = c.get("/")
            r = c.post("/accounts/nora/change", data={"_csrf_token": csrf_of(page.text), "change": "disable"})
            assert r.status_code == 403 and _row(db, "nora")[2] is False, user
            assert 'href="/accounts"' not in page.text
