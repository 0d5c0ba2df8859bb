"""A sensor's maintenance window from a phone at the manhole, in the session's
Chromium at 390 px against ``sewerwatch web`` over this module's real database: the
inspector taps the sensor in the list, then "Calibration": the window is open (two taps);
one more tap ends it. The page fits the phone with every field labelled, its buttons a thumb's
size. ``SEWERWATCH_WRITE_PREVIEWS=1`` keeps the screenshot in web/previews/."""

from __future__ import annotations

import psycopg
import pytest

from support import add_site_and_sensors, wait_until
from test_web_pretreatment_browser import Office, _fits, _keep, sign_in

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from browser import gone  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def office(module_db, tmp_path_factory, browser):
    o = Office(module_db, tmp_path_factory.mktemp("field"))
    add_site_and_sensors(module_db.url, "manhole", {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    try:
        yield o
    finally:
        o.close()


def _tap(d, by, what):
    el = d.find_element(by, what)
    el.click()
    WebDriverWait(d, 15).until(gone(el))


def test_two_taps_on_a_phone_open_a_window_and_one_ends_it(office, chromium):
    d = chromium.driver
    chromium.phone()
    sign_in(chromium, office, "inspector")
    d.get(office.base + "/sensors")
    _tap(d, By.CSS_SELECTOR, 'a[href="/sensors/manhole/ph"]')                 # tap one
    _fits(chromium, "sensor")
    button = d.find_element(By.ID, "start-calibration")
    assert button.size["height"] >= 48 and button.size["width"] >= 120, button.size
    _tap(d, By.ID, "start-calibration")                                        # tap two
    assert wait_until(lambda: "Maintenance window 1 started" in chromium.text(), 10), chromium.text()[:500]
    assert "in maintenance" in chromium.text("maintenance")
    _fits(chromium, "sensor-in-maintenance")
    shot = office.tmp / "field-sensor-phone.png"
    w, h = chromium.screenshot(shot)
    assert w == chromium.width and h > 300
    with psycopg.connect(office.db.url) as conn:
        assert conn.execute("SELECT reason, person, source, end_time IS NULL FROM maintenance_windows").fetchall() == [
            ("calibration", "Ines Inspector", "web", True)]
    _tap(d, By.ID, "end-window")
    assert wait_until(lambda: "Maintenance window 1 ended" in chromium.text(), 10)
    with psycopg.connect(office.db.url) as conn:
        assert conn.execute("SELECT count(*) FROM maintenance_windows WHERE end_time IS NOT NULL").fetchone()[0] == 1
    chromium.desktop()
    _keep({"field-sensor-phone": shot})


def test_an_inspection_with_a_photo_from_a_phone_is_recorded_and_in_the_annual_report(office, chromium, tmp_path):
    from PIL import Image

    from enforcement.annual import annual_report
    from enforcement.settings import settings
    from foundation import config as sw_config

    photo = tmp_path / "interceptor.jpg"
    Image.new("RGB", (1200, 900), (120, 90, 40)).save(photo, "JPEG")
    d = chromium.driver
    chromium.phone()
    sign_in(chromium, office, "inspector")
    d.get(office.base + "/inspections")
    assert d.find_elements(By.ID, "site"), chromium.text()[:800] + (office.tmp / "web.err").read_text()[-2000:]
    from selenium.webdriver.support.ui import Select
    Select(d.find_element(By.ID, "site")).select_by_value("candy")
    _tap(d, By.ID, "start-inspection")
    _fits(chromium, "inspection-form")
    d.find_element(By.ID, "item1-ok").click()
    d.find_element(By.ID, "item2-deficient").click()
    d.find_element(By.ID, "note2").send_keys("no cleaning records since March")
    d.find_element(By.ID, "sampled").click()
    d.find_element(By.ID, "representative").send_keys("Pat Owner")
    d.find_element(By.ID, "photos").send_keys(str(photo))
    shot = office.tmp / "inspection-form-phone.png"
    chromium.screenshot(shot)
    _tap(d, By.ID, "save")
    assert wait_until(lambda: "Inspection of Sweet Creek Confections" in chromium.text(), 15), chromium.text()[:600]
    visit = chromium.text("visit")
    assert "Routine visit" in visit and "by Ines Inspector, with Pat Owner; samples were taken" in visit
    assert "deficient: no cleaning records since March" in visit
    img = d.find_element(By.CSS_SELECTOR, "#photos img")
    assert wait_until(lambda: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img), 10)
    assert d.execute_script("return arguments[0].naturalWidth", img) == 1200
    _fits(chromium, "inspection")
    chromium.desktop()
    cfg = sw_config.load(office.cfg)
    with psycopg.connect(office.db.url) as conn:
        assert conn.execute("SELECT count(*) FROM findings WHERE kind = 'inspection-deficiency'").fetchone()[0] == 1
        rep = annual_report(conn, 2026, settings(cfg).snc_periods, "Village of Palmyra", settings(cfg))
    candy = next(u for u in rep["users"] if u["site"] == "candy")
    [ins] = candy["field"]["inspections"]
    assert (ins["inspector"], ins["sampled"], ins["photos"]) == ("Ines Inspector", True, 1)
    assert rep["totals"]["field_inspections"] == 1 and rep["totals"]["field_inspections_with_sampling"] == 1
    _keep({"inspection-form-phone": shot})
