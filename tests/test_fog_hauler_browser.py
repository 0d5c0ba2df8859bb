"""A grease hauler in the portal, in a real browser (Debian's Chromium, the session's one):
the hauler's person signs in and lands on its pump-outs, opens the report form from the
device it was hired for (at 390 px: nothing to scroll sideways), files a pump-out pumped too late (the form as served: its action,
CSRF token and form key), reads it back on its report's page with the finding, finds it in
its list; the coordinator then sees it on the establishment's page in the office, with the
same finding. ``sewerwatch web`` over a copy of the session's seeded village
(``round_village``, tests/web_round.py) with the small grease program of
``tests/hauler_support.py``. ``SEWERWATCH_WRITE_PREVIEWS=1`` writes the hauler's form at
390 px to ``web/previews/`` (the guide shows it)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

import web_round
from hauler_support import served_village
from support import wait_until
from test_fog_browser import type_date
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

PREVIEWS = Path(__file__).resolve().parent.parent / "web" / "previews"


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    yield from served_village(services, round_village, tmp_path_factory.mktemp("hauler-browser"))


def test_a_hauler_files_a_pumpout_and_the_coordinator_sees_it(office, chromium):
    b, d, base, g = chromium, chromium.driver, office["base"], office["g"]
    day = g["today"] - timedelta(days=1)
    web_round.sign_in(b, base, "badger")
    assert wait_until(lambda: d.current_url.endswith("/portal/grease"), 15), d.current_url
    assert "Badger Grease Service" in b.text("hauler-h")
    assert "Corner Cafe" in b.text("devices") and "Dockside Diner" not in b.text()
    d.find_element(By.ID, "devices").find_element(By.LINK_TEXT, "Report a pump-out").click()   # the row: its device
    assert wait_until(lambda: d.find_elements(By.ID, "report-form"), 15)
    assert Select(d.find_element(By.ID, "r-device")).first_selected_option.text.startswith("Corner Cafe, 1 Main St: GI-1")
    b.phone((390, 844))                     # a phone in the truck: the form fits, nothing to scroll sideways
    assert b.scroll_width() <= 390, b.scroll_width()
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        b.screenshot(PREVIEWS / "hauler-report-form-390.png")
    b.desktop()
    type_date(d, "r-date", day.isoformat())
    for el, text in (("r-gallons", "950"), ("r-fog", "9"), ("r-solids", "5"), ("r-facility", "Palmyra WWTP"),
                     ("r-manifest", "BGS-2041")):
        fill(d, el, text)
    d.find_element(By.ID, "report-send").click()
    assert wait_until(lambda: d.find_elements(By.ID, "filed"), 15), b.text()[:600]
    assert "Your pump-out report is recorded" in b.text("filed")
    found = b.text("findings")
    assert "What the village finds in it (1)" in found and "Too late" in found
    assert ("pumped too late: FOG and solids 14 in of 48 in liquid depth (29%, the rule is 25%); the interval is now "
            "45 days (was 90)") in found
    assert "Corner Cafe" in b.text("report") and day.isoformat() in b.text("report")
    # its list, then the report again from there
    d.find_element(By.LINK_TEXT, "Your pump-outs").click()
    assert wait_until(lambda: "Your pump-out reports (1)" in b.text("reports"), 15)
    d.find_element(By.LINK_TEXT, "BGS-2041").click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    assert "29%" in b.text("findings") and not d.find_elements(By.ID, "filed")
    with psycopg.connect(office["db"].url) as conn:
        assert conn.execute("SELECT source, recorded_by, gallons FROM fog_pumpouts WHERE manifest = 'BGS-2041'"
                            ).fetchone() == ("portal", "badger", 950)
    # the coordinator: Grease, the establishment, the report and its finding
    web_round.sign_in(b, base, "coord")
    d.find_element(By.LINK_TEXT, "Grease").click()
    assert wait_until(lambda: d.find_elements(By.ID, "grease-q"), 15)
    fill(d, "grease-q", "Corner Cafe")
    d.find_element(By.ID, "grease-search-button").click()
    assert wait_until(lambda: "q=Corner" in d.current_url, 15)
    d.find_element(By.LINK_TEXT, "Corner Cafe").click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    page = b.text()
    assert "BGS-2041" in page and "Badger Grease Service (reported in the portal)" in page
    assert "Findings (1)" in b.text("findings") and "Too late" in b.text("findings")
    assert "FOG and solids 14 in of 48 in liquid depth (29%, the rule is 25%)" in b.text("findings")
