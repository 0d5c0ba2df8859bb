"""The grease program's enforcement in a real browser (Debian's Chromium): the hand-counted
year (tests/fog_support.py, tests/fog_enforcement_support.py) loaded through the command line;
the coordinator opens Cafe 8 (pumped too late on 06-10, then overdue on 09-05 and 12-01),
reads the guide's steps (a warning letter, a notice of violation, a notice of forfeiture),
issues the warning letter from the form as served, downloads the PDF and reads it back
(pdftotext: §13.51's words, the manifest numbers, no key); the same form sent from a second
window opened before is refused naming the letter issued. The inspector sees no issue form;
the blockages page lists the hot spot."""

from __future__ import annotations

import pytest

import fog_enforcement_support as fe
import fog_support as fs
import web_round
from support import wait_until
from test_fog_browser import served_year, type_date
from test_fog_cli import ok
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

from test_web_round_browser import fetch  # noqa: E402


@pytest.fixture(scope="module")
def grease_db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture(scope="module")
def office(grease_db, tmp_path_factory):
    with served_year(grease_db, tmp_path_factory.mktemp("grease-notices-browser"),
                     then=lambda tmp, db: fe.load_enforcement(ok, tmp, db)) as o:
        yield o


def _steps(d) -> list[list[str]]:
    return [[c.text for c in r.find_elements(By.CSS_SELECTOR, "td")][:4]
            for r in d.find_elements(By.CSS_SELECTOR, "#proposals tbody tr")]


def test_the_coordinator_issues_the_proposed_warning_letter_once(office, chromium):
    from lab.documents.pdf import pdf_text

    b, d, base = chromium, chromium.driver, office["base"]
    day = fe.as_of()
    web_round.sign_in(b, base, "coord")
    d.get(f"{base}/grease?q=Cafe+8&as_of={day}")
    d.find_element(By.LINK_TEXT, "Cafe 8").click()
    assert wait_until(lambda: d.find_elements(By.ID, "proposals"), 15), b.text()[:500]
    assert _steps(d) == [["2026-06-10", "GI-1", "Too late", "Warning letter"],
                         ["2026-09-05", "GI-1", "Overdue", "Notice of violation"],
                         ["2026-12-01", "GI-1", "Overdue", "Notice of forfeiture ($250.00)"]]
    # a second window opened on the same page before the letter is issued
    first, url = d.current_window_handle, d.current_url
    d.switch_to.new_window("tab")
    d.get(url)
    assert wait_until(lambda: d.find_elements(By.CSS_SELECTOR, "#proposals button.issue-notice"), 15)
    second = d.current_window_handle
    d.switch_to.window(first)
    d.find_elements(By.CSS_SELECTOR, "#proposals button.issue-notice")[0].click()
    assert wait_until(lambda: d.find_elements(By.ID, "issued"), 30), b.text()[:800]
    number = b.text("issued").removeprefix("Issued ").rstrip(".")
    assert number.startswith(f"GWL-{fe.today().year}-")
    row = d.find_elements(By.CSS_SELECTOR, "#proposals tbody tr")[0]
    assert f"{number} issued {fe.today()}" in row.text and not row.find_elements(By.TAG_NAME, "button")
    # the notice as issued: the link on the page, the PDF read back
    href = d.find_element(By.LINK_TEXT, f"Warning letter {number}").get_attribute("href")
    text = " ".join(pdf_text(fetch(b, href), layout=False).split())
    for words in ("Warning letter", number, "Cafe 8", "§13.51",
                  "maintained by the owner, at his expense, in continuous, efficient operation",
                  "M-0008-0", "M-0008-1", "Badger Grease Service", "FOG and solids 13 in of 48 in liquid depth",
                  "Respond in writing by"):
        assert words in text, words
    for word in ("fog_", "pumpout:", "warning-letter", "grease-erp", ".toml", "palmyra-wi"):
        assert word not in text, word
    # the second window's form, as it was served: refused, naming the letter
    d.switch_to.window(second)
    d.find_elements(By.CSS_SELECTOR, "#proposals button.issue-notice")[0].click()
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 30), b.text()[:800]
    assert f"warning letter {number} was issued for this finding on {fe.today()} by" in b.text("problem")
    d.close()
    d.switch_to.window(first)
    # one letter on record; the next finding now proposes the notice of violation, as before
    d.refresh()
    assert wait_until(lambda: d.find_elements(By.ID, "notices-issued"), 15)
    assert len(d.find_elements(By.CSS_SELECTOR, "#notices-issued tbody tr")) == 1
    assert [r[3] for r in _steps(d)] == ["Warning letter", "Notice of violation", "Notice of forfeiture ($250.00)"]
    # the inspector reads the steps but has no form to issue
    web_round.sign_in(b, base, "inspector")
    d.get(f"{base}/grease?q={fs.name(60).replace(' ', '+')}&as_of={day}")
    d.find_element(By.LINK_TEXT, fs.name(60)).click()
    assert wait_until(lambda: d.find_elements(By.ID, "proposals"), 15)
    assert not d.find_elements(By.CSS_SELECTOR, "button.issue-notice")
    # the hot spots, from the link on the page
    d.find_element(By.LINK_TEXT, "Blockages and hot spots").click()
    assert wait_until(lambda: d.find_elements(By.ID, "hot-spots"), 15)
    spots = b.text("hot-spots")
    assert (f"{fe.SEGMENT}\t3\t2026-11-09\tKitchen 42\tCafe 300 (400 Oak St); Cafe 43 (143 Main St); "
            "Kitchen 42 (142 Oak St)\nMH-3\t1\t2026-05-05") in spots
    # the inspector records a blockage traced to Kitchen 60: a finding for it, with the guide's step
    type_date(d, "k-date", str(fe.today()))
    for el, text in (("k-location", "MH-9"), ("k-found", "grease mat 2 in thick"), ("k-by", "K. Olson"),
                     ("k-establishment", "F0060")):
        fill(d, el, text)
    d.find_element(By.ID, "blockage-save").click()
    assert wait_until(lambda: d.find_elements(By.ID, "saved"), 15), b.text()[:500]
    assert "Recorded the blockage at MH-9." in b.text("saved")
    assert f"{fe.today()}\tMH-9\tgrease mat 2 in thick\tK. Olson\tKitchen 60" in b.text("blockages")
    d.get(f"{base}/grease?q={fs.name(60).replace(' ', '+')}")
    d.find_element(By.LINK_TEXT, fs.name(60)).click()
    assert wait_until(lambda: d.find_elements(By.ID, "proposals"), 15)
    assert [str(fe.today()), "MH-9", "Blockage", "Notice of cost recovery ($475.00)"] in _steps(d)

