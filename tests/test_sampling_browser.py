"""The coordinator's sampling round in a real browser (Debian's Chromium, the session's one):
this month's sampling planned from the calendar page's button, the event opened from the
month's list, its chain of custody printed (the PDF read back), the laboratory's file uploaded
on the Lab page, previewed and imported, and what is missing and not planned read on the
upload's page and the event's. ``sewerwatch web`` over a copy of the session's seeded village
(``round_village``, tests/web_round.py): the plater's permit owes one 24-hour composite a month
of copper, nickel, cyanide and TSS (examples/permits/plating.toml condition 5(a))."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from test_web_round_browser import click, fetch, office, round_db, sign_in  # noqa: F401  (the module's fixtures)
from support import wait_until

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

CHI = ZoneInfo("America/Chicago")


def test_the_coordinator_plans_prints_and_matches_the_lab_file(office, chromium, tmp_path):
    """This month's period of condition 5(a) is due (no result this month in the demo's file):
    one event with the four parameters. The lab's file returns copper, cyanide and TSS of its
    sample id, and BOD nobody planned: nickel is missing, BOD is extra."""
    from lab.documents.pdf import pdf_text

    b, d, base = chromium, chromium.driver, office["base"]
    sign_in(b, base, "coord")
    d.get(f"{base}/calendar")
    assert wait_until(lambda: "Compliance calendar" in b.text(), 15)
    click(b, "plan")
    assert wait_until(lambda: "1 sampling event planned from the schedule." in b.text(), 30), b.text()[:800]
    row = b.text("events")
    assert "Lakeside Plating" in row and "Copper, Nickel, Cyanide (total), Total suspended solids" in row
    assert "24-hour composite" in row and "the industrial user" in row
    d.find_element(By.CSS_SELECTOR, "#events tbody th a").click()
    assert wait_until(lambda: "Chain of custody (PDF)" in b.text(), 15)
    key = d.find_element(By.TAG_NAME, "h1").text.split()[1].rstrip(":")
    assert key.startswith("SW-") and "control manhole" in b.text() and "nitric acid (HNO3) to pH below 2" in b.text()
    # the chain of custody as printed
    pdf = fetch(b, d.find_element(By.ID, "custody").get_attribute("href"))
    text = " ".join(pdf_text(pdf, layout=False).split())
    assert f"Sample id: {key}" in text and "Lakeside Plating" in text
    assert "sodium hydroxide (NaOH) to pH above 10" in text and "relinquished by" in text
    assert "cu," not in text and "5(a)" not in text
    # the laboratory's file, three days after sampling
    sampled = (datetime.now(timezone.utc) - timedelta(days=3)).astimezone(CHI).replace(microsecond=0)
    analysed = sampled + timedelta(days=1)
    rows = [f"{key},plating,{sampled.isoformat()},{a},{v},mg/l,composite,{analysed.isoformat()}"
            for a, v in (("cu", 0.4), ("cn", 0.05), ("tss", 120), ("bod5", 80))]
    f = tmp_path / "lab-back.csv"
    f.write_text("sample_id,site,collected,analyte,value,unit,sample_type,analysed_at\n" + "\n".join(rows) + "\n")
    d.get(f"{base}/lab")
    d.find_element(By.ID, "file").send_keys(str(f))
    click(b, "upload")
    assert wait_until(lambda: "these results would match" in b.text(), 30), b.text()[:800]
    click(b, "import")
    assert wait_until(lambda: "Sampling events matched" in b.text(), 30), b.text()[:800]
    matched = b.text("sampling")
    assert key in matched and "Nickel" in matched and "Biochemical oxygen demand" in matched
    d.find_element(By.LINK_TEXT, key).click()
    assert wait_until(lambda: "What the laboratory returned" in b.text() and "results returned" in b.text("state"), 15)
    assert [x.strip() for x in b.text("missing").splitlines()] == ["Nickel"]
    assert [x.strip() for x in b.text("extra").splitlines()] == ["Biochemical oxygen demand, 5-day 20 °C"]
    returned = b.text("returned")
    assert "Copper" in returned and "24.0 hours (at most 6 months)" in returned
    b.previews("sampling-event")             # the README's pictures (SEWERWATCH_WRITE_PREVIEWS=1)


def test_the_coordinator_plans_one_event_by_hand(office, chromium):
    """The form of the month's Sampling events page: the candy maker's pH and FOG grab, sampled
    by the village, two days from now at 09:00 village time; the event's page reads it back."""
    b, d, base = chromium, chromium.driver, office["base"]
    sign_in(b, base, "coord")
    d.get(f"{base}/calendar")
    d.find_element(By.ID, "sampling-events").click()
    assert wait_until(lambda: "Plan one event" in b.text(), 15)
    day = datetime.now(CHI).date()            # the month's days from today are offered
    d.find_element(By.CSS_SELECTOR, "#add-site option[value=candy]").click()
    d.find_element(By.CSS_SELECTOR, f"#add-day option[value='{day.isoformat()}']").click()
    assert d.find_element(By.ID, "add-time").get_attribute("value") == "09:00"
    for a in ("ph", "fog"):
        d.find_element(By.ID, f"add-p-{a}").click()
    d.find_element(By.CSS_SELECTOR, "#add-by option[value=utility]").click()
    click(b, "add-event")
    assert wait_until(lambda: "Chain of custody (PDF)" in b.text(), 30), b.text()[:800]
    text = b.text()
    assert "Sweet Creek Confections" in text and "the utility" in text and "grab" in text
    assert f"{day.isoformat()} 09:00" in text
    assert "analyse at the sampling point" in text and "15 minutes" in text and "glass, wide mouth" in text
