"""The grease program through ``sewerwatch fog ...`` against the test database: the
business-licence list of 300 establishments (six bad rows rejected, each with its reason, to
the dead letters), two haulers, a year of pump-outs from the haulers' CSV and one entered by
hand, and the findings as of the year's end counted by hand (tests/fog_support.py)."""

from __future__ import annotations

import json

import psycopg
import pytest

import fog_support as fs
import web_round
from enforcement_support import run


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "licences.csv").write_text(fs.licence_csv(), encoding="utf-8")
    text, good = fs.pumpout_csv()
    (tmp_path / "pumpouts.csv").write_text(text, encoding="utf-8")
    return tmp_path


def ok(village, db, *args):
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def load_year(village, db) -> None:
    """The list, the haulers, the year's pump-outs (the hauler's file and one by hand)."""
    ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    for company, licence in fs.HAULERS:
        ok(village, db, "fog", "hauler", "add", company, "--licence", licence)
    ok(village, db, "fog", "pumpout", "import", "pumpouts.csv", "--commit")
    ok(village, db, "fog", "pumpout", "add", "--establishment", "F0123", "--date", "2026-03-15", "--hauler",
       "WI-GH-202", "--gallons", "1250", "--fog-depth", "4", "--solids-depth", "3", "--facility", "Palmyra WWTP",
       "--manifest", "M-0123-0")


def test_the_licence_list_previews_then_imports_with_the_bad_rows_dead_lettered(db, village):
    out = ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01")
    assert "licences.csv: 306 rows would store (a preview: nothing stored; --commit stores); 6 rejected" in out
    assert "300 establishments, 306 devices" in out
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_establishments").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM dead_letters WHERE source = 'fog-import'").fetchone()[0] == 0
    out = ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    assert "306 rows stored; 6 rejected" in out
    lines = fs.licence_csv().splitlines()
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_establishments").fetchone()[0] == 300
        assert conn.execute("SELECT count(*) FROM fog_devices").fetchone()[0] == 306
        dead = conn.execute("SELECT topic, reason, convert_from(payload, 'UTF8') FROM dead_letters "
                            "WHERE source = 'fog-import' ORDER BY id").fetchall()
    assert len(dead) == 6
    for (topic, reason, payload), (row, why) in zip(dead, fs.BAD_ROWS):
        line = int(topic.rsplit(":", 1)[1])
        assert topic.startswith("licences.csv:") and lines[line - 1] == row == payload
        assert why in reason and "\n" not in reason and f"line {line}:" in out
    # the first F0007 and F0009 rows are the ones kept
    first = next(n for n, line in enumerate(lines, 1) if line.startswith("F0007,"))
    assert f"licence F0007 is Cafe 7 on line {first}" in dead[4][1]
    # the same file again: every row is on record already, nothing stored twice
    out = ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    assert "0 rows stored; 312 rejected" in out and "Kitchen 0 has device GI-1 on record already" in out
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_devices").fetchone()[0] == 306


def test_a_year_of_pumpouts_gives_the_findings_worked_out_by_hand(db, village):
    load_year(village, db)
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_pumpouts").fetchone()[0] == fs.pumpout_csv()[1] + 1
        dead = conn.execute("SELECT reason FROM dead_letters WHERE source = 'fog-pumpout-import' ORDER BY id").fetchall()
    assert [r[0] for r in dead] == ["no establishment with licence 'F0999'",
                                    f"manifest M-0001-0 is on line {_line_of('M-0001-0')} already"]
    # the findings, as of the year's end
    c = json.loads(ok(village, db, "fog", "counts", "--year", "2026", "--as-of", "2026-12-31", "--json"))
    assert c["findings"] == fs.EXPECTED
    assert (c["establishments"], c["devices"], c["pumpouts"]) == (300, 306, fs.pumpout_csv()[1] + 1)
    ests = {e["licence"]: e for e in json.loads(ok(village, db, "fog", "list", "--as-of", "2026-12-31", "--json"))}
    kinds = {lic: sorted(f["kind"] for f in e["findings"]) for lic, e in ests.items() if e["findings"]}
    want = {**{f"F{i:04d}": ["overdue"] for i in fs.LATE},
            **{f"F{i:04d}": ["overdue", "overdue", "too late"] for i in fs.OVER25},
            f"F{fs.EXACT25:04d}": ["too late"], f"F{fs.OVERCAP:04d}": ["over capacity"],
            f"F{fs.UNREG:04d}": ["unregistered hauler"],
            **{f"F{i:04d}": ["overdue"] for i in fs.NEVER}, "F0250": ["overdue", "overdue"]}
    assert kinds == want
    assert [f["days"] for f in ests["F0005"]["findings"]] == [42]
    assert [f["days"] for f in ests["F0008"]["findings"] if f["kind"] == "overdue"] == [42, 42]
    # the 25 % rule halved the interval: next due 45 days after the last pumping
    dev = ests["F0008"]["devices"][0]
    assert (dev["interval_days"], dev["interval_now"], dev["due_on"]) == (90, 45, "2027-01-15")
    # overdue first (the most days first, then by name), then the rest by name
    listed = list(ests)
    assert listed[0] == "F0250" and set(listed[:5]) == {f"F{i:04d}" for i in fs.NEVER}
    assert [ests[k]["name"] for k in listed[1:5]] == ["Cafe 251", "Cafe 253", "Cafe 254", "Kitchen 252"]
    assert [ests[k]["name"] for k in listed[5:8]] == ["Cafe 1", "Cafe 10", "Cafe 100"]
    # what is due, as of the year's end: the never-pumped devices, most overdue first
    due = json.loads(ok(village, db, "fog", "due", "--as-of", "2026-12-31", "--json"))
    assert [(r["licence"], r["device"], r["overdue_days"]) for r in due] == \
        [("F0250", "HT-1", 329)] + [(f"F{i:04d}", "GI-1", 274) for i in (250, 251, 253, 254, 252)]
    out = ok(village, db, "fog", "due", "--as-of", "2026-12-31")
    assert out.startswith("as of 2026-12-31: 6 devices overdue") and "329 days overdue" in out
    # a pump-out by hand with a manifest number recorded already: refused, naming it
    r = run(village, db, "fog", "pumpout", "add", "--establishment", "F0001", "--date", "2026-12-20", "--hauler",
            "Lakeshore Pumping", "--gallons", "900", "--fog-depth", "4", "--solids-depth", "3", "--facility",
            "Palmyra WWTP", "--manifest", "M-0123-0")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "manifest M-0123-0 is recorded already: Kitchen 123, GI-1, pumped on 2026-03-15 by Lakeshore " \
           "Pumping: nothing was saved" in r.stderr
    # show reads the findings back in words
    out = ok(village, db, "fog", "show", "F0008", "--as-of", "2026-12-31")
    assert "pumped too late: FOG and solids 13 in of 48 in liquid depth (27%, the rule is 25%); the interval is " \
           "now 45 days (was 90)" in out
    assert "pumped 42 days after it was due on 2026-07-25 (every 45 days)" in out
    out = ok(village, db, "fog", "show", "F0123", "--as-of", "2026-12-31")
    assert "1,250 gallons removed from a device that holds 1,000 gallons" in out
    out = ok(village, db, "fog", "show", "F0200", "--as-of", "2026-12-31")
    assert "pumped by Quick Vac LLC, a hauler not registered with the village" in out
    # a search
    found = json.loads(ok(village, db, "fog", "list", "--search", "Kitchen 12", "--json"))
    assert sorted(e["name"] for e in found) == ["Kitchen 12", "Kitchen 120", "Kitchen 123", "Kitchen 126",
                                                "Kitchen 129"]


def test_a_pumpout_dated_after_the_villages_today_is_refused_by_hand_and_in_a_file(db, village):
    """The village's day is America/Chicago's (the test config's zone), not UTC's: a pump-out
    dated the day after it is refused by ``pumpout add`` and rejected from a hauler's file (to
    the dead letters, its reason naming the date); one dated today is stored."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    today = datetime.now(ZoneInfo("America/Chicago")).date()
    tomorrow = today + timedelta(days=1)
    ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    ok(village, db, "fog", "hauler", "add", "Badger Grease Service", "--licence", "WI-GH-101")
    args = ("--establishment", "F0001", "--hauler", "WI-GH-101", "--gallons", "900", "--fog-depth", "4",
            "--solids-depth", "3", "--facility", "Palmyra WWTP")
    r = run(village, db, "fog", "pumpout", "add", *args, "--date", tomorrow.isoformat(), "--manifest", "FUT-1")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert f"date: {tomorrow} is after today ({today}); record a pump-out once it is done" in r.stderr
    (village / "ahead.csv").write_text(
        "establishment,device,date,hauler,gallons,fog_depth_in,solids_depth_in,receiving_facility,manifest\n"
        f"F0001,GI-1,{tomorrow},WI-GH-101,900,4,3,Palmyra WWTP,FUT-2\n"
        f"F0003,GI-1,{today},WI-GH-101,900,4,3,Palmyra WWTP,NOW-3\n", encoding="utf-8")
    out = ok(village, db, "fog", "pumpout", "import", "ahead.csv", "--commit")
    assert f"line 2: date: {tomorrow} is after today ({today})" in out
    ok(village, db, "fog", "pumpout", "add", *args, "--date", today.isoformat(), "--manifest", "NOW-1")
    with psycopg.connect(db.url) as conn:
        stored = sorted(r[0] for r in conn.execute("SELECT manifest FROM fog_pumpouts").fetchall())
        dead = conn.execute("SELECT reason FROM dead_letters WHERE source = 'fog-pumpout-import'").fetchall()
    assert stored == ["NOW-1", "NOW-3"]
    assert len(dead) == 1 and f"{tomorrow} is after today" in dead[0][0]


def _line_of(manifest: str) -> int:
    text, _ = fs.pumpout_csv()
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.endswith("," + manifest))


def test_bad_input_is_refused_in_one_line(db, village):
    ok(village, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    ok(village, db, "fog", "hauler", "add", "Badger Grease Service", "--licence", "WI-GH-101")
    r = run(village, db, "fog", "hauler", "add", "badger grease service", "--licence", "WI-GH-999")
    assert r.returncode == 2 and "Badger Grease Service (licence WI-GH-101) is registered already" in r.stderr
    (village / "bad.csv").write_text("licence,name\nX,Y\n", encoding="utf-8")
    r = run(village, db, "fog", "import", "bad.csv")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "bad.csv: the header lacks address, category, device, kind, capacity_gal, liquid_depth_in" in r.stderr
    r = run(village, db, "fog", "show", "Z9")
    assert r.returncode == 2 and "no establishment with licence 'Z9'" in r.stderr
    r = run(village, db, "fog", "pumpout", "add", "--establishment", "F0000", "--date", "2026-12-20", "--hauler",
            "Badger Grease Service", "--gallons", "900", "--fog-depth", "4", "--solids-depth", "3", "--facility",
            "Palmyra WWTP", "--manifest", "Q-1")
    assert r.returncode == 2 and "Kitchen 0 has 2 devices (GI-1, HT-1): name the device" in r.stderr
    r = run(village, db, "fog", "pumpout", "add", "--establishment", "F0001", "--date", "2026-12-40", "--hauler",
            "Badger Grease Service", "--gallons", "a lot", "--fog-depth", "4", "--solids-depth", "3", "--facility",
            "Palmyra WWTP", "--manifest", "Q-1")
    assert r.returncode == 2 and "date: expected a date such as 2026-03-01, got '2026-12-40'" in r.stderr
    r = run(village, db, "fog", "due", "--as-of", "soon")
    assert r.returncode == 2 and "--as-of: expected a date" in r.stderr
    out = ok(village, db, "fog", "rules")
    assert "§13.51" in out and "maintained by the owner, at his expense, in continuous, efficient operation" in out
    assert "These figures are the program's; the ordinance gives none." in out
