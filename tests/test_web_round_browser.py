"""The pretreatment round in a real browser: Debian's Chromium (the
session's one browser) against ``sewerwatch web`` over the seeded village (the demo's lab
results imported through the package, the copper result 1.6 mg/l a lab violation of the
plater's permit, 1.0 mg/l daily maximum). The coordinator drafts the notice from the copper
violation, reads its preview (the PDF's pages), issues it with a double click (one notice
issued), and the PDF's text names the user, the limit, the result and the days of
violation; records the response and closes it. The clerk drafts, reviews and issues the
quarter's bills and downloads one. The inspector cannot issue a notice (403).
``SEWERWATCH_WRITE_PREVIEWS=1`` writes the notice preview's screenshots (desktop, 390 px).
The village is a copy of the session's seeded one (``round_village``, tests/conftest.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import psycopg
import pytest

import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PREVIEWS = ROOT / "web" / "previews"


@pytest.fixture(scope="module")
def round_db(services, round_village):
    """A copy of the session's seeded village (tests/web_round.py) for this module."""
    yield from web_round.clone(services, round_village[0])


@pytest.fixture(scope="module")
def office(round_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("round-browser")
    (tmp / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    with web_round.served(round_db, tmp) as base:
        yield {"base": base, "db": round_db, "tmp": tmp}


sign_in = web_round.sign_in


def fetch(b, url: str) -> bytes:
    """A file as the signed-in browser downloads it (its cookies, through httpx)."""
    import httpx
    cookies = {c["name"]: c["value"] for c in b.driver.get_cookies()}
    r = httpx.get(url, cookies=cookies, timeout=60)
    assert r.status_code == 200, (url, r.status_code, r.text[:300])
    return r.content


def click(b, element_id: str) -> None:
    """Click the element and wait for the page it leads to (the element gone or a new one)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    d = b.driver
    old = d.find_element(By.ID, element_id)
    old.click()

    def replaced() -> bool:
        try:        # the page may change between two lookups: then look again
            if d.execute_script("return document.readyState") != "complete":
                return False
            found = d.find_elements(By.ID, element_id)
            return not found or found[0] != old
        except (NoSuchElementException, StaleElementReferenceException):
            return False
    assert wait_until(replaced, 60)


def test_the_coordinator_and_the_clerk_walk_the_round(office, chromium):
    from lab.documents.pdf import pdf_text
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    vid = web_round.copper_violation(db)
    sign_in(b, base, "coord")
    d.get(f"{base}/enforcement")
    d.find_element(By.ID, f"violation-{vid}").click()
    assert wait_until(lambda: "Evidence" in b.text(), 15)
    assert "cu" in b.text() and "1.6 mg/l" in b.text()
    d.find_element(By.ID, "draft-button").click()
    assert wait_until(lambda: "Drafted." in b.text(), 60), b.text()[:500]
    nid = int(re.search(r"/notices/(\d+)", d.current_url).group(1))
    assert wait_until(lambda: d.execute_script(
        "return [...document.querySelectorAll('img.pdf-page')].every(i => i.complete && i.naturalWidth > 600)"), 60)
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        PREVIEWS.mkdir(exist_ok=True)
        b.screenshot(PREVIEWS / "notice-preview-desktop.png", max_height=2200)
        b.phone()
        d.refresh()
        assert wait_until(lambda: d.execute_script(
            "return [...document.querySelectorAll('img.pdf-page')].every(i => i.complete && i.naturalWidth > 0)"), 60)
        assert b.scroll_width() <= 390
        b.screenshot(PREVIEWS / "notice-preview-phone.png", max_height=2600)
        b.desktop()
        d.get(f"{base}/notices/{nid}")
    # a double click on "issue": one notice issued
    ActionChains(d).double_click(d.find_element(By.ID, "issue-button")).perform()
    assert wait_until(lambda: "Issued." in b.text() or "sent already" in b.text(), 60), b.text()[:800]
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM notice_events WHERE notice_id = %s AND event = 'issued'",
                            (nid,)).fetchone()[0] == 1
    text = " ".join(pdf_text(fetch(b, f"{base}/notices/{nid}/pdf")).split())
    assert "Lakeside Plating" in text and "1.6" in text and "1 mg/l" in text, text[:2000]
    assert "1 day of violation" in text and "DRAFT" not in text
    d.get(f"{base}/notices/{nid}")
    d.find_element(By.ID, "resp-note").send_keys("Rinse tank overflow found and fixed; resampled.")
    click(b, "response-button")
    assert wait_until(lambda: "Response recorded." in b.text(), 30)
    d.find_element(By.ID, "close-note").send_keys("Corrective action verified.")
    click(b, "close-button")
    assert wait_until(lambda: "Closed." in b.text() and b.text("notice-state") == "closed", 30)
    # the inspector may read it but not issue: the form posted from its own session is refused
    sign_in(b, base, "inspector")
    d.get(f"{base}/notices/{nid}")
    assert "Act on it" not in b.text()
    d.execute_script("""const f = document.createElement('form'); f.method = 'post';
        f.action = arguments[0]; const t = document.querySelector('input[name=_csrf_token]').cloneNode();
        f.appendChild(t); document.body.appendChild(f); f.submit();""", f"{base}/notices/{nid}/issue")
    assert wait_until(lambda: "Not allowed for your role" in b.text(), 30)
    # the clerk's quarter
    sign_in(b, base, "clerk")
    d.get(f"{base}/bills")
    d.find_element(By.ID, "b-quarter").clear()
    d.find_element(By.ID, "b-quarter").send_keys("2026Q1")
    d.find_element(By.ID, "b-rates").send_keys(str(office["tmp"] / "rates.toml"))
    click(b, "bills-draft-button")
    assert wait_until(lambda: "review each bill" in b.text(), 60), b.text()[:800]
    assert "Lakeside Plating" in b.text() and "coverage of the flow readings" in b.text().lower()
    click(b, "bills-issue-button")
    assert wait_until(lambda: "Issued." in b.text(), 60), b.text()[:800]
    href = d.find_element(By.ID, "pdf-plating").get_attribute("href")
    bill = " ".join(pdf_text(fetch(b, href)).split())
    assert "Sewer bill, 2026Q1: Lakeside Plating" in bill and "DRAFT" not in bill
