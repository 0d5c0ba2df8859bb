"""A grease inspection in a real browser (Debian's Chromium) on a 390 px phone: the inspector
opens an establishment's page, follows "Record an inspection", fills the device's checks and
the kitchen's practices through the form as served, and reads the inspection and its finding
back on the establishment's page. ``sewerwatch web`` over a copy of the session's seeded
village with the grease program of ``tests/hauler_support.py`` (Corner Cafe's interceptor
GI-1: 48 in liquid depth).

The 25 % reading worked out by hand: FOG 8 in + solids 5 in = 13 in of 48 in = 27.08 %, at or
above 25 % (12 in): a finding, "to be pumped now"."""

from __future__ import annotations

from datetime import timedelta

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


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    yield from served_village(services, round_village, tmp_path_factory.mktemp("inspection-browser"))


def test_the_inspector_records_a_grease_inspection_on_a_phone_and_its_finding_shows(office, chromium):
    b, d, base, g = chromium, chromium.driver, office["base"], office["g"]
    day = g["today"] - timedelta(days=1)
    web_round.sign_in(b, base, "inspector")
    d.get(base + f"/grease/{g['establishments']['H0001']}")
    assert wait_until(lambda: d.find_elements(By.ID, "inspections"), 15), b.text()[:500]
    assert "No grease inspection recorded." in b.text("inspections")
    b.phone((390, 844))
    d.find_element(By.ID, "inspect-link").click()
    assert wait_until(lambda: d.find_elements(By.ID, "grease-inspection-form"), 15), b.text()[:500]
    assert b.scroll_width() <= 390, b.scroll_width()
    type_date(d, "i-date", day.isoformat())
    Select(d.find_element(By.ID, "i-baffles")).select_by_visible_text("damaged")
    Select(d.find_element(By.ID, "i-cover")).select_by_visible_text("sound")
    fill(d, "i-fog", "8")
    fill(d, "i-solids", "5")
    Select(d.find_element(By.ID, "i-scraping")).select_by_visible_text("yes")
    Select(d.find_element(By.ID, "i-strainers")).select_by_visible_text("no")
    Select(d.find_element(By.ID, "i-training_records")).select_by_visible_text("yes")
    fill(d, "i-notes", "Outlet baffle cracked")
    d.find_element(By.ID, "inspection-save").click()
    assert wait_until(lambda: d.find_elements(By.ID, "inspected"), 15), b.text()[:600]
    b.desktop()
    shown = b.text("inspections")
    assert "Grease inspections (1)" in shown and "baffles damaged, cover sound" in shown
    assert "8 + 5 in of 48 in: 27%" in shown and "25% reached" in shown
    assert "scraping yes, strainers no, training records yes" in shown and "Outlet baffle cracked" in shown
    found = b.text("findings")
    assert "Inspection reading" in found and day.isoformat() in found
    assert "FOG and solids 13 in of 48 in liquid depth at the inspection (27%, the rule is 25%): to be pumped now" \
        in found
    with psycopg.connect(office["db"].url) as conn:
        assert conn.execute("SELECT inspected_on, fog_depth_in, solids_depth_in, strainers, recorded_by FROM "
                            "fog_inspections").fetchall() == [(day, 8, 5, False, "inspector")]
