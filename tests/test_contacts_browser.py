"""The coordinator keeps an industrial user's contacts in a real browser (Debian's Chromium,
the session's one), over ``sewerwatch web`` on a copy of the round village
(tests/web_round.py): from the user's page to its Contacts page, a person added through the
form as served, changed (the earlier version in the history, dated, naming who), the mailing
address saved; then invited to the portal from the contact, the invitation's link opened and
the account made: the contact's page names the account (one person); the person's documents
sent on paper, then by e-mail again, from the contact's page. A portal account
cannot open the Contacts page; a viewer reads it without a form to change anything."""

from __future__ import annotations

import pytest

from support import wait_until
from web_support import PASSWORD
from test_web_round_browser import click, office, round_db, sign_in  # noqa: F401  (the module's fixtures)

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


def fill(d, element_id: str, text: str) -> None:
    el = d.find_element(By.ID, element_id)
    el.clear()
    el.send_keys(text)


def test_the_coordinator_adds_edits_and_invites_a_contact(office, chromium):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    sign_in(b, base, "coord")
    d.get(f"{base}/sites/candy")
    d.find_element(By.ID, "contacts-link").click()
    assert wait_until(lambda: "Contacts: Sweet Creek Confections" in b.text(), 15), b.text()[:500]
    assert "No contacts on file" in b.text()
    # a person added through the form as served
    fill(d, "full_name", "Jo Baker")
    d.find_element(By.ID, "role-representative").click()
    fill(d, "title", "Plant owner")
    fill(d, "phone", "608-555-0300")
    fill(d, "email", "jo@sweetcreek.example")
    click(b, "add")
    assert wait_until(lambda: "Jo Baker is added to the contacts of Sweet Creek Confections" in b.text(), 30), \
        b.text()[:800]
    cid = int(d.current_url.split("/contacts/")[1].split("?")[0])
    # changed: a second role and a new phone; the first version stays in the history
    d.find_element(By.ID, "role-emergency").click()
    fill(d, "phone", "608-555-0399")
    fill(d, "note", "24 h line")
    click(b, "save")
    assert wait_until(lambda: "Saved as version 2" in b.text(), 30), b.text()[:800]
    assert "authorised representative, emergency (24 h)" in b.text("contact-now")
    history = b.text("history")
    assert "608-555-0300" in b.text("version-1") and "608-555-0399" in b.text("version-2")
    assert "by coord" in b.text("version-1") and "24 h line" in b.text("version-2"), history
    # the same change again is refused, naming the version that says it
    click(b, "save")
    assert wait_until(lambda: "nothing changed (version 2 already says this)" in b.text("problem"), 30)
    # her documents on paper, then by e-mail again, from the contact's page as served
    assert b.text("documents-by") == "by e-mail"
    click(b, "documents-switch")
    assert wait_until(lambda: "now go on paper, by post" in b.text(), 30), b.text()[:800]
    assert b.text("documents-by") == "on paper, by post"
    click(b, "documents-switch")
    assert wait_until(lambda: "go by e-mail again" in b.text(), 30), b.text()[:800]
    assert b.text("documents-by") == "by e-mail"
    with db.connect() as conn:                # each choice recorded, the last one in force
        assert [r[0] for r in conn.execute("SELECT paper FROM contact_mail_preferences WHERE contact_id = %s "
                                           "ORDER BY recorded_at", (cid,))] == [True, False]
    # the mailing address, on the Contacts page
    d.find_element(By.ID, "back").click()
    assert wait_until(lambda: "Mailing address" in b.text(), 15)
    fill(d, "mailing-street", "PO Box 7")
    fill(d, "mailing-city", "Palmyra")
    fill(d, "mailing-state", "WI")
    fill(d, "mailing-zip", "53156")
    click(b, "save-mailing")
    assert wait_until(lambda: "The mailing address is saved" in b.text(), 30), b.text()[:800]
    assert "Palmyra, WI 53156" in b.text("address-mailing") and "Version 1" in b.text("address-mailing")
    b.previews("contacts")                   # the README's pictures (SEWERWATCH_WRITE_PREVIEWS=1)
    # invited to the portal from the contact (no mail server here: the page gives the link)
    d.find_element(By.LINK_TEXT, "Jo Baker").click()
    assert wait_until(lambda: d.find_elements(By.ID, "portal-account"), 15), b.text()[:500]
    assert b.text("portal-account") == "none"
    click(b, "invite")
    assert wait_until(lambda: d.find_elements(By.ID, "invite-link"), 30), b.text()[:800]
    link = b.text("invite-link")
    with db.connect() as conn:
        assert conn.execute("SELECT contact_id, email FROM portal_invitations").fetchall() == [
            (cid, "jo@sweetcreek.example")]
    # the person opens the link and makes the account
    d.execute_cdp_cmd("Network.clearBrowserCookies", {})
    d.get(link)
    assert wait_until(lambda: "invites you to its portal for" in b.text(), 15), b.text()[:500]
    fill(d, "username", "jobaker")
    fill(d, "password", PASSWORD)          # the one the round's sign-in types
    fill(d, "password_again", PASSWORD)
    click(b, "make-account")
    with db.connect() as conn:
        assert wait_until(lambda: conn.execute("SELECT contact_id FROM web_accounts WHERE username = 'jobaker'")
                          .fetchone() == (cid,), 15)
    # a portal account cannot open the Contacts page
    sign_in(b, base, "jobaker")
    d.get(f"{base}/sites/candy/contacts")
    assert "This page is the utility's" in b.text() and "608-555" not in b.text() and "PO Box 7" not in b.text()
    d.get(f"{base}/contacts/{cid}")
    assert "This page is the utility's" in b.text() and "608-555" not in b.text()
    # the coordinator sees the account on the contact's page
    sign_in(b, base, "coord")
    d.get(f"{base}/contacts/{cid}")
    assert wait_until(lambda: b.text("portal-account") == "jobaker", 15), b.text()[:500]
    # a viewer reads, and is offered nothing to change
    sign_in(b, base, "viewer")
    d.get(f"{base}/contacts/{cid}")
    assert wait_until(lambda: "Jo Baker" in b.text(), 15)
    assert not d.find_elements(By.ID, "edit-contact") and not d.find_elements(By.ID, "invite")
    assert not d.find_elements(By.ID, "documents-switch") and b.text("documents-by") == "by e-mail"
    d.get(f"{base}/sites/candy/contacts")
    assert wait_until(lambda: "Jo Baker" in b.text(), 15)
    assert not d.find_elements(By.ID, "add-contact") and not d.find_elements(By.ID, "address-form-mailing")
