"""The address book's file imported in the office, in a real browser (Debian's Chromium, the
session's one, against ``sewerwatch web`` over a copy of the round village, tests/web_round.py):
the coordinator follows the link from a Contacts page to the import page, uploads a CSV file
with a person, an address and a row naming no known user, reads the preview (the bad row's
reason naming its line and column), saves it, and reads the person and the address back on
the Contacts page and the bad row in the Dead letters. The same preview open in a second tab
(the form as served there) is refused in one line naming what was saved; the first tab's form
sent again (its own key) is told it had been sent already; nothing is saved twice. The same
file uploaded again, and a file that is not a contacts file, are one line on the import page.
A viewer reads the pages without a form."""

from __future__ import annotations

import pytest

import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from browser import gone  # noqa: E402

CSV = """site,entry,name,title,phone,email,street,city,state,zip
plating,representative; emergency,Dana Reyes,Owner,608-555-0101,dana@plating.example,,,,
plating,mailing address,,,,,PO Box 12,Palmyra,WI,53156
nowhere,billing,Al Smith,,,,,,,
"""


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    db_gen = web_round.clone(services, round_village[0], "contacts-import-b")
    db = next(db_gen)
    tmp = tmp_path_factory.mktemp("contacts-import-browser")
    try:
        (tmp / "book.csv").write_text(CSV, encoding="utf-8")
        (tmp / "lab.csv").write_text("sample_id,analyte,value\nS1,copper,1.0\n", encoding="utf-8")
        with web_round.served(db, tmp) as base:
            yield {"base": base, "tmp": tmp, "db": db}
    finally:
        next(db_gen, None)


def press(d, element_id: str) -> None:
    """Click the button and wait for the page it leads to."""
    button = d.find_element(By.ID, element_id)
    button.click()
    WebDriverWait(d, 30).until(gone(button))


def counts(db) -> tuple[int, int, int, int]:
    """Contacts, addresses, the import's dead letters, contacts files saved."""
    with db.connect() as conn:
        return tuple(conn.execute(q).fetchone()[0] for q in (
            "SELECT count(*) FROM contacts", "SELECT count(*) FROM site_addresses",
            "SELECT count(*) FROM dead_letters WHERE source = 'contacts-import'",
            "SELECT count(*) FROM contact_imports WHERE state = 'saved'"))


def test_the_coordinator_imports_a_file_once_and_reads_it_back(office, chromium):
    b, d, base, tmp, db = chromium, chromium.driver, office["base"], office["tmp"], office["db"]
    web_round.sign_in(b, base, "coord")
    d.get(f"{base}/sites/plating/contacts")
    assert wait_until(lambda: "Contacts: Lakeside Plating" in b.text(), 15), b.text()[:500]
    d.find_element(By.ID, "import-link").click()
    assert wait_until(lambda: "Import contacts from a file" in b.text(), 15), b.text()[:500]
    columns = b.text("columns")
    for word in ("site", "entry", "name", "title", "phone", "email", "street", "city", "state", "zip"):
        assert word in columns, (word, columns)
    assert b.text("back") == "Contacts: Lakeside Plating"

    # the file uploaded: its preview, nothing saved yet
    d.find_element(By.ID, "contacts-file").send_keys(str(tmp / "book.csv"))
    press(d, "preview-button")
    assert wait_until(lambda: "Preview: nothing is saved yet." in b.text(), 30), b.text()[:800]
    assert "3 rows: 2 to add, 0 to change, 0 unchanged, 1 cannot be used" in b.text("file-state")
    assert b.text("line-2").split("\t") == ["2", "Lakeside Plating", "representative; emergency", "to add"]
    assert "mailing address" in b.text("line-3") and "to add" in b.text("line-3")
    assert "cannot be used: book.csv line 4, column site: no industrial user 'nowhere'" in b.text("line-4")
    assert b.text("save-button") == "Save the 2 usable rows"
    b.previews("contacts-import")            # the README's pictures (SEWERWATCH_WRITE_PREVIEWS=1)
    assert counts(db) == (0, 0, 0, 0)
    page, first = d.current_url, d.current_window_handle
    first_key = d.find_element(By.CSS_SELECTOR, "#save-form input[name=_form_key]").get_attribute("value")
    # the same preview in two more tabs, as served before it is saved
    d.switch_to.new_window("tab")
    d.get(page)
    second = d.current_window_handle
    d.switch_to.new_window("tab")
    d.get(page)
    third = d.current_window_handle
    assert wait_until(lambda: d.find_elements(By.ID, "save-button"), 15)

    # saved in the first tab
    d.switch_to.window(first)
    press(d, "save-button")
    assert wait_until(lambda: "Saved: 2 added, 0 changed, 0 unchanged" in b.text(), 30), b.text()[:800]
    assert b.text("file-state").startswith("Saved ") and " by coord." in b.text("file-state")
    assert "3 rows: 2 added, 0 changed, 0 unchanged, 1 not used" in b.text("file-state")
    assert not d.find_elements(By.ID, "save-button")
    assert counts(db) == (1, 1, 1, 1)
    saved_page = d.current_url

    # the second tab's form (its own key): refused, naming what was saved; nothing saved twice
    d.switch_to.window(second)
    press(d, "save-button")
    assert wait_until(lambda: "this file was saved already" in b.text("problem"), 30), b.text()[:800]
    fid = page.rstrip("/").rsplit("/", 1)[1]
    problem = b.text("problem")
    assert problem.startswith(f"book.csv: this file was saved already as contacts file {fid} (book.csv) on ")
    assert problem.endswith("by coord: 2 added, 0 changed, 0 unchanged, 1 not used; nothing was saved now")
    assert "Saved " in b.text("file-state") and not d.find_elements(By.ID, "save-button")  # what exists
    d.close()
    # the third tab sends the first tab's form again (its key, as a reload of it would)
    d.switch_to.window(third)
    d.execute_script("document.querySelector('#save-form input[name=_form_key]').value = arguments[0]", first_key)
    press(d, "save-button")
    assert wait_until(lambda: "This form had been sent already: nothing was done twice." in b.text(), 30), \
        b.text()[:800]
    assert "2 added, 0 changed, 0 unchanged, 1 not used" in b.text("file-state")
    d.close()
    d.switch_to.window(first)
    assert counts(db) == (1, 1, 1, 1)

    # the row not used, in the Dead letters
    d.get(saved_page)
    d.find_element(By.ID, "dead-link").click()
    assert wait_until(lambda: "Dead letters" in b.text(), 15), b.text()[:500]
    assert "no industrial user 'nowhere'" in b.text(), b.text()[:1500]
    # the person and the address, read back on the Contacts page (from the file's page)
    d.get(saved_page)
    d.find_element(By.LINK_TEXT, "Lakeside Plating").click()
    assert wait_until(lambda: "Contacts: Lakeside Plating" in b.text(), 15), b.text()[:500]
    assert "Dana Reyes" in b.text("contacts") and "authorised representative, emergency (24 h)" in b.text("contacts")
    assert "608-555-0101" in b.text("contacts") and "dana@plating.example" in b.text("contacts")
    assert "PO Box 12" in b.text("address-mailing") and "Palmyra, WI 53156" in b.text("address-mailing")

    # the same file uploaded again: one line on the import page, nothing kept
    d.find_element(By.ID, "import-link").click()
    assert wait_until(lambda: d.find_elements(By.ID, "contacts-file"), 15)
    assert f"Contacts file {fid}: book.csv" in b.text("files") and "saved" in b.text(f"file-{fid}")
    d.find_element(By.ID, "contacts-file").send_keys(str(tmp / "book.csv"))
    press(d, "preview-button")
    assert wait_until(lambda: "this file was saved already as contacts file" in b.text("problem"), 30), \
        b.text()[:800]
    assert "nothing was saved now" in b.text("problem")
    # a file that is not a contacts file: one line naming what it lacks
    d.find_element(By.ID, "contacts-file").send_keys(str(tmp / "lab.csv"))
    press(d, "preview-button")
    assert wait_until(lambda: "lab.csv line 1: the header lacks the column site, entry" in b.text("problem"), 30), \
        b.text()[:800]
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM contact_imports").fetchone()[0] == 1
    assert counts(db) == (1, 1, 1, 1)


def test_a_viewer_reads_without_a_form(office, chromium):
    # after the first test: contacts file 1 is saved
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "viewer")
    d.get(f"{base}/sites/plating/contacts")
    assert wait_until(lambda: "Contacts: Lakeside Plating" in b.text(), 15)
    assert not d.find_elements(By.ID, "import-link")
    d.get(f"{base}/contacts/import")
    assert wait_until(lambda: "Import contacts from a file" in b.text(), 15)
    assert not d.find_elements(By.ID, "import-form") and d.find_elements(By.ID, "may-not")
    d.find_element(By.PARTIAL_LINK_TEXT, "Contacts file").click()
    assert wait_until(lambda: b.text("file-state").startswith("Saved "), 15), b.text()[:500]
    assert not d.find_elements(By.ID, "save-button")
