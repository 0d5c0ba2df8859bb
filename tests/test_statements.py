"""Statements of account and the bank's payments on the command line, against the test
database (a copy of the round village, tests/web_round.py, billed by tests/statements_support.py):
the bank file previewed (each row matched or not, with the reason), recorded once (the
unmatched rows kept as dead letters; the same file again refused, naming what was
recorded), and the statements and receivables on several days matching the aging worked
out by hand; the statement's PDF read back with pdftotext."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

import statements_support as ss
import web_round
from enforcement_support import run, sw

BUCKETS = ("current", "0-30", "31-60", "61-90", "over-90")


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0], "stmt")


def statement(t, db, site: str, as_of: str) -> dict:
    r = run(t, db, "bills", "statement", site, "--as-of", as_of, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def figures(s: dict) -> dict:
    """A statement's aging as the hand figures give it (the buckets that are not $0.00)."""
    return {**{k: v for k, v in s["aging"].items() if v}, "credit": s["credit"], "balance": s["balance"]}


@pytest.mark.timeout(900)
def test_bank_file_recorded_once_and_statements_aged_as_by_hand(db, tmp_path):
    t = tmp_path
    b = ss.seed_bills(t, db)
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    (t / "bank.csv").write_text(ss.bank_csv(b, today), encoding="utf-8")
    p4, p1, p2 = (b[("plating", q, "first")][0] for q in ("2025Q4", "2026Q1", "2026Q2"))

    # the preview: matched and not, one line each with the reason; nothing recorded
    r = run(t, db, "bills", "import-payments", "bank.csv")
    assert r.returncode == 4, r.stderr
    lines = {int(m.group(1)): m.group(2) for m in re.finditer(r"line (\d+): (.*)", r.stdout)}
    assert lines[2].startswith(f"matched: 2026-02-20 $200.00 on bill {p4} (plating, 2025Q4), late charge $")
    assert lines[3].startswith(f"matched: 2026-07-20 $100.00 on bill {p2} (plating, 2026Q2)")
    assert lines[4] == "not matched: unknown bill number: no bill 99999"
    assert lines[5].startswith("not matched: amount over what is owed: $1,000,000.00 paid, $")
    assert lines[6].startswith("not matched: date in the future: ")
    assert lines[7].startswith(f"not matched: duplicate of a payment already recorded: paid on bill {p4} on 2026-01-25")
    assert lines[8].startswith(f"matched: 2026-07-25 ${b[('candy', '2026Q2', 'now')][1]:,.2f} on bill")
    assert lines[9].startswith(f"not matched: before the bill's date: 2026-03-01 is before bill {p1}")
    assert "3 matched" in r.stdout and "5 not matched" in r.stdout and "nothing recorded" in r.stdout
    assert figures(statement(t, db, "plating", "2026-08-15"))["balance"] != \
        ss.expected(b, date(2026, 8, 15))["plating"]["balance"]           # the preview recorded nothing

    # recorded (as the clerk types it): the matched only; the others kept with their reasons
    r = sw(t, db, "bills", "import-payments", "bank.csv", "--record")
    assert r.returncode == 4, r.stderr
    assert "3 matched" in r.stdout and "; recorded" in r.stdout
    iid = int(re.match(r"bank file (\d+)", r.stdout).group(1))
    with db.connect() as conn:
        dead = conn.execute("SELECT topic, reason, convert_from(payload, 'UTF8') FROM dead_letters "
                            "WHERE source = 'bank-payments' ORDER BY id").fetchall()
        n = conn.execute("SELECT count(*), sum(dollars)::float8 FROM payments WHERE import_id = %s", (iid,)).fetchone()
    assert [d[0].rsplit(":", 1)[1] for d in dead] == ["4", "5", "6", "7", "9"]
    assert dead[0][1] == "unknown bill number: no bill 99999" and dead[0][2].startswith("2026-07-21,50.00,BILL 99999")
    assert n == (3, pytest.approx(300 + b[("candy", "2026Q2", "now")][1]))

    # the same file again: nothing recorded, naming what exists
    r = run(t, db, "bills", "import-payments", "bank.csv", "--record")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert f"this bank file was recorded already as bank file {iid} (bank.csv) on " in r.stderr
    assert "3 payments" in r.stderr and "nothing was recorded now" in r.stderr
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 3

    # the aging by hand (tests/statements_support.py), on days that put amounts in each column
    for as_of, plating, candy in (
            # 2025Q4 due 02-01: 28 days past
            ("2026-03-01", {"0-30"}, {"0-30"}),
            # 2025Q4: 73 days past; 2026Q1 due 04-30: not yet (plating pays it on 04-20)
            ("2026-04-15", {"61-90", "current"}, {"61-90", "current"}),
            # 2025Q4: 150 days; plating's 2026Q1 a credit; candy's corrected 2026Q1 due 05-25: 37 days
            ("2026-07-01", {"over-90"}, {"over-90", "31-60"}),
            # the corrected 2026Q1: 51 days; 2026Q2 due 07-30: not yet
            ("2026-07-15", {"over-90", "current"}, {"over-90", "31-60", "current"}),
            # 2026Q2: 16 days past (candy paid it 07-25); the corrected 2026Q1: 82 days
            ("2026-08-15", {"over-90", "0-30"}, {"over-90", "61-90"})):
        want = ss.expected(b, date.fromisoformat(as_of))
        for site, cols in (("plating", plating), ("candy", candy)):
            got = figures(statement(t, db, site, as_of))
            assert got == pytest.approx(want[site]), (as_of, site)
            assert set(got) - {"credit", "balance"} == set(want[site]) - {"credit", "balance"} == cols, (as_of, site)
    s = statement(t, db, "plating", "2026-08-15")
    assert s["credit"] > 0 and s["balance"] == pytest.approx(s["aging"]["over-90"] + s["aging"]["0-30"] - s["credit"])
    assert [e["kind"] for e in s["entries"]].count("credit") == 1
    assert any(e["kind"] == "late charge" for e in s["entries"])

    # receivables: every user's row and the totals, the same figures
    r = run(t, db, "bills", "receivables", "--as-of", "2026-08-15", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    want = ss.expected(b, date(2026, 8, 15))
    assert {a["site"]: a["balance"] for a in rec["accounts"]} == pytest.approx(
        {k: v["balance"] for k, v in want.items()})
    assert rec["totals"]["balance"] == pytest.approx(sum(v["balance"] for v in want.values()))
    assert rec["totals"]["aging"]["over-90"] == pytest.approx(want["plating"]["over-90"] + want["candy"]["over-90"])
    r = run(t, db, "bills", "receivables", "--as-of", "2026-08-15")
    assert re.search(r"total\s+\$", r.stdout) and "over 90 days" in r.stdout

    # the PDF with the letterhead, read back
    r = run(t, db, "bills", "statement", "plating", "--as-of", "2026-08-15", "--pdf", "statement.pdf")
    assert r.returncode == 0, r.stderr
    text = subprocess.run(["pdftotext", "-layout", str(t / "statement.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "Village of Palmyra" in text and "Department of Public Works, Wastewater Utility" in text
    assert "Statement of account: Lakeside Plating" in text and "Statement as of 2026-08-15" in text
    bal = want["plating"]["balance"]
    assert (f"${bal:,.2f} owed" if bal > 0 else f"a credit of ${-bal:,.2f}") in text
    assert f"${want['plating']['over-90']:,.2f}" in text and f"${want['plating']['credit']:,.2f}" in text
    assert "3 % added if not paid within 20 days" in text and "§13.46(8)" in text

    # bad input: one line naming what and where
    r = run(t, db, "bills", "statement", "nobody", "--as-of", "2026-08-15")
    assert r.returncode == 2 and "statement: no industrial user 'nobody' (users: candy, plating)" in r.stderr
    r = run(t, db, "bills", "statement", "plating", "--as-of", "15/08/2026")
    assert r.returncode == 2 and "--as-of: expected a date such as 2026-08-15, got '15/08/2026'" in r.stderr
    (t / "bad.csv").write_text("when,amount,reference\n2026-07-01,1,BILL 1\n", encoding="utf-8")
    r = run(t, db, "bills", "import-payments", "bad.csv")
    assert r.returncode == 2 and "bad.csv: line 1: no column date (expected the columns date, amount, reference" \
        in r.stderr


@pytest.mark.timeout(900)
def test_a_payment_one_by_one_takes_what_is_left_after_the_bank_file(db, tmp_path):
    t = tmp_path
    b = ss.seed_bills(t, db)
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    (t / "bank.csv").write_text(ss.bank_csv(b, today), encoding="utf-8")
    assert run(t, db, "bills", "import-payments", "bank.csv", "--record").returncode == 4
    want = ss.expected(b, date(2026, 8, 15))["plating"]
    p1, p2 = b[("plating", "2026Q1", "now")][0], b[("plating", "2026Q2", "first")][0]
    left = round(b[("plating", "2026Q2", "first")][1] - 100, 2)
    # the paid quarter corrected downward: nothing left to pay on its corrected bill
    r = run(t, db, "bills", "pay", str(p1), "--on", "2026-06-01")
    assert r.returncode == 2 and f"paid: bill {p1} (plating, 2026Q1) has $0.00 left to pay" in r.stderr, r.stderr
    r = run(t, db, "bills", "pay", str(p2), "--on", "2026-08-01", "--dollars", "1000")
    assert r.returncode == 2 and f"has ${left:,.2f} left to pay after the payments recorded" in r.stderr, r.stderr
    # what is left, paid 2026-08-01: 22 days after the bill's date, so 3 % of it is added (§13.46(8))
    r = run(t, db, "bills", "pay", str(p2), "--on", "2026-08-01")
    assert r.returncode == 0, r.stderr
    late = ss.cents(0.03 * left)
    assert f"late charge ${late:,.2f}" in r.stdout
    s = statement(t, db, "plating", "2026-08-15")
    assert s["aging"]["0-30"] == pytest.approx(late)         # only the late charge is left on 2026Q2
    assert s["balance"] == pytest.approx(ss.cents(want["balance"] - left + late))


def test_recording_a_bank_file_takes_the_clerk_or_the_utility_heads_reading_any_staff(db, tmp_path):
    from web_support import PEOPLE, cheap_hashes, csrf_of, office_client, sign_in

    with cheap_hashes(), office_client(db, tmp_path) as c:
        for user, (_, role) in PEOPLE.items():
            c.cookies.clear()
            token = csrf_of(sign_in(c, user).text)
            assert c.get("/bills/receivables?as_of=2026-08-15").status_code == 200, user
            assert c.get("/bills/statements/plating?as_of=2026-08-15").status_code == 200, user
            bank = b"date,amount,reference\n2026-07-01,1,BILL 1\n"
            r = c.post("/bills/payments", files={"file": ("bank.csv", bank, "text/csv")},
                       data={"_csrf_token": token, "_form_key": f"{user:k<32}"}, follow_redirects=False)
            may = role in ("superintendent", "coordinator", "clerk")
            assert r.status_code == (303 if may else 403), (user, r.status_code)
            if not may:
                assert "Not allowed for your role" in r.text
    with db.connect() as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT staged_by) FROM payment_imports").fetchone() == (3, 3)
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0        # staged, none recorded
