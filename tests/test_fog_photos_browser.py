"""A pump-out's photo in a real browser (Debian's Chromium): the hauler's person files a report
in the portal, attaches a photo on its page through the form as served (the file chosen in the
file input, at 390 px), sees it there; the coordinator opens the establishment's page in the
office and sees the photo beside the manifest number, and opens it. ``sewerwatch web`` over a
copy of the session's seeded village with the grease program of ``tests/hauler_support.py``."""

from __future__ import annotations

from datetime import timedelta

import pytest

import web_round
from hauler_support import grease_village
from support import wait_until
from test_fog_browser import type_date
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    for db in web_round.clone(services, round_village[0]):
        g = grease_village(db.url)
        tmp = tmp_path_factory.mktemp("photo-browser")
        with web_round.served(db, tmp) as base:
            yield {"base": base, "db": db, "g": g, "tmp": tmp}


def test_a_hauler_attaches_a_photo_and_the_coordinator_sees_it(office, chromium):
    from PIL import Image

    b, d, base, g = chromium, chromium.driver, office["base"], office["g"]
    picture = office["tmp"] / "interceptor.png"
    Image.new("RGB", (120, 90), (90, 140, 60)).save(picture, "PNG")
    web_round.sign_in(b, base, "badger")
    assert wait_until(lambda: d.current_url.endswith("/portal/grease"), 15), d.current_url
    d.find_element(By.ID, "devices").find_element(By.LINK_TEXT, "Report a pump-out").click()
    assert wait_until(lambda: d.find_elements(By.ID, "report-form"), 15)
    type_date(d, "r-date", (g["today"] - timedelta(days=1)).isoformat())
    for el, text in (("r-gallons", "900"), ("r-fog", "4"), ("r-solids", "3"), ("r-facility", "Palmyra WWTP"),
                     ("r-manifest", "BGS-PHOTO")):
        fill(d, el, text)
    d.find_element(By.ID, "report-send").click()
    assert wait_until(lambda: d.find_elements(By.ID, "filed"), 15), b.text()[:600]
    b.phone((390, 844))
    assert "No photo attached." in b.text("photos")
    d.find_element(By.ID, "photo").send_keys(str(picture))
    d.find_element(By.ID, "photo-save").click()
    assert wait_until(lambda: d.find_elements(By.ID, "photo-saved"), 15), b.text()[:600]
    assert "Photos (1)" in b.text("photos") and b.scroll_width() <= 390, b.scroll_width()
    img = d.find_element(By.CSS_SELECTOR, "#photos img")
    assert wait_until(lambda: d.execute_script("return arguments[0].naturalWidth", img) == 120, 10)
    b.desktop()
    # the coordinator: the establishment's page shows it beside the manifest number
    web_round.sign_in(b, base, "coord")
    d.find_element(By.LINK_TEXT, "Grease").click()
    d.find_element(By.LINK_TEXT, "Corner Cafe").click()
    assert wait_until(lambda: d.find_elements(By.CSS_SELECTOR, "a.pumpout-photo img"), 15), b.text()[:600]
    shown = d.find_element(By.CSS_SELECTOR, "a.pumpout-photo img")
    assert shown.get_attribute("alt") == "Photo 1 of the pump-out of manifest BGS-PHOTO"
    assert wait_until(lambda: d.execute_script("return arguments[0].naturalWidth", shown) == 120, 10)
    d.find_element(By.CSS_SELECTOR, "a.pumpout-photo").click()
    assert wait_until(lambda: "/grease/photos/" in d.current_url, 15)
