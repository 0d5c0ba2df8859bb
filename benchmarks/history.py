"""Benchmark: re-evaluating history (``sewerwatch check --from --to``) against the read ceiling.

Setup: a TimescaleDB cluster of the benchmark's own (scratch state folder, removed
afterwards) holding the demo village (``examples/demo-village.toml``: 9 sensors at 1 Hz)
for ``DAYS`` days (14: 13 judged after the first, the slug lead; ``BENCH_QUICK=1``: 2),
loaded by binary COPY straight into ``readings``, with an acid dump every 30th day and a
slug every 45th.

- sewerwatch: :func:`limits.history.check_history` over the last ``DAYS - 1`` days (the
  first day is the slug lead it reads too): readings judged per second, counting every
  reading it reads.
- peer: ``COPY (SELECT sensor_id, time, value, quality FROM readings WHERE <the same
  rows>) TO STDOUT (FORMAT BINARY)`` into nothing, one connection, no ORDER BY: the rows
  per second the server can hand out at all (the read ceiling), the faster of ``psql``
  into ``/dev/null`` and psycopg reading the COPY and dropping it (both are shown).
- memory: peak RSS of ``sewerwatch check --from --to`` as a process of its own for 1 day
  and for ``DAYS - 1`` days (the bound asked of it: the long range at most 1.5 × the short
  one plus 150 MB).

``ratio`` = judged per second / the read ceiling. Other uses::

    python benchmarks/history.py --load DB_URL DAYS        # fill a database (a year: 365)
    python benchmarks/history.py --db-url URL --from 2025-01-01 --to 2026-01-01   # measure there
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from foundation import config as sw_config  # noqa: E402
from ingest.batch import Readings  # noqa: E402
from ingest.writer import copy_binary  # noqa: E402
from sewerwatch.db import sync  # noqa: E402
from limits.history import check_history  # noqa: E402
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
                log(f"day {d + 1}/{days}: {written:,} readings in {el:.0f} s ({written / max(el, 1e-9):,.0f}/s)",
                    flush=True)
    return {"readings": written, "seconds": time.monotonic() - began}


# --- measuring ----------------------------------------------------------------------------


PEER_COPY = ("COPY (SELECT r.sensor_id, r.time, r.value, r.quality FROM readings r WHERE r.time >= '{a}' "
             "AND r.time < '{b}' AND r.sensor_id = ANY('{{{ids}}}')) TO STDOUT (FORMAT BINARY)")


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat()


def peer(url: str, ids, a: datetime, b: datetime) -> dict:
    """The read ceiling: the same rows by one COPY into nothing (psql, and psycopg beside)."""
    q = PEER_COPY.format(a=_iso(a), b=_iso(b), ids=",".join(map(str, ids)))
    out = {}
    psql = shutil.which("psql")
    if psql:
        t0 = time.monotonic()
        subprocess.run([psql, url, "-q", "-c", q], stdout=subprocess.DEVNULL, check=True)
        out["psql_s"] = time.monotonic() - t0
    with psycopg.connect(url) as conn:
        t0 = time.monotonic()
        with conn.cursor() as cur, cur.copy(q) as cp:
            for _ in cp:
                pass
        out["psycopg_s"] = time.monotonic() - t0
    return out


def peak_rss_mb(url: str, a: str, b: str) -> tuple[float, float]:
    """Peak RSS [MB] and wall time [s] of ``sewerwatch check --from a --to b`` in a process
    of its own (measured by a wrapper process, so only that command counts)."""
    wrapper = ("import resource, subprocess, sys, time; t = time.monotonic(); "
               "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.monotonic() - t)")
    sw = str(Path(sys.executable).with_name("sewerwatch"))
    res = subprocess.run([sys.executable, "-c", wrapper, sw, "check", "--from", a, "--to", b, "--db-url", url,
                          "--json", "--quiet"], capture_output=True, text=True, check=True)
    kb, secs = res.stdout.split()
    return int(kb) / 1024, float(secs)


def measure(url: str, a: datetime, b: datetime, memory: bool = True) -> dict:
    """Judged per second over ``[a, b)`` against the read ceiling of the same rows; memory
    of one day and of the whole range."""
    with psycopg.connect(url) as conn:
        ids = [i for (i,) in conn.execute("SELECT id FROM sensors ORDER BY id")]
        stats: dict = {}
        recs = check_history(_iso(a), _iso(b), conn, progress=False, stats=stats)
    lead = timedelta(hours=24, seconds=3 * 60)   # the slug window and the longest gap limit (3 × 60 s)
    p = peer(url, ids, a - lead, b)
    ceiling_s = min(v for v in p.values())
    out = {"readings": stats["readings"], "violations": len(recs), "seconds": stats["seconds"],
           "judged_per_s": stats["readings"] / stats["seconds"], "read_wait_s": stats["read_wait_s"],
           "ceiling_per_s": stats["readings"] / ceiling_s,
           **{k.replace("_s", "_per_s"): stats["readings"] / v for k, v in p.items()}}
    if memory:
        out["rss_1d_mb"], out["time_1d_s"] = peak_rss_mb(url, _iso(a), _iso(a + timedelta(days=1)))
        out["rss_range_mb"], out["time_range_s"] = peak_rss_mb(url, _iso(a), _iso(b))
    return out


def report(days: int, m: dict, quick: bool) -> None:
    print(f"judged {m['readings']:,} readings ({m['violations']} violations) in {m['seconds']:.1f} s: "
          f"{m['judged_per_s']:,.0f}/s (waiting for reads {m['read_wait_s']:.1f} s); read ceiling "
          f"{m['ceiling_per_s']:,.0f}/s (psql {m.get('psql_per_s', 0):,.0f}/s, psycopg {m['psycopg_per_s']:,.0f}/s)",
          flush=True)
    if "rss_1d_mb" in m:
        bound = 1.5 * m["rss_1d_mb"] + 150
        print(f"peak memory of check: 1 day {m['rss_1d_mb']:.0f} MB ({m['time_1d_s']:.1f} s), {days} days "
              f"{m['rss_range_mb']:.0f} MB ({m['time_range_s']:.1f} s); bound 1.5 x 1 day + 150 MB = {bound:.0f} MB "
              f"-> {'within' if m['rss_range_mb'] <= bound else 'OVER'}", flush=True)
    print(json.dumps({
        "benchmark": "history-check" + ("-quick" if quick else ""), "value": round(m["judged_per_s"]),
        "unit": "readings judged per second (demo village, 9 sensors at 1 Hz)",
        "peer": "COPY (SELECT ...) TO STDOUT of the same rows into nothing (psql, one connection)",
        "peer_value": round(m["ceiling_per_s"]), "ratio": round(m["judged_per_s"] / m["ceiling_per_s"], 2),
        "days": days, "readings": m["readings"],
        **{k: round(m[k]) for k in ("rss_1d_mb", "rss_range_mb") if k in m}}))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="history benchmark (see the module doc)")
    p.add_argument("--load", nargs=2, metavar=("DB_URL", "DAYS"), help="only fill a database with DAYS days")
    p.add_argument("--start", default=DEFAULT_START, help="first day of a --load")
    p.add_argument("--db-url", help="measure in this database (loaded before) instead of a scratch one")
    p.add_argument("--from", dest="from_", help="with --db-url: range start (ISO-8601)")
    p.add_argument("--to", help="with --db-url: range end")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    a = p.parse_args(argv)
    quick = os.environ.get("BENCH_QUICK") == "1"
    if a.load:
        load(a.load[0], int(a.load[1]), a.start)
        return 0
    if a.db_url:
        lo, hi = datetime.fromisoformat(a.from_), datetime.fromisoformat(a.to)
        lo, hi = (x if x.tzinfo else x.replace(tzinfo=timezone.utc) for x in (lo, hi))
        report((hi - lo).days, measure(a.db_url, lo, hi, not a.no_memory), quick)
        return 0
    from sewerwatch.services.scratch import scratch   # the benchmark's own cluster

    days = 2 if quick else 14
    with scratch(mosquitto=False, prefix="sewerwatch-bench-history-") as sc:
        url = sc.pg.url("owner")
        done = load(url, days, log=None)
        print(f"loaded {done['readings']:,} readings ({days} days of the demo village) in {done['seconds']:.0f} s",
              flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE readings")
        t0 = datetime.fromisoformat(DEFAULT_START)
        report(days - 1, measure(url, t0 + timedelta(days=1), t0 + timedelta(days=days), not a.no_memory), quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
