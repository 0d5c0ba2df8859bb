"""Mailing in the office, in a real browser (Debian's Chromium against ``sewerwatch web`` over a
copy of the round village with the notices, bills and contacts of tests/mailing_support.py,
mailing through a real SMTP server that refuses the plater's billing address).

The clerk follows Mailing from the menu, makes a batch of every document not yet sent and
reviews it: worked out by hand, 2 notices and the plater's 2 bills by e-mail (4), the candy
maker's 2 bills on paper, none without an address. She sends it: the server receives 2
messages (the notices, each with its PDF, read back with pdftotext) and refuses 2 (the bills:
bounces). The plater's bill's page shows its sending refused, a notice's page its sending
delivered, and bounced after the clerk reads the mail server's notification; the paper list shows Cy
Counter's envelope and its PDF reads back; sending again is refused. A viewer reads the batch
without the send button.
"""

from __future__ import annotations

import email
import email.policy
import os
import urllib.request
from pathlib import Path

import pytest

import mailing_support as ms
import web_round
from alerts.catchers import MailCatcher
from lab.documents.pdf import pdf_text
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

from test_web_round_browser import click  # noqa: E402

PREVIEWS = Path(__file__).resolve().parent.parent / "web" / "previews"


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    db_gen = web_round.clone(services, round_village[0], "mail-b")
    db = next(db_gen)
    tmp = tmp_path_factory.mktemp("mailing-browser")
    catcher = MailCatcher(refuse={ms.AP}).start()
    try:
        bills = ms.bill(tmp, db)
        notices = ms.issue_notices(tmp, db)
        ms.add_contacts(tmp, db)
        web = f'mail_url = "mailto://127.0.0.1:{catcher.port}?from=office@palmyra.example"'
        with web_round.served(db, tmp, web=web) as base:
            yield {"base": base, "tmp": tmp, "bills": bills, "notices": notices, "db": db, "mail": catcher}
    finally:
        catcher.stop()
        next(db_gen, None)


def _get(d, href: str) -> bytes:
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in d.get_cookies())
    return urllib.request.urlopen(urllib.request.Request(href, headers={"Cookie": cookies}), timeout=60).read()


def test_clerk_makes_reviews_and_sends_a_batch_then_prints_the_paper_list(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "clerk")
    d.get(f"{base}/")
    d.find_element(By.LINK_TEXT, "Mailing").click()
    assert wait_until(lambda: "Make a batch" in b.text(), 30), b.text()[:500]
    d.find_element(By.ID, "choice-unsent").click()
    click(b, "batch-make")
    assert wait_until(lambda: "Made: review who gets what" in b.text(), 60), b.text()[:800]
    assert b.text("batch-counts") == "4 by e-mail · 2 on paper · 0 with no address on file"
    email_rows = b.text("by-email")
    assert email_rows.count(ms.REP) == 2 and email_rows.count(ms.AP) == 2
    assert b.text("by-paper").count("PO Box 7") == 2 and "no e-mail address on file" in b.text("by-paper")
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):       # the review, for the README
        b.screenshot(PREVIEWS / "mail-batch-review-1280.png")
        b.phone()
        b.screenshot(PREVIEWS / "mail-batch-review-390.png")
        b.desktop()
    batch_page, first = d.current_url, d.current_window_handle
    d.switch_to.new_window("tab")               # the same review open in a second tab
    d.get(batch_page)
    second = d.current_window_handle
    d.switch_to.window(first)
    click(b, "send-button")
    assert wait_until(lambda: "Sent: each message's outcome is below." in b.text(), 120), b.text()[:800]
    assert b.text("by-email").count("bounced") == 2 and b.text("by-email").count("sent") >= 2

    # the mail server received the two notices, each with its PDF
    mail = office["mail"]
    assert wait_until(lambda: len(mail.messages) == 2, 10) and all(m["to"] == [ms.REP] for m in mail.messages)
    for m in mail.messages:
        msg = email.message_from_bytes(m["raw"], policy=email.policy.default)
        (att,) = list(msg.iter_attachments())
        number = next(n for n in office["notices"] if n in msg["subject"])
        assert number in pdf_text(att.get_content(), layout=False)
        assert m["body"].startswith("Dear Rae Rep,")

    # the plater's 2026Q2 bill's page shows its sending, refused by the server
    p2 = office["bills"][("plating", "2026Q2", "now")][0]
    d.find_element(By.LINK_TEXT, f"Bill 2026Q2-plating").click()
    assert wait_until(lambda: f"Bill {p2}:" in b.text(), 30), b.text()[:500]
    sent = b.text("sendings")
    assert ms.AP in sent and "bounced: 550" in sent

    # and a notice's page its sending, delivered
    d.get(batch_page)
    first_notice = office["notices"][0]
    d.find_element(By.LINK_TEXT, f"Notice {first_notice}").click()
    assert wait_until(lambda: first_notice in b.text() and "Mailed" in b.text(), 30), b.text()[:500]
    assert ms.REP in b.text("sendings") and "sent" in b.text("sendings") and "bounced" not in b.text("sendings")
    notice_page = d.current_url

    # the mail server's notification that it could not be delivered after all, read from Mailing
    raw = next(m["raw"] for m in mail.messages if first_notice in m["subject"])
    mid = email.message_from_bytes(raw, policy=email.policy.default)["Message-ID"].strip()
    (office["tmp"] / "returned.eml").write_bytes(ms.dsn(mid, ms.REP))
    d.find_element(By.LINK_TEXT, "Mailing").click()
    assert wait_until(lambda: "Mail that came back" in b.text(), 30)
    d.find_element(By.ID, "bounce-files").send_keys(str(office["tmp"] / "returned.eml"))
    click(b, "bounces-read")
    assert wait_until(lambda: "bounced" in b.text(), 60), b.text()[:800]
    assert b.text("bounces-summary").startswith("1 bounced")
    assert f"Notice {first_notice} to {ms.REP}: 5.2.2 smtp; 552 5.2.2 mailbox full" in b.text("bounced")
    d.get(notice_page)
    assert wait_until(lambda: "mailbox full" in b.text("sendings"), 30), b.text()[:800]
    assert "bounced" in b.text("sendings")

    # the paper list: Cy Counter's envelope with the candy maker's two bills; its PDF
    d.get(batch_page)
    d.find_element(By.ID, "paper-link").click()
    assert wait_until(lambda: "Paper list of mail batch" in b.text(), 30)
    envelopes = b.text("envelopes")
    assert "Cy Counter" in envelopes and "PO Box 7" in envelopes
    assert "Bill 2026Q1-candy" in envelopes and "Bill 2026Q2-candy" in envelopes
    text = pdf_text(_get(d, d.find_element(By.ID, "paper-pdf").get_attribute("href")), layout=False)
    assert "Cy Counter" in text and "Palmyra, WI 53156" in text and "2 documents to print" in text

    # sending again from the second tab, the page as it was: refused, naming when; nothing sent twice
    d.get(batch_page)
    assert not d.find_elements(By.ID, "send-button")
    d.switch_to.window(second)
    click(b, "send-button")
    assert wait_until(lambda: "was sent on" in b.text(), 30), b.text()[:800]
    assert "a batch is sent once" in b.text("problem")
    assert len(mail.messages) == 2
    d.close()
    d.switch_to.window(first)
    with office["db"].connect() as conn:
        assert conn.execute("SELECT count(*) FROM mail_sendings").fetchone()[0] == 4


def test_a_viewer_reads_a_batch_but_does_not_send(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "viewer")
    d.get(f"{base}/mail")
    assert wait_until(lambda: "Batches" in b.text(), 30)
    assert not d.find_elements(By.ID, "batch-form")
    d.find_element(By.CSS_SELECTOR, "#batches a").click()
    assert wait_until(lambda: "Mail batch" in b.text(), 30)
    assert not d.find_elements(By.ID, "send-button")
