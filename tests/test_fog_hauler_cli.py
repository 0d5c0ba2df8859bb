"""The haulers' part of the grease program from the command line, against the test database:
``sewerwatch fog hauler assign`` (a second time refused, naming when and by whom),
``fog hauler devices`` (assigned, or pumped before), and ``sewerwatch portal invite-hauler``
(an invitation naming the hauler, listed by ``portal people``); the same functions the office's and
the portal's pages call."""

from __future__ import annotations

import re

import psycopg
import pytest

import web_round
from enforcement_support import run
from hauler_support import HEADER


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


def ok(village, db, *args):
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def test_assign_devices_and_invite_a_hauler_from_the_command_line(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "licences.csv").write_text(
        HEADER + "\nH0001,Corner Cafe,1 Main St,,restaurant,GI-1,interceptor,1000,48,,2020-06-01,90\n"
        "H0002,Dockside Diner,2 Dock St,,restaurant,GI-1,interceptor,1000,48,,2020-06-01,90\n", encoding="utf-8")
    ok(tmp_path, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
    ok(tmp_path, db, "fog", "hauler", "add", "Badger Grease Service", "--licence", "WI-GH-101")
    out = ok(tmp_path, db, "fog", "hauler", "devices", "WI-GH-101")
    assert "Badger Grease Service is hired for no device yet" in out
    out = ok(tmp_path, db, "fog", "hauler", "assign", "WI-GH-101", "--establishment", "H0001", "--actor", "cora")
    assert "Badger Grease Service is hired for Corner Cafe GI-1" in out
    r = run(tmp_path, db, "fog", "hauler", "assign", "Badger Grease Service", "--establishment", "H0001")
    assert r.returncode == 2 and re.search(r"Badger Grease Service is assigned to Corner Cafe, GI-1 already "
                                           r"\(on \d{4}-\d\d-\d\d by cora\): nothing was saved", r.stderr), r.stderr
    r = run(tmp_path, db, "fog", "hauler", "assign", "WI-GH-999", "--establishment", "H0001")
    assert r.returncode == 2 and "no registered hauler 'WI-GH-999'" in r.stderr
    ok(tmp_path, db, "fog", "pumpout", "add", "--establishment", "H0002", "--date", "2026-03-01", "--hauler",
       "WI-GH-101", "--gallons", "900", "--fog-depth", "4", "--solids-depth", "3", "--facility", "Palmyra WWTP",
       "--manifest", "CLI-1")
    out = ok(tmp_path, db, "fog", "hauler", "devices", "WI-GH-101")
    assert "H0001 Corner Cafe, GI-1 (interceptor): assigned; it last pumped it never" in out
    assert "H0002 Dockside Diner, GI-1 (interceptor): pumped it before; it last pumped it 2026-03-01" in out
    # its person invited: no mail server here, so the link is printed (the portal's tests use one)
    out = ok(tmp_path, db, "portal", "invite-hauler", "WI-GH-101", "--email", "dan@badger.example",
             "--name", "Dan Driver")
    assert "NOT mailed" in out
    assert re.search(r"/portal/invite/\S+", out), out
    r = run(tmp_path, db, "portal", "invite-hauler", "WI-GH-999", "--email", "x@y.example", "--name", "X")
    assert r.returncode == 2 and "no registered hauler 'WI-GH-999'" in r.stderr
    with psycopg.connect(db.url, autocommit=True) as conn:
        inv = conn.execute("SELECT h.company, i.site_id, i.signatory FROM portal_invitations i JOIN fog_haulers h "
                           "ON h.id = i.hauler_id").fetchall()
    assert inv == [("Badger Grease Service", None, False)]
    out = ok(tmp_path, db, "portal", "people")
    assert "Dan Driver <dan@badger.example> (Badger Grease Service)" in out and "open" in out
