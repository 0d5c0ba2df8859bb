"""A grease notice answered and escalated in the office, in a real browser (Debian's
Chromium): tests/hauler_support.py's small grease program (Dockside Diner ``H0002``: its
interceptor taken on 200 days ago and never pumped, every 90 days: overdue, its first finding:
a warning letter, respond within 30 days) served by ``sewerwatch web``.

The coordinator opens the diner from Grease, issues the warning letter from the form as
served; escalating it at once is refused (its response is due in 30 days); records the
response received today; escalating then needs a note; with one ("no manifest was sent"), the
guide's next step is issued, a notice of violation (respond within 15 days) whose PDF, read
back with pdftotext, gives the reason. The same escalation form sent from a second window
opened before is refused naming the notice of violation."""

from __future__ import annotations

from datetime import timedelta

import pytest

import web_round
from hauler_support import served_village
from support import wait_until
from test_fog_browser import type_date
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

from test_web_round_browser import fetch  # noqa: E402


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    yield from served_village(services, round_village, tmp_path_factory.mktemp("grease-responses-browser"))


def _row(d, number: str):
    return next(r for r in d.find_elements(By.CSS_SELECTOR, "#notices-issued tbody tr") if number in r.text)


def test_the_coordinator_records_a_response_and_escalates_the_letter_once(office, chromium):
    from lab.documents.pdf import pdf_text

    b, d, base, today = chromium, chromium.driver, office["base"], office["g"]["today"]
    web_round.sign_in(b, base, "coord")
    d.find_element(By.LINK_TEXT, "Grease").click()
    assert wait_until(lambda: d.find_elements(By.ID, "grease-q"), 15)
    d.find_element(By.LINK_TEXT, "Dockside Diner").click()
    assert wait_until(lambda: d.find_elements(By.ID, "proposals"), 15)
    d.find_elements(By.CSS_SELECTOR, "#proposals button.issue-notice")[0].click()
    assert wait_until(lambda: d.find_elements(By.ID, "issued"), 30), b.text()[:800]
    letter = b.text("issued").removeprefix("Issued ").rstrip(".")
    page = d.current_url.split("?")[0]
    assert f"Due {today + timedelta(days=30)}" in _row(d, letter).text
    # escalated before its deadline: refused
    _row(d, letter).find_element(By.CSS_SELECTOR, "button.escalate").click()
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 15), b.text()[:800]
    assert f"{letter}: its response is due {today + timedelta(days=30)}" in b.text("problem")
    # the response, received today
    d.get(page)
    assert wait_until(lambda: d.find_elements(By.ID, "notices-issued"), 15)
    rid = _row(d, letter).get_attribute("id").removeprefix("notice-")
    type_date(d, f"received-{rid}", today.isoformat())
    fill(d, f"rnote-{rid}", "says the interceptor was pumped")
    _row(d, letter).find_element(By.CSS_SELECTOR, "button.record-response").click()
    assert wait_until(lambda: d.find_elements(By.ID, "answered"), 15), b.text()[:800]
    assert f"The response to {letter} is recorded." in b.text("answered")
    assert f"Answered {today}: says the interceptor was pumped" in _row(d, letter).text
    assert not _row(d, letter).find_elements(By.CSS_SELECTOR, "button.record-response")
    # a second window on the page before the escalation
    first, url = d.current_window_handle, d.current_url
    d.switch_to.new_window("tab")
    d.get(url)
    assert wait_until(lambda: d.find_elements(By.ID, "notices-issued"), 15)
    second = d.current_window_handle
    d.switch_to.window(first)
    fill(d, f"enote-{rid}", "no manifest was sent")
    _row(d, letter).find_element(By.CSS_SELECTOR, "button.escalate").click()
    assert wait_until(lambda: d.find_elements(By.ID, "escalated"), 30), b.text()[:800]
    nov = b.text("escalated").removeprefix("Escalated: issued ").rstrip(".")
    assert nov.startswith(f"GNOV-{today.year}-")
    assert f"Escalated {today}" in _row(d, letter).text and not _row(d, letter).find_elements(By.TAG_NAME, "button")
    assert f"Due {today + timedelta(days=15)}" in _row(d, nov).text
    href = d.find_element(By.LINK_TEXT, f"Notice of violation {nov}").get_attribute("href")
    text = " ".join(pdf_text(fetch(b, href), layout=False).split())
    for words in (nov, "Dockside Diner", f"The Village issued the warning letter {letter} on {today}",
                  f"It was answered on {today}, and the response is found inadequate: no manifest was sent.",
                  "this notice of violation", "§13.51"):
        assert words in text, words
    # the second window's escalation, as it was served: refused, naming the notice of violation
    d.switch_to.window(second)
    fill(d, f"enote-{rid}", "again")
    _row(d, letter).find_element(By.CSS_SELECTOR, "button.escalate").click()
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 30), b.text()[:800]
    assert f"warning letter {letter} was escalated already: notice of violation {nov}" in b.text("problem")
    d.close()
    d.switch_to.window(first)
