"""A lab file previewed before anything is stored, then imported once:
``import_lab_file(dry_run=True)`` / ``lab import --dry-run``, ``--check``, the office's staged
uploads (lab/store/uploads.py), against the real database.

The demo's lab file with one spoiled row: the preview names that row's line and reason,
counts the rest and the copper violation they would bring, and stores nothing (no result, no
sample, no dead letter, no audit row); the import then stores exactly what the preview said,
the spoiled row as a dead letter, and the copper violation in ``violations``; a second commit
imports nothing; an import that fails half-way stores nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg
import pytest

from foundation.actor import Actor
from lab.store import results as lab_results
from lab.store import uploads
from lab.store.results import import_lab_file
from web_support import DEMO_LAB, ROOT, demo_users, spoiled_demo_lab

pytestmark = pytest.mark.services
CORA = Actor.account("coord", "Cora Coordinator")
#: The demo file's rows: 19 results; line 6 (sausage S-0101 fog) is the one spoiled.
ROWS = 19


def _counts(url: str) -> dict:
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("lab_results", "lab_samples", "dead_letters", "violations", "audit_log")}


def test_the_preview_names_the_spoiled_row_and_stores_nothing_then_the_import_stores_what_it_said(db, tmp_path):
    demo_users(db.url)
    before = _counts(db.url)
    data = spoiled_demo_lab(6, "4z0")
    with psycopg.connect(db.url) as conn:
        pre = import_lab_file(conn, "demo.csv", data=data, actor=CORA, dry_run=True, check=True, keep_rows=5)
    assert _counts(db.url) == before                          # nothing at all stored
    assert (pre.stored, pre.corrected, pre.unchanged, len(pre.bad)) == (ROWS - 1, 0, 0, 1)
    assert [(b.line, b.reason) for b in pre.bad] == [(6, "value '4z0' is not a number")]
    assert [r["line"] for r in pre.rows] == [2, 3, 4, 5, 7] and pre.rows[0]["becomes"] == "new"
    cu = [v for v in pre.checked["violations"] if v["parameter"] == "cu"]
    # Permit PAL-IU-2026-02, condition 3(a): copper 1.0 mg/l daily maximum; S-0202 has 1.6 (2026-02-04)
    daily = [v for v in cu if v["evidence"]["statistic"] == "daily-maximum"]
    assert [(v["rule"], v["peak"], v["limit"], v["start"][:10]) for v in daily] == [("cu-daily-max", 1.6, 1.0, "2026-02-04")]
    assert "Permit PAL-IU-2026-02, condition 3(a)" in cu[0]["citation"]
    assert (pre.checked["start"], pre.checked["end"]) == ("2026-01-01", "2026-03-01")
    # the same preview on the command line: lab import --dry-run --check
    f = tmp_path / "spoiled.csv"
    f.write_bytes(data)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[services]\ndb_url = "{db.url}"\nstate_dir = "{tmp_path}"\n')
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "lab", "import", str(f), "--dry-run",
                        "--check"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 4, r.stderr                       # as the import would: some rows cannot be used
    assert f"1 of {ROWS} rows cannot be used (a preview: nothing stored): line 6" in r.stderr, r.stderr
    assert f"preview, nothing stored: {ROWS - 1} would be stored" in r.stdout
    assert "line 6: value '4z0' is not a number" in r.stdout and "cu-daily-max" in r.stdout, r.stdout
    assert _counts(db.url) == before

    with psycopg.connect(db.url) as conn:
        rep = import_lab_file(conn, "demo.csv", data=data, actor=CORA, check=True)
    after = _counts(db.url)
    assert (rep.stored, len(rep.bad)) == (pre.stored, 1)      # what the preview said
    assert after["lab_results"] - before["lab_results"] == ROWS - 1
    assert after["dead_letters"] - before["dead_letters"] == 1
    assert after["violations"] - before["violations"] == rep.checked["stored"] > 0
    with psycopg.connect(db.url) as conn:
        topic, reason, payload = conn.execute("SELECT topic, reason, payload FROM dead_letters").fetchone()
        assert (topic, reason) == ("demo.csv:6", "value '4z0' is not a number") and b"4z0" in bytes(payload)
        row = conn.execute("SELECT peak, limit_value, citation FROM violations WHERE rule = 'cu-daily-max'").fetchone()
        assert row[:2] == (1.6, 1.0) and "condition 3(a)" in row[2]
        actor, detail = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'lab.import'").fetchone()
        assert actor == "coord" and detail["via"] == "web" and detail["stored"] == ROWS - 1


def test_an_upload_is_imported_once(db):
    demo_users(db.url)
    with psycopg.connect(db.url, autocommit=True) as conn:
        staged = uploads.stage(conn, "lab-results.csv", spoiled_demo_lab(), actor=CORA)
        assert staged["preview"]["bad_rows"] == [{"line": 6, "reason": "value '4z0' is not a number"}]
        assert conn.execute("SELECT count(*) FROM lab_results").fetchone()[0] == 0
        first = uploads.commit(conn, staged["id"], actor=CORA)
        second = uploads.commit(conn, staged["id"], actor=Actor.account("super", "Sam Super"))
        assert first["already"] is False and first["report"]["stored"] == ROWS - 1
        assert second["already"] is True and second["by"] == "coord" and second["report"] == first["report"]
        assert conn.execute("SELECT count(*) FROM lab_results").fetchone()[0] == ROWS - 1
        assert conn.execute("SELECT count(*) FROM audit_log WHERE action = 'lab.import'").fetchone()[0] == 1
        assert conn.execute("SELECT topic FROM dead_letters").fetchone()[0] == f"upload {staged['id']} (lab-results.csv):6"
        # rows typed into a form take the same path, their lines the form's rows + 1
        typed = uploads.rows_csv([{}, {"sample_id": "H-1", "site": "plating", "collected": "2026-03-02",
                                       "analyte": "cu", "value": "0.4", "unit": "mg/l"},
                                  {"sample_id": "H-1", "site": "plating", "collected": "2026-03-02",
                                   "analyte": "ni", "value": "lots", "unit": "mg/l"}])
        pre = uploads.stage(conn, "typed in the office", typed, actor=CORA)["preview"]
        assert (pre["stored"], pre["bad_rows"]) == (1, [{"line": 4, "reason": "value 'lots' is not a number"}])
        # an industrial user's own upload (the portal): rows of another site cannot be used, nor committed
        plating = conn.execute("SELECT id FROM sites WHERE key = 'plating'").fetchone()[0]
        own = uploads.stage(conn, "mine.csv", DEMO_LAB.read_bytes(), actor=CORA, site_id=plating)
        assert own["preview"]["bad"] == 10 and own["preview"]["stored"] == 0      # plating's 9 are stored already
        assert {b["reason"] for b in own["preview"]["bad_rows"]} == {"unknown site 'sausage' (known: plating)"}
        assert uploads.commit(conn, own["id"], actor=CORA)["report"]["bad"] == 10


def test_an_import_that_fails_half_way_stores_nothing(db, monkeypatch):
    demo_users(db.url)
    data = DEMO_LAB.read_bytes()
    calls = []
    real = lab_results._Import.chunk

    def chunk_then_fail(self, items):
        calls.append(len(items))
        if len(calls) == 2:             # the first chunk is stored (in the transaction), then the server fails
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return real(self, items)

    monkeypatch.setattr(lab_results._Import, "chunk", chunk_then_fail)
    before = _counts(db.url)
    with psycopg.connect(db.url, autocommit=True) as conn:
        with pytest.raises(psycopg.OperationalError):
            import_lab_file(conn, "demo.csv", data=data, actor=CORA, chunk_rows=5, check=True)
    assert calls == [5, 5] and _counts(db.url) == before     # half-way: nothing of it stored
    monkeypatch.setattr(lab_results._Import, "chunk", real)
    with psycopg.connect(db.url, autocommit=True) as conn:
        rep = import_lab_file(conn, "demo.csv", data=data, actor=CORA, chunk_rows=5)
    assert rep.stored == ROWS and _counts(db.url)["lab_results"] == ROWS
    json.dumps(rep.as_json())                                # the report is JSON as it is
