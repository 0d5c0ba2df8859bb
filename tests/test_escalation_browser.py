"""Escalation only on purpose, in a real browser: Debian's Chromium (the session's one
browser) against ``sewerwatch web`` over a copy of the seeded round village (tests/web_round.py:
the plater's copper result 1.6 mg/l over its permit's 1.0 mg/l daily maximum, a lab violation).

The coordinator drafts a notice of violation from the copper violation and issues it dated
2026-03-02 (its response due 2026-04-01, long past); back on the violation's page the notice
is shown with its state and deadline and there is no "Draft a notice"; on the notice's page
Escalate leads to a page saying what will be drafted and why (the deadline passed without a
response; the guide's words) with nothing drafted yet; Confirm drafts the administrative
order. The same confirmation page, opened in a second tab before, is refused when confirmed,
naming the order that exists; the notice shows where it went and offers no Escalate.
"""

from __future__ import annotations

import re

import psycopg
import pytest

import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def round_db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture(scope="module")
def office(round_db, tmp_path_factory):
    with web_round.served(round_db, tmp_path_factory.mktemp("escalation-browser")) as base:
        yield {"base": base, "db": round_db}


sign_in = web_round.sign_in


def click(b, element_id: str) -> None:
    """Click the element and wait for the page it leads to."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    d = b.driver
    old = d.find_element(By.ID, element_id)
    old.click()

    def replaced() -> bool:
        try:
            if d.execute_script("return document.readyState") != "complete":
                return False
            found = d.find_elements(By.ID, element_id)
            return not found or found[0] != old
        except (NoSuchElementException, StaleElementReferenceException):
            return False
    assert wait_until(replaced, 60)


def type_date(b, element_id: str, iso: str) -> None:
    """A date typed into an ``<input type=date>`` (the value the browser's picker sets)."""
    el = b.driver.find_element(By.ID, element_id)
    b.driver.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'))",
                            el, iso)


def flat(text: str) -> str:
    return " ".join(text.split())


def notices(db) -> list[tuple]:
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT number, state FROM notices ORDER BY id").fetchall()


def test_a_notice_is_escalated_only_by_escalate_with_its_reason_and_once(office, chromium):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    vid = web_round.copper_violation(db)
    sign_in(b, base, "coord")
    d.get(f"{base}/enforcement")
    click(b, f"violation-{vid}")
    assert wait_until(lambda: "Evidence" in b.text("ev-h"), 15)
    assert b.text().count("No notice yet.") == 1 and len(d.find_elements(By.ID, "draft-button")) == 1
    click(b, "draft-button")
    assert wait_until(lambda: "Drafted." in b.text(), 60), b.text()[:500]
    nid = int(re.search(r"/notices/(\d+)", d.current_url).group(1))
    type_date(b, "issue-on", "2026-03-02")
    click(b, "issue-button")
    assert wait_until(lambda: "Issued." in b.text(), 60), b.text()[:800]
    assert notices(db) == [("NOV-2026-001", "issued")]

    # back on the violation's page: the notice with its state and deadline, a link, no second draft
    d.get(f"{base}/enforcement/violations/{vid}")
    text = flat(b.text())
    assert text.count("Notice of violation NOV-2026-001: issued 2026-03-02, response due 2026-04-01") == 1, text
    assert b.text("n-h") == "Notices" and "No notice yet." not in text
    assert "A further notice for it is drafted only by escalating NOV-2026-001" in text
    assert not d.find_elements(By.ID, "draft-button") and not d.find_elements(By.ID, "draft-form")
    d.find_element(By.LINK_TEXT, "Notice of violation NOV-2026-001").click()
    assert wait_until(lambda: d.current_url.endswith(f"/notices/{nid}"), 15)

    # Escalate: what and why first, nothing drafted yet
    click(b, "escalate-button")
    assert wait_until(lambda: "What will be drafted" in b.text(), 30), b.text()[:800]
    assert flat(b.text("escalation-to")) == "Administrative order, the user to respond within 15 days of its issue"
    assert flat(b.text("escalation-reason")) == ("NOV-2026-001, issued 2026-03-02, had no response recorded by "
                                                 "its deadline, 2026-04-01.")
    assert "is followed by an administrative order" in b.text("guide-reason")
    assert notices(db) == [("NOV-2026-001", "issued")]
    confirm_url = d.current_url
    first = d.current_window_handle
    d.switch_to.new_window("tab")          # the same page, open in a second tab
    d.get(confirm_url)
    assert wait_until(lambda: d.find_elements(By.ID, "confirm-escalate-button"), 30)
    second = d.current_window_handle
    d.switch_to.window(first)
    d.find_element(By.ID, "esc-note").send_keys("No answer by the deadline.")
    click(b, "confirm-escalate-button")
    assert wait_until(lambda: "Escalated: the guide's next action is drafted below." in b.text(), 60), b.text()[:800]
    assert "Administrative order AO-2026-001" in b.text()
    assert d.find_element(By.ID, "escalated-from").text == "NOV-2026-001"
    assert notices(db) == [("NOV-2026-001", "escalated"), ("AO-2026-001", "drafted")]

    # confirmed again from the second tab: refused, naming the order that exists
    d.switch_to.window(second)
    click(b, "confirm-escalate-button")
    assert wait_until(lambda: "That could not be used" in b.text(), 30), b.text()[:800]
    assert ("notice NOV-2026-001 was escalated already: administrative order AO-2026-001 (drafted "
            in flat(b.text())), b.text()[:800]
    d.close()
    d.switch_to.window(first)
    assert notices(db) == [("NOV-2026-001", "escalated"), ("AO-2026-001", "drafted")]

    # the notice says where it went, with no Escalate; the violation shows both, still no draft
    d.get(f"{base}/notices/{nid}")
    assert flat(b.text("notice-state")) == "escalated" and d.find_element(By.ID, "escalated-to").text == "AO-2026-001"
    assert not d.find_elements(By.ID, "escalate-button")
    d.get(f"{base}/enforcement/violations/{vid}")
    text = flat(b.text())
    assert "Notice of violation NOV-2026-001: escalated" in text and "Administrative order AO-2026-001: drafted" in text
    assert not d.find_elements(By.ID, "draft-button")
    with psycopg.connect(db.url) as conn:
        [(actor, note, detail)] = conn.execute("SELECT actor, note, detail FROM notice_events "
                                               "WHERE event = 'escalated'").fetchall()
    assert note == "No answer by the deadline." and detail["via"] == "web" and detail["to"] == "AO-2026-001"
