"""Grease inspections from the command line (``sewerwatch fog inspect add|list``, the function
the office's inspection form calls: :func:`fog.inspections.record`), read back in ``fog
show`` and counted in ``fog counts``, against the real database.

The village: tests/hauler_support.py's small grease program (interceptors of 48 in liquid
depth), dated from today T (America/Chicago). Corner Cafe ``H0001`` inspected T-3: FOG 8 +
solids 5 = 13 in of 48 in = 27 % >= the program's 25 %: a finding ("inspection reading", to
be pumped now). Dockside Diner ``H0002`` inspected T-2: 2 + 1 = 3 in = 6 %: none. So two
inspections, newest first the diner's; the year's count of T's year holds those dated in it.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

import fog_enforcement_support as fe
import web_round
from enforcement_support import run
from hauler_support import grease_village


@pytest.fixture
def village(services, round_village, tmp_path):
    for db in web_round.clone(services, round_village[0]):
        (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
        grease_village(db.url, fe.today())
        yield tmp_path, db


def ok(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def _inspect(licence, day, fog, solids, *more):
    return ("fog", "inspect", "add", licence, "--date", day.isoformat(), "--baffles", "damaged", "--cover", "sound",
            "--fog-depth", fog, "--solids-depth", solids, "--scraping", "no", "--strainers", "yes", "--training", "yes",
            *more)


def test_inspections_from_the_command_line_are_shown_and_counted(village):
    tmp, db = village
    t = fe.today()
    out = ok(tmp, db, *_inspect("H0001", t - timedelta(days=3), "8", "5", "--notes", "grease on the floor",
                                "--actor", "ivy"))
    assert out.strip() == (f"recorded the inspection of Corner Cafe GI-1 on {t - timedelta(days=3)}: FOG and solids "
                           "27% of the liquid depth, the rule is 25%: a finding, to be pumped now")
    out = ok(tmp, db, *_inspect("H0002", t - timedelta(days=2), "2", "1", "--actor", "ivy"))
    assert out.strip().endswith("FOG and solids 6% of the liquid depth")
    # refused, in one line: a visit after today, a device not there
    for args, words in ((_inspect("H0003", t + timedelta(days=1), "1", "1"),
                         f"date of the visit: {t + timedelta(days=1)} is after today ({t})"),
                        (_inspect("H0003", t, "1", "1", "--device", "GI-7"), "Hilltop Bakery has no device 'GI-7'"),
                        (_inspect("H0003", t, "x", "1"), "FOG depth: expected a number of inches, got 'x'")):
        r = run(tmp, db, *args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and words in r.stderr, r.stderr
    lines = ok(tmp, db, "fog", "inspect", "list").splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"H0002 Dockside Diner, {t - timedelta(days=2)} GI-1:")
    assert lines[1] == (f"H0001 Corner Cafe, {t - timedelta(days=3)} GI-1: baffles damaged, cover sound, FOG 8 in + "
                        "solids 5 in = 13 in of 48 in (27%); plates and pans scraped into the trash before washing: "
                        "no, strainers in the sinks' drains: yes, the staff's grease training on record: yes; "
                        "grease on the floor (by ivy)")
    assert ok(tmp, db, "fog", "inspect", "list", "H0001").splitlines() == [lines[1]]
    # fog show: the inspection and its finding
    out = ok(tmp, db, "fog", "show", "H0001")
    assert "inspections: 1" in out and lines[1].removeprefix("H0001 Corner Cafe, ") in out
    assert (f"{t - timedelta(days=3)}  GI-1: inspection reading: FOG and solids 13 in of 48 in liquid depth at the "
            "inspection (27%, the rule is 25%): to be pumped now") in out
    shown = json.loads(ok(tmp, db, "fog", "show", "H0001", "--json"))
    assert [(i["label"], i["share"], i["reached"]) for i in shown["inspections"]] == [("GI-1", 0.2708, True)]
    # the year's count
    c = json.loads(ok(tmp, db, "fog", "counts", "--year", str(t.year), "--json"))
    assert c["inspections"] == sum(1 for d in (3, 2) if (t - timedelta(days=d)).year == t.year)
    assert f"{c['inspections']} inspections" in ok(tmp, db, "fog", "counts", "--year", str(t.year))
