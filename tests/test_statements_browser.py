"""The bank's payments and a statement of account in the office, in a real browser (Debian's
Chromium against ``sewerwatch web`` over a copy of the round village, billed on known days
by tests/statements_support.py): the clerk follows the Bills page to the receivables, uploads
the bank's file, reads the preview (matched rows, each unmatched row with its reason),
records it, sends the form again and is told nothing was done twice, then opens a user's
statement from the receivables and reads the balance and aging worked out by hand, and its
PDF. A viewer reads the receivables without the upload form and is refused recording."""

from __future__ import annotations

import re
import subprocess
import urllib.request
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

import statements_support as ss
import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

from test_web_round_browser import click  # noqa: E402

AS_OF = "2026-08-15"


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    db_gen = web_round.clone(services, round_village[0], "stmt-b")
    db = next(db_gen)
    tmp = tmp_path_factory.mktemp("statements-browser")
    try:
        bills = ss.seed_bills(tmp, db)
        today = datetime.now(ZoneInfo("America/Chicago")).date()
        (tmp / "bank.csv").write_text(ss.bank_csv(bills, today), encoding="utf-8")
        with web_round.served(db, tmp) as base:
            yield {"base": base, "tmp": tmp, "bills": bills, "db": db}
    finally:
        next(db_gen, None)


def money(text: str) -> float:
    m = re.search(r"(-?)\$([\d,]+\.\d\d)", text)
    return (-1 if m.group(1) else 1) * float(m.group(2).replace(",", ""))


def test_clerk_records_a_bank_file_and_reads_a_statement_aged_as_by_hand(office, chromium):
    b, d, base, tmp = chromium, chromium.driver, office["base"], office["tmp"]
    web_round.sign_in(b, base, "clerk")
    d.get(f"{base}/bills")
    d.find_element(By.ID, "receivables-link").click()
    assert wait_until(lambda: "Receivables as of" in b.text(), 30), b.text()[:500]
    d.find_element(By.ID, "bank-file").send_keys(str(tmp / "bank.csv"))
    click(b, "bank-preview-button")
    assert wait_until(lambda: "Preview: nothing is recorded yet." in b.text(), 60), b.text()[:800]
    assert "3 matched" in b.text("file-state") and "5 not matched" in b.text("file-state")
    unmatched = b.text("unmatched")
    for words in ("Line 4: unknown bill number: no bill 99999", "Line 5: amount over what is owed: $1,000,000.00 paid",
                  "Line 6: date in the future:", "Line 7: duplicate of a payment already recorded:",
                  "Line 9: before the bill's date:"):
        assert words in unmatched, unmatched
    assert "2026-02-20" in b.text("line-2") and "$200.00" in b.text("line-2")
    # the same preview open in a second tab (a second clerk): recorded there first
    page, first = d.current_url, d.current_window_handle
    d.switch_to.new_window("tab")
    d.get(page)
    click(b, "record-button")
    assert wait_until(lambda: "Recorded: 3 payments" in b.text(), 60), b.text()[:800]
    assert not d.find_elements(By.ID, "record-button")
    d.close()
    d.switch_to.window(first)
    # ... then in the first tab: refused, naming what was recorded; nothing recorded twice
    click(b, "record-button")
    assert wait_until(lambda: "That could not be used" in b.text(), 30), b.text()[:800]
    assert "this bank file was recorded already as bank file " in b.text()
    # the bill's page lists the payment from the bank file
    p2 = office["bills"][("plating", "2026Q2", "first")][0]
    d.get(f"{base}/bills/{p2}")
    assert wait_until(lambda: "$100.00, bank file " in b.text("paid"), 30), b.text()[:800]
    assert b.text("paid").startswith("2026-07-20 ($100.00, bank file ")
    # the same file uploaded again: refused, naming what was recorded
    d.get(f"{base}/bills/receivables")
    d.find_element(By.ID, "bank-file").send_keys(str(tmp / "bank.csv"))
    click(b, "bank-preview-button")
    assert wait_until(lambda: "That could not be used" in b.text(), 60), b.text()[:800]
    assert "this bank file was recorded already as bank file " in b.text() and "nothing was recorded now" in b.text()
    with office["db"].connect() as conn:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 3

    # the receivables on the day, then the plater's statement from there
    want = ss.expected(office["bills"], date.fromisoformat(AS_OF))
    d.get(f"{base}/bills/receivables")
    d.execute_script("document.getElementById('as-of').value = arguments[0]", AS_OF)
    click(b, "as-of-button")
    assert wait_until(lambda: f"Receivables as of {AS_OF}" in b.text(), 30)
    for site in ("plating", "candy"):
        row = d.find_element(By.ID, f"account-{site}")
        assert money(row.find_element(By.CSS_SELECTOR, "[data-bucket=balance]").text) == pytest.approx(
            want[site]["balance"])
    total = d.find_element(By.ID, "account-total")
    assert money(total.find_element(By.CSS_SELECTOR, "[data-bucket=balance]").text) == pytest.approx(
        sum(v["balance"] for v in want.values()))
    d.find_element(By.ID, "statement-plating").click()
    assert wait_until(lambda: "Statement of account: Lakeside Plating" in b.text(), 30)
    hand = want["plating"]
    for k in ("current", "0-30", "31-60", "61-90", "over-90"):
        assert money(b.text(f"aging-{k}")) == pytest.approx(hand.get(k, 0.0)), k
    assert money(b.text("aging-credit")) == pytest.approx(hand["credit"]) and hand["credit"] > 0
    assert money(b.text("balance")) == pytest.approx(hand["balance"])
    assert b.text("balance-words") == (f"${hand['balance']:,.2f} owed" if hand["balance"] > 0
                                       else f"a credit of ${-hand['balance']:,.2f}")
    assert "late charge on bill" in b.text("entries") and "credit" in b.text("entries")
    b.previews("statement")                  # the README's pictures (SEWERWATCH_WRITE_PREVIEWS=1)

    # its PDF, with the signed-in session, read back
    href = d.find_element(By.ID, "statement-pdf").get_attribute("href")
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in d.get_cookies())
    pdf = urllib.request.urlopen(urllib.request.Request(href, headers={"Cookie": cookies}), timeout=60).read()
    (tmp / "statement.pdf").write_bytes(pdf)
    text = subprocess.run(["pdftotext", "-layout", str(tmp / "statement.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "Village of Palmyra" in text and f"Statement as of {AS_OF}" in text
    assert f"${hand['over-90']:,.2f}" in text and f"${hand['balance']:,.2f}" in text


def test_a_viewer_reads_but_does_not_record(office, chromium):
    # after the first test: the bank file is recorded
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "viewer")
    d.get(f"{base}/bills/receivables?as_of={AS_OF}")
    assert wait_until(lambda: f"Receivables as of {AS_OF}" in b.text(), 30)
    assert not d.find_elements(By.ID, "bank-form")
    d.get(f"{base}/bills/statements/candy?as_of={AS_OF}")
    assert wait_until(lambda: "Statement of account: Sweet Creek Confections" in b.text(), 30)
    assert money(b.text("balance")) == pytest.approx(ss.expected(office["bills"], date.fromisoformat(AS_OF))
                                                     ["candy"]["balance"])


def test_a_portal_account_reads_its_own_statement_only(office, chromium):
    # after the first test: the bank file is recorded
    from portal_support import person

    b, d, base = chromium, chromium.driver, office["base"]
    person(office["db"].url, "plating", "pat", "Pat Plater", signatory=False)
    web_round.sign_in(b, base, "pat")
    d.get(f"{base}/portal")
    d.find_element(By.ID, "portal-statement").click()
    assert wait_until(lambda: "Statement of account: Lakeside Plating" in b.text(), 30), b.text()[:500]
    d.execute_script("document.getElementById('as-of').value = arguments[0]", AS_OF)
    click(b, "as-of-button")
    assert wait_until(lambda: f"Balance as of {AS_OF}" in b.text(), 30)
    hand = ss.expected(office["bills"], date.fromisoformat(AS_OF))["plating"]
    assert money(b.text("balance")) == pytest.approx(hand["balance"])
    assert money(b.text("aging-over-90")) == pytest.approx(hand["over-90"])
    # the office's statements and receivables are not the portal's: another user's never shows
    for path in ("/bills/statements/candy", "/bills/receivables"):
        d.get(f"{base}{path}?as_of={AS_OF}")
        assert "Sweet Creek Confections" not in b.text() and "Receivables as of" not in b.text(), path
