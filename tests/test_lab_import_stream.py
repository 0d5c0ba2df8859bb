"""Lab import: a NUL byte or bytes that are not UTF-8 in a field spoil that row
only (a dead letter with its line number and its bytes; the good rows stored; no
traceback), the checks against earlier rows hold across the import's chunks, and a large
file imports with memory that follows one chunk (1,000,000 rows under 300 MB: marked
``big``; 100,000 rows in the normal suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lab.store.results import import_lab_file

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
ANALYTES = ("bod5", "tss", "tkn", "tp", "fog", "cn")


def _sites(conn):
    conn.execute("INSERT INTO sites (key, name, pack) VALUES ('mill', 'Paper Mill', 'palmyra-wi'), "
                 "('dairy', 'Dairy', 'palmyra-wi')")
    conn.commit()


def test_nul_and_undecodable_bytes_make_dead_letters_and_the_good_rows_are_stored(db, tmp_path):
    with db.connect() as conn:
        _sites(conn)
    f = tmp_path / "q.csv"
    f.write_bytes(b"sample_id,site,collected,analyte,value,unit,qualifier\n"
                  b"S1,mill,2026-01-05,bod5,420,mg/l,\n"                   # 2 good
                  b"S2,m\xfchle,2026-01-05,bod5,1,mg/l,\n"                 # 3 not UTF-8
                  b"S3,mill,2026-01-05,tss,1\x00,mg/l,\n"                  # 4 NUL
                  b'S4,dairy,2026-01-06,tss,"180",mg/l,\n'                 # 5 good
                  b"S5,\xff\xfe,2026-01-06,tss,\x00,mg/l,\n"               # 6 both
                  b"S4,dairy,2026-01-06,tp,2.5,mg/l,\n")                   # 7 good
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}, "SEWERWATCH_DB_URL": db.url}
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "lab", "import", str(f), "--actor", "tech"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    assert out.returncode == 4, out.stderr   # rows became dead letters
    assert "Traceback" not in out.stderr
    assert "3 stored, 0 corrected, 0 unchanged, 3 bad" in out.stdout
    assert "line 3: not UTF-8 text" in out.stdout and "line 4: a NUL byte" in out.stdout
    with db.connect() as conn:
        stored = conn.execute("SELECT s.sample_key, r.analyte FROM lab_results r JOIN lab_samples s "
                              "ON s.id = r.sample_id ORDER BY r.id").fetchall()
        dead = conn.execute("SELECT topic, payload, reason FROM dead_letters ORDER BY id").fetchall()
    assert stored == [("S1", "bod5"), ("S4", "tss"), ("S4", "tp")]
    assert [d[0] for d in dead] == [f"{f}:3", f"{f}:4", f"{f}:6"]
    assert bytes(dead[0][1]) == b"S2,m\xfchle,2026-01-05,bod5,1,mg/l," and b"\x00" in bytes(dead[1][1])
    assert all("\x00" not in d[2] for d in dead)


def test_the_checks_against_earlier_rows_hold_across_chunks(db, tmp_path):
    """A result given twice, a sample at two sites or two times: bad rows whether or not the
    earlier row was in the same chunk (chunks of 2 rows here)."""
    f = tmp_path / "c.csv"
    f.write_text("sample_id,site,collected,analyte,value,unit,qualifier\n"
                 "S1,mill,2026-01-05,bod5,420,mg/l,\n"        # 2 good
                 "S1,mill,2026-01-05,tss,300,mg/l,\n"         # 3 good
                 "S2,dairy,2026-01-06,bod5,100,mg/l,\n"       # 4 good
                 "S1,mill,2026-01-05,bod5,421,mg/l,\n"        # 5 duplicate of line 2 (another chunk)
                 "S1,dairy,2026-01-05,tp,1,mg/l,\n"           # 6 S1 is at mill (line 2)
                 "S2,dairy,2026-01-07,tss,1,mg/l,\n"          # 7 S2 collected 2026-01-06 (line 4)
                 "S3,mill,2026-01-08,cn,0.1,mg/l,<\n")        # 8 good
    reports = []
    for chunk in (2, 1000):
        with db.connect() as conn:
            if chunk == 2:
                _sites(conn)
            rep = import_lab_file(conn, f, actor="t", now=NOW, chunk_rows=chunk)
            reports.append(([(b.line, b.reason) for b in rep.bad], rep.stored, rep.unchanged, rep.samples_created))
            conn.rollback()
    assert reports[0] == reports[1]
    bad, stored, unchanged, created = reports[0]
    assert [b[0] for b in bad] == [5, 6, 7] and (stored, unchanged, created) == (4, 0, 3)
    assert "duplicate result for sample 'S1' analyte bod5 (first on line 2)" in bad[0][1]
    assert "is at site 'mill' on line 2" in bad[1][1] and "was collected 2026-01-06" in bad[2][1]


def _big_file(path: Path, rows: int) -> None:
    with open(path, "w") as f:
        f.write("sample_id,site,collected,analyte,value,unit,qualifier\n")
        for i in range(rows):
            s = i // 6
            f.write(f"S{s},mill,2025-{1 + (s // 28) % 12:02d}-{1 + s % 28:02d},{ANALYTES[i % 6]},"
                    f"{(i * 7) % 500 + 1}.5,mg/l,\n")


def _import_peak_kib(db, path: Path) -> tuple[int, str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}, "SEWERWATCH_DB_URL": db.url}
    # VmHWM: the peak of this process's own memory (getrusage's ru_maxrss would count the
    # pytest process it was forked from)
    code = ("import sys\nfrom pathlib import Path\nfrom sewerwatch.cli import main\n"
            f"rc = main(['lab', 'import', {str(path)!r}, '--actor', 'big'])\n"
            "hwm = next(ln for ln in Path('/proc/self/status').read_text().splitlines() if ln.startswith('VmHWM'))\n"
            "print('peak', hwm.split()[1], file=sys.stderr)\nsys.exit(rc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=1200, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stderr.rsplit("peak", 1)[1].split()[0]), out.stdout


def _measured(db, tmp_path, capsys, rows: int) -> int:
    """Import a ``rows``-row file in a process of its own; its peak resident memory [KiB]."""
    with db.connect() as conn:
        _sites(conn)
    f = tmp_path / f"{rows}.csv"
    _big_file(f, rows)
    peak, out = _import_peak_kib(db, f)
    with capsys.disabled():
        print(f"\nlab import of {rows:,} rows ({f.stat().st_size / 1e6:.0f} MB): peak resident memory "
              f"{peak / 1024:.0f} MB")
    assert f"{rows} stored" in out
    return peak


def test_a_hundred_thousand_rows_import_in_the_memory_of_a_chunk(db, tmp_path, capsys):
    assert _measured(db, tmp_path, capsys, 100_000) < 150 * 1024     # the interpreter, its libraries, a chunk


@pytest.mark.big
@pytest.mark.timeout(1800)
def test_a_million_row_lab_file_imports_under_300_mb(db, tmp_path, capsys):
    assert _measured(db, tmp_path, capsys, 1_000_000) < 300 * 1024
