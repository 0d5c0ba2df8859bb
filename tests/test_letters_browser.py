"""The coordinator writes and issues a letter in a real browser (Debian's Chromium, the
session's one) over ``sewerwatch web`` on a copy of the round village (tests/web_round.py),
whose configuration names a letters folder: the warning letter's template edited in the
textarea, previewed (the page's pictures), saved (the file in the folder, the version kept);
the letter issued for the plater from its page's "Issue a letter"; its PDF and its DOCX
downloaded and read back; mailed from its page in a batch of its own to a real SMTP server
(aiosmtpd), the delivered message's PDF read back and the sending shown on the letter's page;
a PDF edited outside brought back and shown on the letter's page.
A second save from the old version is a conflict; the viewer reads without a form."""

from __future__ import annotations

import email
import email.policy
import os
from pathlib import Path

import pytest

import mailing_support as ms
import web_round
from alerts.catchers import MailCatcher
from support import wait_until
from test_web_round_browser import click, fetch, round_db, sign_in  # noqa: F401  (the module's fixtures)

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

CONFIG = web_round.CONFIG.replace('signer_title = "Utility Superintendent"\n',
                                  'signer_title = "Utility Superintendent"\nletters = "letters"\n')
PREVIEWS = Path(__file__).resolve().parent.parent / "web" / "previews"


@pytest.fixture(scope="module")
def office(round_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("letters-browser")
    catcher = MailCatcher().start()
    try:
        (tmp / "village.toml").write_text(CONFIG, encoding="utf-8")
        ms.add_contacts(tmp, round_db)             # the plater's authorised representative: ms.REP
        web = f'mail_url = "mailto://127.0.0.1:{catcher.port}?from=office@palmyra.example"'
        with web_round.served(round_db, tmp, config=CONFIG, web=web) as base:
            yield {"base": base, "db": round_db, "tmp": tmp, "mail": catcher}
    finally:
        catcher.stop()


def test_the_coordinator_writes_previews_saves_issues_and_brings_a_pdf_back(office, chromium, tmp_path):
    from enforcement.letters.docx import text_of
    from lab.documents.pdf import Letterhead, document, pdf_text, write_pdf

    b, d, base, tmp = chromium, chromium.driver, office["base"], office["tmp"]
    sign_in(b, base, "coord")
    d.get(f"{base}/")
    d.find_element(By.LINK_TEXT, "Letters").click()
    assert wait_until(lambda: "Kinds of letter" in b.text(), 15), b.text()[:500]
    assert "the program's" in b.text("kind-warning-letter")
    d.find_element(By.LINK_TEXT, "Warning letter").click()
    assert wait_until(lambda: d.find_elements(By.ID, "text"), 15)
    # the default edited in the textarea
    area = d.find_element(By.ID, "text")
    text = area.get_attribute("value")
    assert text.startswith("{# title: Warning letter #}")
    edited = text.replace("This letter is a warning.", "This letter is a warning from the village board.")
    d.execute_script("arguments[0].value = arguments[1];", area, edited)
    Select(d.find_element(By.ID, "site")).select_by_visible_text("Lakeside Plating")
    d.find_element(By.ID, "about").send_keys("grease seen at the control manhole")
    click(b, "preview")
    assert wait_until(lambda: d.find_elements(By.ID, "page-1"), 60), b.text()[:800]
    assert d.find_element(By.ID, "page-1").get_attribute("src").startswith("data:image/png;base64,")
    assert "from the village board" in d.find_element(By.ID, "text").get_attribute("value")
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        b.screenshot(PREVIEWS / "letters-template-1280.png")
    click(b, "save")
    assert wait_until(lambda: "Saved as version 1" in b.text(), 30), b.text()[:800]
    saved = (tmp / "letters" / "warning-letter.html").read_text(encoding="utf-8")
    assert "from the village board" in saved and "by coord" in b.text("version-1")
    # the letter issued from the user's page
    d.get(f"{base}/sites/plating")
    d.find_element(By.ID, "letter-link").click()
    assert wait_until(lambda: d.find_elements(By.ID, "issue-form"), 15)
    assert Select(d.find_element(By.ID, "issue-site")).first_selected_option.text == "Lakeside Plating"
    Select(d.find_element(By.ID, "issue-kind")).select_by_visible_text("Warning letter")
    d.find_element(By.ID, "issue-about").send_keys("grease seen at the control manhole")
    click(b, "issue-letter")
    assert wait_until(lambda: "is issued and kept as issued" in b.text(), 60), b.text()[:800]
    number = d.find_element(By.TAG_NAME, "h1").text.split()[-1]
    assert number.startswith("LTR-")
    pdf = fetch(b, d.find_element(By.ID, "pdf").get_attribute("href"))
    words = " ".join(pdf_text(pdf).split())
    for w in (number, "Village of Palmyra", "Lakeside Plating", "grease seen at the control manhole",
              "This letter is a warning from the village board.", "Pat Example"):
        assert w in words, w
    lines = text_of(fetch(b, d.find_element(By.ID, "docx").get_attribute("href"))).split("\n")
    assert "Village of Palmyra" in lines and "Subject: grease seen at the control manhole" in lines
    assert any(x.startswith("This letter is a warning from the village board.") for x in lines), lines
    # mailed from its page, in a batch of its own, to the plater's authorised representative
    letter_page = d.current_url
    d.find_element(By.ID, "mail-this").click()
    assert wait_until(lambda: "Make a batch" in b.text(), 30), b.text()[:500]
    assert d.find_element(By.ID, "choice-documents").is_selected()
    click(b, "batch-make")
    assert wait_until(lambda: "Made: review who gets what" in b.text(), 60), b.text()[:800]
    assert b.text("batch-counts") == "1 by e-mail · 0 on paper · 0 with no address on file"
    assert ms.REP in b.text("by-email") and number in b.text("by-email")
    click(b, "send-button")
    assert wait_until(lambda: "Sent: each message's outcome is below." in b.text(), 120), b.text()[:800]
    mail = office["mail"]
    assert wait_until(lambda: len(mail.messages) == 1, 15)
    msg = email.message_from_bytes(mail.messages[0]["raw"], policy=email.policy.default)
    assert mail.messages[0]["to"] == [ms.REP] and number in msg["subject"]
    (att,) = list(msg.iter_attachments())
    assert "This letter is a warning from the village board." in " ".join(pdf_text(att.get_content()).split())
    d.get(letter_page)
    assert wait_until(lambda: ms.REP in b.text("sendings") and "sent" in b.text("sendings"), 30), b.text()[:800]
    # issuing it again is refused, naming the letter
    d.get(f"{base}/letters?site=plating")
    Select(d.find_element(By.ID, "issue-kind")).select_by_visible_text("Warning letter")
    d.find_element(By.ID, "issue-about").send_keys("Grease seen at the control manhole")
    click(b, "issue-letter")
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 30)
    assert f"Warning letter {number} about this was issued already" in b.text("problem")
    # the letter edited outside comes back as its PDF
    d.find_element(By.LINK_TEXT, number).click()
    assert wait_until(lambda: d.find_elements(By.ID, "replace-form"), 15)
    edited_pdf = tmp_path / "signed-letter.pdf"
    edited_pdf.write_bytes(write_pdf(document("Warning letter", "<p>Signed by the superintendent in ink.</p>",
                                              Letterhead("Village of Palmyra"))))
    d.find_element(By.ID, "pdf-file").send_keys(str(edited_pdf))
    d.find_element(By.ID, "note").send_keys("signed")
    click(b, "replace")
    assert wait_until(lambda: "The PDF brought back is now the letter's PDF" in b.text(), 30), b.text()[:800]
    assert "signed-letter.pdf (the letter's PDF now)" in b.text("replacements") and "by coord" in b.text("replacements")
    assert "Signed by the superintendent in ink." in pdf_text(fetch(b, d.find_element(By.ID, "pdf").get_attribute("href")))
    assert number in pdf_text(fetch(b, d.find_element(By.ID, "first-pdf").get_attribute("href")))
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        b.phone()
        d.refresh()
        b.screenshot(PREVIEWS / "letter-390.png")
        b.desktop()


def test_two_editors_conflict_and_the_viewer_reads(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    sign_in(b, base, "coord")
    d.get(f"{base}/letters/templates/sampling-reminder")
    assert wait_until(lambda: d.find_elements(By.ID, "text"), 15)
    # someone else saves meanwhile (the same function as the page, in the office's folder)
    from foundation.actor import Actor
    from foundation.config import load
    from enforcement.letters import save, template
    cfg = load(office["tmp"] / "village.toml")
    with office["db"].connect() as conn:
        t = template(conn, cfg, "sampling-reminder")
        save(conn, cfg, "sampling-reminder", t.text + "<p>P.S. from the superintendent</p>\n", expected_version=0,
             loaded_sha256=t.sha256, actor=Actor.account("supt", "Sam Super"))
        conn.commit()
    area = d.find_element(By.ID, "text")
    d.execute_script("arguments[0].value = arguments[0].value + '<p>Mine</p>';", area)
    click(b, "save")
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 30)
    assert "supt saved version 1 of the letter template sampling-reminder" in b.text("problem")
    assert "<p>Mine</p>" in d.find_element(By.ID, "text").get_attribute("value")     # nothing typed is lost
    sign_in(b, base, "viewer")
    d.get(f"{base}/letters/templates/sampling-reminder")
    assert wait_until(lambda: "Earlier texts" in b.text(), 15)
    assert not d.find_elements(By.ID, "template-form") and "P.S. from the superintendent" in b.text("text")
    d.get(f"{base}/letters")
    assert not d.find_elements(By.ID, "issue-form")
