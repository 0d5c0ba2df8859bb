"""The portal in process, for its HTTP tests: the office's application (Litestar's test client)
with cheap password hashes, a real SMTP server (aiosmtpd) catching the mail, and the steps an
industrial user's person takes through the routes as served: signing in (with the second
factor), starting a draft, uploading a file, filling and sending the signing form. Every step
asserts what the page answered, so a test using it fails where the flow breaks."""

from __future__ import annotations

import re

import psycopg
import pytest

from portal_support import PASSWORD, code
from web_support import cheap_hashes, csrf_of, sign_in


@pytest.fixture(autouse=True)
def _cheap_hashes():
    """Cheap argon2 parameters for every test of a module importing this fixture."""
    with cheap_hashes():
        yield


@pytest.fixture
def mail():
    """A real SMTP server catching what the portal mails."""
    from alerts.catchers import MailCatcher
    m = MailCatcher().start()
    yield m
    m.stop()


def wait_mail(mail, to: str, n: int = 1, timeout: float = 10.0) -> list[dict]:
    from support import wait_until
    assert wait_until(lambda: len(mail.to(to)) >= n, timeout), f"no mail to {to}: {mail.messages}"
    return mail.to(to)


def signin(c, user: str, secret: str | None = None, db_url: str | None = None):
    c.cookies.clear()
    r = sign_in(c, user)
    if secret:
        assert "/login/code" in str(r.url), r.text[:500]
        r = c.post("/login/code", data={"code": code(db_url, user, secret), "next": "/",
                                        "_csrf_token": csrf_of(r.text)})
    assert r.status_code == 200, r.text[:800]
    return r


def new_draft(c, kind: str, target: str | None = None) -> int:
    page = c.get("/portal")
    r = c.post("/portal/drafts", data={"kind": kind, "target": target or "", "_csrf_token": csrf_of(page.text)},
               follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    m = re.search(r"/portal/drafts/(\d+)$", r.headers["location"])
    assert m, r.headers["location"]
    return int(m.group(1))


def upload(c, draft: int, role: str, name: str, content: bytes):
    page = c.get(f"/portal/drafts/{draft}")
    return c.post(f"/portal/drafts/{draft}/upload", data={"role": role, "_csrf_token": csrf_of(page.text)},
                  files={"file": (name, content, "application/octet-stream")})


def form_key(html: str) -> str:
    """The form's submission key (``web.forms``: one submission, one action)."""
    return re.search(r'name="_form_key" value="([^"]+)"', html).group(1)


def sign_form(c, db_url, user, secret, draft: int, password: str = PASSWORD, certify: bool = True,
               reviewed=None) -> dict:
    page = c.get(f"/portal/drafts/{draft}/sign")
    assert page.status_code == 200, page.text[:500]
    digest = re.search(r'name="reviewed" value="([0-9a-f]+)"', page.text)
    data = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text),
            "reviewed": reviewed or (digest.group(1) if digest else ""), "password": password,
            "code": code(db_url, user, secret)}
    if certify:
        data["certify"] = "yes"
    return data


def sign(c, db_url, user, secret, draft: int, password: str = PASSWORD, certify: bool = True, reviewed=None):
    data = sign_form(c, db_url, user, secret, draft, password, certify, reviewed)
    return c.post(f"/portal/drafts/{draft}/signature", data=data, follow_redirects=False)


def lab_counts(db_url) -> tuple[int, int, int]:
    with psycopg.connect(db_url) as conn:
        return tuple(conn.execute("SELECT (SELECT count(*) FROM lab_results), (SELECT count(*) FROM dead_letters), "
                                  "(SELECT count(*) FROM lab_samples)").fetchone())

def no_more_mail(mail, to: str, n: int, wait: float = 1.5) -> bool:
    """True when, after ``wait`` seconds, ``to`` has had exactly ``n`` mails."""
    from support import wait_until
    return not wait_until(lambda: len(mail.to(to)) > n, wait) and len(mail.to(to)) == n
