"""The state's report in a real browser (Debian's Chromium, the session's one browser) against
``sewerwatch web`` over the finished year 2025 of tests/state_village.py: the coordinator
opens the Reports page, follows the link to what the state's reviewer will question, finds the
confectioner in significant noncompliance without an enforcement action and follows its link
to the user's page; records the newspaper's publication of the list naming only the plater,
with the printed page as a PDF, reads it back on the Reports page, in the page it uploaded and
in the XML; the same publication sent again is refused, naming the one recorded. The
inspector sees the list but not the form.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import pytest

import state_village
import web_round
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def office(module_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("state-browser")
    state_village.seed(tmp, module_db)
    with web_round.served(module_db, tmp, config=state_village.CONFIG) as base:
        yield {"base": base, "db": module_db, "tmp": tmp}


def fetch(b, url: str) -> bytes:
    """A file as the signed-in browser downloads it (its cookies)."""
    import httpx
    cookies = {c["name"]: c["value"] for c in b.driver.get_cookies()}
    r = httpx.get(url, cookies=cookies, timeout=60)
    assert r.status_code == 200, (url, r.status_code, r.text[:300])
    return r.content


def _reports_2025(b, base: str) -> None:
    d = b.driver
    d.get(base + "/")
    d.find_element(By.LINK_TEXT, "Reports").click()
    assert wait_until(lambda: "/reports" in d.current_url, 15)
    Select(d.find_element(By.ID, "f-year")).select_by_visible_text("2025")
    d.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    assert wait_until(lambda: "year=2025" in d.current_url and "Reports, 2025" in b.text(), 15)


def _publish(b, tmp, named: set[str]) -> None:
    d = b.driver
    form = d.find_element(By.ID, "publication-form")
    form.find_element(By.NAME, "newspaper").send_keys("Palmyra Enterprise")
    d.execute_script("arguments[0].value = '2026-01-15'", form.find_element(By.NAME, "published_on"))
    for box in form.find_elements(By.NAME, "sites"):
        if (box.get_attribute("value") in named) != box.is_selected():
            box.click()
    form.find_element(By.NAME, "page").send_keys(str(tmp / "page.pdf"))
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def test_the_checklist_and_the_publication_in_the_office(office, chromium):
    b, d, base, tmp = chromium, chromium.driver, office["base"], office["tmp"]
    (tmp / "page.pdf").write_bytes(state_village.page_pdf("Lakeside Plating was in significant noncompliance in 2025."))

    web_round.sign_in(b, base, "inspector")
    _reports_2025(b, base)
    assert "Sweet Creek Confections" in b.text("publication") and not d.find_elements(By.ID, "publication-form")

    web_round.sign_in(b, base, "coord")
    _reports_2025(b, base)
    assert "No publication of the 2025 list is recorded." in b.text() and not d.find_elements(By.ID, "icis-draft")

    # --- what the state will ask: the user in SNC without an action, with its link
    d.find_element(By.ID, "icis-checklist").click()
    assert wait_until(lambda: "/reports/2025/checklist" in d.current_url, 15)
    items = d.find_element(By.CSS_SELECTOR, "ul.check-snc-without-action").find_elements(By.TAG_NAME, "li")
    assert [li.text for li in items] == ["Sweet Creek Confections: in significant noncompliance in 2025H1 under (A), "
                                         "(B); no notice or order issued in the year."]
    assert [li.text.split(":")[0] for li in d.find_elements(By.CSS_SELECTOR, "ul.check-not-inspected li")] == [
        "Lakeside Plating", "Sweet Creek Confections"]
    assert "Palmyra Sausage Co." not in d.find_element(By.CSS_SELECTOR, "ul.check-not-sampled").text
    items[0].find_element(By.TAG_NAME, "a").click()
    assert wait_until(lambda: d.current_url.endswith("/sites/candy"), 15)
    assert "Sweet Creek Confections" in b.text()

    # --- the publication, naming the plater only, with its printed page
    _reports_2025(b, base)
    _publish(b, tmp, {"plating"})
    assert wait_until(lambda: d.find_elements(By.ID, "published-done"), 30), b.text()[:500]
    row = d.find_element(By.CSS_SELECTOR, "#publications tbody tr").text
    assert row.startswith("Palmyra Enterprise 2026-01-15 Lakeside Plating the page coord"), row
    assert b.text("unpublished") == "Not named by a recorded publication: Sweet Creek Confections."
    href = d.find_element(By.CSS_SELECTOR, "#publications a").get_attribute("href")
    pdf = fetch(b, href)
    assert pdf == (tmp / "page.pdf").read_bytes()
    (tmp / "back.pdf").write_bytes(pdf)
    text = subprocess.run(["pdftotext", str(tmp / "back.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    assert "Lakeside Plating was in significant noncompliance in 2025." in " ".join(text.split())

    # --- the state's figure counts the name published; the annual report says so
    xml = fetch(b, d.find_element(By.ID, "icis-xml").get_attribute("href"))
    root = ET.fromstring(xml)
    ns = {"i": "http://www.exchangenetwork.net/schema/icis/5"}
    assert root.find("i:Header/i:Author", ns).text == "Cora Coordinator"
    assert root.find(".//i:SIUsSNCPublishedNewspaper", ns).text == "1"
    annual = fetch(b, base + "/reports/annual-2025.html").decode()
    assert "Palmyra Enterprise" in annual and "On the list, not named by a recorded publication: Sweet Creek " \
        "Confections." in annual

    # --- the same publication again, from a fresh form: refused, naming the one recorded
    _reports_2025(b, base)
    _publish(b, tmp, {"plating"})
    assert wait_until(lambda: "already recorded" in b.text(), 30), b.text()[:500]
    assert "the 2025 list's publication in Palmyra Enterprise on 2026-01-15 is already recorded (by coord" in b.text()
    _reports_2025(b, base)
    assert len(d.find_elements(By.CSS_SELECTOR, "#publications tbody tr")) == 1
