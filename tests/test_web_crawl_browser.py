"""Every page and every form of the office as served, in a real browser, for each role
(``tests/crawl.py``): Debian's Chromium signs in as the viewer, the inspector, the clerk, the
coordinator, the superintendent, an industrial user's portal account and a grease hauler's in turn, follows every
link it reaches (a few pages of each shape of address, no sign-out) and submits every form it
finds as the browser would (its action, method, hidden fields and CSRF token; sample values by
field name). No page or form may answer 404 or 500, and every page loads its style sheet and
scripts. Each page's link to its part of the guide (``/help``) must answer; the guide itself is
the project's documentation and is not crawled for the utility's words. The permit edit, its conflict between two browsers and Sign out from every page are
its first named cases. The village is a copy of the session's seeded round
(``tests/web_round.py``) with live sensors, an open alert, a portal account and the small grease
program of ``tests/hauler_support.py`` (its hauler Lakeshore Pumping's account crawls, then the
Dockside Diner's own account, which confirms or disputes what Lakeshore reported) and an
address book's file read but not saved added.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from support import wait_until
from identity import accounts
from web_support import ADMIN, PASSWORD, PEOPLE, cheap_hashes

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

import crawl  # noqa: E402
import plain_words  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("America/Chicago")
#: The files a person would choose for each kind of upload field.
SAMPLE_FILES = {"permit": ROOT / "examples" / "permits" / "plating.toml",
                "rates": None, "lab": ROOT / "examples" / "demo" / "lab-results.csv",
                "photo": None, "default": ROOT / "examples" / "demo" / "lab-results.csv"}
#: The address book's file the office has read (a person, an address, a row naming no user).
CONTACTS_CSV = """site,entry,name,title,phone,email,street,city,state,zip
plating,representative,Dana Reyes,Owner,608-555-0101,dana@plating.example,,,,
plating,mailing address,,,,,PO Box 12,Palmyra,WI,53156
nowhere,billing,Al Smith,,,,,,,
"""
#: Every role's crawl of every page and form is made in the first test's set-up: it takes
#: minutes, longer than the suite's default limit of a test on a loaded machine.
pytestmark = pytest.mark.timeout(1200)

#: The order the roles are crawled in: the one who only looks first, so every later crawl
#: meets what the earlier ones made.
ROLES = ("viewer", "inspector", "clerk", "coord", "super")
#: Forms no crawl submits: those that change the crawling accounts themselves (a role, a
#: password, disabled), which would end the next crawl before it starts.
OTHERS = tuple(f"/accounts/{u}/" for u in ROLES) + ("/portal-people/plater-pm/", "/portal-people/lakeshore/",
                                                     "/portal-people/dockside/")
#: The portal accounts crawled after the staff, and where each starts.
PORTAL_ACCOUNTS = {"plater-pm": "/portal", "lakeshore": "/portal/grease", "dockside": "/portal/kitchen"}


def live_village(db) -> None:
    """The plater's pH and temperature sensors reading now, and an open pH alert."""
    import json
    ids = {}
    with psycopg.connect(db.url) as conn:
        for name, parameter, unit in (("ph", "ph", "pH"), ("temp", "temperature", "degF")):
            ids[name] = conn.execute(
                "INSERT INTO sensors (site_id, name, parameter, unit, source, address) SELECT id, %s, %s, %s, 'mqtt', "
                "%s FROM sites WHERE key = 'plating' RETURNING id",
                (name, parameter, unit, f"mqtt:sewerwatch/plating/{name}")).fetchone()[0]
    rec = {"site": "plating", "sensor": "ph", "parameter": "ph", "rule": "ph-min", "kind": "range",
           "start": datetime.now(timezone.utc).isoformat(), "end": None, "peak": 3.4,
           "peak_time": datetime.now(timezone.utc).isoformat(), "limit": 6.0, "unit": "pH",
           "comparison": "lower than", "citation": "Village of Palmyra Code §13.48(2)(g)",
           "words": "No user shall discharge wastewater with a pH lower than 6.0", "pack": "palmyra-wi"}
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '10 s', %s, "
                     "7.0 + 0.2 * sin(g / 60.0) FROM generate_series(0, 360) g", (ids["ph"],))
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '10 s', %s, 80.0 "
                     "FROM generate_series(0, 360) g", (ids["temp"],))
        conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details) SELECT 'violation', "
                     "site_id, id, 'ph-min', 'notified', 'Lakeside Plating: pH 3.4', %s FROM sensors WHERE id = %s",
                     (json.dumps(rec), ids["ph"]))


@pytest.fixture(scope="module")
def crawl_db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture(scope="module")
def office(crawl_db, tmp_path_factory):
    import hauler_support
    import portal_support
    tmp = tmp_path_factory.mktemp("crawl")
    (tmp / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    live_village(crawl_db)
    with cheap_hashes():
        portal_support.person(crawl_db.url, "plating", "plater-pm", "Pat Plater", signatory=False)
        hauler_support.grease_village(crawl_db.url)
        with psycopg.connect(crawl_db.url, autocommit=True) as conn:      # the one account a crawl may change
            accounts.add(conn, "spare", "Sid Spare", "viewer", PASSWORD, actor=ADMIN)
            from identity import contacts_files    # a contacts file read, not saved: its page and its button
            from foundation.actor import Actor
            contacts_files.stage(conn, "book.csv", CONTACTS_CSV.encode(), actor=Actor("coord", "web"))
            accounts.add(conn, "dockside", "Dee Diner", None, PASSWORD, actor=ADMIN, kind="grease-establishment",
                         establishment="H0002", portal={"email": "dee@diner.example"})
            from fog.store import add_pumpout       # a report for the diner to confirm or dispute
            day = datetime.now(TZ).date()
            add_pumpout(conn, {"establishment": "H0002", "device": "GI-1", "date": day, "hauler": "WI-GH-202",
                               "gallons": 800, "fog_depth_in": 3, "solids_depth_in": 2,
                               "receiving_facility": "Palmyra WWTP", "manifest": "L-DINER-1"}, ADMIN, source="office",
                        today=day)
    with web_round.served(crawl_db, tmp, login_per_min=1000) as base:
        yield {"base": base, "db": crawl_db, "tmp": tmp}


sign_in = web_round.sign_in


def today() -> str:
    return datetime.now(TZ).date().isoformat()


@pytest.fixture(scope="module")
def crawls(office, browser):
    """Each role's crawl (and the portal account's), in :data:`ROLES` order."""
    browser.fresh()
    base = office["base"]
    out = {}
    files = {k: v for k, v in SAMPLE_FILES.items() if v is not None}
    files["rates"] = office["tmp"] / "rates.toml"
    shared = crawl.Shared()
    for user in ROLES + tuple(PORTAL_ACCOUNTS):
        sign_in(browser, base, user)
        # the viewer presses every button it is shown (each refused) without using up the
        # forms the others may submit
        mine = crawl.Shared(documents=shared.documents, alive=shared.alive) if user == "viewer" else shared
        c = crawl.Crawler(browser, base, user, lambda u=user: sign_in(browser, base, u), today=today(),
                          samples=files, skip_actions=OTHERS, shared=mine)
        started = time.monotonic()
        out[user] = c.run(PORTAL_ACCOUNTS.get(user, "/"))
        print(f"crawl {user}: {len(out[user].pages)} pages, {len(out[user].forms)} forms, "
              f"{len(out[user].documents)} documents in {time.monotonic() - started:.0f} s")
    if os.environ.get("SEWERWATCH_CRAWL_DUMP"):
        import dataclasses
        import json
        Path(os.environ["SEWERWATCH_CRAWL_DUMP"]).write_text(json.dumps(
            {w: dataclasses.asdict(c) for w, c in out.items()}, indent=1))
    return out


def test_every_page_and_form_answers(crawls):
    """No 404 or 500 for any page or form of any role; every style sheet and script loads."""
    problems = [f"{who}: {p}" for who, c in crawls.items() for p in c.problems]
    pages = sum(len(c.pages) for c in crawls.values())
    forms = sum(len(c.forms) for c in crawls.values())
    assert pages > 100 and forms > 40, (pages, forms, {w: len(c.pages) for w, c in crawls.items()})
    assert not problems, "\n".join(problems)


def test_crawl_reached_the_round(crawls):
    """The crawl saw the round's pages: it cannot pass by reaching nothing."""
    seen = {crawl.shape(v.url) for c in crawls.values() for v in c.pages}
    for must in ("/", "/alerts/N", "/permits", "/permits/PAL-IU-N-N", "/permits/PAL-IU-N-N/edit", "/lab",
                 "/bills", "/enforcement", "/calendar", "/notices/N", "/portal", "/portal/grease",
                 "/portal/grease/report", "/portal/grease/reports/N", "/grease/N", "/portal/kitchen"):
        assert must in seen, (must, sorted(seen))
    posted = {crawl.shape(f["key"].split(" ")[1]) for c in crawls.values() for f in c.forms}
    for must in ("/permits/PAL-IU-N-N/versions", "/alerts/N/acknowledge", "/bills/draft", "/notices/draft",
                 "/portal/grease/reports", "/grease/N/haulers", "/portal-people/invite-hauler"):
        assert any(p.endswith(must) for p in posted), (must, sorted(posted))
    # each page's "How do I …?" link to its part of the guide answered (checked, not crawled)
    guide = {u for c in crawls.values() for u in c.guide}
    assert len(guide) > 10 and any("/help/portal/" in u for u in guide), sorted(guide)


def test_plain_words_on_every_page_and_document(crawls):
    """Every page the crawl reached and every document it downloaded speaks the utility's
    words: no keys, subscripts, file paths, exception names or negative durations."""
    found = []
    allow = plain_words.FORMATS | set(PEOPLE) | {"plater-pm", "spare", "lakeshore", "badger", "dockside"} | {
        f["marker"] for c in crawls.values() for f in c.forms}
    for who, c in crawls.items():
        for v in c.pages:
            for hit in plain_words.internal(v.text, allow):
                found.append(f"{who} {v.url}: {hit}")
        for url, text in c.documents.items():
            if ".pdf" in url or url.endswith("/pdf"):     # the files for machines (CSV, JSON, XML) keep their keys
                for hit in plain_words.internal(text, allow):
                    found.append(f"{who} document {url}: {hit}")
    assert not found, f"{len(found)} internal words:\n" + "\n".join(sorted(set(found))[:200])


def test_permit_edit_saves_and_conflicts_between_two_browsers(office, browser, tmp_path):
    """The permit's edit form as served: its style sheet loads, Save stores the next version
    (read back on the permit's page and its history), Sign out works from it; a second browser
    that opened the same form before the first saved gets the conflict, and nothing of its
    edit is stored."""
    import browser as browser_mod
    base, d = office["base"], browser.driver
    sign_in(browser, base, "coord")
    d.get(base + "/permits")
    d.find_element(By.LINK_TEXT, "PAL-IU-2026-02").click()
    d.find_element(By.PARTIAL_LINK_TEXT, "Edit").click()
    assert d.execute_script("try { return !!document.querySelector('link[rel=stylesheet]').sheet.cssRules.length; } "
                            "catch (e) { return false; }"), "the edit page's style sheet did not load"
    version_before = d.find_element(By.CSS_SELECTOR, "input[name=_base_version]").get_attribute("value")

    other = browser_mod.Browser(tmp_path / "second-profile")
    try:
        sign_in(other, base, "super")
        other.driver.get(d.current_url)                     # the same form, drawn before the first saves
        f = d.find_element(By.ID, "average_daily_gpd")
        f.clear()
        f.send_keys("17500")
        d.find_element(By.ID, "reason").send_keys("flow lowered after the audit")
        d.find_element(By.ID, "save").click()
        assert wait_until(lambda: "/edit" not in d.current_url, 15), browser.text()[:400]
        page = browser.text()
        assert "flow lowered after the audit" in page, page[:1500]
        assert "17500" in page.replace(",", "") or "17 500" in page, page[:1500]

        g = other.driver.find_element(By.ID, "average_daily_gpd")
        g.clear()
        g.send_keys("16000")
        other.driver.find_element(By.ID, "reason").send_keys("a second edit")
        other.driver.find_element(By.ID, "save").click()
        ok = wait_until(lambda: "Someone else saved this permit meanwhile" in other.text(), 60)
        if not ok:
            other.screenshot(tmp_path / "conflict.png")
            print("SHOT", tmp_path / "conflict.png", other.driver.current_url, other.driver.page_source[:3000])
        assert ok, other.text()[:800]
        assert "17500" in other.text().replace(",", "")         # what the first one saved, beside
    finally:
        other.quit()
    d.get(base + "/permits/PAL-IU-2026-02")
    page = browser.text()
    assert "a second edit" not in page and "16000" not in page.replace(",", "")
    assert int(version_before) >= 1

    # Sign out from the edit page itself
    d.get(base + "/permits/PAL-IU-2026-02/edit")
    d.find_element(By.CSS_SELECTOR, "form[action$='/logout'] button").click()
    assert wait_until(lambda: "/login" in d.current_url, 15)
    d.get(base + "/permits")
    assert "/login" in d.current_url


def test_sign_out_from_every_page(crawls, office, browser):
    """Sign out is a working form on every page of the office a crawl reached."""
    base, d = office["base"], browser.driver
    pages = sorted({v.url for v in crawls["coord"].pages if v.status == 200 and "/login" not in v.url
                    and not v.via.startswith("form")})[:25]
    assert len(pages) > 10
    for url in pages:
        sign_in(browser, base, "coord")
        d.get(url)
        d.find_element(By.CSS_SELECTOR, "form[action$='/logout'] button").click()
        assert wait_until(lambda: "/login" in d.current_url, 15), url
