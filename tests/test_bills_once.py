"""One bill per user and period, one way to issue it; no payment dated in the future.

On the command line (``sewerwatch bills ...`` and ``sewerwatch bill`` as the clerk types them,
in subprocesses, against the test database; the other steps through the same ``main`` in
process): a quarter issued once is refused the second time
(exit 2, naming the first run and its bills), by either command; a corrected bill replaces
the one issued, shows both amounts and the difference, and only it counts in the user's
account; a payment dated after the village's today, or before the bill's date, is refused
naming the field. In the database: the rule "one bill in force per site and period" holds
whatever path inserts, and a run drafted before the quarter was billed is not issued.
The village is a copy of the session's seeded one (tests/web_round.py).
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from enforcement_support import run, sw

#: The use charge of the corrected rates [$/1,000 gal] (the bills issued used 6.37).
CORRECTED_USE = 6.00


@pytest.fixture
def db(services, round_village):
    """A copy of the seeded village for this test (web_round.clone)."""
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    (tmp_path / "corrected.toml").write_text(
        web_round.RATES.replace("use_per_1000_gal = 6.37", f"use_per_1000_gal = {CORRECTED_USE}"), encoding="utf-8")
    return tmp_path


def issued(tmp_path, db) -> dict[int, str]:
    """``bills list --issued`` (in process): each bill's id and its line."""
    r = run(tmp_path, db, "bills", "list", "--issued")
    assert r.returncode == 0, r.stderr
    return {int(m.group(1)): line for line in r.stdout.splitlines() if (m := re.match(r"bill (\d+)", line))}


@pytest.mark.timeout(900)     # a dozen commands, some as the clerk types them (a subprocess each)
def test_a_quarter_is_billed_once_corrected_once_and_paid_in_the_past(db, village):
    t = village
    r = run(t, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-10")
    assert r.returncode == 0, r.stderr
    run1 = int(re.match(r"bill run (\d+): 2026Q1 drafted", r.stdout).group(1))
    r = sw(t, db, "bills", "issue", str(run1), "--on", "2026-04-10", "--out", "bills")
    assert r.returncode == 0, r.stderr
    first = issued(t, db)
    assert len(first) == 2                      # the plater and the candy maker, once each
    totals = {}
    for bid, line in first.items():
        site = line.split()[3]
        totals[site] = (bid, float(re.search(r"\$([\d,]+\.\d\d)", line).group(1).replace(",", "")))

    # the second bill run of the quarter: refused by either command, naming the first run and its bills
    for args in (("bills", "draft", "--quarter", "2026q1", "--rates", "rates.toml", "--on", "2026-04-11"),
                 ("bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "again")):
        r = sw(t, db, *args)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert r.stderr.startswith(f"sewerwatch: error: 2026Q1 is billed already by bill run {run1} issued "
                                   "2026-04-10: bills "), r.stderr
        for site, (bid, dollars) in totals.items():
            assert f"{bid} (" in r.stderr and f"${dollars:,.2f}" in r.stderr
        assert "Lakeside Plating" in r.stderr and "corrected bill" in r.stderr and "--correct REASON" in r.stderr
    assert not (t / "again").exists()
    # the run issued once is not issued again
    r = sw(t, db, "bills", "issue", str(run1), "--on", "2026-04-12", "--out", "bills")
    assert r.returncode == 2 and f"bill run {run1} (2026Q1) is issued: only a draft is issued" in r.stderr
    assert issued(t, db) == first

    # a correction needs its reason, and something to correct
    r = run(t, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--correct", "  ")
    assert r.returncode == 2 and "correction: give the reason of the corrected bill" in r.stderr
    r = run(t, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-20",
           "--correct", "checked again")
    assert r.returncode == 2 and "2026Q1: nothing to correct: the bills computed now are the ones issued" in r.stderr
    r = run(t, db, "bills", "draft", "--quarter", "2026Q2", "--rates", "rates.toml", "--correct", "typo")
    assert r.returncode == 2 and "correction: 2026Q2 has not been billed yet" in r.stderr

    # the corrected bills: the use charge was billed at the wrong rate
    reason = "the sewer use charge was billed at last year's rate"
    r = sw(t, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "corrected.toml", "--on", "2026-04-20",
           "--correct", reason, "--json")
    assert r.returncode == 0, r.stderr
    draft = json.loads(r.stdout)
    run2 = draft["id"]
    assert draft["correction"] == reason
    lower = {}
    for b in draft["bills"]:
        use = next(c for c in b["charges"] if c["charge"] == "sewer use charge")
        gallons = b["volume_mg"] * 1e6
        bid, before = totals[b["site"]]
        c = b["correction"]
        # §13.45(2)(a): the use charge per 1,000 gal; only it changed, so the difference is the rate's
        assert use["dollars"] == pytest.approx(gallons / 1000 * CORRECTED_USE, abs=0.005)
        assert (c["bill"], c["total_dollars"], c["reason"]) == (bid, before, reason)
        assert c["difference"] == pytest.approx(b["total_dollars"] - before, abs=0.001)
        assert c["difference"] == pytest.approx(-gallons / 1000 * (6.37 - CORRECTED_USE), abs=0.01)
        lower[b["site"]] = b["total_dollars"]
    r = sw(t, db, "bills", "issue", str(run2), "--on", "2026-04-20", "--out", "corrected")
    assert r.returncode == 0, r.stderr
    now = issued(t, db)
    assert len(now) == 4                               # both kept in the record
    new = {}
    for bid, line in now.items():
        site = line.split()[3]
        if bid in first:
            assert re.search(r"replaced by bill \d+$", line), line
        else:
            old = totals[site][0]
            assert line.endswith(f"corrects bill {old}") and "issued 2026-04-20" in line, line
            assert f"${lower[site]:,.2f}" in line
            assert f"replaced by bill {bid}" in now[old]
            new[site] = bid
            assert f"bill {bid} ({site}) replaces bill {old} of ${totals[site][1]:,.2f}: a credit of " \
                   f"${totals[site][1] - lower[site]:,.2f}" in r.stdout
    doc = json.loads((t / "corrected" / "bill-2026Q1-plating.json").read_text())
    assert doc["correction"]["bill"] == totals["plating"][0] and doc["total_dollars"] == lower["plating"]
    from lab.documents.pdf import pdf_text
    text = " ".join(pdf_text(t / "corrected" / "bill-2026Q1-plating.pdf").split())
    assert f"This bill replaces bill {totals['plating'][0]} of 2026-04-10: {reason}." in text
    assert f"${totals['plating'][1]:,.2f}" in text and f"${lower['plating']:,.2f}" in text
    assert f"a credit of ${totals['plating'][1] - lower['plating']:,.2f}" in text
    # the account counts the corrected bill only: the annual report's billed total
    r = run(t, db, "report", "annual", "--year", "2026", "--on", "2027-01-15", "--out", "rep", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.dumps(json.loads(r.stdout))
    assert f'"total_dollars": {lower["plating"]}' in rep and f'"total_dollars": {totals["plating"][1]}' not in rep

    # payments: the replaced bill takes none; a day after the village's today, or before the bill, refused
    r = run(t, db, "bills", "pay", str(totals["plating"][0]), "--on", "2026-04-30")
    assert r.returncode == 2 and f"was replaced by the corrected bill {new['plating']}" in r.stderr
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    later = today + timedelta(days=3)
    r = sw(t, db, "bills", "pay", str(new["plating"]), "--on", later.isoformat())
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"sewerwatch: error: paid on: {later} is after today ({today})"), r.stderr
    r = run(t, db, "bills", "pay", str(new["plating"]), "--on", "2026-04-19")
    assert r.returncode == 2 and "paid on: 2026-04-19 is before the bill's date (2026-04-20)" in r.stderr
    assert "not paid" in issued(t, db)[new["plating"]]
    r = sw(t, db, "bills", "pay", str(new["plating"]), "--on", "2026-04-30")
    assert r.returncode == 0 and "paid 2026-04-30; no late charge" in r.stdout, r.stderr


def test_one_bill_in_force_per_site_and_period_in_the_database(db, village):
    from foundation.actor import Actor
    from foundation.errors import InputError
    from lab import bill_runs

    actor = Actor.os_user()
    with psycopg.connect(db.url, autocommit=True) as conn:
        stale = bill_runs.draft_quarter(conn, "2026Q1", village / "rates.toml", on=date(2026, 4, 10), actor=actor)
        r = bill_runs.bill_quarter(conn, "2026Q1", village / "rates.toml", date(2026, 4, 10), actor=actor)
        assert len(r["issued"]) == 2
        # a run drafted before the quarter was billed (its draft taken back, as if two clerks raced)
        conn.execute("UPDATE bill_runs SET state = 'drafted' WHERE id = %s", (stale["id"],))
        with pytest.raises(InputError, match=rf"^bill run {stale['id']}: not issued: 2026Q1 is billed already by "
                                             rf"bill run {r['id']} issued 2026-04-10"):
            bill_runs.issue_run(conn, stale["id"], date(2026, 4, 11), actor=actor)
        count = lambda: conn.execute("SELECT count(*) FROM bills").fetchone()[0]
        assert count() == 2
        plating = next(b for b in r["issued"] if b["site"] == "plating")
        # a second bill in force for the site and quarter, inserted by hand: the database refuses it
        with pytest.raises(psycopg.errors.UniqueViolation, match="bills_one_in_force"):
            conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail) "
                         "SELECT site_id, period, period_start, period_end, 1.00, detail FROM bills WHERE id = %s",
                         (plating["id"],))
        assert count() == 2
        # another quarter, or a bill marked replaced by the one that follows it, is allowed
        with conn.transaction():
            new = conn.execute("SELECT nextval(pg_get_serial_sequence('bills', 'id'))").fetchone()[0]
            conn.execute("UPDATE bills SET superseded_by = %s, superseded_at = now() WHERE id = %s",
                         (new, plating["id"]))
            conn.execute("INSERT INTO bills (id, site_id, period, period_start, period_end, total_dollars, detail, "
                         "supersedes) SELECT %s, site_id, period, period_start, period_end, 1.00, detail, id "
                         "FROM bills WHERE id = %s", (new, plating["id"]))
        assert count() == 3
        # a replaced bill's marks go together; a bill replaced twice is refused
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE bills SET superseded_at = NULL WHERE id = %s", (plating["id"],))
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail, "
                         "supersedes, superseded_by, superseded_at) SELECT site_id, period, period_start, period_end, "
                         "2.00, detail, %s, %s, now() FROM bills WHERE id = %s", (plating["id"], new, new))
        # the office's and the portal's account of the site: the bill in force only
        ids = [b["id"] for b in bill_runs.issued_bills(conn, "2026Q1", "plating", replaced=False)]
        assert ids == [new]


def test_a_database_billed_twice_before_the_rule_keeps_the_latest_bill_in_force(db, village):
    """Migration 0181's repair of a database that two paths billed twice: run again here over
    two bills in force of one site and quarter (the index dropped to let them in, as before
    0181), the latest stays in force and the earlier is marked replaced by it."""
    from pathlib import Path

    from foundation.actor import Actor
    from lab import bill_runs

    sql = (Path(__file__).resolve().parent.parent / "sewerwatch" / "db" / "migrations" / "0181_bills_once.sql").read_text()
    repair = sql[sql.index("WITH chain AS"):sql.index("CREATE UNIQUE INDEX")]
    index = sql[sql.index("CREATE UNIQUE INDEX"):]
    with psycopg.connect(db.url, autocommit=True) as conn:
        r = bill_runs.bill_quarter(conn, "2026Q1", village / "rates.toml", date(2026, 4, 10), actor=Actor.os_user())
        first = next(b for b in r["issued"] if b["site"] == "candy")
        conn.execute("DROP INDEX bills_one_in_force")
        second = conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail, "
                              "issued_at) SELECT site_id, period, period_start, period_end, total_dollars, detail, "
                              "issued_at + interval '1 day' FROM bills WHERE id = %s RETURNING id",
                              (first["id"],)).fetchone()[0]
        with conn.transaction():
            for statement in repair.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(index)
        rows = {i: (by, of) for i, by, of in conn.execute(
            "SELECT id, superseded_by, supersedes FROM bills WHERE id IN (%s, %s)", (first["id"], second)).fetchall()}
        assert rows == {first["id"]: (second, None), second: (None, first["id"])}
        assert [b["id"] for b in bill_runs.issued_bills(conn, "2026Q1", "candy", replaced=False)] == [second]
