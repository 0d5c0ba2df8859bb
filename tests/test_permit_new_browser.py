"""A first permit made in the office with the New permit form, in a real browser (Debian's
Chromium, the session's one): the coordinator picks the user without a permit on the
Permits page, gets the form made from its ordinance (the analytes by their names, the term
from the pack, the ordinance's pH beside the fields), is refused in one line naming the
field for a number that is not one, saves, and reads the permit back on its page; the same
number again is refused naming the permit that has it. ``sewerwatch web`` over a copy of
the session's seeded village (``round_village``, tests/web_round.py: the candy maker has no
permit)."""

from __future__ import annotations

import psycopg
import pytest

from test_rates_browser import fill
from test_web_round_browser import click, office, round_db, sign_in  # noqa: F401  (the module's fixtures)
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


def test_a_first_permit_from_the_form(office, chromium):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    sign_in(b, base, "coord")
    d.get(f"{base}/")
    d.find_element(By.LINK_TEXT, "Permits").click()
    assert wait_until(lambda: "New permit" in b.text(), 15)
    Select(d.find_element(By.ID, "new-site")).select_by_visible_text("Sweet Creek Confections (no permit)")
    click(b, "permit-new-button")
    assert wait_until(lambda: "New permit for Sweet Creek Confections" in b.text(), 15), b.text()[:500]
    analyte = Select(d.find_element(By.ID, "analyte0"))
    offered = [o.text for o in analyte.options]
    assert "Copper" in offered and "Biochemical oxygen demand, 5-day 20 °C" in offered and "cu" not in offered
    assert "a term of 1 year" in b.text()                     # palmyra-wi §13.54(4)
    assert d.find_element(By.ID, "ph_minimum").get_attribute("placeholder") == "ordinance: 6.0"
    fill(d, "number", "PAL-IU-2026-07")
    fill(d, "average_daily_gpd", "12000")
    fill(d, "maximum_daily_gpd", "20000")
    analyte.select_by_visible_text("Biochemical oxygen demand, 5-day 20 °C")
    fill(d, "limit0_daily_maximum", "800")
    fill(d, "limit0_daily_maximum_lb", "50")
    Select(d.find_element(By.ID, "analyte1")).select_by_visible_text("Copper")
    fill(d, "limit1_daily_maximum", "one")
    fill(d, "limit1_monthly_average", "0.5")
    fill(d, "ph_minimum", "6.5")
    d.find_element(By.ID, "continuous_ph").click()
    d.find_element(By.ID, "continuous_flow").click()
    fill(d, "conditions", "The permittee shall keep its grease interceptor pumped monthly.")
    fill(d, "reason", "first permit")
    click(b, "permit-create")
    assert wait_until(lambda: b.text("problem") == "Limit 2 (Copper): daily maximum: 'one' is not a number", 30), \
        b.text()[:600]
    # what was typed stays in the form
    assert d.find_element(By.ID, "limit0_daily_maximum").get_attribute("value") == "800"
    assert Select(d.find_element(By.ID, "analyte1")).first_selected_option.text == "Copper"
    assert d.find_element(By.ID, "continuous_ph").is_selected()
    fill(d, "limit1_daily_maximum", "1.0")
    click(b, "permit-create")
    assert wait_until(lambda: "Permit PAL-IU-2026-07" in b.text() and "Saved as version 1" in b.text(), 30), \
        b.text()[:800]
    limits = b.text("limits")
    assert "Copper" in limits and "Biochemical oxygen demand, 5-day 20 °C, loading" in limits and "pH" in limits
    assert "Permit PAL-IU-2026-07, condition L2" in limits and "cu-daily-max" not in limits
    text = b.text()
    assert "12,000 gal/day average, 20,000 gal/day maximum" in text
    assert "24-hour flow-proportional composite, 1 a month" in text and "pH, Flow: measured continuously" in text
    assert "The permittee shall keep its grease interceptor pumped monthly." in text and "first permit" in text
    with psycopg.connect(db.url) as conn:
        doc, by = conn.execute("SELECT document, entered_by FROM permits WHERE number = 'PAL-IU-2026-07'").fetchone()
    assert by == "coord" and doc["site"] == "candy" and doc["limits"][1] == {
        "condition": "L2", "analyte": "cu", "unit": "mg/l", "daily_maximum": 1.0, "monthly_average": 0.5,
        "words": "Copper: 1 mg/l daily maximum, 0.5 mg/l monthly average."}
    # the Permits page lists it; the same number again is refused, naming the permit
    d.find_element(By.LINK_TEXT, "Permits").click()
    assert wait_until(lambda: "PAL-IU-2026-07" in b.text("permits"), 15)
    Select(d.find_element(By.ID, "new-site")).select_by_visible_text("Sweet Creek Confections")
    click(b, "permit-new-button")
    fill(d, "number", "PAL-IU-2026-07")
    Select(d.find_element(By.ID, "analyte0")).select_by_visible_text("Copper")
    fill(d, "limit0_daily_maximum", "2")
    click(b, "permit-create")
    assert wait_until(lambda: "Permit number: permit PAL-IU-2026-07 exists already (version 1, this user's)"
                      in b.text("problem"), 30), b.text()[:600]
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM permits WHERE number = 'PAL-IU-2026-07'").fetchone()[0] == 1
