"""``sewerwatch rates import|list|show`` against the test database, and a quarter's bills
drafted from the stored version in effect on the quarter's first day, naming it (the run,
each bill, the bill's PDF). The village is a copy of the session's seeded one
(``round_village``: the plater with its permit, the demo's lab results)."""

from __future__ import annotations

import json

import psycopg
import pytest

import web_round
from enforcement_support import run

RATES_2027 = web_round.RATES.replace("use_per_1000_gal = 6.37", "use_per_1000_gal = 7.10")


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    (tmp_path / "rates-2027.toml").write_text(RATES_2027, encoding="utf-8")
    return tmp_path


def test_rates_import_list_show(db, village):
    r = run(village, db, "rates", "list")
    assert r.returncode == 0 and "no rates stored" in r.stdout
    r = run(village, db, "rates", "import", "rates.toml", "--effective", "2026-01-01", "--note", "2026 rates")
    assert r.returncode == 0 and "saved rates version 1, in effect from 2026-01-01 (from rates.toml)" in r.stdout, r.stderr
    # the same file and day again: refused, naming the version that has it; nothing stored
    r = run(village, db, "rates", "import", "rates.toml", "--effective", "2026-01-01")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "the same rates as rates version 1, in effect from 2026-01-01: nothing was saved" in r.stderr
    r = run(village, db, "rates", "import", "rates-2027.toml", "--effective", "2027-01-01")
    assert r.returncode == 0 and "rates version 2, in effect from 2027-01-01" in r.stdout, r.stderr
    r = run(village, db, "rates", "list", "--json")
    listed = json.loads(r.stdout)
    assert [(v["version"], v["effective"]) for v in listed] == [(2, "2027-01-01"), (1, "2026-01-01")]
    assert listed[1]["note"] == "2026 rates" and listed[0]["rates"]["bill"]["palmyra-wi"]["use_per_1000_gal"] == 7.1
    # today (2026) version 1 is in effect; version 2 waits for its day
    assert [v["version"] for v in listed if v["in_effect"]] == [1]
    r = run(village, db, "rates", "show", "--on", "2027-03-01")
    assert r.returncode == 0 and r.stdout.startswith("rates version 2, in effect from 2027-01-01")
    assert "use_per_1000_gal = 7.10" in r.stdout
    r = run(village, db, "rates", "show", "1", "--json")
    assert json.loads(r.stdout)["rates"]["bill"]["palmyra-wi"]["use_per_1000_gal"] == 6.37
    r = run(village, db, "rates", "show", "--on", "2025-12-31")
    assert r.returncode == 2 and "no rates in effect on 2025-12-31" in r.stderr
    # the old versions stay as they were
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM rate_versions").fetchone()[0] == 2
        with pytest.raises(psycopg.errors.RaiseException):
            conn.execute("UPDATE rate_versions SET note = 'x' WHERE version = 1")


def test_bad_rates_are_refused_in_one_line(db, village):
    (village / "bad.toml").write_text("bod = -1\n", encoding="utf-8")
    r = run(village, db, "rates", "import", "bad.toml", "--effective", "2026-01-01")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "bad.toml: bod: expected a number of dollars per pound >= 0, got -1" in r.stderr
    assert "/tmp" not in r.stderr
    (village / "use.toml").write_text(web_round.RATES.replace("6.37", '"six"'), encoding="utf-8")
    r = run(village, db, "rates", "import", "use.toml", "--effective", "2026-01-01")
    assert r.returncode == 2 and "use.toml: bill.palmyra-wi.use_per_1000_gal: expected a number >= 0" in r.stderr
    r = run(village, db, "rates", "import", "rates.toml", "--effective", "January")
    assert r.returncode == 2 and "--effective: expected a date such as 2027-01-01, got 'January'" in r.stderr
    r = run(village, db, "bills", "draft", "--quarter", "2026Q1", "--on", "2026-04-10")
    assert r.returncode == 2 and "no rates in effect on 2026-01-01 (the first day of 2026Q1)" in r.stderr


def test_the_bills_use_the_version_in_effect_for_their_quarter(db, village):
    from lab.documents.pdf import pdf_text

    run(village, db, "rates", "import", "rates.toml", "--effective", "2026-01-01")
    run(village, db, "rates", "import", "rates-2027.toml", "--effective", "2026-04-01")
    r = run(village, db, "bills", "draft", "--quarter", "2026Q1", "--on", "2026-04-10", "--json")
    assert r.returncode == 0, r.stderr
    q1 = json.loads(r.stdout)
    assert q1["rates_name"] == "rates version 1, in effect from 2026-01-01"
    assert {b["rates_version"] for b in q1["bills"]} == {"rates version 1, in effect from 2026-01-01"}
    use = next(c for c in q1["bills"][1]["charges"] if "use" in c["charge"].lower())   # plating's use charge
    r = run(village, db, "bills", "draft", "--quarter", "2026Q2", "--on", "2026-07-10", "--json")
    q2 = json.loads(r.stdout)
    assert {b["rates_version"] for b in q2["bills"]} == {"rates version 2, in effect from 2026-04-01"}
    use2 = next(c for c in q2["bills"][1]["charges"] if c["charge"] == use["charge"])
    # the same volume (the rates' own for plating), the 2027 rate: 7.10 against 6.37 per 1,000 gallons
    assert use2["dollars"] == pytest.approx(use["dollars"] * 7.10 / 6.37, abs=0.01)
    # issued from the run: each issued bill names the version, on its PDF too
    r = run(village, db, "bills", "issue", str(q1["id"]), "--on", "2026-04-10", "--out", "out")
    assert r.returncode == 0, r.stderr
    pdf = next((village / "out").glob("bill-2026Q1-plating*.pdf"))
    assert "Rates version 1, in effect from 2026-01-01." in " ".join(pdf_text(pdf.read_bytes()).split())
    with psycopg.connect(db.url) as conn:
        details = [d for (d,) in conn.execute("SELECT detail FROM bills WHERE run_id = %s", (q1["id"],))]
        runs = conn.execute("SELECT rates_name FROM bill_runs ORDER BY id").fetchall()
    assert {d["rates_version"] for d in details} == {"rates version 1, in effect from 2026-01-01"}
    assert runs == [("rates version 1, in effect from 2026-01-01",), ("rates version 2, in effect from 2026-04-01",)]


def test_a_file_given_with_the_draft_is_saved_as_a_version(db, village):
    r = run(village, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-10")
    assert r.returncode == 0, r.stderr
    r = run(village, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-10")
    assert r.returncode == 0, r.stderr         # the same file again: that version, not a new one
    r = run(village, db, "rates", "list", "--json")
    listed = json.loads(r.stdout)
    assert [(v["version"], v["effective"], v["source"]) for v in listed] == [(1, "2026-01-01", "rates.toml")]
