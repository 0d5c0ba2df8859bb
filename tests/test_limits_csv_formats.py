"""The readings CSV of ``sewerwatch check`` as spreadsheets and historians write it.

The same readings, written as Excel and plant historians write them (byte-order mark,
Excel's ``sep=;`` line with decimal commas, tab-separated, quoted, CRLF, blank lines,
padding), give exactly the violations of the plain file; errors still name the file line;
reading in many small blocks and parallel ranges gives the same arrays as one block;
long files show a progress bar.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from limits.csvio import read_readings_csv
from sewerwatch.cli import main

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 3, 1, 22, 0, tzinfo=timezone(timedelta(hours=-6)))
# pH dips below 6.0 (palmyra-wi §13.48(2)(g)) for four readings; temperature in degC
# above 65 °C (150 °F) for three
ROWS = ([(START + timedelta(minutes=i), "acme mill", "ph", 7.2 if not 10 <= i < 14 else 5.25, "pH") for i in range(30)]
        + [(START + timedelta(minutes=i), "acme mill", "temperature", 20.5 if not 5 <= i < 8 else 66.5, "degC")
           for i in range(30)])


def _check(path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--pack", "palmyra-wi", "--readings",
                           str(path), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _plain(tmp_path) -> Path:
    p = tmp_path / "plain.csv"
    p.write_text("time,site,parameter,value,unit\n"
                 + "".join(f"{t.isoformat()},{s},{q},{v},{u}\n" for t, s, q, v, u in ROWS))
    return p


def test_excel_and_historian_files_give_the_plain_files_violations(tmp_path):
    want = _check(_plain(tmp_path))
    assert [(v["rule"], v["readings"]) for v in want] == [("ph-min", 4), ("temperature-max", 3)]
    # Excel in a decimal-comma locale: BOM, sep=;, quoted everything, CRLF, a blank line
    excel = tmp_path / "excel.csv"
    lines = ['sep=;', '"time";"site";"parameter";"value";"unit"']
    for i, (t, s, q, v, u) in enumerate(ROWS):
        lines.append(f'"{t:%Y-%m-%d %H:%M:%S%z}";"{s}";"{q}";"{str(v).replace(".", ",")}";"{u}"')
        if i == 20:
            lines.append("")
    excel.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    # a historian export: tab-separated, padded fields, Z times, a quality column
    hist = tmp_path / "historian.tsv"
    hist.write_text("time\tsite\tparameter\tvalue\tunit\tquality\n" + "".join(
        f"{t.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%S}Z\t {s} \t{q}\t {v} \t{u}\t0\n" for t, s, q, v, u in ROWS))
    for p in (excel, hist):
        got = _check(p)
        assert got == want, p.name


def test_missing_values_are_skipped_not_errors(tmp_path):
    p = tmp_path / "gaps.csv"
    p.write_text("time,site,parameter,value,unit\n2026-03-01T00:00:00Z,acme,ph,,pH\n"
                 "2026-03-01T00:01:00Z,acme,ph,nan,pH\n2026-03-01T00:02:00Z,acme,ph,4.0,pH\n")
    tab = read_readings_csv(p)
    assert np.isnan(tab.value[:2]).all() and tab.value[2] == 4.0


@pytest.mark.parametrize("body,message", [
    # CRLF and blank lines before the bad row: the line is still the file's line
    ("2026-03-01T00:00:00Z,acme,ph,7,pH\r\n\r\n\r\n2026-03-01T00:01:00Z,acme,ph,seven,pH\r\n", "line 5: bad value 'seven'"),
    ("2026-03-01T00:00:00Z,acme,ph,7,pH\n\n2026-03-01T00:01:00,acme,ph,7,pH\n", "line 4: bad time '2026-03-01T00:01:00': no UTC offset"),
    ("2026-03-01T00:00:00Z,acme,ph,7,pH\n\n2026-03-01T00:01:00Z,acme,ph\n", "line 4: expected 5 fields"),
    ('"2026-03-01T00:00:00Z","acme","ph","7","pH"\n"2026-03-01T00:01:00Z","acme","ph","7","kelvin"\n',
     "line 3: unknown unit 'kelvin' for ph"),
])
def test_errors_name_the_file_line(tmp_path, capsys, body, message):
    p = tmp_path / "bad.csv"
    p.write_bytes(("time,site,parameter,value,unit\n" + body).encode())
    assert main(["check", "--pack", "palmyra-wi", "--readings", str(p), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err and str(p) in err


def test_small_blocks_and_parallel_ranges_read_the_same_arrays(tmp_path):
    rng = np.random.default_rng(3)
    n = 20_000
    t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
    sites = rng.integers(0, 7, n)
    p = tmp_path / "many.csv"
    p.write_text("time,site,parameter,value,unit\n" + "".join(
        f"{(t0 + timedelta(seconds=int(i))).isoformat()},s{s},{'flow' if s % 2 else 'ph'},{v:.4f},"
        f"{'mgd' if s % 2 else 'pH'}\n" for i, s, v in zip(range(n), sites.tolist(), rng.uniform(0, 14, n).tolist())))
    one = read_readings_csv(p)
    many = read_readings_csv(p, block_bytes=16 << 10)    # ~60 blocks over 4 parallel ranges
    for a, b in ((one.time, many.time), (one.value, many.value), (one.sensor, many.sensor)):
        assert np.array_equal(a, b)
    assert one.meta == many.meta and len(one.time) == n
    assert many.line[[0, -1]].tolist() == [2, n + 1]


def test_a_long_file_shows_a_progress_bar(tmp_path, capsys):
    p = _plain(tmp_path)
    read_readings_csv(p, progress=True)
    err = capsys.readouterr().err
    assert "reading plain.csv" in err and "3.15k" in err   # its size in bytes
    read_readings_csv(p)          # a small file: no bar
    assert capsys.readouterr().err == ""
