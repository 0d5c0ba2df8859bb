"""The guide in the office (``/help``, ``web/guide.py``), in the session's Chromium against
``sewerwatch web`` over a copy of the round village: a page's "How do I …?" link leads to its
section of the guide, whose heading the browser reads; the guide's own links lead on; its
theme's scripts run under the guide's policy and its style sheet loads; it is open before
signing in (it holds no village's data) and answers the addresses a person types.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest

import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [pytest.mark.services]


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("help")
    for db in web_round.clone(services, round_village[0]):
        with web_round.served(db, tmp) as base:
            yield {"base": base, "tmp": tmp}


def _heading(b) -> str:
    return b.driver.execute_script("const h = document.querySelector('article h1'); return h ? h.innerText : '';")


def _open_guide_link(b, question: str) -> None:
    d = b.driver
    link = d.find_element(By.CSS_SELECTOR, ".guide-link a")
    assert link.text == question, link.text
    link.click()
    assert wait_until(lambda: "/help/" in d.current_url and _heading(b), 90), (d.current_url, b.text()[:300])


def test_a_pages_help_link_opens_its_section_of_the_guide(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "clerk")
    d.get(base + "/lab")
    _open_guide_link(b, "How do I check and import a lab file?")       # the first visit builds the guide
    assert urlsplit(d.current_url).path == "/help/office/lab/"
    assert _heading(b).strip().rstrip("¶").strip() == "Check and import a lab file"
    assert "Import N rows" in b.text()
    # the theme's inline scripts ran (allowed by their hashes) and its style sheet loaded
    assert d.execute_script("return typeof __md_scope !== 'undefined' && !!document.querySelector('.md-search__input');")
    assert d.execute_script("return Array.from(document.styleSheets).some(s => { try { return s.cssRules.length > 100; }"
                            " catch (e) { return false; } });")
    # the guide's own links lead on: its navigation, to the bills
    d.find_element(By.CSS_SELECTOR, "nav.md-nav a[href$='/bills/']").click()
    assert wait_until(lambda: _heading(b).startswith("Rates and bills"), 15), _heading(b)

    # a section of a page: the bills page's link names its part, and the part is there
    d.get(base + "/bills")
    _open_guide_link(b, "How do I bill a quarter?")
    assert urlsplit(d.current_url).fragment == "bill-a-quarter"
    assert d.find_element(By.ID, "bill-a-quarter").text.startswith("Bill a quarter")


def test_the_portals_pages_link_to_the_portals_part(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    d.get(base + "/login")
    _open_guide_link(b, "How do I sign in?")
    assert urlsplit(d.current_url).path == "/help/office/" and _heading(b).startswith("The office")
    d.find_element(By.CSS_SELECTOR, "article a[href$='portal/']").click()
    assert wait_until(lambda: _heading(b).startswith("The portal"), 15), _heading(b)
    assert "Sign and submit" in b.text()


def test_the_guide_answers_the_addresses_a_person_types_and_nothing_outside_it(office):
    base = office["base"]
    with httpx.Client(base_url=base, timeout=120) as c:
        r = c.get("/help")
        assert r.status_code == 303 and r.headers["location"].endswith("/help/")
        r = c.get("/help/office/lab")                     # a folder without its slash: its links are relative
        assert r.status_code == 303 and r.headers["location"].endswith("/help/office/lab/")
        r = c.get("/help/")
        assert r.status_code == 200 and "sewerwatch" in r.text
        policy = r.headers["content-security-policy"]
        assert "'sha256-" in policy and "unsafe-inline" not in policy
        assert "'sha256-" not in c.get("/login").headers["content-security-policy"]   # the office keeps its own
        assert c.get("/help/images/office/today-desktop.png").headers["content-type"] == "image/png"
        for path in ("/help/no-such-page/", "/help/../state/secrets.json", "/help/%2e%2e/%2e%2e/web.err"):
            r = c.get(path)
            assert r.status_code == 404, (path, r.status_code)
            assert "There is nothing here" in r.text
