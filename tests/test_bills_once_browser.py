"""One bill per user and quarter in the office, in a real browser (Debian's Chromium, the
session's one browser, against ``sewerwatch web`` over a copy of the seeded village of
tests/web_round.py): the clerk drafts and issues 2026Q1 through the Bills page, drafts it
again and reads the refusal naming the first run and its bills, drafts and issues corrected
bills (the use charge billed at the wrong rate) and reads both amounts and the difference on
the corrected bill's page (the replaced bill's page says it is replaced), then records a
payment dated after today and reads the refusal naming the field.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

from test_web_round_browser import click, sign_in  # noqa: E402  (the round's helpers)

#: The corrected rates' use charge [$/1,000 gal] (the bills issued used 6.37).
CORRECTED_USE = "6.00"


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    """``sewerwatch web`` over a copy of the seeded village, with the rates files to upload."""
    db_gen = web_round.clone(services, round_village[0], "once")
    db = next(db_gen)
    tmp = tmp_path_factory.mktemp("bills-once-browser")
    (tmp / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    (tmp / "corrected.toml").write_text(web_round.RATES.replace("6.37", CORRECTED_USE), encoding="utf-8")
    try:
        with web_round.served(db, tmp) as base:
            yield {"base": base, "tmp": tmp}
    finally:
        next(db_gen, None)


def money(text: str) -> float:
    return float(re.search(r"\$([\d,]+\.\d\d)", text).group(1).replace(",", ""))


def draft(b, tmp, rates: str, form: str = "b") -> None:
    """Fill the Bills page's draft form (``b``) or correction form (``c``) with 2026Q1 and a
    rates file, and send it."""
    d = b.driver
    d.find_element(By.ID, f"{form}-quarter").clear()
    d.find_element(By.ID, f"{form}-quarter").send_keys("2026Q1")
    d.find_element(By.ID, f"{form}-rates").send_keys(str(tmp / rates))


def test_a_quarter_billed_once_then_corrected_and_no_payment_in_the_future(office, chromium):
    b, d, base, tmp = chromium, chromium.driver, office["base"], office["tmp"]
    sign_in(b, base, "clerk")
    d.get(f"{base}/bills")
    draft(b, tmp, "rates.toml")
    click(b, "bills-draft-button")
    assert wait_until(lambda: "review each bill" in b.text(), 60), b.text()[:800]
    run1 = int(re.search(r"/bills/runs/(\d+)", d.current_url).group(1))
    click(b, "bills-issue-button")
    assert wait_until(lambda: "Issued." in b.text(), 60), b.text()[:800]
    first = {site: int(re.search(r"/bills/(\d+)$", d.find_element(By.ID, f"issued-{site}").get_attribute("href"))
                       .group(1)) for site in ("plating", "candy")}
    d.find_element(By.ID, "issued-plating").click()
    assert wait_until(lambda: f"Bill {first['plating']}: Lakeside Plating, 2026Q1" in b.text(), 30)
    before = money(b.text("total"))

    # the same quarter again: refused, naming the first run and its bills; nothing issued
    d.get(f"{base}/bills")
    draft(b, tmp, "rates.toml")
    click(b, "bills-draft-button")
    assert wait_until(lambda: "That could not be used" in b.text(), 60), b.text()[:800]
    text = b.text()
    assert f"2026Q1 is billed already by bill run {run1} issued " in text, text[:800]
    assert f"{first['plating']} (Lakeside Plating, ${before:,.2f})" in text
    assert f"{first['candy']} (Sweet Creek Confections, $" in text
    assert "Nothing was changed." in text
    d.get(f"{base}/bills")
    assert len(d.find_elements(By.XPATH, "//section[@aria-labelledby='issued-h']//tbody/tr")) == 2

    # the corrected bills, with their reason
    reason = "The sewer use charge was billed at last year's rate."
    draft(b, tmp, "corrected.toml", form="c")
    d.find_element(By.ID, "c-reason").send_keys(reason)
    click(b, "bills-correct-button")
    assert wait_until(lambda: "Corrected bills:" in b.text(), 60), b.text()[:800]
    assert reason in b.text("run-correction")
    replaces = b.text("replaces-plating")
    assert replaces.startswith(f"bill {first['plating']} of ") and f"${before:,.2f}: a credit of $" in replaces
    click(b, "bills-issue-button")
    assert wait_until(lambda: "Issued." in b.text(), 60), b.text()[:800]
    d.find_element(By.ID, "issued-plating").click()
    assert wait_until(lambda: "Corrected bill" in b.text(), 30), b.text()[:800]
    corrected = int(re.search(r"/bills/(\d+)$", d.current_url).group(1))
    assert corrected != first["plating"] and reason in b.text("correction")
    assert money(b.text("amount-before")) == before
    now = money(b.text("amount-now"))
    assert now == money(b.text("total")) and now < before
    # the use charge alone changed: 120,000 gal x (6.37 - 6.00) / 1,000 less (§13.45(2)(a))
    assert b.text("amount-difference") == f"a credit of ${before - now:,.2f}"
    assert round(before - now, 2) == round(0.12e6 / 1000 * (6.37 - float(CORRECTED_USE)), 2)
    d.get(f"{base}/bills/{first['plating']}")
    assert f"Replaced by the corrected bill {corrected}" in b.text("replaced-by")
    assert not d.find_elements(By.ID, "payment-form")          # a replaced bill takes no payment

    # a payment dated after the village's today: refused, naming the field; nothing recorded
    d.get(f"{base}/bills/{corrected}")
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    later = today + timedelta(days=5)
    d.execute_script("document.getElementById('p-on').value = arguments[0]", later.isoformat())
    click(b, "payment-button")
    assert wait_until(lambda: "That could not be used" in b.text(), 30), b.text()[:800]
    assert f"paid on: {later} is after today ({today})" in b.text()
    d.get(f"{base}/bills/{corrected}")
    assert b.text("paid") == "not yet"
