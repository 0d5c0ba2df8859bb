"""A grease removal device missing, as a finding the grease guide answers: through
``sewerwatch fog ...`` against the test database (a copy of the session's seeded village).

The licence list (made here): Corner Cafe ``M0001`` (a restaurant with interceptor GI-1), Main
Street Pizza ``M0002`` (a restaurant, no device: its row has none of the device's columns) and
Book Nook ``M0003`` (category "other", no device). Palmyra's grease rules require an
interceptor of a restaurant (§13.51 names restaurants), not of "other". Found three days ago
(the village's day, America/Chicago): the pizzeria has none, the cafe's GI-1 is not there: two
findings "missing device", each the establishment's first in 365 days, so a warning letter
each (enforcement/guides/grease-erp.toml). The book shop's is refused (no interceptor required),
so is the cafe without naming its device, the same finding twice, and a day after today.
"""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest

import fog_enforcement_support as fe
import fog_support as fs
import web_round
from enforcement_support import run

LICENCES = (fs.HEADER + "\n"
            "M0001,Corner Cafe,1 Main St,Owner,restaurant,GI-1,interceptor,1000,48,kitchen,2020-06-01,90\n"
            "M0002,Main Street Pizza,2 Main St,Owner,restaurant,,,,,,,\n"
            "M0003,Book Nook,3 Main St,Owner,other,,,,,,,\n")


@pytest.fixture
def village(services, round_village, tmp_path):
    for db in web_round.clone(services, round_village[0]):
        (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
        (tmp_path / "licences.csv").write_text(LICENCES, encoding="utf-8")
        yield tmp_path, db


def ok(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def refused(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (args, r.stdout, r.stderr)
    return r.stderr


def test_a_missing_device_is_a_finding_the_guide_answers_with_a_notice(village):
    from lab.documents.pdf import pdf_text

    tmp, db = village
    today = fe.today()
    day = (today - timedelta(days=3)).isoformat()
    out = ok(tmp, db, "fog", "import", "licences.csv", "--registered", (today - timedelta(days=30)).isoformat(),
             "--commit")
    assert "3 rows stored; 0 rejected" in out
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_establishments").fetchone()[0] == 3
        assert conn.execute("SELECT count(*) FROM fog_devices").fetchone()[0] == 1
    out = ok(tmp, db, "fog", "missing", "add", "M0002", "--date", day, "--notes", "the sinks drain straight out")
    assert f"recorded for Main Street Pizza (M0002) on {day}: it has no grease removal device" in out
    assert "category (other)" in refused(tmp, db, "fog", "missing", "add", "M0003", "--date", day)
    assert "Corner Cafe has GI-1 on record: name the device that is not there" in \
        refused(tmp, db, "fog", "missing", "add", "M0001", "--date", day)
    ok(tmp, db, "fog", "missing", "add", "M0001", "--device", "GI-1", "--date", day)
    assert f"Main Street Pizza: no device was recorded missing on {day} already" in \
        refused(tmp, db, "fog", "missing", "add", "M0002", "--date", day)
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert f"found on: {tomorrow} is after today ({today})" in \
        refused(tmp, db, "fog", "missing", "add", "M0002", "--date", tomorrow)
    assert "Corner Cafe has no device 'GI-9'" in \
        refused(tmp, db, "fog", "missing", "add", "M0001", "--device", "GI-9", "--date", day)
    # the findings, in words
    out = ok(tmp, db, "fog", "show", "M0002")
    assert f"{day}  no device: missing device: no grease interceptor at the establishment, a restaurant (the sinks " \
           "drain straight out)" in out
    assert f"{day}  GI-1: missing device: device GI-1 on record was not there" in ok(tmp, db, "fog", "show", "M0001")
    c = json.loads(ok(tmp, db, "fog", "counts", "--year", str(today.year), "--json"))
    assert c["findings"]["missing device"] == 2
    # the guide: a warning letter each
    due = json.loads(ok(tmp, db, "fog", "notices", "due", "--json"))
    assert sorted((n["licence"], n["kind"], n["step"]) for n in due) == [
        ("M0001", "missing device", fe.WL), ("M0002", "missing device", fe.WL)]
    out = ok(tmp, db, "fog", "notices", "issue", "M0002", "--kind", "missing device", "--on", day, "--out", str(tmp))
    number = out.split("issued warning letter ")[1].split()[0]
    assert "to Main Street Pizza (M0002)" in out
    text = " ".join(pdf_text((tmp / f"{number}.pdf").read_bytes(), layout=False).split())
    for words in ("Warning letter", number, "Main Street Pizza", "no grease removal device", "§13.51",
                  "Grease, oil and sand interceptors shall be provided at restaurants, repair garages, gasoline "
                  "stations, car washes", "no grease interceptor at the establishment, a restaurant"):
        assert words in text, words
    for word in ("missing device:", "M0002:", "None", "_"):
        assert word not in text.replace("M0002,", ""), word
    assert f"warning letter {number} was issued for this finding on {today}" in refused(
        tmp, db, "fog", "notices", "issue", "M0002", "--kind", "missing device", "--on", day)
    due = json.loads(ok(tmp, db, "fog", "notices", "due", "--json"))
    assert [(n["licence"], n["kind"]) for n in due] == [("M0001", "missing device")]
