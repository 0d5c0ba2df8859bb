"""An establishment's person in a real browser (Debian's Chromium): Corner Cafe's account signs
in, lands on its pump-out reports, sees the hauler's photo, confirms one report and disputes the
other with its reason through the forms as served; the coordinator then opens the establishment
in the office and reads the dispute and sees the photo. ``sewerwatch web`` over a copy of the
session's seeded village with the grease program of ``tests/hauler_support.py`` and two reports
of Badger's (K-1 with a photo, K-2: ``tests/test_fog_kitchen_portal_http.py``)."""

from __future__ import annotations

import psycopg
import pytest

import web_round
from hauler_support import grease_village
from portal_support import ADMIN
from support import wait_until
from test_fog_kitchen_portal_http import _reports
from test_rates_browser import fill
from web_support import PASSWORD

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    from identity import accounts
    for db in web_round.clone(services, round_village[0]):
        g = grease_village(db.url)
        ids = _reports(db.url, g["today"])
        with psycopg.connect(db.url, autocommit=True) as conn:
            accounts.add(conn, "carla", "Carla Chef", None, PASSWORD, actor=ADMIN, kind="grease-establishment",
                         establishment="H0001", portal={"email": "carla@cafe.example"})
        tmp = tmp_path_factory.mktemp("kitchen-browser")
        with web_round.served(db, tmp) as base:
            yield {"base": base, "db": db, "g": g, "ids": ids}


def test_the_establishment_confirms_one_report_disputes_another_the_coordinator_reads_it(office, chromium):
    b, d, base, ids = chromium, chromium.driver, office["base"], office["ids"]
    web_round.sign_in(b, base, "carla")
    assert wait_until(lambda: d.current_url.endswith("/portal/kitchen"), 15), d.current_url
    assert "Corner Cafe" in b.text("kitchen-h") and "Pump-out reports (2)" in b.text("reports")
    img = d.find_element(By.CSS_SELECTOR, f"#report-{ids['K-1']} img")
    assert wait_until(lambda: d.execute_script("return arguments[0].naturalWidth", img) == 30, 10)
    d.find_element(By.ID, f"confirm-button-{ids['K-2']}").click()
    assert wait_until(lambda: d.find_elements(By.ID, "verdict-saved"), 15), b.text()[:500]
    assert "the pump-out of manifest K-2 is confirmed" in b.text("verdict-saved")
    fill(d, f"reason-{ids['K-1']}", "Nobody came that day")
    d.find_element(By.ID, f"dispute-button-{ids['K-1']}").click()
    assert wait_until(lambda: "K-1 is disputed" in b.text("verdict-saved"), 15), b.text()[:500]
    assert "disputed by carla" in b.text(f"report-{ids['K-1']}") and "Nobody came that day" in b.text()
    # the coordinator
    web_round.sign_in(b, base, "coord")
    d.find_element(By.LINK_TEXT, "Grease").click()
    d.find_element(By.LINK_TEXT, "Corner Cafe").click()
    assert wait_until(lambda: d.find_elements(By.ID, "disputed"), 15), b.text()[:600]
    assert "Pump-outs the establishment disputes (1)" in b.text("disputed")
    assert "manifest K-1 by Badger Grease Service: “Nobody came that day”" in b.text("disputed")
    shown = d.find_element(By.CSS_SELECTOR, "a.pumpout-photo img")
    assert shown.get_attribute("alt") == "Photo 1 of the pump-out of manifest K-1"
    assert wait_until(lambda: d.execute_script("return arguments[0].naturalWidth", shown) == 30, 10)
    assert "confirmed by the establishment" in b.text()
