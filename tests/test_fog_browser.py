"""The grease program in a real browser (Debian's Chromium, the session's one): the year of
tests/fog_support.py loaded through the command line, then the viewer opens Grease from the
menu (overdue first), searches by name, opens an establishment and reads its findings back;
a search by address; the same findings as ``sewerwatch fog show`` prints. ``sewerwatch web``
over a copy of the session's seeded village (``round_village``, tests/web_round.py)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

import fog_support as fs
import web_round
from enforcement_support import run
from support import wait_until
from test_fog_cli import load_year
from test_rates_browser import fill


def type_date(d, element_id: str, iso: str) -> None:
    """Type a date into a date field as a person does, from its first part (the field shows
    the browser's own order of month, day and year)."""
    el = d.find_element(By.ID, element_id)
    y, m, day = iso.split("-")
    for keys in (m + day + y, day + m + y, y + m + day):
        d.execute_script("arguments[0].focus()", el)
        el.send_keys(keys)
        if el.get_attribute("value") == iso:
            return
    raise AssertionError(f"{element_id}: could not type {iso}, the field reads {el.get_attribute('value')!r}")

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def grease_db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@contextlib.contextmanager
def served_year(db, tmp, then=None):
    """The hand-counted grease year (tests/fog_support.py) loaded into ``db`` through the
    command line, ``then(tmp, db)`` if given, and ``sewerwatch web`` serving it: the office's
    ``base``, ``db`` and ``tmp``."""
    (tmp / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp / "licences.csv").write_text(fs.licence_csv(), encoding="utf-8")
    (tmp / "pumpouts.csv").write_text(fs.pumpout_csv()[0], encoding="utf-8")
    load_year(tmp, db)
    if then is not None:
        then(tmp, db)
    served = tmp / "served"
    served.mkdir()
    with web_round.served(db, served) as base:
        yield {"base": base, "db": db, "tmp": tmp}


@pytest.fixture(scope="module")
def office(grease_db, tmp_path_factory):
    with served_year(grease_db, tmp_path_factory.mktemp("grease-browser")) as o:
        yield o


def rows(d) -> list[list[str]]:
    return [[c.text for c in r.find_elements(By.CSS_SELECTOR, "th, td")]
            for r in d.find_elements(By.CSS_SELECTOR, "#establishments tbody tr")]


def test_the_list_searches_and_an_establishment_shows_its_findings(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "viewer")
    d.find_element(By.LINK_TEXT, "Grease").click()
    assert wait_until(lambda: "Grease program" in b.text() and d.find_elements(By.ID, "establishments"), 15)
    # as of the year's end, typed into the form
    type_date(d, "grease-as-of", "2026-12-31")
    d.find_element(By.ID, "grease-search-button").click()
    assert wait_until(lambda: "as_of=2026-12-31" in d.current_url, 15)
    listed = rows(d)
    assert b.text("grease-summary") == "300 establishments; 5 with a device overdue."
    # overdue first: the never-pumped ones, the most days first
    assert [r[0] for r in listed[:5]] == ["Cafe 250", "Cafe 251", "Cafe 253", "Cafe 254", "Kitchen 252"]
    assert listed[0][5] == "329 days overdue" and listed[1][5] == "274 days overdue"
    assert listed[5][5].startswith("due 2027-")
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):     # the list on a phone, for the README
        b.phone((390, 844))
        shot = Path(__file__).resolve().parent.parent / "web" / "previews" / "grease-establishments-390.png"
        b.screenshot(shot)
        from PIL import Image                            # the first screenful and a half: the rest is more rows
        with Image.open(shot) as im:
            im.crop((0, 0, im.width, min(im.height, 1000))).save(shot, optimize=True)
        b.desktop()
    # the year's counts, as the annual report takes them
    counts = b.text("grease-counts")
    n = fs.pumpout_csv()[1] + 1
    assert f"300 establishments, 306 devices, {n} pump-outs in 2026 to 2026-12-31" in counts
    e = fs.EXPECTED
    assert (f"Findings: {e['too late']} pumped too late, {e['overdue']} overdue, {e['over capacity']} over capacity, "
            f"{e['unregistered hauler']} by an unregistered hauler") in counts
    # a search by name
    box = d.find_element(By.ID, "grease-q")
    box.clear()
    box.send_keys("Kitchen 12")
    d.find_element(By.ID, "grease-search-button").click()
    assert wait_until(lambda: "q=Kitchen" in d.current_url, 15)
    assert sorted(r[0] for r in rows(d)) == ["Kitchen 12", "Kitchen 120", "Kitchen 123", "Kitchen 126",
                                             "Kitchen 129"]
    assert "5 establishments matching “Kitchen 12”" in b.text("grease-summary")
    d.find_element(By.LINK_TEXT, "Kitchen 123").click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    findings = b.text("findings")
    assert "Findings (1)" in findings and "Over capacity" in findings
    assert "1,250 gallons removed from a device that holds 1,000 gallons" in findings
    assert "M-0123-0" in b.text() and "Palmyra WWTP" in b.text()
    # the interceptor pumped too late: the interval halved, read back with its findings
    d.get(base + "/grease?q=Cafe+8&as_of=2026-12-31")
    d.find_element(By.LINK_TEXT, "Cafe 8").click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    text = b.text()
    assert "Findings (3)" in text
    assert "pumped too late: FOG and solids 13 in of 48 in liquid depth (27%, the rule is 25%); the interval is " \
           "now 45 days (was 90)" in text
    assert text.count("pumped 42 days after it was due") == 2
    assert "Pumped every 45 days (shortened from 90 after a pump-out too late)" in text
    assert "the duty of §13.51" in text and "continuous, efficient operation at all times" in text
    # the same findings as the command line's
    out = run(office["tmp"], office["db"], "fog", "show", "F0008", "--as-of", "2026-12-31").stdout
    assert "findings as of 2026-12-31: 3" in out
    # a search by address, and the unregistered hauler's establishment
    d.get(base + "/grease")
    box = d.find_element(By.ID, "grease-q")
    box.send_keys(fs.address(fs.UNREG))
    d.find_element(By.ID, "grease-search-button").click()
    assert wait_until(lambda: "q=" in d.current_url, 15)
    assert [r[0] for r in rows(d)] == [fs.name(fs.UNREG)]
    d.find_element(By.LINK_TEXT, fs.name(fs.UNREG)).click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    assert "pumped by Quick Vac LLC, a hauler not registered with the village" in b.text("findings")
    assert "not registered" in b.text()
    # no key or path of the program's files on a page
    for word in ("fog_", "palmyra-wi", ".toml", "depth_share"):
        assert word not in b.text()


def test_the_inspector_records_a_pumpout_report_and_reads_its_finding(office, chromium):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    web_round.sign_in(b, base, "inspector")
    d.get(base + "/grease?q=" + fs.address(1).replace(" ", "+"))
    d.find_element(By.LINK_TEXT, fs.name(1)).click()
    assert wait_until(lambda: d.find_elements(By.ID, "pumpout-form"), 15)

    def send(manifest: str, fog: str) -> None:
        type_date(d, "p-date", "2026-12-05")
        for el, text in (("p-hauler", "Lakeshore Pumping"), ("p-gallons", "950"), ("p-fog", fog), ("p-solids", "4"),
                         ("p-facility", "Palmyra WWTP"), ("p-manifest", manifest)):
            fill(d, el, text)
        d.find_element(By.ID, "pumpout-save").click()

    # a manifest number recorded already: refused, naming the pump-out that has it, the form kept
    send("M-0123-0", "10")
    assert wait_until(lambda: d.find_elements(By.ID, "problem"), 15), b.text()[:500]
    assert "manifest M-0123-0 is recorded already: Kitchen 123, GI-1, pumped on 2026-03-15 by Lakeshore Pumping" \
        in b.text("problem")
    assert d.find_element(By.ID, "p-gallons").get_attribute("value") == "950"
    # a new one, FOG 10 + solids 4 = 14 in of 48: pumped too late
    send("M-NEW-1", "10")
    assert wait_until(lambda: d.find_elements(By.ID, "saved"), 15), b.text()[:500]
    assert "Recorded the pump-out of manifest M-NEW-1." in b.text("saved")
    d.get(base + "/grease?as_of=2026-12-31&q=" + fs.address(1).replace(" ", "+"))
    d.find_element(By.LINK_TEXT, fs.name(1)).click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    found = b.text("findings")
    assert "Findings (1)" in found and "2026-12-05" in found
    assert "pumped too late: FOG and solids 14 in of 48 in liquid depth (29%, the rule is 25%); the interval is " \
           "now 45 days (was 90)" in found
    import psycopg
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT source, recorded_by FROM fog_pumpouts WHERE manifest = 'M-NEW-1'").fetchone() == \
            ("office", "inspector")
    # the viewer reads it but has no form
    web_round.sign_in(b, base, "viewer")
    d.get(d.current_url if "/grease/" in d.current_url else base + "/grease")
    assert not d.find_elements(By.ID, "pumpout-form")


def test_an_establishment_that_is_not_there_is_not_found(office, chromium):
    b, d, base = chromium, chromium.driver, office["base"]
    web_round.sign_in(b, base, "clerk")
    d.get(base + "/grease/999999")
    assert wait_until(lambda: "There is nothing here" in b.text(), 15), b.text()[:300]
    assert "999999" not in b.text()
