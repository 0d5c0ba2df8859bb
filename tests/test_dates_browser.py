"""Dates that make sense, in a real browser: Debian's Chromium against ``sewerwatch web`` over
a copy of the seeded round village (tests/web_round.py). The inspector begins a visit to the
plater, dates it tomorrow and is refused with the reason on the form, nothing recorded; dated
an hour ago it is recorded with that time. The coordinator records a notice's response dated
tomorrow and is refused with the reason, nothing recorded; dated today it is recorded. The
notice was drafted and issued through the package functions the command line calls (the
escalation round's browser test walks those pages).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from enforcement_support import run
from test_escalation_browser import click, flat, sign_in, type_date

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

TZ = ZoneInfo("America/Chicago")


@pytest.fixture(scope="module")
def round_db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture(scope="module")
def office(round_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dates-browser")
    with web_round.served(round_db, tmp) as base:
        yield {"base": base, "db": round_db, "tmp": tmp}


def test_an_inspection_dated_tomorrow_is_refused_on_the_form(office, chromium):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    sign_in(b, base, "inspector")
    d.get(f"{base}/inspections")
    Select(d.find_element(By.ID, "site")).select_by_visible_text("Lakeside Plating")
    click(b, "start-inspection")
    assert wait_for(b, "Inspection: Lakeside Plating")
    tomorrow = (datetime.now(TZ) + timedelta(days=1)).replace(second=0, microsecond=0)
    type_date(b, "visited", tomorrow.strftime("%Y-%m-%dT%H:%M"))
    d.find_element(By.ID, "item1-ok").click()
    click(b, "save")
    assert wait_for(b, "is in the future"), b.text()[:800]
    problem = flat(b.text("problem"))
    assert problem.startswith(f"date of the visit: {tomorrow:%Y-%m-%d %H:%M} C") and \
        "a visit is recorded once it took place" in problem and "Nothing was recorded" in problem, problem
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM inspections").fetchone()[0] == 0
    # the form kept what was typed: dated an hour ago, it is recorded at that time
    earlier = (datetime.now(TZ) - timedelta(hours=1)).replace(second=0, microsecond=0)
    type_date(b, "visited", earlier.strftime("%Y-%m-%dT%H:%M"))
    click(b, "save")
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT visited_at FROM inspections").fetchall()
    assert rows == [(earlier,)], (rows, b.text()[:800])


def test_a_response_dated_tomorrow_is_refused_on_the_page(office, chromium):
    b, d, base, db, tmp = chromium, chromium.driver, office["base"], office["db"], office["tmp"]
    vid = web_round.copper_violation(db)
    for args in (("notice", "draft", "--violation", str(vid), "--on", "2026-02-20", "--out", "n"),
                 ("notice", "issue", "NOV-2026-001", "--on", "2026-03-02", "--out", "n")):
        r = run(tmp, db, *args)
        assert r.returncode == 0, r.stderr
    with psycopg.connect(db.url) as conn:
        nid = conn.execute("SELECT id FROM notices WHERE number = 'NOV-2026-001'").fetchone()[0]
    sign_in(b, base, "coord")
    d.get(f"{base}/notices/{nid}")
    today = datetime.now(TZ).date()
    tomorrow = today + timedelta(days=1)
    type_date(b, "resp-on", tomorrow.isoformat())
    d.find_element(By.ID, "resp-note").send_keys("Report received.")
    click(b, "response-button")
    assert wait_for(b, "That could not be used"), b.text()[:800]
    assert (f"received on: {tomorrow} is in the future (today is {today} in the village): a response is recorded "
            "once it is received") in flat(b.text()), b.text()[:800]
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT state, response_received_on FROM notices WHERE id = %s",
                            (nid,)).fetchone() == ("issued", None)
    d.get(f"{base}/notices/{nid}")
    d.find_element(By.ID, "resp-note").send_keys("Report received.")
    click(b, "response-button")                 # the form's own date: today
    assert wait_for(b, "Response recorded."), b.text()[:800]
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT state, response_received_on FROM notices WHERE id = %s",
                            (nid,)).fetchone() == ("response-received", today)


def wait_for(b, words: str, seconds: float = 30) -> bool:
    from support import wait_until
    return wait_until(lambda: words in b.text(), seconds)
