"""Benchmark: the office at a real program's size.

Setup: a TimescaleDB cluster of the benchmark's own (scratch state folder, removed
afterwards) with 200 industrial users, 600 sensors (pH, temperature, flow each) and a day of
readings at 1 Hz up to now (51.8 M readings; ``BENCH_QUICK=1``: two hours, 4.3 M), loaded by
binary COPY; 10 users in an open violation episode with its alert, 10 with a no-data alert.

- sewerwatch: the Today page (``GET /``, signed in) served by ``sewerwatch web`` (a process
  of its own, as on an office machine), its server time as its access log says (from the
  request's arrival at the application to its last byte: routing, the session, the guard's
  account check, every query, the template), p95 of ``N`` requests after a warm-up, fetched
  by httpx from this process; and an industrial user's
  page with its 24-hour charts (``GET /sites/<key>``), p95. Today's requests are
  :data:`web.pages.today.KEEP_S` apart, so that each makes its own read (a read is served to
  the viewers who ask within that time after it began: the concurrency form's gain).
- peer: the bare SQL queries each page needs (the session's account; :data:`web.queries.today.SQL`;
  the profile and the chart's bucketing query of :mod:`web.queries.site`), run by psycopg on one connection
  and fetched, p95 of as many runs, each right after one of the page's (so that the shared
  machine's load weighs on both alike).

``ratio`` = the peer's p95 / the page's p95 (1.0: the page costs nothing beyond its queries;
at least 0.5 is the aim).

The concurrency form (:func:`viewers`, printed last): 1, 10 and 50 signed-in viewers
(``BENCH_VIEWERS``) each refreshing Today every 2 s for ``BENCH_WATCH_S`` seconds; per count
the refresh's p95 as the viewers saw it and the database's transactions per second. Its line's
``value`` is the p95 with the most viewers, ``peer_value`` the p95 with one, and ``ratio``
their quotient (the aim: at most 2); ``db_tps_per_viewer`` falls as viewers share the page's
reads (``web.office.Office.shared``).

What the page does that the peer does not: it reads its users, their episodes, alerts and
devices on a second pooled connection (``web.office.Office.read_meanwhile``) while it streams
its sensors' last values (the costliest query) in chunks and makes each user's row or card as
its sensors arrive (``web.queries.today.read``); the peer runs every query one after the other
on one connection and fetches each whole. So much of the page's Python runs while the database
still reads; what is left beyond the query is the session, routing, the order of the users
and the template.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from foundation.actor import Actor  # noqa: E402
from ingest.batch import Readings  # noqa: E402
from ingest.writer import copy_binary  # noqa: E402
from web.pages.today import KEEP_S  # noqa: E402

SITES, PER_SITE = 200, 3
PARAMS = (("ph", "pH", 7.2, 0.3), ("temperature", "degF", 68.0, 4.0), ("flow", "gpm", 120.0, 40.0))
N = 60
#: the concurrency form's counts of viewers, and how long each count watches [s]
VIEWERS = tuple(int(x) for x in os.environ.get("BENCH_VIEWERS", "1,10,50").split(","))
WATCH_S = float(os.environ.get("BENCH_WATCH_S", "30"))
PASSWORD = "benchmark password"


def p95(xs: list[float]) -> float:
    return float(np.percentile(np.asarray(xs), 95))


def load(url: str, hours: float, log=print) -> int:
    """The program: sites, sensors, readings at 1 Hz for ``hours`` up to now, episodes, alerts."""
    now = time.time()
    with psycopg.connect(url) as conn:
        ids = []
        for i in range(SITES):
            sid = conn.execute("INSERT INTO sites (key, name, pack, sic, permit) VALUES (%s, %s, 'palmyra-wi', %s, %s) "
                               "RETURNING id", (f"iu{i:03d}", f"Industrial User {i:03d}", str(2000 + i % 900),
                                                f"PAL-IU-2026-{i:03d}")).fetchone()[0]
            for p, u, _, _ in PARAMS:
                ids.append(conn.execute(
                    "INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) VALUES "
                    "(%s, %s, %s, %s, 'mqtt', %s, 1) RETURNING id", (sid, p, p, u, f"mqtt:sewerwatch/iu{i:03d}/{p}")
                ).fetchone()[0])
        conn.commit()
        ids = np.asarray(ids, dtype=np.int32)
        base = np.tile(np.array([b for _, _, b, _ in PARAMS]), SITES)
        amp = np.tile(np.array([a for _, _, _, a in PARAMS]), SITES)
        start = int(now - hours * 3600)
        written, began = 0, time.monotonic()
        step = 600                                   # ten minutes of every sensor a COPY
        for t in range(start, int(now), step):
            secs = np.arange(t, min(t + step, int(now)), dtype=np.int64)
            k = len(secs)
            t_us = np.tile(secs * 1_000_000, len(ids))
            sid = np.repeat(ids, k)
            v = (np.repeat(base, k) + np.repeat(amp, k) * np.sin(np.tile(secs, len(ids)) / 900.0
                                                              + np.repeat(np.arange(len(ids)), k)))
            with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN "
                                                "(FORMAT BINARY)") as cp:
                cp.write(copy_binary(Readings(t_us, sid, v, np.zeros(len(v), dtype=np.int16))))
            conn.commit()
            written += len(v)
            if log and (t - start) % 7200 < step:
                log(f"  {written:,} readings ({written / max(time.monotonic() - began, 1e-9):,.0f}/s)", flush=True)
        for i in range(10):                          # open episodes with their alerts
            ph = int(ids[i * 10 * PER_SITE])
            site = conn.execute("SELECT site_id FROM sensors WHERE id = %s", (ph,)).fetchone()[0]
            conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, peak,"
                         " limit_value, unit, source) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', 'Village of Palmyra "
                         "Code §13.48(2)(g)', now() - interval '10 minutes', 3.4, 6.0, 'pH', 'stream')", (site, ph))
            rec = {"site": f"iu{i * 10:03d}", "sensor": "ph", "parameter": "ph", "rule": "ph-min", "peak": 3.4,
                   "limit": 6.0, "unit": "pH", "comparison": "lower than", "start": "2026-06-01T15:30:00Z",
                   "citation": "Village of Palmyra Code §13.48(2)(g)", "words": "pH lower than 6.0"}
            conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details) VALUES "
                         "('violation', %s, %s, 'ph-min', 'notified', 'pH 3.4', %s)", (site, ph, json.dumps(rec)))
            flow = int(ids[(i * 10 + 5) * PER_SITE + 2])
            conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details) SELECT "
                         "'sensor-health', site_id, id, 'no-data', 'notified', 'no data', %s FROM sensors WHERE id = %s",
                         (json.dumps({"rule": "no-data", "site": "x", "sensor": "flow"}), flow))
        conn.commit()
    return written


def bare_account(conn) -> None:
    """The query every signed-in request makes: the session's account (identity.accounts.by_id)."""
    from identity.accounts import COLS
    conn.execute(f"SELECT {', '.join(COLS)} FROM web_accounts WHERE id = %s", (1,)).fetchone()


def bare_today(conn) -> None:
    from web.queries.today import SQL
    bare_account(conn)
    for q in SQL.values():
        conn.execute(q).fetchall()


def bare_site(conn, key: str) -> None:
    from web.chart import BUCKETS
    from web.queries.site import BUCKETS_SQL
    bare_account(conn)
    row = conn.execute("SELECT id FROM sites WHERE key = %s", (key,)).fetchone()
    sensors = conn.execute("SELECT s.id FROM sensors s LEFT JOIN LATERAL (SELECT time, value, quality FROM readings r "
                           "WHERE r.sensor_id = s.id ORDER BY time DESC LIMIT 1) l ON true WHERE s.site_id = %s",
                           (row[0],)).fetchall()
    t1 = datetime.now(timezone.utc)
    t0 = t1 - timedelta(hours=24)
    conn.execute(BUCKETS_SQL, {"w": timedelta(seconds=86400 / BUCKETS), "origin": t0, "ids": [s[0] for s in sensors],
                               "t0": t0, "t1": t1}).fetchall()
    conn.execute("SELECT id FROM violations WHERE site_id = %s ORDER BY start_time DESC LIMIT 200", (row[0],)).fetchall()


@contextlib.contextmanager
def office_process(url: str, state: Path):
    """``sewerwatch web`` as a process of its own (as on an office machine) over ``url``, with a
    viewer account ``bench``; yields its address and its log's path."""
    import subprocess

    from identity import accounts
    from sewerwatch.services.scratch import free_port

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT count(*) FROM web_accounts WHERE username = 'bench'").fetchone()[0] == 0:
            accounts.add(conn, "bench", "Bench Mark", "viewer", PASSWORD, actor=Actor("bench", "cli"))
    port = free_port()
    cfg = state / "bench.toml"
    cfg.write_text(f'[utility]\nname = "Benchmark village"\ntimezone = "America/Chicago"\n[services]\n'
                   f'db_url = "{url}"\nstate_dir = "{state}"\n[web]\nport = {port}\nlogin_per_min = 1000\n')
    log = state / "web.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "web"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        deadline = time.monotonic() + 60
        while "the office on http" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sewerwatch web did not start: " + log.read_text()[-2000:])
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", log
    finally:
        proc.terminate()
        proc.wait(30)


def _sign_in(c) -> None:
    import re
    page = c.get("/login")
    token = re.search(r'name="_csrf_token" value="([^"]+)"', page.text).group(1)
    r = c.post("/login", data={"username": "bench", "password": PASSWORD, "_csrf_token": token, "next": "/"},
               follow_redirects=True)
    assert r.status_code == 200 and "Industrial User 199" in r.text, r.text[:500]


def measure(url: str, state: Path) -> dict:
    """The pages' server times from ``sewerwatch web`` as a process of its own (its access log's
    figure for each request), the bare SQL's in this process, one after the other."""
    import httpx

    out = {}
    with office_process(url, state) as (base, log), httpx.Client(base_url=base, timeout=30) as c, \
            psycopg.connect(url, autocommit=True) as conn:
        _sign_in(c)
        for name, path, bare in (("today", "/", bare_today), ("site", "/sites/iu000",
                                                              lambda conn: bare_site(conn, "iu000"))):
            for _ in range(6):                         # warm-up (psycopg prepares from the 5th run)
                c.get(path)
                bare(conn)
            before = len(_served(log, path))
            sql = []
            for _ in range(N):                         # one after the other: the same load on both
                began = time.monotonic()
                r = c.get(path)
                assert r.status_code == 200
                a = time.perf_counter()
                bare(conn)
                sql.append(time.perf_counter() - a)
                if path == "/":                        # past the kept read: every request reads afresh
                    time.sleep(max(0.0, KEEP_S + 0.05 - (time.monotonic() - began)))
            time.sleep(0.5)                            # the log written
            out[name] = _served(log, path)[before:]
            assert len(out[name]) == N, len(out[name])
            out[name + "_sql"] = sql
            out[name + "_bytes"] = len(r.content)
    return out


def viewers(url: str, state: Path, counts=VIEWERS, seconds: float = WATCH_S) -> dict:
    """The concurrency form: for each count of viewers, that many signed-in browsers (httpx
    clients with a session each) each fetching Today's live part every 2 s (the page's own
    refresh, :data:`web.pages.today.REFRESH_S`) at a random phase for ``seconds``. Per count:
    the responses' p95 as the viewers saw them [s] (the refresh is logged at debug level only,
    so its time is taken by the client, on this machine's loopback) and the database's
    transactions per second while they watched (``pg_stat_database.xact_commit``; the office
    reads in autocommit, so a query is a transaction)."""
    import asyncio
    import random

    import httpx

    from web.pages.today import REFRESH_S

    async def watch(base: str, n: int) -> list[float]:
        clients = [httpx.AsyncClient(base_url=base, timeout=30) for _ in range(n)]
        for c in clients:                                   # each its own session
            page = await c.get("/login")
            token = page.text.split('name="_csrf_token" value="', 1)[1].split('"', 1)[0]
            r = await c.post("/login", data={"username": "bench", "password": PASSWORD, "_csrf_token": token,
                                             "next": "/"}, follow_redirects=True)
            assert r.status_code == 200, r.status_code
        times: list[float] = []
        ends = time.monotonic() + seconds

        async def one(c):
            await asyncio.sleep(random.uniform(0, REFRESH_S))
            while time.monotonic() < ends:
                a = time.perf_counter()
                r = await c.get("/today/live")
                times.append(time.perf_counter() - a)
                assert r.status_code == 200, r.status_code
                await asyncio.sleep(max(0.0, REFRESH_S - (time.perf_counter() - a)))
        try:
            await asyncio.gather(*(one(c) for c in clients))
        finally:
            for c in clients:
                await c.aclose()
        return times

    out = {}
    with office_process(url, state) as (base, _log), psycopg.connect(url, autocommit=True) as conn:
        with httpx.Client(base_url=base, timeout=30) as c:     # warm-up
            _sign_in(c)
            for _ in range(6):
                c.get("/today/live")
        for n in counts:
            x0 = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                              ).fetchone()[0]
            began = time.monotonic()
            times = asyncio.run(watch(base, n))
            took = time.monotonic() - began
            x1 = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
                              ).fetchone()[0]
            out[n] = {"p95_ms": round(p95(times) * 1000, 1), "median_ms": round(statistics.median(times) * 1000, 1),
                      "requests": len(times), "db_tps": round((x1 - x0 - 2) / took, 1)}
            print(f"  {n} viewers: {len(times)} refreshes, p95 {out[n]['p95_ms']} ms, median {out[n]['median_ms']} ms;"
                  f" the database {out[n]['db_tps']} transactions/s", flush=True)
    return out


def _served(log: Path, path: str) -> list[float]:
    """The server times [s] of the successful GETs of ``path`` in the office's access log."""
    import re
    pat = re.compile(r'"GET ' + re.escape(path) + r'" 200 ([0-9.]+) ms')
    return [float(m.group(1)) / 1000.0 for m in pat.finditer(log.read_text())]


def main() -> int:
    quick = os.environ.get("BENCH_QUICK") == "1"
    hours = 2.0 if quick else 24.0
    from sewerwatch.services.scratch import scratch   # the benchmark's own cluster

    with scratch(mosquitto=False, prefix="sewerwatch-bench-web-") as sc, \
            tempfile.TemporaryDirectory(prefix="sewerwatch-bench-web-state-") as state:
        url = sc.pg.url("owner")
        began = time.monotonic()
        n = load(url, hours, log=print)
        print(f"loaded {SITES} industrial users, {SITES * PER_SITE} sensors, {n:,} readings ({hours:g} h at 1 Hz) "
              f"in {time.monotonic() - began:.0f} s", flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        m = measure(url, Path(state))
        print(f"viewers refreshing Today every 2 s, {WATCH_S:g} s each:", flush=True)
        w = viewers(url, Path(state))
    t, ts, s, ss = (p95(m[k]) * 1000 for k in ("today", "today_sql", "site", "site_sql"))
    print(f"Today page: p95 {t:.1f} ms (median {statistics.median(m['today']) * 1000:.1f} ms, "
          f"{m['today_bytes']:,} bytes); its bare SQL: p95 {ts:.1f} ms -> ratio {ts / t:.2f}", flush=True)
    print("  the Today page's slowest five [ms]: " + ", ".join(f"{x * 1000:.1f}" for x in sorted(m["today"])[-5:]) +
          "; its SQL's: " + ", ".join(f"{x * 1000:.1f}" for x in sorted(m["today_sql"])[-5:]), flush=True)
    print(f"industrial user's page, 24-hour charts: p95 {s:.1f} ms ({m['site_bytes']:,} bytes); its bare SQL: "
          f"p95 {ss:.1f} ms -> ratio {ss / s:.2f}", flush=True)
    print(json.dumps({
        "benchmark": "web-today" + ("-quick" if quick else ""), "value": round(t, 1),
        "unit": f"ms, p95 server time of the Today page ({SITES} industrial users, {SITES * PER_SITE} sensors, "
                f"{hours:g} h at 1 Hz)",
        "peer": "the page's bare SQL queries by psycopg, p95", "peer_value": round(ts, 1), "ratio": round(ts / t, 2),
        "site_page_p95_ms": round(s, 1), "site_sql_p95_ms": round(ss, 1), "site_ratio": round(ss / s, 2),
        "readings": n}))
    one, most = w[min(w)], w[max(w)]
    print(json.dumps({
        "benchmark": "web-viewers" + ("-quick" if quick else ""), "value": most["p95_ms"],
        "unit": f"ms, p95 of Today's refresh with {max(w)} viewers each refreshing every 2 s",
        "peer": f"the same with {min(w)} viewer" + ("s" if min(w) != 1 else ""), "peer_value": one["p95_ms"],
        "ratio": round(most["p95_ms"] / one["p95_ms"], 2),
        "db_tps": {str(k): v["db_tps"] for k, v in w.items()},
        "db_tps_per_viewer": {str(k): round(v["db_tps"] / k, 2) for k, v in w.items()},
        "p95_ms": {str(k): v["p95_ms"] for k, v in w.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
