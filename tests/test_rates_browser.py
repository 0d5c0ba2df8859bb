"""The clerk's rates in a real browser (Debian's Chromium, the session's one): the Rates page
reached from the menu, a first version saved through its form and read back on the version's
page, a second one saved from the form filled in from the first (the first stays as it
was), then the quarter drafted on the Bills page with no file: the run and the draft's PDF
name the version in effect. ``sewerwatch web`` over a copy of the session's seeded village
(``round_village``, tests/web_round.py)."""

from __future__ import annotations

import psycopg
import pytest

from test_web_round_browser import click, fetch, office, round_db, sign_in  # noqa: F401  (the module's fixtures)
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


def type_date(d, element_id: str, iso: str) -> None:
    """Type a date into a date field as a person does (the field shows the browser's own order)."""
    el = d.find_element(By.ID, element_id)
    y, m, day = iso.split("-")
    for keys in (m + day + y, day + m + y, y + m + day):
        el.click()
        d.execute_script("arguments[0].select && arguments[0].select()", el)
        el.send_keys(keys)
        if el.get_attribute("value") == iso:
            return
    raise AssertionError(f"{element_id}: could not type {iso}, the field reads {el.get_attribute('value')!r}")


def fill(d, element_id: str, text: str) -> None:
    el = d.find_element(By.ID, element_id)
    el.clear()
    el.send_keys(text)


def test_the_clerk_saves_rates_and_the_draft_names_them(office, chromium):
    from lab.documents.pdf import pdf_text

    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    sign_in(b, base, "clerk")
    d.get(f"{base}/bills")
    d.find_element(By.LINK_TEXT, "Rates").click()
    assert wait_until(lambda: "No rates saved yet" in b.text(), 15), b.text()[:500]
    text = b.text()
    # the fields in words with their units, never the file's keys
    assert "Sewer use charge" in text and "[$ per 1,000 gallons]" in text and "[$ per pound above normal strength]" \
        in text and "Volume of Lakeside Plating" in text and "use_per_1000_gal" not in text
    type_date(d, "rates-effective", "2026-01-01")
    fill(d, "rates-note", "2026 rates")
    for key, value in (("bod", "0.20"), ("tss", "0.15"), ("tkn", "0.90"), ("tp", "2.50"),
                       ("bill.palmyra-wi.use_per_1000_gal", "6.37"), ("bill.volume_mg.plating", "0.12"),
                       ("bill.volume_mg.candy", "0.30")):
        fill(d, f"r:{key}", value)
    click(b, "rates-save")
    assert wait_until(lambda: "Saved." in b.text(), 30), b.text()[:800]
    assert "Rates version 1, in effect from 2026-01-01" in b.text()
    values = b.text("rate-values")
    assert "6.37" in values and "$ per 1,000 gallons" in values and "0.12" in values
    # a second version from the form as it comes filled in from the first: one number changed
    d.find_element(By.LINK_TEXT, "Rates").click()
    assert wait_until(lambda: "version 1" in b.text("rate-versions"), 15)
    assert d.find_element(By.ID, "r:bill.palmyra-wi.use_per_1000_gal").get_attribute("value") == "6.37"
    fill(d, "r:bill.palmyra-wi.use_per_1000_gal", "seven")
    type_date(d, "rates-effective", "2026-01-01")
    click(b, "rates-save")
    assert wait_until(lambda: "expected a number 0 or more [$ per 1,000 gallons], got 'seven'" in b.text("problem"), 30)
    fill(d, "r:bill.palmyra-wi.use_per_1000_gal", "7.10")
    fill(d, "rates-note", "corrected by the Board")
    click(b, "rates-save")
    assert wait_until(lambda: "Rates version 2, in effect from 2026-01-01" in b.text(), 30), b.text()[:800]
    assert "7.1" in b.text("rate-values")
    d.find_element(By.LINK_TEXT, "Rates").click()
    assert wait_until(lambda: "version 2" in b.text("rate-versions"), 15)
    d.find_element(By.LINK_TEXT, "version 1").click()
    assert wait_until(lambda: "Rates version 1" in b.text(), 15)
    assert "6.37" in b.text("rate-values") and "7.1" not in b.text("rate-values")
    # the quarter drafted with no file: the rates in effect on its first day, named
    d.find_element(By.LINK_TEXT, "Bills").click()
    assert wait_until(lambda: "rates version 2, in effect from 2026-01-01" in b.text("bills-rates"), 15)
    fill(d, "b-quarter", "2026Q1")
    click(b, "bills-draft-button")
    assert wait_until(lambda: "review each bill" in b.text(), 60), b.text()[:800]
    assert "from rates version 2, in effect from 2026-01-01" in b.text()
    href = d.find_element(By.CSS_SELECTOR, "#bill-plating a[href$='/plating/pdf']").get_attribute("href")
    pdf = " ".join(pdf_text(fetch(b, href)).split())
    assert "Rates version 2, in effect from 2026-01-01." in pdf and "DRAFT" in pdf
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT version, saved_by, note FROM rate_versions ORDER BY version").fetchall() == [
            (1, "clerk", "2026 rates"), (2, "clerk", "corrected by the Board")]
