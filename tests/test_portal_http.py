"""The industrial users' portal over HTTP, in process (Litestar's test client) against the real
database and a real SMTP server (aiosmtpd) (issue 27 items 1-6): invitations (signed,
expiring, single use, revocable), the same lab check as ``lab import`` before anything is
stored, signing with the password and the second factor again, the copy of record (its hash
in the receipt, UPDATE and DELETE refused), review (rejected with the reason, corrected,
accepted: the copper result judged like the utility's own), notice responses and the
§13.49 report through enforcement's functions, permit applications with the renewal window,
tenancy (a second user's account on every route and object id of the first), uploads and
mail headers that cannot be steered.

The browser test (``tests/test_portal_browser.py``) walks the same flow in Chromium.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from portal_support import LAB_PDF, PASSWORD, code, lab_csv, person, two_users
from identity import roles
from web_support import cheap_hashes, csrf_of, office_client, sign_in

pytest.importorskip("aiosmtpd")


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


@pytest.fixture
def mail():
    from alerts.catchers import MailCatcher
    m = MailCatcher().start()
    yield m
    m.stop()


def _wait_mail(mail, to: str, n: int = 1, timeout: float = 10.0) -> list[dict]:
    from support import wait_until
    assert wait_until(lambda: len(mail.to(to)) >= n, timeout), f"no mail to {to}: {mail.messages}"
    return mail.to(to)


def _signin(c, user: str, secret: str | None = None, db_url: str | None = None):
    c.cookies.clear()
    r = sign_in(c, user)
    if secret:
        assert "/login/code" in str(r.url), r.text[:500]
        r = c.post("/login/code", data={"code": code(db_url, user, secret), "next": "/",
                                        "_csrf_token": csrf_of(r.text)})
    assert r.status_code == 200, r.text[:800]
    return r


def _draft(c, kind: str, target: str | None = None) -> int:
    page = c.get("/portal")
    r = c.post("/portal/drafts", data={"kind": kind, "target": target or "", "_csrf_token": csrf_of(page.text)},
               follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    m = re.search(r"/portal/drafts/(\d+)$", r.headers["location"])
    assert m, r.headers["location"]
    return int(m.group(1))


def _upload(c, draft: int, role: str, name: str, content: bytes):
    page = c.get(f"/portal/drafts/{draft}")
    return c.post(f"/portal/drafts/{draft}/upload", data={"role": role, "_csrf_token": csrf_of(page.text)},
                  files={"file": (name, content, "application/octet-stream")})


def _key(html: str) -> str:
    """The form's submission key (``web.forms``: one submission, one action)."""
    return re.search(r'name="_form_key" value="([^"]+)"', html).group(1)


def _sign_form(c, db_url, user, secret, draft: int, password: str = PASSWORD, certify: bool = True,
               reviewed=None) -> dict:
    page = c.get(f"/portal/drafts/{draft}/sign")
    assert page.status_code == 200, page.text[:500]
    digest = re.search(r'name="reviewed" value="([0-9a-f]+)"', page.text)
    data = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text),
            "reviewed": reviewed or (digest.group(1) if digest else ""), "password": password,
            "code": code(db_url, user, secret)}
    if certify:
        data["certify"] = "yes"
    return data


def _sign(c, db_url, user, secret, draft: int, password: str = PASSWORD, certify: bool = True, reviewed=None):
    data = _sign_form(c, db_url, user, secret, draft, password, certify, reviewed)
    return c.post(f"/portal/drafts/{draft}/signature", data=data, follow_redirects=False)


def _counts(db_url) -> tuple[int, int, int]:
    with psycopg.connect(db_url) as conn:
        return tuple(conn.execute("SELECT (SELECT count(*) FROM lab_results), (SELECT count(*) FROM dead_letters), "
                                  "(SELECT count(*) FROM lab_samples)").fetchone())


def test_invitation_mailed_signed_single_use_and_revocable(db, tmp_path, mail):
    two_users(db.url)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com", "sewer@palmyra.example"),
                       public_url="http://127.0.0.1") as c:
        _signin(c, "coord")
        page = c.get("/portal-people")
        r = c.post("/portal-people/invite", data={
            "_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "site": "plater",
            "email": "r.alvarez@acme.example",
            "full_name": "Rosa Alvarez", "signatory": "yes", "title": "Plant manager", "agreement_on": ""})
        assert r.status_code == 400 and "subscriber agreement" in r.text         # a signatory needs it
        r = c.post("/portal-people/invite", data={
            "_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "site": "plater",
            "email": "r.alvarez@acme.example",
            "full_name": "Rosa Alvarez", "signatory": "yes", "title": "Plant manager",
            "agreement_on": datetime.now(timezone.utc).date().isoformat()})
        assert r.status_code == 200 and "The invitation was mailed to r.alvarez@acme.example" in r.text
        msg = _wait_mail(mail, "r.alvarez@acme.example")[0]
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
        r = _signin(c, "ralvarez", secret, db.url) if False else None
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
        _signin(c, "coord")
        page = c.get("/portal-people")
        for bad in ("r@acme.example\r\nBcc: evil@attacker.example", "r@acme.example, evil@attacker.example",
                    "Rosa <r@acme.example>", "r@acme.example%0d%0abcc:evil@attacker.example"):
            r = c.post("/portal-people/invite", data={"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text),
                                                      "site": "plater", "email": bad, "full_name": "Rosa",
                                                      "agreement_on": ""})
            assert r.status_code == 400 and "E-mail address" in r.text.replace("e-mail", "E-mail"), bad
        r = c.post("/portal-people/invite", data={"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text),
                                                  "site": "plater", "email": "r@acme.example",
                                                  "full_name": "Rosa\r\nBcc: evil@x.example", "agreement_on": ""})
        assert r.status_code == 200
        msg = _wait_mail(mail, "r@acme.example")[0]
    assert all(m["to"] == ["r@acme.example"] for m in mail.messages) and len(mail.messages) == 1
    assert "\n" not in msg["subject"] and "\r" not in msg["subject"]
    assert not mail.to("evil@attacker.example") and not mail.to("evil@x.example")


def _no_more_mail(mail, to: str, n: int, wait: float = 1.5) -> bool:
    """True when, after ``wait`` seconds, ``to`` has had exactly ``n`` mails."""
    from support import wait_until
    return not wait_until(lambda: len(mail.to(to)) > n, wait) and len(mail.to(to)) == n


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
        _signin(c, "coord")
        page = c.get("/portal-people")
        form = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text), "site": "plater", "email": to,
                "full_name": "Rosa Alvarez", "agreement_on": ""}
        first = c.post("/portal-people/invite", data=form)
        assert first.status_code == 200 and f"The invitation was mailed to {to}" in first.text
        assert 'id="again"' not in first.text and 'id="superseded-' not in first.text
        again = c.post("/portal-people/invite", data=form)                 # the double click
        assert again.status_code == 200 and 'id="again"' in again.text and "had been sent already" in again.text
        assert f"The invitation was mailed to {to}" in again.text           # what the first one did
        assert _no_more_mail(mail, to, 1)                                  # one mail
        opened = _open_invitations(db.url, to)
        assert len(opened) == 1                                            # one open invitation
        old_link = re.search(r"http://127\.0\.0\.1(/portal/invite/\S+)", mail.to(to)[0]["body"]).group(1)
        assert c.get(old_link).status_code == 200
        # the person lost the mail: the coordinator invites again (a new form, a new key)
        page = c.get("/portal-people")
        form2 = {**form, "_csrf_token": csrf_of(page.text), "_form_key": _key(page.text)}
        assert form2["_form_key"] != form["_form_key"]
        r = c.post("/portal-people/invite", data=form2)
        assert r.status_code == 200 and f"The invitation was mailed to {to}" in r.text and 'id="again"' not in r.text
        gone = re.search(rf'id="superseded-{opened[0]}">The invitation of ([^<]+) to {re.escape(to)} no longer '
                         r"works: this one replaces it\.", r.text)
        assert gone and re.search(r"\d{4}-\d{2}-\d{2}", gone.group(1)), r.text[:2000]
        assert len(_wait_mail(mail, to, 2)) == 2
        assert c.post("/portal-people/invite", data=form2).status_code == 200   # and that form again: no mail
        assert _no_more_mail(mail, to, 2)                                  # two mails in all
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
        _signin(c, "coord")
        page = c.get("/portal-people")
        r = c.post("/portal-people/invite", data={**form, "site": "candy", "_csrf_token": csrf_of(page.text),
                                                  "_form_key": _key(page.text)})
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


def test_sign_and_submit_sent_twice_signs_once_and_the_repeat_gets_the_receipt(db, tmp_path, mail):
    """A double click on "Sign and submit" (the same form twice) makes one submission and one
    receipt; the second answer is the first one's receipt page, saying the form had been sent
    already. A refused signature (a wrong password) is counted and leaves the form usable."""
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True, email="rosa@acme.example")
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        _signin(c, "rosa", secret, db.url)
        d = _draft(c, "self-monitoring")
        _upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=0.3))
        data = _sign_form(c, db.url, "rosa", secret, d)
        wrong = c.post(f"/portal/drafts/{d}/signature", data={**data, "password": "not the password"},
                       follow_redirects=False)
        assert wrong.status_code == 401 and "Nothing was signed" in wrong.text
        r1 = c.post(f"/portal/drafts/{d}/signature", data=data, follow_redirects=False)   # the same key: it acts
        assert r1.status_code == 303, r1.text[:600]
        assert r1.headers["location"].endswith("?done=signed")
        r2 = c.post(f"/portal/drafts/{d}/signature", data=data, follow_redirects=False)   # the double click
        assert r2.status_code == 303 and r2.headers["location"] == r1.headers["location"] + "&again=1"
        page = c.get(r2.headers["location"])
        sub_id = int(r1.headers["location"].split("/")[-1].split("?")[0])
        with psycopg.connect(db.url) as conn:
            number, sha = conn.execute("SELECT number, sha256 FROM portal_submissions WHERE id = %s",
                                       (sub_id,)).fetchone()
        assert page.status_code == 200 and 'id="again"' in page.text and "had been sent already" in page.text
        assert number in page.text and sha in page.text and 'id="verified"' in page.text     # the receipt
        assert len(_wait_mail(mail, "rosa@acme.example")) == 1 and _no_more_mail(mail, "rosa@acme.example", 1)
        # another form of the same draft (a second tab): refused, nothing signed twice
        r3 = _sign(c, db.url, "rosa", secret, d)
        assert r3.status_code == 409 and "signed and submitted already" in r3.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM portal_submissions").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event = 'submitted'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event = 'receipt-mailed'").fetchone()[0] == 1
        assert conn.execute("SELECT submitted_as FROM portal_drafts WHERE id = %s", (d,)).fetchone()[0] == sub_id
        failures = conn.execute("SELECT detail->>'reason' FROM audit_log WHERE action = 'login-failed' "
                                "AND actor = 'rosa' ORDER BY id").fetchall()
        assert failures == [("signing: wrong password",)]                  # the refusal counted, the repeat not
        assert conn.execute("SELECT count(*) FROM web_form_submissions WHERE action = 'portal.sign'").fetchone()[0] == 1


def test_self_monitoring_report_checked_signed_recorded_rejected_corrected_accepted(db, tmp_path, mail):
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True, email="rosa@acme.example")
    person(db.url, "plater", "pete", "Pete Preparer", signatory=False)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        # a preparer uploads the lab's CSV with a spoiled row: the reason, and nothing stored
        _signin(c, "pete")
        before = _counts(db.url)
        d = _draft(c, "self-monitoring")
        r = _upload(c, d, "lab-csv", "../../results.csv", lab_csv(spoiled=True))
        page = c.get(f"/portal/drafts/{d}")
        assert "1 row cannot be used" in page.text and "n/a" in page.text
        bad = re.search(r'id="bad-rows".*?</table>', page.text, re.S).group(0)
        assert "<th scope=\"row\">3</th>" in bad                                # line 3: the nickel row
        assert "results.csv" in page.text and "../" not in page.text            # the name cleaned
        assert _counts(db.url) == before                                       # nothing stored, no dead letter
        _upload(c, d, "lab-csv", "results.csv", lab_csv("candy", spoiled=False))  # another user's rows
        page = c.get(f"/portal/drafts/{d}")
        assert "3 rows cannot be used" in page.text and "unknown site &#39;candy&#39; (known: plater)" in page.text
        assert "Sweet Creek" not in page.text and _counts(db.url) == before
        _upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False))
        _upload(c, d, "lab-report", "report.pdf", LAB_PDF)
        page = c.get(f"/portal/drafts/{d}")
        assert 'id="ready"' in page.text and "3 results can be used" in page.text and 'id="review-sign"' not in page.text
        r = c.post(f"/portal/drafts/{d}/signature", data={"_csrf_token": csrf_of(page.text), "password": PASSWORD,
                                                     "_form_key": "k" * 32, "code": "123456", "certify": "yes",
                                                     "reviewed": "x"})
        assert r.status_code == 403 and "Only an authorised signatory" in r.text  # the preparer cannot sign
        # the signatory signs: the wrong password first (counted), then right
        _signin(c, "rosa", secret, db.url)
        assert f"/portal/drafts/{d}" in c.get("/portal").text
        r = _sign(c, db.url, "rosa", secret, d, password="not the password")
        assert r.status_code == 401 and "Nothing was signed" in r.text
        r = _sign(c, db.url, "rosa", secret, d, certify=False)
        assert r.status_code == 400 and "Tick the box" in r.text
        r = _sign(c, db.url, "rosa", secret, d, reviewed="0" * 64)
        assert r.status_code == 409 and "changed after this page was shown" in r.text
        r = _sign(c, db.url, "rosa", secret, d)
        assert r.status_code == 303, r.text[:600]
        sub_id = int(r.headers["location"].split("/")[-1].split("?")[0])
        page = c.get(r.headers["location"])
        assert "Signed and submitted" in page.text and 'id="verified"' in page.text
        with psycopg.connect(db.url) as conn:
            doc, sha, number = conn.execute("SELECT document, sha256, number FROM portal_submissions WHERE id = %s",
                                            (sub_id,)).fetchone()
            assert hashlib.sha256(bytes(doc)).hexdigest() == sha
            parsed = json.loads(bytes(doc))
            assert parsed["signer"]["name"] == "Rosa Alvarez" and "fine and imprisonment" in parsed["certification"][
                "statement"] and {f["name"] for f in parsed["files"]} == {"results.csv", "report.pdf"}
            assert [r["analyte"] for r in parsed["results"]] == ["cu", "ni", "tss"]
            for stmt in ("UPDATE portal_submissions SET sha256 = repeat('0', 64)", "DELETE FROM portal_submissions",
                         "UPDATE portal_submission_files SET content = 'x'", "DELETE FROM portal_events"):
                with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                    conn.execute(stmt)
                conn.rollback()
            failures = conn.execute("SELECT count(*) FROM audit_log WHERE action = 'login-failed' AND actor = 'rosa' "
                                    "AND detail->>'reason' LIKE 'signing:%%'").fetchone()[0]
            assert failures == 1
            from identity import accounts                 # the code just used signs nothing again
            step = conn.execute("SELECT totp_last_step FROM web_accounts WHERE username = 'rosa'").fetchone()[0]
            import pyotp
            used = pyotp.TOTP(secret).generate_otp(step)
            acc = accounts.get(conn, "rosa")
            again = accounts.reauthenticate(conn, acc.id, PASSWORD, used, client="test", lockout_after=5, lockout_min=1)
            assert again.outcome == "refused" and "a code works once" in again.message
            conn.commit()
        receipt = _wait_mail(mail, "rosa@acme.example")[0]
        assert sha in receipt["body"] and number in receipt["subject"] and "Rosa Alvarez" in receipt["body"]
        assert _counts(db.url) == before                                       # waits for review: nothing stored
        # the coordinator rejects it with a reason; the user sees it and corrects it
        rosa = dict(c.cookies)
        _signin(c, "coord")
        q = c.get("/review")
        assert number in q.text
        page = c.get(f"/review/{sub_id}")
        assert sha in page.text and "the stored document and files match it" in page.text
        r = c.post(f"/review/{sub_id}/reject", data={"_csrf_token": csrf_of(page.text), "reason": ""})
        assert r.status_code == 400
        r = c.post(f"/review/{sub_id}/reject", data={"_csrf_token": csrf_of(page.text),
                                                     "reason": "The lab report is for another sample; attach P-0601's."},
                   follow_redirects=False)
        assert r.status_code == 303
        c.cookies.clear()
        for k, v in rosa.items():               # back in rosa's session (a sign-in would spend a TOTP step)
            c.cookies.set(k, v, domain="127.0.0.1")
        page = c.get(f"/portal/submissions/{sub_id}")
        assert "rejected" in page.text and "attach P-0601" in page.text
        returned = _wait_mail(mail, "rosa@acme.example", 2)[1]                 # and mailed to the signatory
        assert "returned to you" in returned["subject"] and "attach P-0601" in returned["body"]
        r = c.post(f"/portal/submissions/{sub_id}/correct", data={"_csrf_token": csrf_of(page.text)},
                   follow_redirects=False)
        d2 = int(r.headers["location"].rsplit("/", 1)[1])
        _upload(c, d2, "lab-report", "report-p0601.pdf", LAB_PDF + b"% corrected\n")
        r = _sign(c, db.url, "rosa", secret, d2)
        assert r.status_code == 303, r.text[:600]
        sub2 = int(r.headers["location"].split("/")[-1].split("?")[0])
        # the coordinator accepts the correction: results stored as the user's, copper judged
        _signin(c, "coord")
        page = c.get(f"/review/{sub_id}")
        assert "superseded" in page.text and 'id="accept"' not in page.text
        page = c.get(f"/review/{sub2}")
        assert f"{number}" in page.text                                       # supersedes it
        r = c.post(f"/review/{sub2}/accept", data={"_csrf_token": csrf_of(page.text)}, follow_redirects=False)
        assert r.status_code == 303, r.text[:800]
        assert c.post(f"/review/{sub2}/accept", data={"_csrf_token": csrf_of(page.text)}).status_code == 409
        # the acceptance's line on the submission's page names the broken limit in its words and
        # citation, never the rule's id: on the coordinator's page and on the user's own
        with psycopg.connect(db.url) as conn:
            [(rule, cite, limit)] = conn.execute(
                "SELECT DISTINCT v.rule, v.citation, v.limit_value FROM violations v JOIN sites s ON s.id = v.site_id "
                "WHERE s.key = 'plater' AND v.parameter = 'cu'").fetchall()
        for who, url in (("coord", f"/review/{sub2}"), ("rosa", f"/portal/submissions/{sub2}")):
            if who == "rosa":
                _signin(c, "rosa", secret, db.url)
            events = html.unescape(re.search(r'<ul id="events">(.*?)</ul>', c.get(url).text, re.S).group(1))
            [accepted] = [li for li in re.findall(r"<li>(.*?)</li>", events, re.S) if "accepted" in li]
            assert "Copper: " in accepted and f"{limit:g} mg/l" in accepted and f"({cite})" in accepted, accepted
            assert rule not in accepted and "cu-" not in accepted, accepted
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT r.analyte, r.value_mg_l, s.submission_id, r.source FROM lab_results r JOIN lab_samples s "
                            "ON s.id = r.sample_id ORDER BY r.analyte").fetchall()
        assert [(a, v, sid) for a, v, sid, _ in rows] == [("cu", 1.8, sub2), ("ni", 0.4, sub2), ("tss", 120.0, sub2)]
        assert all("SMR-" in src for *_, src in rows)
        # the user's own results: its self-monitoring, never the village's sampling (40 CFR 403.8(f)(2)(v))
        assert conn.execute("SELECT DISTINCT sampled_by FROM lab_samples").fetchall() == [("user",)]
        v = conn.execute("SELECT rule, peak, limit_value, source FROM violations v JOIN sites s ON s.id = v.site_id "
                         "WHERE s.key = 'plater'").fetchall()
        assert [x for x in v if x[1] == 1.8 and x[2] == 1.0], v                # copper 1.8 > 1.0: a violation


def test_tenancy_every_portal_route_and_object_of_one_user_refused_to_another(db, tmp_path, mail):
    """User B (candy) tries every route of the application with user A's (plater) object ids:
    403 or 404, never A's data; staff pages refuse portal accounts and the portal refuses staff."""
    from enforcement import reports
    two_users(db.url)
    with psycopg.connect(db.url, autocommit=True) as conn:       # a report A owes
        report_a = reports.require(conn, "plater", "self-monitoring", datetime.now(timezone.utc).date(), by="coord")
    secret_a = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    secret_b = person(db.url, "candy", "carl", "Carl Candy", signatory=True)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        _signin(c, "rosa", secret_a, db.url)
        d = _draft(c, "self-monitoring")
        _upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=0.3))
        r = _sign(c, db.url, "rosa", secret_a, d)
        assert r.status_code == 303
        sub = int(r.headers["location"].split("/")[-1].split("?")[0])
        d_open = _draft(c, "self-monitoring")
        _upload(c, d_open, "attachment", "site-plan.pdf", LAB_PDF)
        upload_id = re.search(rf"/portal/drafts/{d_open}/uploads/(\d+)", c.get(f"/portal/drafts/{d_open}").text).group(1)
        secrets_of_a = ["Rosa Alvarez", "results.csv", "site-plan.pdf", "P-0601", "Acme Plating"]
        values = {"draft_id": str(d_open), "upload_id": upload_id, "submission_id": str(sub), "position": "1",
                  "username": "rosa", "invitation_id": "1", "token": "x.y.z", "alert_id": "1", "letter_id": "1",
                  "key": "plater", "file_path": "css/office.css", "number": "PAL-IU-2026-02",
                  # the staff's routes (enforcement, bills, field work): A's site and ids where they name one
                  "site": "plater", "name": "ph", "violation_id": "1", "finding_id": "1", "notice_id": "1", "page": "1",
                  "run_id": "1", "bill_id": "1", "inspection_id": "1", "photo_id": "1", "window_id": "1", "version": "1",
                  "year": "2026", "publication_id": "1",
                  "path": "office/lab/", "import_id": "1",
                  "establishment_id": "1"}
        routes = _routes(c, values)
        portal_routes = [r for r in routes if r[2] == roles.PORTAL]
        assert len(portal_routes) >= 14
        _signin(c, "carl", secret_b, db.url)
        token = csrf_of(c.get("/portal").text)
        tried = 0
        for method, path, perm in routes:
            if perm == roles.PUBLIC:
                continue
            r = c.request(method, path, data={"_csrf_token": token, "reason": "x", "kind": "notice-response",
                                              "target": "notice:1"} if method == "POST" else None,
                          follow_redirects=False)
            tried += 1
            if perm == roles.PORTAL and path in ("/portal", "/portal/drafts", "/portal/statement",
                                                 "/portal/statement/pdf"):
                # B's own home, B's own draft, B's own statement of account
                assert r.status_code in (200, 303, 404), (method, path, r.status_code)
            else:
                assert r.status_code in (403, 404), (method, path, r.status_code, r.text[:300])
            for s in secrets_of_a:
                assert s not in r.text, (method, path, s)
        assert tried >= 30
        # the same ids through the query and the form: another user's report owed or notice
        r = c.post("/portal/drafts", data={"_csrf_token": token, "kind": "self-monitoring",
                                           "target": f"report:{report_a}"}, follow_redirects=False)
        assert r.status_code == 404
        r = c.post("/portal/drafts", data={"_csrf_token": token, "kind": "permit-application",
                                           "target": "permit:PAL-IU-2026-02"}, follow_redirects=False)
        assert r.status_code == 404                                     # A's permit
        # staff cannot open the portal's pages, and a portal account nothing of the staff's
        _signin(c, "coord")
        assert c.get(f"/portal/submissions/{sub}", follow_redirects=False).status_code == 403
        assert c.get("/portal", follow_redirects=False).status_code == 403
    with psycopg.connect(db.url) as conn:                   # B's requests changed nothing of A's
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event <> 'submitted' AND event NOT LIKE "
                            "'receipt%%'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM portal_uploads").fetchone()[0] >= 1


def _routes(c, values: dict) -> list[tuple[str, str, str]]:
    out = []
    for route in c.litestar.routes:
        for handler in route.route_handlers:
            path = route.path
            for name in re.findall(r"{(\w+):\w+}", path):
                path = re.sub(r"{" + name + r":\w+}", values[name], path)
            for method in sorted(handler.http_methods - {"OPTIONS"}):
                out.append((method, path, handler.opt.get("permission")))
    return out


def test_uploads_are_limited_typed_by_their_bytes_and_served_as_downloads(db, tmp_path):
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    with office_client(db, tmp_path, upload_max_mb=0.01) as c:
        _signin(c, "rosa", secret, db.url)
        d = _draft(c, "self-monitoring")
        r = _upload(c, d, "lab-report", "report.pdf", b"MZ\x90\x00 this is a program")
        assert r.status_code == 400 and "expected a PDF" in r.text
        r = _upload(c, d, "lab-csv", "x.csv", b"a,b\n" + b"1,2\n" * 5000)
        assert r.status_code == 400 and "larger than the 0.01 MB" in r.text
        r = _upload(c, d, "attachment", '<script>x</script>"; filename=evil.html', b"plain words\n")
        assert r.status_code == 200
        page = c.get(f"/portal/drafts/{d}")
        assert "<script>x" not in page.text
        uid = re.search(rf"/portal/drafts/{d}/uploads/(\d+)", page.text).group(1)
        got = c.get(f"/portal/drafts/{d}/uploads/{uid}")
        assert got.status_code == 200 and got.content == b"plain words\n"
        assert got.headers["content-type"].startswith("text/plain")
        assert got.headers["content-disposition"].startswith("attachment;") and '"' not in got.headers[
            "content-disposition"].split('filename="', 1)[1][:-1]
        assert got.headers["x-content-type-options"] == "nosniff"
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM portal_uploads").fetchone()[0] == 1


def test_notice_response_and_accidental_report_go_through_enforcement(db, tmp_path, mail):
    """Signed in the portal, the response is the notice's response-received (as ``notice
    response``) and the §13.49 report is received at the instant of signing (as ``user-reports
    receive``), so SNC (G) sees it in time."""
    from enforcement import reports
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    now = datetime.now(timezone.utc)
    with psycopg.connect(db.url, autocommit=True) as conn:
        site_id, sensor = conn.execute("SELECT s.id, n.id FROM sites s JOIN sensors n ON n.site_id = s.id "
                                       "WHERE s.key = 'plater'").fetchone()
        vid = conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, "
                           "end_time, peak, limit_value, unit, days_of_violation, source) VALUES (%s, %s, 'ph', 'ph-min', "
                           "'palmyra-wi', 'Village of Palmyra Code §13.48(2)(g)', %s, %s, 3.5, 6.0, 'pH', 1, 'batch') "
                           "RETURNING id", (site_id, sensor, now - timedelta(hours=3), now - timedelta(hours=2))
                           ).fetchone()[0]
        conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details, violation_id) VALUES "
                     "('violation', %s, %s, 'ph-min', 'notified', 'pH 3.5', '{}', %s)", (site_id, sensor, vid))
        rid = reports.sync_accidental(conn, 24.0)[0]
        number = _issued_notice(conn, vid)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        _signin(c, "rosa", secret, db.url)
        home = c.get("/portal")
        assert number in home.text and f'id="answer-report-{rid}"' in home.text
        d = _draft(c, "notice-response", f"notice:{number}")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={"_csrf_token": csrf_of(page.text), "cause": "A valve left open",
                                            "corrective_action": "Valve interlocked", "completed_on": "2026-11-20"})
        assert _sign(c, db.url, "rosa", secret, d).status_code == 303
        d = _draft(c, "accidental-discharge", f"report:{rid}")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={"_csrf_token": csrf_of(page.text), "began_at": "2026-11-30T10:30",
                                            "substances": "sulfuric acid rinse", "cause": "tank overflow",
                                            "actions": "pump stopped"})
        assert _sign(c, db.url, "rosa", secret, d).status_code == 303
    with psycopg.connect(db.url) as conn:
        state = conn.execute("SELECT state, response_received_on FROM notices WHERE number = %s", (number,)).fetchone()
        assert state[0] == "response-received" and state[1] is not None
        ev = conn.execute("SELECT actor, note FROM notice_events WHERE event = 'response-received'").fetchone()
        assert ev[0] == "rosa" and "NR-" in ev[1] and "SHA-256" in ev[1]
        got = conn.execute("SELECT received_at, received_by FROM user_reports WHERE id = %s", (rid,)).fetchone()
        assert got[1] == "rosa" and abs((got[0] - datetime.now(timezone.utc)).total_seconds()) < 120
        r = reports.list_reports(conn, datetime.now(timezone.utc), "plater")[0]
        assert r["state"] == "received" and not r["late"]                     # in time: no (G) finding
        assert reports.check(conn, datetime.now(timezone.utc) + timedelta(days=2), 24.0) == []
        conn.commit()
        assert conn.execute("SELECT count(*) FROM findings WHERE kind = 'unreported-noncompliance'").fetchone()[0] == 0


def _issued_notice(conn, violation_id: int) -> str:
    """A notice drafted and issued today, the village's day (Palmyra's, America/Chicago: in the
    evening there the machine's UTC day is already the next, and the portal's response,
    received on the village's day, would come before it)."""
    from zoneinfo import ZoneInfo

    from enforcement import notices
    from enforcement.guide import load_guide
    from foundation.paths import PROJECT_ROOT
    from lab.documents.pdf import Letterhead
    guide = load_guide(PROJECT_ROOT / "enforcement" / "guides" / "epa-erp.toml")
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    n = notices.draft(conn, guide, Letterhead("Village of Palmyra"), today, violation_id=violation_id, by="coord")
    notices.issue(conn, n["number"], today, by="coord")
    return n["number"]


def test_permit_application_opens_60_days_before_the_term_ends_and_becomes_a_permit_version(db, tmp_path, mail):
    two_users(db.url, permit_days_left=90)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        _signin(c, "rosa", secret, db.url)
        home = c.get("/portal")
        assert 'id="start-application" disabled' in home.text and "opens on" in home.text
        r = c.post("/portal/drafts", data={"_csrf_token": csrf_of(home.text), "kind": "permit-application",
                                           "target": "permit:PAL-IU-2026-02"}, follow_redirects=False)
        assert "refused" in r.headers["location"] and "13.54" in r.headers["location"]
        with psycopg.connect(db.url, autocommit=True) as conn:      # 30 days left: the renewal is open
            from portal_support import import_permit
            today = datetime.now(timezone.utc).date()
            import_permit(conn, today - timedelta(days=335), today + timedelta(days=30))
        d = _draft(c, "permit-application", "permit:PAL-IU-2026-02")
        page = c.get(f"/portal/drafts/{d}")
        assert "(a) Name of applicant" in page.text and "(i) Number and type of employees" in page.text
        form = {"_csrf_token": csrf_of(page.text), "applicant_name": "Acme Plating", "address": "1 Mill St, Palmyra",
                "sic": "3471", "average_daily_gpd": "19000", "constituents": "Cu, Ni, CN by EPA 200.7",
                "time_duration": "06:00-18:00 weekdays", "average_flow_gpm": "13", "peak_flow_gpm": "40",
                "activities": "electroplating", "products": "plated parts, 2,000/day", "employees": "24 production",
                "hours": "two shifts"}
        c.post(f"/portal/drafts/{d}/save", data=form)
        page = c.get(f"/portal/drafts/{d}")
        assert "(f) Plans" in page.text                                    # the plans are missing
        _upload(c, d, "attachment", "floor-plan.pdf", LAB_PDF)
        r = _sign(c, db.url, "rosa", secret, d)
        assert r.status_code == 303, r.text[:500]
        sub = int(r.headers["location"].split("/")[-1].split("?")[0])
        _signin(c, "coord")
        page = c.get(f"/review/{sub}")
        c.post(f"/review/{sub}/accept", data={"_csrf_token": csrf_of(page.text)})
        page = c.get(f"/review/{sub}")
        toml = re.search(r'<textarea id="permit" name="permit"[^>]*>(.*?)</textarea>', page.text, re.S).group(1)
        import html as _html
        toml = _html.unescape(toml)
        assert "average_daily_gpd = 19000" in toml and 'analyte = "cu"' in toml
        r = c.post(f"/review/{sub}/permit", data={"_csrf_token": csrf_of(page.text), "permit": toml},
                   follow_redirects=False)
        assert r.status_code == 303, r.text[:800]
    with psycopg.connect(db.url) as conn:
        v = conn.execute("SELECT version, reason, (document->'flow'->>'average_daily_gpd')::float FROM permits "
                         "WHERE number = 'PAL-IU-2026-02' ORDER BY version DESC LIMIT 1").fetchone()
        assert v[0] == 3 and "PA-" in v[1] and v[2] == 19000.0


def test_the_command_line_invites_lists_shows_and_reviews_through_the_same_functions(db, tmp_path, mail, capsys):
    """``sewerwatch portal ...``: the same functions as the coordinator's pages, the
    operating-system user as the actor: invitations made and withdrawn, accounts revoked,
    ``show`` checking the stored bytes against the hash, reject and accept with the signatory
    told by mail (accepted results stored and the copper result judged), an accepted
    application's permit file printed and made a permit version."""
    import getpass

    from sewerwatch import cli
    two_users(db.url, permit_days_left=30)                # the renewal is open (§13.54(4))
    cfg = tmp_path / "village.toml"
    cfg.write_text(f'[utility]\nname = "Village of Palmyra"\n[services]\ndb_url = "{db.url}"\n'
                   f'state_dir = "{tmp_path / "state"}"\n[web]\nmail_url = "{mail.url("x@example.com")}"\n')

    def sw(*args):
        code_ = cli.main(["--config", str(cfg), "portal", *args])
        out = capsys.readouterr()
        return code_, out.out + out.err

    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe", "--signatory",
                 "--title", "Owner")
    assert rc == 2 and "subscriber agreement" in out and "40 CFR 3.2000(b)(5)(v)" in out
    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe")
    assert rc == 0 and "mailed to pat@sweet.example" in out and _wait_mail(mail, "pat@sweet.example")
    lost = int(re.search(r"invitation (\d+) mailed", out).group(1))
    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe")   # the mail was lost
    invitation = int(re.search(r"invitation (\d+) mailed", out).group(1))
    assert rc == 0 and invitation != lost and re.search(rf"invitation {lost} of .* to pat@sweet.example no "
                                                         rf"longer works: invitation {invitation} replaces it", out)
    assert len(_wait_mail(mail, "pat@sweet.example", 2)) == 2
    rc, out = sw("people")
    assert rc == 0 and "Pat Doe" in out and "open" in out
    rc, out = sw("people", "--site", "nosuch")
    assert rc == 2 and "unknown site 'nosuch'" in out and len(out.strip().splitlines()) == 1
    rc, out = sw("revoke", "--invitation", str(invitation))
    assert rc == 0 and "withdrawn" in out
    rc, out = sw("revoke", "--invitation", str(invitation))
    assert rc == 2 and "revoked already" in out
    rc, out = sw("people", "--json")
    assert rc == 0 and [i["state"] for i in json.loads(out)["invitations"]] == ["revoked", "revoked"]
    rc, out = sw("revoke")
    assert rc == 2 and "one of them" in out

    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    secret_p = person(db.url, "plater", "paco", "Paco Ruiz", signatory=True)
    with office_client(db, tmp_path / "web", mail_url=mail.url("x@example.com")) as c:
        _signin(c, "rosa", secret, db.url)
        d = _draft(c, "self-monitoring")
        _upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=1.8))
        assert _sign(c, db.url, "rosa", secret, d).status_code == 303
        rc, out = sw("submissions")
        assert rc == 0 and "SMR-" in out and "Rosa Alvarez" in out
        first = re.search(r"SMR-\d{4}-\d{3}", out).group(0)
        rc, out = sw("show", first)
        assert rc == 0 and "the stored document matches it" in out and "Rosa Alvarez" in out and "results.csv" in out
        sha = re.search(r"SHA-256 ([0-9a-f]{64})", out).group(1)
        code_ = cli.main(["--config", str(cfg), "portal", "show", first, "--document"])
        signed = capsys.readouterr().out
        assert code_ == 0 and hashlib.sha256(signed.encode()).hexdigest() == sha        # the exact bytes signed
        rc, out = sw("reject", first, "--reason", "wrong sample point")
        assert rc == 0 and "told by mail (rosa@example.com)" in out
        told = _wait_mail(mail, "rosa@example.com", 2)[-1]              # the receipt, then the outcome
        assert "returned" in told["subject"] and "wrong sample point" in told["body"]
        rc, out = sw("accept", first)
        assert rc == 2 and "rejected" in out                                     # only one awaiting review
        d = _draft(c, "self-monitoring")
        _upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=1.8))
        assert _sign(c, db.url, "rosa", secret, d).status_code == 303
        rc, out = sw("submissions", "--json")
        second = [s["number"] for s in json.loads(out)]
        assert rc == 0 and len(second) == 1 and second[0] != first
        rc, out = sw("accept", second[0])
        assert rc == 0 and "3 results stored, 1 violation found (cu-daily-max)" in out and "told by mail" in out
        assert "accepted" in _wait_mail(mail, "rosa@example.com", 4)[-1]["subject"]
        rc, out = sw("permit", second[0])
        assert rc == 2 and "not a permit application" in out
        # a renewal application, signed by the plater's other signatory
        _signin(c, "paco", secret_p, db.url)
        d = _draft(c, "permit-application", "permit:PAL-IU-2026-02")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={
            "_csrf_token": csrf_of(page.text), "applicant_name": "Acme Plating", "address": "1 Mill St, Palmyra",
            "sic": "3471", "average_daily_gpd": "21000", "constituents": "Cu, Ni", "time_duration": "06:00-18:00",
            "average_flow_gpm": "15", "peak_flow_gpm": "45", "activities": "electroplating", "products": "parts",
            "employees": "24", "hours": "two shifts"})
        _upload(c, d, "attachment", "floor-plan.pdf", LAB_PDF)
        assert _sign(c, db.url, "paco", secret_p, d).status_code == 303
    rc, out = sw("submissions")
    application = re.search(r"PA-\d{4}-\d{3}", out).group(0)
    rc, out = sw("permit", application)
    assert rc == 2 and "accept it first" in out
    rc, out = sw("accept", application)
    assert rc == 0 and "accepted" in out
    rc, out = sw("permit", application)
    assert rc == 0 and "average_daily_gpd = 21000" in out and 'analyte = "cu"' in out
    permit_file = tmp_path / "renewal.toml"
    permit_file.write_text(out)
    rc, out = sw("permit", application, "--file", str(permit_file))
    assert rc == 0 and "permit PAL-IU-2026-02 (plater) from PA-2026-001: version 2" in out, out
    rc, out = sw("revoke", "rosa")
    assert rc == 0 and "revoked" in out
    rc, out = sw("revoke", "coord")
    assert rc == 2 and "no portal account 'coord'" in out                # a staff account is not the portal's
    with psycopg.connect(db.url) as conn:
        me = getpass.getuser()
        assert conn.execute("SELECT actor FROM portal_events WHERE event = 'rejected'").fetchone()[0] == me
        assert conn.execute("SELECT detail->>'superseded_by' FROM audit_log WHERE action = "
                            "'portal-invitation-revoked' AND (detail->>'invitation')::int = %s", (lost,)
                            ).fetchone()[0] == str(invitation)
        assert {a for (a,) in conn.execute("SELECT actor FROM audit_log WHERE action IN ('portal-invited', "
                                           "'portal-invitation-revoked', 'portal-accepted', 'portal-rejected', "
                                           "'portal-account-revoked')")} == {me}
        assert conn.execute("SELECT disabled_at IS NOT NULL FROM web_accounts WHERE username = 'rosa'").fetchone()[0]
        rows = conn.execute("SELECT r.analyte, r.value_mg_l FROM lab_results r JOIN lab_samples s ON s.id = r.sample_id "
                            "JOIN portal_submissions p ON p.id = s.submission_id WHERE p.number = %s ORDER BY 1",
                            (second[0],)).fetchall()
        assert rows == [("cu", 1.8), ("ni", 0.4), ("tss", 120.0)]
        assert conn.execute("SELECT count(*) FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'plater' "
                            "AND v.peak = 1.8 AND v.limit_value = 1.0").fetchone()[0] == 1   # copper 1.8 > 1.0
        v = conn.execute("SELECT version, reason, (document->'flow'->>'average_daily_gpd')::float FROM permits "
                         "WHERE number = 'PAL-IU-2026-02' ORDER BY version DESC LIMIT 1").fetchone()
        assert v[0] == 2 and application in v[1] and v[2] == 21000.0
