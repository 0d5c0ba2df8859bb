"""Benchmark: the readings CSV reader of ``sewerwatch check`` against pandas on the same file.

A long-format readings CSV (``time,site,parameter,value,unit``; ISO-8601 times with a UTC
offset, 50 sites, pH in pH and flow in gpm, one row each a minute per sensor) is written
once; then, in the same run and interleaved, ``limits.csvio.read_readings_csv`` (pyarrow's streaming CSV
reader, Arrow compute casts, units converted to canonical, sensors numbered) and the
peer, ``pandas.read_csv`` followed by ``pandas.to_datetime(..., utc=True,
format="ISO8601")`` (the times only: no units, no sensor numbering), read it. The best of
five runs each; the two results' times are compared element by element.

The peak memory of a whole ``sewerwatch check`` on such a file is measured outside this
script (``/usr/bin/time -v``), as the guide reports (docs/developers/testing.md).

Prints, as its last line, ``{"benchmark": ..., "value": ..., "unit": ..., "peer": ...,
"peer_value": ..., "ratio": ...}`` with ratio = our rows/s over pandas' rows/s.
``BENCH_QUICK=1`` reads 500 k rows (default 5 M); ``CSV_ROWS=N`` sets the size;
``CSV_KEEP=PATH`` writes the file there and keeps it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from limits.csvio import read_readings_csv  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROWS = int(os.environ.get("CSV_ROWS") or (500_000 if QUICK else 5_000_000))


def write_file(path: str, n_rows: int, seed: int = 1) -> None:
    """The readings file, written in pieces of 1 M rows (numpy string ops, no row loop)."""
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2026-03-01T00:00:00")
    with open(path, "w", encoding="utf-8") as f:
        f.write("time,site,parameter,value,unit\n")
        for a in range(0, n_rows, 1_000_000):
            idx = np.arange(a, min(n_rows, a + 1_000_000))
            times = np.datetime_as_string(t0 + (idx // 100) * np.timedelta64(60, "s"), unit="s")
            ph = (idx // 50) % 2 == 0
            vals = np.where(ph, rng.normal(7.5, 1.0, len(idx)), rng.gamma(2, 50, len(idx)))
            cols = [np.char.add(times, "-06:00"), np.char.add("site-", (idx % 50).astype(str)),
                    np.where(ph, "ph", "flow"), np.char.mod("%.3f", vals), np.where(ph, "pH", "gpm")]
            row = cols[0]
            for c in cols[1:]:
                row = np.char.add(np.char.add(row, ","), c)
            f.write("\n".join(row.tolist()))
            f.write("\n")


def timed(fn, *args, repeat=2):
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, out


def with_pandas(path: str):
    import pandas as pd

    df = pd.read_csv(path)
    df["time"] = pd.to_datetime(df["time"], utc=True, format="ISO8601")
    return df


def main() -> None:
    keep = os.environ.get("CSV_KEEP")
    path = keep or tempfile.mkstemp(suffix=".csv")[1]
    try:
        if not (keep and Path(keep).is_file()):
            write_file(path, ROWS)
        size_mb = os.path.getsize(path) / 1e6
        # interleaved, best of five each: a machine shared with other work slows both alike
        # (each result is dropped before the other reader runs: neither pays for the
        # other's memory)
        ours = theirs = float("inf")
        for k in range(5):
            t, tab = timed(read_readings_csv, path, repeat=1)
            ours, n = min(ours, t), len(tab.time)
            if k == 0:
                ours_t = tab.time
            del tab
            t, df = timed(with_pandas, path, repeat=1)
            theirs = min(theirs, t)
            if k == 0:
                assert len(df) == n == ROWS, (len(df), n, ROWS)
                utc = df["time"].dt.tz_localize(None).to_numpy().astype("datetime64[us]").astype(np.int64)
                assert (ours_t == utc).all(), "the readers disagree on the times"
                del ours_t, utc
            del df
    finally:
        if not keep:
            os.unlink(path)
    print(f"readings CSV, {ROWS:,} rows, {size_mb:.0f} MB: sewerwatch {n / ours / 1e6:.2f} M rows/s "
          f"({ours:.2f} s), pandas read_csv + to_datetime {n / theirs / 1e6:.2f} M rows/s ({theirs:.2f} s)",
          file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "csv_read", "value": round(n / ours), "unit": "rows/s",
                      "peer": "pandas.read_csv + to_datetime", "peer_value": round(n / theirs),
                      "ratio": round(theirs / ours, 2)}))


if __name__ == "__main__":
    main()
