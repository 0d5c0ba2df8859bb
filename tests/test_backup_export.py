"""The program's export of one year: every table's rows of the year as CSV and Parquet, a
manifest of SHA-256s an auditor checks with sha256sum, a README of the columns."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
from datetime import datetime, timezone

import psycopg
import pyarrow.parquet as pq
import pytest

from foundation import config as sw_config
from foundation.actor import Actor
from foundation.errors import InputError
from enforcement import export
from tests.support import add_site_and_sensors
from identity import accounts

pytestmark = pytest.mark.services

UTC = timezone.utc
#: the village (palmyra-wi) keeps Central time: 2026 is 2026-01-01 06:00 UTC .. 2027-01-01 06:00 UTC
IN_2026 = [datetime(2026, 1, 1, 6, 0, tzinfo=UTC), datetime(2026, 7, 4, 12, 0, tzinfo=UTC),
           datetime(2027, 1, 1, 5, 59, 59, tzinfo=UTC)]
OUTSIDE = [datetime(2026, 1, 1, 5, 59, 59, tzinfo=UTC), datetime(2027, 1, 1, 6, 0, tzinfo=UTC)]


def test_export_of_a_year_is_the_years_rows_with_their_hashes(db, tmp_path):
    ids = add_site_and_sensors(db.url, "acme", {"ph": ("ph", "pH")})
    cfg = sw_config.from_dict({})
    with psycopg.connect(db.url) as conn:
        for i, t in enumerate(IN_2026 + OUTSIDE):
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, %s)", (t, ids["ph"], 7.0 + i))
        conn.execute("INSERT INTO audit_log (at, action, object) VALUES (%s, 'drill', 'in'), (%s, 'drill', 'out')",
                     (IN_2026[1], OUTSIDE[1]))
        clerk = accounts.add(conn, "clerk1", "A Clerk", "clerk", "a long enough passphrase 1", actor=Actor.os_user())
        signed, pdf = b'{"report": "self-monitoring", "period": "2026-06"}', b"%PDF-1.7 the copy of record"
        sub = conn.execute(
            "INSERT INTO portal_submissions (number, site_id, kind, title, document, sha256, certification, "
            "signer_id, signer_username, signer_name, signer_email, signed_at, totp_step, pdf, pdf_sha256) "
            "SELECT 'SMR-2026-001', id, 'self-monitoring', 'June', %s, %s, 'I certify', %s, 'clerk1', 'A Clerk', "
            "'c@example.org', %s, 1, %s, %s FROM sites WHERE key = 'acme' RETURNING id",
            (signed, hashlib.sha256(signed).hexdigest(), clerk.id, IN_2026[1], pdf,
             hashlib.sha256(pdf).hexdigest())).fetchone()[0]
        conn.commit()
        out = export.export_year(conn, cfg, 2026, tmp_path / "2026")
    folder = tmp_path / "2026"
    assert out["tables"] > 30

    with open(folder / "readings.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(float(r["value"]) for r in rows) == [7.0, 8.0, 9.0]
    table = pq.read_table(folder / "readings.parquet")
    assert table.num_rows == 3 and str(table.schema.field("time").type) == "timestamp[us, tz=UTC]"
    assert sorted(table.column("time").to_pylist()) == IN_2026
    audit = pq.read_table(folder / "audit_log.parquet").to_pylist()
    assert [a["object"] for a in audit if a["action"] == "drill"] == ["in"]

    web = pq.read_table(folder / "web_accounts.parquet")       # whole, without its secrets
    assert web.column("username").to_pylist() == ["clerk1"]
    assert "password_hash" not in web.schema.names
    assert "password_hash" not in (folder / "web_accounts.csv").read_text().splitlines()[0]
    assert "run_lease.csv" not in {p.name for p in folder.iterdir()}

    manifest = json.loads((folder / "manifest.json").read_text())
    for name, f in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == f["sha256"]
    assert manifest["files"]["readings.csv"]["rows"] == 3
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)
    assert check.returncode == 0 and "readings.parquet: OK" in check.stdout
    assert (folder / "documents" / f"submission-{sub}" / "SMR-2026-001.signed").read_bytes() == signed
    assert manifest["files"][f"documents/submission-{sub}/SMR-2026-001.pdf"]["sha256"] == \
        hashlib.sha256(pdf).hexdigest()
    readme = (folder / "README.md").read_text()
    assert "## readings" in readme and "| value_mg_l | double precision | converted to mg/l" in readme

    (folder / "readings.csv").write_text("tampered\n")
    assert subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=folder,
                          capture_output=True).returncode != 0
    with psycopg.connect(db.url) as conn:
        with pytest.raises(InputError, match="not an empty folder"):
            export.export_year(conn, cfg, 2026, folder)
        with pytest.raises(InputError, match="year: expected one such as 2026"):
            export.export_year(conn, cfg, 26, tmp_path / "x")
