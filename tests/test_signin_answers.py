"""Signing in says nothing about accounts: an unknown user name, a wrong password, a disabled
account and an account locked from this address get the same answer (status and words) until
the password is right; a run of failures locks the account from the address they came from
only, so the account's person still signs in from another.

Through the office's own sign-in form (fetched, then posted as served with its CSRF token),
over the real database; the client's address is the connection's (the ASGI peer), as behind
no proxy.
"""

from __future__ import annotations

import contextlib
import re

import psycopg
import pytest

from identity import accounts
from web_support import ADMIN, PASSWORD, PEOPLE, add_people, cheap_hashes, csrf_of, office_config, village

LOCKOUT_AFTER = 3


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


class Peer:
    """The office as reached from one address (what the server sees as the TCP peer)."""

    def __init__(self, app, address: str):
        self.app, self.address = app, address

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            scope = {**scope, "client": (self.address, 40000)}
        return await self.app(scope, receive, send)


@pytest.fixture
def office(db, tmp_path):
    """``office(address)``: a browser-like client of one office from ``address``."""
    from litestar.testing import TestClient

    from sewerwatch.office import office_server
    from web.app import asgi

    village(db)
    add_people(db.url)
    cfg = office_config(tmp_path, lockout_after=LOCKOUT_AFTER, lockout_min=10, login_per_min=30)
    server = office_server(cfg, db.url, tmp_path, status_source=lambda: {"running": True, "state": "ok",
                                                                         "problems": {}})
    server.office.open()
    app = asgi(server.office, "t" * 32)
    with contextlib.ExitStack() as stack:
        def at(address: str):
            return stack.enter_context(TestClient(app=Peer(app, address), base_url="http://127.0.0.1"))
        try:
            yield at
        finally:
            stack.close()
            server.office.close()


def sign_in(client, user: str, password: str):
    """The sign-in page as served, its form filled in and sent."""
    page = client.get("/login")
    form = re.search(r'<form method="post" action="([^"]+)"', page.text).group(1)
    nxt = re.search(r'name="next" value="([^"]*)"', page.text).group(1)
    return client.post(form, data={"username": user, "password": password, "next": nxt,
                                   "_csrf_token": csrf_of(page.text)}, follow_redirects=False)


def answer(r) -> tuple[int, str]:
    """The status and the page's words, the echoed user name and the form's token aside."""
    text = re.sub(r'name="_csrf_token" value="[^"]+"', "", r.text)
    text = re.sub(r'id="username"([^>]*) value="[^"]*"', r'id="username"\1', text)
    return r.status_code, text


def test_unknown_wrong_disabled_and_locked_read_the_same_until_the_password_is_right(db, office):
    here, elsewhere = office("198.51.100.7"), office("203.0.113.40")
    with psycopg.connect(db.url, autocommit=True) as conn:
        accounts.disable(conn, "inspector", actor=ADMIN)
    for _ in range(LOCKOUT_AFTER):                      # someone without clerk's password, from here
        sign_in(here, "clerk", "a guess at the password")
    with psycopg.connect(db.url) as conn:
        acc = accounts.get(conn, "clerk")
        assert accounts.locked_from(conn, acc.id, "198.51.100.7") is not None
        assert accounts.locked_from(conn, acc.id, "203.0.113.40") is None

    unknown = sign_in(here, "nobody", "a guess at the password")
    wrong = sign_in(here, "coord", "a guess at the password")
    disabled = sign_in(here, "inspector", "a guess at the password")
    locked = sign_in(here, "clerk", "a guess at the password")
    locked_right = sign_in(here, "clerk", PASSWORD)     # the right password, from the locked address
    first = answer(unknown)
    assert first[0] == 401 and "The user name or the password is not right." in unknown.text
    for r in (wrong, disabled, locked, locked_right):
        assert answer(r) == first
    for r in (unknown, wrong, disabled, locked, locked_right):
        assert "disabled" not in r.text and "locked" not in r.text.lower()

    # the right password says what it must: the disabled account is told so; the locked one
    # signs in from an address with no failures (the guesses locked it from theirs only)
    r = sign_in(here, "inspector", PASSWORD)
    assert r.status_code == 403 and "This account is disabled" in r.text
    r = sign_in(elsewhere, "clerk", PASSWORD)
    assert r.status_code == 303
    assert PEOPLE["clerk"][0] in elsewhere.get(r.headers["location"], follow_redirects=True).text
    assert answer(sign_in(here, "clerk", PASSWORD)) == first          # still not from here

    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT action, detail->>'reason', detail->>'client' FROM audit_log WHERE object = "
                            "'account:clerk' AND action LIKE 'login%%' OR object = 'account:clerk' AND action = "
                            "'account-locked' ORDER BY id").fetchall()
    assert rows[:LOCKOUT_AFTER + 1] == [("login-failed", "wrong password", "198.51.100.7")] * LOCKOUT_AFTER + [
        ("account-locked", None, "198.51.100.7")]
    assert ("login", None, "203.0.113.40") in rows
    assert rows[-1] == ("login-failed", "locked from this address", "198.51.100.7")


def test_enabling_an_account_lifts_its_locks(db, office):
    here = office("198.51.100.8")
    for _ in range(LOCKOUT_AFTER):
        sign_in(here, "coord", "a guess at the password")
    assert sign_in(here, "coord", PASSWORD).status_code == 401
    with psycopg.connect(db.url, autocommit=True) as conn:
        assert accounts.get(conn, "coord").locked(accounts._now())      # the accounts page shows the lock
        accounts.enable(conn, "coord", actor=ADMIN)
    assert sign_in(here, "coord", PASSWORD).status_code == 303
