"""Dates that make sense, on the command line, against the real database: a notice's response
received in the future or before the notice was issued, an inspection dated in the future, a
lab result collected in the future or a composite whose window ends after it was collected
are refused, each in one line naming the field; the package functions refuse them, so the
office and the portal refuse the same (tests/test_dates_browser.py). "The future" is after
now in the village's time zone (America/Chicago here), so the dates are computed from now.

The village is a copy of the session's seeded round village (tests/web_round.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from enforcement_support import run
from support import refused

TZ = ZoneInfo("America/Chicago")


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    return tmp_path


def test_a_response_received_tomorrow_or_before_the_issue_is_refused(db, village):
    vid = web_round.copper_violation(db)
    assert run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-02-20", "--out", "n").returncode == 0
    assert run(village, db, "notice", "issue", "NOV-2026-001", "--on", "2026-03-02", "--out", "n").returncode == 0
    today = datetime.now(TZ).date()
    tomorrow = today + timedelta(days=1)
    r = run(village, db, "notice", "response", "NOV-2026-001", "--on", tomorrow.isoformat())
    refused(r, f"received on: {tomorrow} is in the future (today is {today} in the village)")
    r = run(village, db, "notice", "response", "NOV-2026-001", "--on", "2026-03-01")
    refused(r, "received on: 2026-03-01 is before notice NOV-2026-001 was issued (2026-03-02)")
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT state, response_received_on FROM notices").fetchone() == ("issued", None)
    # today itself is a day it can have been received
    r = run(village, db, "notice", "response", "NOV-2026-001", "--on", today.isoformat(), "--note", "by mail")
    assert r.returncode == 0 and f"response received {today}" in r.stdout, r.stderr


def test_an_inspection_dated_in_the_future_is_refused_and_one_an_hour_ago_recorded(db, village):
    later = (datetime.now(TZ) + timedelta(hours=2)).replace(second=0, microsecond=0)
    r = run(village, db, "inspections", "record", "--site", "plating", "--item", "1=ok", "--at", later.isoformat())
    refused(r, f"date of the visit: {later:%Y-%m-%d %H:%M} C", "is in the future (it is now ",
             "a visit is recorded once it took place")
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM inspections").fetchone()[0] == 0
    earlier = (datetime.now(TZ) - timedelta(hours=1)).replace(second=0, microsecond=0)
    r = run(village, db, "inspections", "record", "--site", "plating", "--item", "1=ok", "--at", earlier.isoformat())
    assert r.returncode == 0, r.stderr
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT visited_at FROM inspections").fetchone()[0] == earlier


def test_a_lab_result_collected_in_the_future_or_before_its_window_ends_is_a_bad_row(db, village):
    now = datetime.now(TZ)
    soon = (now + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")      # within the reader's day, after now
    before = (now - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    window_end = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    good = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    (village / "late.csv").write_text(
        "sample_id,site,collected,analyte,value,unit,qualifier,sample_type,window_start,window_end\n"
        f"F-1,plating,{soon},cu,0.2,mg/l,,grab,,\n"
        f"F-2,plating,{before},cu,0.2,mg/l,,composite,,{window_end}\n"
        f"F-3,plating,{good},cu,0.2,mg/l,,grab,,\n", encoding="utf-8")
    r = run(village, db, "lab", "import", "late.csv", "--actor", "lab")
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "1 stored" in r.stdout
    lines = {int(x.split(":")[0].split()[-1]): x for x in r.stdout.splitlines() if x.strip().startswith("line ")}
    assert "collected: " in lines[2] and "is in the future (it is now " in lines[2], lines
    assert "a result is recorded once its sample is taken" in lines[2]
    assert "window_end: " in lines[3] and "is after the sample was collected" in lines[3], lines
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT sample_key FROM lab_samples WHERE sample_key LIKE 'F-%'").fetchall() == [("F-3",)]
