"""Fill ``readings`` with days of the demo village at 1 Hz (9 sensors), for the history
benchmark and the memory figures of issue 15.

    python benchmarks/village_load.py DB_URL DAYS [--start 2025-01-01]

Writes the demo village's sites and sensors (``examples/demo-village.toml``) and then each
day's readings by binary COPY straight into ``readings`` (as the issue measured it), a
day a transaction; days already loaded are skipped, so an interrupted load continues.
Events: an acid dump at Lakeside Plating every 30th day (from day 5) and a slug at Palmyra
Sausage every 45th day (from day 3), so the history has violations to find.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from foundation import config as sw_config  # noqa: E402
from ingest.batch import Readings  # noqa: E402
from ingest.writer import copy_binary  # noqa: E402
from sewerwatch.db import sync  # noqa: E402
from simulators.village import PARAMETERS, DayEvent, village_day  # noqa: E402

CONFIG = ROOT / "examples" / "demo-village.toml"
DEFAULT_START = "2025-01-01T00:00:00+00:00"


def events(days: int) -> list[DayEvent]:
    """The history's events: acid dumps at device 1, slugs at device 0."""
    out = [DayEvent(d, "acid-dump", (1,)) for d in range(5, days, 30)]
    out += [DayEvent(d, "slug", (0,)) for d in range(3, days, 45)]
    return out


def sensor_ids(conn) -> np.ndarray:
    """(3 devices, 3 parameters) -> sensors.id, the config's sites in order."""
    cfg = sw_config.load(CONFIG)
    sync.sync(conn, cfg)
    ids = dict(((k, n), i) for i, k, n in conn.execute(
        "SELECT se.id, si.key, se.name FROM sensors se JOIN sites si ON si.id = se.site_id"))
    return np.array([[ids[(s.id, p)] for p in PARAMETERS] for s in cfg.sites], dtype=np.int32)


def load(url: str, days: int, start: str = DEFAULT_START, log=print) -> dict:
    """Load ``days`` days; returns ``{"readings": n, "seconds": s}`` for the days written now."""
    t0 = datetime.fromisoformat(start).astimezone(timezone.utc).timestamp()
    evs = events(days)
    written, began = 0, time.monotonic()
    with psycopg.connect(url) as conn:
        ids = sensor_ids(conn)
        conn.commit()
        have = {int(r[0]) for r in conn.execute(
            "SELECT DISTINCT floor((extract(epoch FROM time) - %s) / 86400) FROM readings "
            "WHERE sensor_id = %s AND extract(epoch FROM time)::bigint %% 86400 = 0",
            (t0, int(ids[0, 0])))}
        for d in range(days):
            if d in have:
                continue
            s = village_day(t0, d, ids.shape[0], evs)
            t_us = np.rint(s.times * 1e6).astype(np.int64)
            parts = []
            for k, p in enumerate(PARAMETERS):
                v = s.values[p]                                       # (devices, times)
                parts.append(Readings(np.tile(t_us, v.shape[0]), np.repeat(ids[:, k], v.shape[1]),
                                      v.ravel(), np.zeros(v.size, dtype=np.int16)))
            batch = Readings.concat(parts)
            with conn.cursor() as cur, cur.copy(
                    "COPY readings (time, sensor_id, value, quality) FROM STDIN (FORMAT BINARY)") as cp:
                cp.write(copy_binary(batch))
            conn.commit()
            written += len(batch)
            if log and (d % 10 == 0 or d == days - 1):
                el = time.monotonic() - began
                log(f"day {d + 1}/{days}: {written:,} readings in {el:.0f} s ({written / max(el, 1e-9):,.0f}/s)")
    return {"readings": written, "seconds": time.monotonic() - began}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db_url")
    p.add_argument("days", type=int)
    p.add_argument("--start", default=DEFAULT_START)
    a = p.parse_args(argv)
    load(a.db_url, a.days, a.start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
