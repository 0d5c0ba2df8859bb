"""The industrial users' portal as people use it: Debian's Chromium driven by
selenium (the session's one browser, ``browser`` in ``conftest.py``) against ``sewerwatch web``
(a process of its own, the same application ``run`` serves) over the real database, with a
real SMTP server (aiosmtpd) receiving the invitation and the receipt.

The coordinator invites a signatory; the signatory sets a password and a second factor,
uploads a lab CSV with one bad row, sees the reason, fixes it, signs and submits; the receipt
arrives with the hash, and the copy of record's hash equals it; the coordinator rejects it
with a reason, the user resubmits a correction, the coordinator accepts, and the copper
exceedance in it becomes a violation; a second user's account gets nothing of the first's.
``SEWERWATCH_WRITE_PREVIEWS=1`` writes the screenshots the guide shows
(``docs/portal/index.md``) to ``web/previews/``.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pyotp
import pytest

from portal_support import LAB_PDF, PASSWORD, code, lab_csv, person, two_users
from sewerwatch.services.scratch import free_port
from support import wait_until

pytest.importorskip("selenium.webdriver")
pytest.importorskip("aiosmtpd")
from selenium.webdriver.common.by import By  # noqa: E402
from browser import gone  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PREVIEWS = ROOT / "web" / "previews"
NEW_PASSWORD = "plating line 7 sulfate"


class Portal:
    """``sewerwatch web`` over a module's database, with a mail catcher."""

    def __init__(self, db, tmp: Path):
        from alerts.catchers import MailCatcher
        from web_support import cheap_hashes
        self.db, self.tmp = db, tmp
        self.mail = MailCatcher().start()
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.cfg = tmp / "village.toml"
        self.cfg.write_text(f"""[utility]
name = "Village of Palmyra"
pack = "palmyra-wi"
timezone = "America/Chicago"
[services]
db_url = "{db.url}"
state_dir = "{tmp / 'state'}"
[web]
port = {self.port}
public_url = "{self.base}"
login_per_min = 200
mail_url = "{self.mail.url('nobody@example.com', 'portal@palmyra.example')}"
[[sites]]
id = "plater"
name = "Acme Plating"
sic = "3471"
[[sites]]
id = "candy"
name = "Sweet Creek Confections"
sic = "2065"
""")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
        with cheap_hashes():
            two_users(db.url)
            self.carl = person(db.url, "candy", "carl", "Carl Candy", signatory=True)
        self.err = open(tmp / "web.err", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(self.cfg), "web"],
                                     stdout=subprocess.DEVNULL, stderr=self.err, cwd=ROOT, env=self.env)
        assert wait_until(lambda: "office on http" in (tmp / "web.err").read_text() or self.proc.poll() is not None,
                          60), (tmp / "web.err").read_text()[-3000:]
        assert self.proc.poll() is None, (tmp / "web.err").read_text()[-3000:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        self.mail.stop()


@pytest.fixture(scope="module")
def portal(module_db, tmp_path_factory, browser):
    p = Portal(module_db, tmp_path_factory.mktemp("portal"))
    try:
        yield p
    finally:
        p.close()


def _click(d, element_id: str) -> None:
    el = d.find_element(By.ID, element_id)
    d.execute_script("arguments[0].scrollIntoView({block: 'center'});", el)
    el.click()
    WebDriverWait(d, 30).until(gone(el))


def _sign_in(b, portal, user: str, password: str, secret: str | None = None) -> None:
    d = b.driver
    b.fresh()
    d.get(portal.base + "/login")
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(password)
    _click(d, "sign-in")
    if secret:
        d.find_element(By.ID, "code").send_keys(code(portal.db.url, user, secret))
        _click(d, "send-code")


def _keep(b) -> list[dict]:
    """The session's cookies (to come back as the same person without signing in again: each
    sign-in of a signatory spends a TOTP step, and a step works once)."""
    return b.driver.get_cookies()


def _back(b, portal, cookies: list[dict]) -> None:
    b.fresh()
    b.driver.get(portal.base + "/login")
    for c in cookies:
        b.driver.add_cookie({k: c[k] for k in ("name", "value", "path") if k in c})


def _upload(b, path: Path, role: str) -> None:
    d = b.driver
    Select(d.find_element(By.ID, "role")).select_by_value(role)
    d.find_element(By.ID, "file").send_keys(str(path))
    _click(d, "upload")


def _shot(b, name: str, max_height: int = 2600) -> None:
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        PREVIEWS.mkdir(exist_ok=True)
        b.screenshot(PREVIEWS / name, max_height=max_height)


def _sign(b, portal, user: str, secret: str, password: str) -> str:
    d = b.driver
    _click(d, "review-sign")
    assert "I certify under penalty of law" in b.text("certification")
    assert "40 CFR 403.6(a)(2)(ii)" in b.text("certification")
    d.find_element(By.ID, "certify").click()
    d.find_element(By.ID, "password").send_keys(password)
    d.find_element(By.ID, "code").send_keys(code(portal.db.url, user, secret))
    return d.current_url


def test_invite_sign_reject_correct_accept_and_a_second_user_sees_nothing(portal, chromium, tmp_path):
    b, d = chromium, chromium.driver
    # the coordinator invites a signatory
    _sign_in(b, portal, "coord", PASSWORD)
    d.get(portal.base + "/portal-people")
    Select(d.find_element(By.ID, "site")).select_by_value("plater")
    d.find_element(By.ID, "full_name").send_keys("Rosa Alvarez")
    d.find_element(By.ID, "email").send_keys("rosa@acme.example")
    d.find_element(By.ID, "signatory").click()
    d.find_element(By.ID, "title").send_keys("Plant manager (duly authorized representative)")
    d.execute_script("document.getElementById('agreement_on').value = arguments[0]",
                     datetime.now(timezone.utc).date().isoformat())
    _click(d, "invite")
    assert "The invitation was mailed to rosa@acme.example" in b.text("invited")
    assert wait_until(lambda: portal.mail.to("rosa@acme.example"), 15)
    link = re.search(r"(http://127\.0\.0\.1:\d+/portal/invite/\S+)", portal.mail.to("rosa@acme.example")[0]["body"])[1]

    # the signatory sets a password and the second factor
    b.fresh()
    d.get(link)
    secret = d.find_element(By.ID, "totp-secret").text
    assert d.find_elements(By.CSS_SELECTOR, "figure.qr svg")
    d.find_element(By.ID, "username").clear()
    d.find_element(By.ID, "username").send_keys("ralvarez")
    d.find_element(By.ID, "password").send_keys(NEW_PASSWORD)
    d.find_element(By.ID, "password_again").send_keys(NEW_PASSWORD)
    d.find_element(By.ID, "code").send_keys(pyotp.TOTP(secret).now())
    _click(d, "make-account")
    assert "Your account is ready" in b.text()
    _sign_in(b, portal, "ralvarez", NEW_PASSWORD, secret)
    assert d.current_url.endswith("/portal") and "Acme Plating" in b.text() and "PAL-IU-2026-02" in b.text()
    _shot(b, "portal-home.png")
    b.phone()                                         # a phone: nothing wider than its 390 px
    d.get(portal.base + "/portal")
    assert b.scroll_width() <= 392, b.scroll_width()
    _shot(b, "portal-home-phone.png")
    b.desktop()

    # a lab CSV with one bad row: the reason, nothing stored; fixed, then signed
    _click(d, "start-report")
    bad, good, pdf = tmp_path / "results.csv", tmp_path / "results-fixed.csv", tmp_path / "lab-report.pdf"
    bad.write_bytes(lab_csv(spoiled=True))
    good.write_bytes(lab_csv(spoiled=False))
    pdf.write_bytes(LAB_PDF)
    _upload(b, bad, "lab-csv")
    rows = b.text("bad-rows")
    assert "n/a" in rows and re.search(r"\b3\b", rows), rows
    with psycopg.connect(portal.db.url) as conn:
        assert conn.execute("SELECT count(*) FROM lab_results").fetchone()[0] == 0
    _upload(b, good, "lab-csv")
    _upload(b, pdf, "lab-report")
    assert "3 results can be used" in b.text("ready")
    _sign(b, portal, "ralvarez", secret, NEW_PASSWORD)
    _shot(b, "portal-sign.png")
    _click(d, "sign")
    assert "Signed and submitted" in b.text("signed")
    shown = b.text("sha256").strip()
    rosa = _keep(b)

    # the receipt has the hash, and so has the copy of record
    assert wait_until(lambda: any("receipt" in m["subject"] for m in portal.mail.to("rosa@acme.example")), 15)
    receipt = [m for m in portal.mail.to("rosa@acme.example") if "receipt" in m["subject"]][0]
    mailed = re.search(r"SHA-256:\s+([0-9a-f]{64})", receipt["body"])[1]
    with psycopg.connect(portal.db.url) as conn:
        number, doc, sha = conn.execute("SELECT number, document, sha256 FROM portal_submissions").fetchone()
    assert mailed == sha == shown == hashlib.sha256(bytes(doc)).hexdigest()
    page = tmp_path / "receipt.html"
    page.write_text(f"<!doctype html><meta charset='utf-8'><body style='font:15px/1.45 sans-serif;margin:24px;"
                    f"max-width:980px'><p><b>From:</b> {html.escape(receipt['from'])}<br><b>To:</b> "
                    f"{html.escape(', '.join(receipt['to']))}<br><b>Subject:</b> {html.escape(receipt['subject'])}</p>"
                    f"<pre style='white-space:pre-wrap;font:14px/1.45 monospace'>{html.escape(receipt['body'])}</pre>")
    d.get(page.as_uri())
    _shot(b, "portal-receipt.png", max_height=420)

    # the coordinator rejects it with a reason
    _sign_in(b, portal, "coord", PASSWORD)
    d.get(portal.base + "/review")
    d.find_element(By.LINK_TEXT, number).click()
    assert "the stored document and files match it" in b.text("verified")
    d.find_element(By.ID, "reason-text").send_keys("The lab report is another sample's: attach P-0601's.")
    _click(d, "reject")

    # the user sees the reason and resubmits a correction
    _back(b, portal, rosa)
    d.get(portal.base + "/portal")
    d.find_element(By.LINK_TEXT, number).click()
    assert "attach P-0601" in b.text("reason") and "rejected" in b.text("state")
    _click(d, "correct")
    pdf.write_bytes(LAB_PDF + b"% P-0601\n")
    _upload(b, pdf, "lab-report")
    _sign(b, portal, "ralvarez", secret, NEW_PASSWORD)
    _click(d, "sign")
    corrected = d.current_url.split("?")[0]

    # the coordinator accepts: the copper result is judged like the utility's own
    _sign_in(b, portal, "coord", PASSWORD)
    d.get(portal.base + "/review")
    assert f"corrects {number}" in b.text("queue")
    d.find_element(By.CSS_SELECTOR, "#queue a").click()
    _click(d, "accept")
    assert "Accepted" in b.text("accepted") and "violations" in b.text("events")
    with psycopg.connect(portal.db.url) as conn:
        v = conn.execute("SELECT v.rule, v.peak, v.limit_value FROM violations v JOIN sites s ON s.id = v.site_id "
                         "WHERE s.key = 'plater' AND v.peak = 1.8").fetchall()
        own = conn.execute("SELECT count(*) FROM lab_samples WHERE submission_id IS NOT NULL").fetchone()[0]
    assert v and v[0][2] == 1.0 and own == 1
    _back(b, portal, rosa)
    d.get(portal.base + "/portal")
    assert "you (self-monitoring)" in b.text("results") and "1.80 mg/l" in b.text("results")

    # a second user's account gets nothing of the first's
    _sign_in(b, portal, "carl", PASSWORD, portal.carl)
    assert "Sweet Creek Confections" in b.text() and "Acme" not in b.text()
    for path in (corrected.split(portal.base, 1)[1], "/portal/submissions/1/pdf", "/portal/drafts/1",
                 "/review", "/"):
        d.get(portal.base + path)
        text = b.text()
        assert ("There is nothing here" in text or "This page is the utility's" in text), (path, text[:300])
        assert "Rosa" not in text and "P-0601" not in text and number not in text, path
