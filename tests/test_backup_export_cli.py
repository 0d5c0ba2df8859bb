"""The year's export and legal holds as the administrator types them (``sewerwatch export``,
``sewerwatch hold add|list|release``, each a subprocess): exit codes, what is printed, and
the one-line refusals (a bad year, a folder not empty, an unknown site, a second hold, a
release of no hold). The export holds the issued notice and the quarter's bills as PDFs: the
notice's bytes are those issued (the SHA-256 stored at issue), the bill's say its total.

The village is a copy of the session's seeded one (tests/web_round.py), its 2026Q1 bills and
a notice of the copper violation issued through the same ``main`` in process.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess

import psycopg
import pytest

import web_round
from enforcement_support import run, sw

pytestmark = pytest.mark.services


@pytest.fixture
def village(services, round_village, tmp_path):
    """A copy of the seeded village, its config and rates in ``tmp_path``; its 2026Q1 bills
    issued and a notice of the copper violation issued on 2026-03-02."""
    db_gen = web_round.clone(services, round_village[0], "export-cli")
    db = next(db_gen)
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    try:
        issue_the_year(tmp_path, db)
        yield tmp_path, db
    finally:
        next(db_gen, None)


def ok(tmp, db, *args) -> str:
    r = run(tmp, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def issue_the_year(tmp, db) -> None:
    """2026Q1's bills and a notice of violation, as the clerk and the coordinator issue them."""
    out = ok(tmp, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-10")
    ok(tmp, db, "bills", "issue", re.match(r"bill run (\d+):", out).group(1), "--on", "2026-04-10",
       "--out", str(tmp / "bills"))
    ok(tmp, db, "notice", "draft", "--violation", str(web_round.copper_violation(db)), "--on", "2026-03-02",
       "--out", str(tmp / "notices"), "--by", "coord")
    with psycopg.connect(db.url) as conn:
        number = conn.execute("SELECT number FROM notices").fetchone()[0]
    ok(tmp, db, "notice", "issue", number, "--on", "2026-03-02", "--out", str(tmp / "notices"), "--by", "coord")


def one_line_error(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("sewerwatch: error: "), (r.returncode,
                                                                                                 r.stderr)
    return lines[0]


def test_export_by_the_command_holds_the_years_notices_and_bills_as_pdfs(village):
    tmp, db = village
    r = sw(tmp, db, "export", "--year", "2026", "records", timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) tables, ([\d,]+) rows and (\d+) documents of 2026 in \S*records", r.stdout)
    assert m and int(m.group(1)) > 30 and int(m.group(3)) == 3, r.stdout      # a notice, two bills
    folder = tmp / "records"
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, f in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == f["sha256"], name
    assert subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=folder).returncode == 0

    with psycopg.connect(db.url) as conn:
        number, at_issue = conn.execute("SELECT number, pdf_sha256 FROM notices").fetchone()
        bills = conn.execute("SELECT b.id, s.key, b.total_dollars::float8 FROM bills b JOIN sites s ON s.id = "
                             "b.site_id ORDER BY b.id").fetchall()
    notice = manifest["files"][f"documents/notices/{number}.pdf"]
    assert notice["sha256"] == notice["sha256_at_issue"] == at_issue      # the bytes issued, drawn again
    assert (folder / "documents" / "notices" / f"{number}.pdf").read_bytes() == \
        (tmp / "notices" / f"{number}.pdf").read_bytes()                   # as `notice issue` wrote it
    assert len(bills) == 2
    for bill_id, site, total in bills:
        pdf = folder / "documents" / "bills" / f"bill-{bill_id}-2026Q1-{site}.pdf"
        assert manifest["files"][str(pdf.relative_to(folder))]["sha256"] == hashlib.sha256(pdf.read_bytes()).hexdigest()
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        assert f"${total:,.2f}" in text, (site, total, text[:600])
    with open(folder / "bills.csv") as f:
        assert len(f.read().strip().splitlines()) == 1 + len(bills)
    assert "documents/notices/" in (folder / "README.md").read_text()

    again = one_line_error(sw(tmp, db, "export", "--year", "2026", "records"))
    assert "records: not an empty folder" in again
    bad = one_line_error(sw(tmp, db, "export", "--year", "26", "elsewhere"))
    assert "year: expected one such as 2026" in bad and "got 26" in bad
    assert not (tmp / "elsewhere").exists()
    assert sw(tmp, db, "export", "--year", "twenty", "elsewhere").returncode == 2      # argparse: not a number


def test_hold_add_list_release_by_the_command(village):
    tmp, db = village
    r = sw(tmp, db, "hold", "add", "plating", "--reason", "the state's case 2026-17")
    assert r.returncode == 0 and "site plating on hold since" in r.stdout and "2026-17" in r.stdout, r.stderr
    second = one_line_error(sw(tmp, db, "hold", "add", "plating", "--reason", "again"))
    assert "'plating' is on hold already since" in second and "the state's case 2026-17" in second
    unknown = one_line_error(sw(tmp, db, "hold", "add", "nosuchsite", "--reason", "a case"))
    assert "nosuchsite" in unknown
    r = sw(tmp, db, "hold", "list")
    assert r.returncode == 0 and re.search(r"plating\s+since \d{4}-\d\d-\d\d by .*: the state's case 2026-17",
                                           r.stdout), r.stdout
    assert "candy" not in r.stdout
    r = sw(tmp, db, "hold", "release", "plating", "--reason", "the case is closed")
    assert r.returncode == 0 and "hold on site plating released: the case is closed" in r.stdout, r.stderr
    assert "'plating' is not on hold" in one_line_error(sw(tmp, db, "hold", "release", "plating", "--reason", "x"))
    assert sw(tmp, db, "hold", "list").stdout.strip() == "no holds in force"
    r = sw(tmp, db, "hold", "list", "--all")
    assert "released" in r.stdout and "the case is closed" in r.stdout
    with psycopg.connect(db.url) as conn:
        assert [a for (a,) in conn.execute("SELECT action FROM audit_log WHERE action LIKE 'legal-hold%%' "
                                           "ORDER BY id")] == ["legal-hold.add", "legal-hold.release"]
