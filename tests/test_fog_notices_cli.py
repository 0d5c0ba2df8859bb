"""The grease program's enforcement through ``sewerwatch fog ...`` against the test database:
the hand-counted year (tests/fog_support.py) with the sewer crew's blockages and the
segments (tests/fog_enforcement_support.py); the hot spots; the notices the guide proposes,
issued, each PDF stored with its hash and read back with pdftotext; a second issue refused
naming the first; the year's counts with the actions by step. Every figure is worked out in
the support module's docstring."""

from __future__ import annotations

import hashlib
import json

import psycopg

import fog_enforcement_support as fe
import fog_support as fs
from enforcement_support import run
from lab.documents.pdf import pdf_text
from test_fog_cli import db, load_year, ok, village  # noqa: F401  (fixtures)


def test_blockages_make_hot_spots_and_a_finding_and_bad_input_is_refused(db, village):  # noqa: F811
    load_year(village, db)
    fe.load_enforcement(ok, village, db)
    day = fe.as_of()
    spots = json.loads(ok(village, db, "fog", "hotspots", "--since", "2026-01-01", "--until", str(day), "--json"))
    got = [(s["location"], s["blockages"], s["last"], s["traced"], [u["name"] for u in s["upstream"]])
           for s in spots["hot_spots"]]
    assert got == [(fe.SEGMENT, 3, "2026-11-09", ["Kitchen 42"], ["Cafe 300", "Cafe 43", "Kitchen 42"]),
                   ("MH-3", 1, "2026-05-05", [], [])]
    # a period before the blockages of July: MH-3 alone
    spots = json.loads(ok(village, db, "fog", "hotspots", "--since", "2026-01-01", "--until", "2026-07-19", "--json"))
    assert [(s["location"], s["blockages"]) for s in spots["hot_spots"]] == [("MH-3", 1)]
    out = ok(village, db, "fog", "hotspots", "--since", "2026-01-01", "--until", str(day))
    assert "grease blockages from 2026-01-01 to" in out and "4 at 2 places" in out
    assert "upstream: Cafe 300 (F0300, 400 Oak St); Cafe 43 (F0043" in out
    # the blockage traced to Kitchen 42 is one of its findings, with the ordinance's duty
    out = ok(village, db, "fog", "show", "F0042", "--as-of", str(day))
    assert "findings as of" in out and "2026-11-09  MH-14 to MH-15: blockage: grease blockage at MH-14 to MH-15" in out
    # the CSV's segment column was stored
    shown = json.loads(ok(village, db, "fog", "show", "F0300", "--json"))
    assert shown["segment"] == fe.SEGMENT and shown["findings"] == []
    # bad input: one line each, nothing stored
    r = run(village, db, "fog", "blockage", "add", "--date", "2099-01-01", "--location", "MH-3", "--found", "grease",
            "--by", "K. Olson")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "date: 2099-01-01 is after today" in r.stderr
    r = run(village, db, "fog", "blockage", "add", "--date", "2026-05-06", "--location", "MH-3", "--found", "grease",
            "--by", "K. Olson", "--establishment", "F0999")
    assert r.returncode == 2 and "establishment: no establishment with licence 'F0999'" in r.stderr
    r = run(village, db, "fog", "blockage", "add", "--date", "2026-05-06", "--location", " ", "--found", "grease",
            "--by", "K. Olson")
    assert r.returncode == 2 and "manhole or segment: missing" in r.stderr
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_blockages").fetchone()[0] == len(fe.BLOCKAGES)
    # the crew's CSV: two good rows, two refused (a day after today, an unknown licence) to the dead letters
    (village / "crew.csv").write_text(
        "date,location,found,found_by,establishment\n2026-08-01,MH-3,grease,K. Olson,\n"
        "2099-01-01,MH-3,grease,K. Olson,\n2026-08-02,MH-9,grease,K. Olson,F0999\n"
        "2026-08-03,MH-9,grease and rags,K. Olson,F0001\n", encoding="utf-8")
    out = ok(village, db, "fog", "blockage", "import", "crew.csv")
    assert "crew.csv: 2 rows would store (a preview: nothing stored; --commit stores); 2 rejected" in out
    out = ok(village, db, "fog", "blockage", "import", "crew.csv", "--commit")
    assert "crew.csv: 2 rows stored; 2 rejected" in out
    assert "line 3: date: 2099-01-01 is after today" in out and "line 4: establishment: no establishment" in out
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_blockages").fetchone()[0] == len(fe.BLOCKAGES) + 2
        dead = conn.execute("SELECT topic, convert_from(payload, 'UTF8') FROM dead_letters "
                            "WHERE source = 'fog-blockage-import' ORDER BY id").fetchall()
    assert dead == [("crew.csv:3", "2099-01-01,MH-3,grease,K. Olson,"),
                    ("crew.csv:4", "2026-08-02,MH-9,grease,K. Olson,F0999")]
    assert "2026-08-03  MH-9: blockage" in ok(village, db, "fog", "show", "F0001", "--as-of", str(day))


def test_the_findings_lead_to_the_notices_worked_out_by_hand(db, village, tmp_path):  # noqa: F811
    load_year(village, db)
    fe.load_enforcement(ok, village, db)
    day, today = str(fe.as_of()), fe.today()
    due = json.loads(ok(village, db, "fog", "notices", "due", "--as-of", day, "--json"))
    proposed: dict[str, list] = {}
    for r in due:
        proposed.setdefault(r["licence"], []).append((r["step"], r["kind"]))
    assert proposed == fe.EXPECTED_NOTICES
    # one issued by hand: the cost recovery of Kitchen 42's blockage, its PDF read back
    out = ok(village, db, "fog", "notices", "issue", "F0042", "--kind", "blockage", "--on", "2026-11-09",
             "--as-of", day, "--out", str(tmp_path))
    number = f"GCR-{today.year}-001"
    assert f"issued notice of cost recovery {number} to Kitchen 42 (F0042) on {today}" in out
    text = pdf_text(tmp_path / f"{number}.pdf", layout=False)
    for words in ("Notice of cost recovery", number, "Village of Palmyra", "Kitchen 42", "§13.51",
                  "maintained by the owner, at his expense, in continuous, efficient operation", "$475.00",
                  "§13.60(1)", "not less than $100 nor more than $2,500", "found by J. Rivera", "MH-14 to MH-15",
                  "M-0042-0", "M-0042-2", "Badger Grease Service", "2026-10-20"):
        assert words in " ".join(text.split()), words
    for word in ("fog_", "blockage:", "grease-erp", ".toml", "cost-recovery", "palmyra-wi", "None"):
        assert word not in text, word
    # the same again: refused, naming the notice issued
    r = run(village, db, "fog", "notices", "issue", "F0042", "--kind", "blockage", "--on", "2026-11-09",
            "--as-of", day)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert f"notice of cost recovery {number} was issued for this finding on {today}" in r.stderr
    # no step for over capacity
    r = run(village, db, "fog", "notices", "issue", "F0123", "--kind", "over capacity", "--on", "2026-03-15",
            "--as-of", day)
    assert r.returncode == 2 and "the grease guide proposes no step" in r.stderr
    # the rest, all at once
    out = ok(village, db, "fog", "notices", "issue", "--all", "--as-of", day, "--out", str(tmp_path))
    assert out.rstrip().endswith("17 notices issued")
    assert json.loads(ok(village, db, "fog", "notices", "due", "--as-of", day, "--json")) == []
    listed = json.loads(ok(village, db, "fog", "notices", "list", "--json"))
    issued: dict[str, list] = {}
    for n in sorted(listed, key=lambda n: (n["licence"], n["finding_on"], n["id"])):
        issued.setdefault(n["licence"], []).append((n["title"], n["finding_kind"]))
    assert issued == fe.EXPECTED_NOTICES
    assert sum(float(n["amount_dollars"] or 0) for n in listed) == 975.0
    # Cafe 8's forfeiture: the third finding, its manifests and the ordinance's range
    fine = next(n for n in listed if n["licence"] == "F0008" and n["title"] == fe.FN)
    text = " ".join(pdf_text(tmp_path / f"{fine['number']}.pdf", layout=False).split())
    for words in ("Notice of forfeiture", "Cafe 8", "$250.00", "the third finding of its kind", "M-0008-1",
                  "Badger Grease Service", "not less than $100 nor more than $2,500", "§13.51",
                  "pumped 42 days after it was due on 2026-10-20 (every 45 days)"):
        assert words in text, words
    # stored as issued: the bytes and their hash; fog notices pdf writes them again
    ok(village, db, "fog", "notices", "pdf", fine["number"], "--out", str(tmp_path / "again"))
    again = (tmp_path / "again" / f"{fine['number']}.pdf").read_bytes()
    assert again == (tmp_path / f"{fine['number']}.pdf").read_bytes()
    with psycopg.connect(db.url) as conn:
        sha = conn.execute("SELECT pdf_sha256 FROM fog_notices WHERE number = %s", (fine["number"],)).fetchone()[0]
    assert sha == hashlib.sha256(again).hexdigest()
    # the year's counts: the findings of tests/fog_support.py unchanged, the blockages, the actions
    c = json.loads(ok(village, db, "fog", "counts", "--year", "2026", "--as-of", day, "--json"))
    assert c["findings"] == fs.EXPECTED and (c["blockages"], c["blockages_traced"]) == (4, 1)
    c = json.loads(ok(village, db, "fog", "counts", "--year", str(today.year), "--json"))
    assert c["actions"] == fe.EXPECTED_ACTIONS
    out = ok(village, db, "fog", "counts", "--year", str(today.year))
    assert "notices issued: Notice of cost recovery: 1, Notice of forfeiture: 2, Notice of violation: 3, " \
           "Warning letter: 12" in out
