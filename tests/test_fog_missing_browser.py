"""A device missing recorded from an establishment's page in the office, in a real browser
(Debian's Chromium): tests/hauler_support.py's small grease program served by ``sewerwatch
web``. The inspector opens Hilltop Bakery (``H0003``, a bakery: Palmyra's grease rules require an
interceptor of it) from Grease and records, from the form as served, that its interceptor GI-1
is not there, found today: the page says so and lists the finding ("Missing device") with the
guide's step (a warning letter or a later step, by the bakery's other findings); the same form
sent again the same day is refused naming the record. The viewer sees no form."""

from __future__ import annotations

import pytest

import web_round
from hauler_support import served_village
from support import wait_until
from test_fog_browser import type_date
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    yield from served_village(services, round_village, tmp_path_factory.mktemp("grease-missing-browser"))


def test_the_inspector_records_a_device_missing_and_it_is_a_finding(office, chromium):
    b, d, base, today = chromium, chromium.driver, office["base"], office["g"]["today"]
    web_round.sign_in(b, base, "inspector")
    d.find_element(By.LINK_TEXT, "Grease").click()
    assert wait_until(lambda: d.find_elements(By.ID, "grease-q"), 15)
    d.find_element(By.LINK_TEXT, "Hilltop Bakery").click()
    assert wait_until(lambda: d.find_elements(By.ID, "missing-form"), 15), b.text()[:500]
    page = d.current_url
    Select(d.find_element(By.ID, "m-device")).select_by_visible_text("GI-1 (interceptor) is not there")
    type_date(d, "m-date", today.isoformat())
    fill(d, "m-notes", "a slab where the lid was")
    d.find_element(By.ID, "missing-save").click()
    assert wait_until(lambda: d.find_elements(By.ID, "missing-saved"), 15), b.text()[:800]
    found = b.text("findings")
    assert "Missing device" in found and "device GI-1 on record was not there (a slab where the lid was)" in found
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#proposals tbody tr")]
    assert any(str(today) in r and "Missing device" in r and ("Warning letter" in r or "Notice of" in r)
               for r in rows), rows
    # the same again, from the page as served: refused, naming the record
    d.get(page)
    assert wait_until(lambda: d.find_elements(By.ID, "missing-form"), 15)
    Select(d.find_element(By.ID, "m-device")).select_by_visible_text("GI-1 (interceptor) is not there")
    type_date(d, "m-date", today.isoformat())
    d.find_element(By.ID, "missing-save").click()
    assert wait_until(lambda: d.find_elements(By.ID, "missing-problem"), 15), b.text()[:800]
    assert f"Hilltop Bakery: GI-1 was recorded missing on {today} already (by inspector)" in b.text("missing-problem")
    # the viewer reads, records nothing
    web_round.sign_in(b, base, "viewer")
    d.get(page)
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    assert "Missing device" in b.text("findings") and not d.find_elements(By.ID, "missing-form")
