"""Storage upkeep: one-minute aggregates, retention with evidence kept, compression.

One job, :func:`maintain`, run by ``sewerwatch db maintain`` and every
``[retention] maintain_every_s`` by ``sewerwatch run`` (:func:`run_periodically`). Each run:

1. **Aggregates.** ``readings_1m`` (min, max, mean, count and time-weighted mean of the
   usable readings of each sensor and minute) is brought up to the last whole minute
   before now minus :data:`SETTLE_S`, from where the last run left it
   (``maintenance_state``) minus ``aggregate_lookback_h``, so readings that arrive late
   (a spool replayed after an outage) are folded in while they are younger than that.
   Older late readings: ``sewerwatch db maintain --refresh FROM TO``. TimescaleDB's
   continuous aggregates would do this by themselves but are not in its Apache build.
2. **Evidence, then raw retention.** Raw readings older than ``raw_days`` are removed
   (whole chunks on TimescaleDB, ``drop_chunks``; a DELETE on plain PostgreSQL), but first
   the readings of every violation episode's sensor from ``evidence_margin_min`` before
   its start to as long after its end are copied into ``readings_evidence``. Never past
   the aggregates' end: what is removed has been aggregated.
3. **Records period.** Aggregates and evidence older than ``records_years`` (at least 3,
   40 CFR 403.12(o)(2)) are removed, but never what a record points to
   (:data:`KEPT_WINDOWS`): the readings behind every violation stay at full resolution
   (copied into ``readings_evidence`` in step 2) and with their aggregates for as long as
   the violation is kept (the program deletes none); the aggregates of the periods of the
   findings a notice rests on, of the SNC decisions and of the signed self-monitoring
   reports stay too. A site on legal hold (``enforcement.holds``) or with an open
   enforcement case (a notice issued, not yet closed) loses nothing: its raw readings are
   copied into ``readings_evidence`` before step 2 drops them, and its evidence and
   aggregates stay past the records period.
4. **Dead letters and sessions.** Dead letters older than ``dead_letters_days`` are
   removed (but those whose topic names a kept site); the office's session files not
   written for ``sessions_days``, when the state folder is given.
5. **Compression**, where the server's TimescaleDB build has it (``timescaledb.license``
   not ``apache``): chunks of ``readings`` older than ``compress_after_days`` are
   compressed, segmented by sensor and ordered by time. The Apache build has no
   compression; :func:`storage_report` says so.

Every step commits on its own; a run that stops half-way leaves consistent tables and the
next run continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from datetime import datetime, timedelta, timezone

import psycopg

from foundation.config import Retention

log = logging.getLogger("sewerwatch.maintain")

#: Readings younger than this are not aggregated yet (they may still be on their way) [s].
SETTLE_S = 60
#: Aggregates are built in slices of this length (a first build of a year commits daily).
SLICE = timedelta(days=1)

AGGREGATE = """
INSERT INTO readings_1m (minute, sensor_id, n, min, max, mean, twa)
SELECT minute, sensor_id, count(*), min(value), max(value), avg(value),
       sum(value * hold) / nullif(sum(hold), 0)
FROM (
    SELECT r.sensor_id, r.value, date_trunc('minute', r.time) AS minute,
           extract(epoch FROM least(
               lead(r.time) OVER (PARTITION BY r.sensor_id ORDER BY r.time),
               r.time + make_interval(secs => 3 * coalesce(s.interval_s, 60)),
               date_trunc('minute', r.time) + INTERVAL '1 minute') - r.time) AS hold
    FROM readings r JOIN sensors s ON s.id = r.sensor_id
    WHERE r.time >= %(a)s AND r.time < %(b)s
      AND r.quality = 0 AND r.value IS NOT NULL AND r.value <> 'NaN'::float8
) x
GROUP BY sensor_id, minute
ON CONFLICT (sensor_id, minute) DO UPDATE SET n = EXCLUDED.n, min = EXCLUDED.min, max = EXCLUDED.max,
    mean = EXCLUDED.mean, twa = EXCLUDED.twa
"""

#: The sites whose records are kept whole: on legal hold (enforcement/holds.py) or with an
#: open enforcement case (a notice issued and not yet closed or escalated).
KEPT_SITES = ("SELECT site_id FROM legal_holds WHERE released_at IS NULL "
              "UNION SELECT site_id FROM notices WHERE state IN ('issued', 'response-received')")
#: The sensors of those sites.
KEPT_SENSORS = f"SELECT id FROM sensors WHERE site_id IN ({KEPT_SITES})"

#: What the program's records point to, as (sensor, span, raw): the readings behind each
#: violation (its episode, the days or month its average covers, ``margin`` either side; raw:
#: kept at full resolution), and the periods of the findings a notice rests on, of the SNC
#: decisions and of the signed self-monitoring reports (every sensor of the site; their
#: one-minute aggregates are kept). Violations, findings, notices and signed reports are never
#: deleted, so neither is what they point to.
KEPT_WINDOWS = """
CREATE TEMP TABLE kept_windows ON COMMIT DROP AS
SELECT v.sensor_id, tstzrange(v.start_time - %(margin)s,
                              greatest(coalesce(v.end_time, now()), v.start_time) + %(margin)s, '[]') AS span,
       true AS raw
FROM violations v WHERE v.sensor_id IS NOT NULL
UNION ALL
SELECT v.sensor_id, tstzrange(lower(r) - %(margin)s, upper(r) + %(margin)s, '[]'), true
FROM violations v, violation_spans(v.start_time, v.end_time, v.evidence) r WHERE v.sensor_id IS NOT NULL
UNION ALL
SELECT s.id, tstzrange(coalesce(f.period_start, f.occurred) - interval '1 day',
                       greatest(f.period_end, f.period_start, f.occurred) + interval '2 days'), false
FROM findings f JOIN sensors s ON s.site_id = f.site_id
WHERE f.kind = 'snc' OR EXISTS (SELECT 1 FROM notices n WHERE n.finding_id = f.id)
UNION ALL
SELECT s.id, tstzrange(u.period_start - interval '1 day', greatest(u.period_end, u.period_start) + interval '2 days'),
       false
FROM portal_submissions p JOIN user_reports u ON p.target = 'report:' || u.id
JOIN sensors s ON s.site_id = u.site_id
WHERE u.period_start IS NOT NULL AND u.period_end IS NOT NULL
"""

#: Raw readings older than the cutoff that a record points to, or of a kept site: copied into
#: ``readings_evidence`` before the chunks holding them are dropped.
KEEP_EVIDENCE = f"""
INSERT INTO readings_evidence (time, value, sensor_id, quality)
SELECT r.time, r.value, r.sensor_id, r.quality
FROM kept_windows w
JOIN readings r ON r.sensor_id = w.sensor_id AND w.span @> r.time
WHERE w.raw AND lower(w.span) < %(cutoff)s AND r.time < %(cutoff)s
UNION
SELECT r.time, r.value, r.sensor_id, r.quality
FROM readings r WHERE r.time < %(cutoff)s AND r.sensor_id IN ({KEPT_SENSORS})
ON CONFLICT DO NOTHING
"""

#: Rows of ``{table}`` (its time column ``{time}``) past the records period that nothing keeps.
FORGET = f"""
DELETE FROM {{table}} x WHERE x.{{time}} < %(records)s
  AND x.sensor_id NOT IN ({KEPT_SENSORS})
  AND NOT EXISTS (SELECT 1 FROM kept_windows w WHERE w.sensor_id = x.sensor_id AND w.span @> x.{{time}})
"""

#: Dead letters past their days, but those naming a kept site in their topic.
FORGET_DEAD_LETTERS = f"""
DELETE FROM dead_letters d WHERE d.received_at < %(before)s
  AND NOT EXISTS (SELECT 1 FROM sites t WHERE t.id IN ({KEPT_SITES})
                  AND ('/' || d.topic || '/') LIKE '%%/' || t.key || '/%%')
"""


def held_sites(conn) -> int:
    """How many sites are on legal hold (0 where the schema has no holds yet)."""
    if conn.execute("SELECT to_regclass('public.legal_holds')").fetchone()[0] is None:
        return 0
    return conn.execute("SELECT count(*) FROM legal_holds WHERE released_at IS NULL").fetchone()[0]


def kept_sites(conn) -> int:
    """How many sites keep every record (on legal hold or with an open enforcement case)."""
    return conn.execute(f"SELECT count(*) FROM ({KEPT_SITES}) k").fetchone()[0]


def forget_sessions(state_dir, older_than_days: float, now: float | None = None) -> int:
    """Remove the office's session files in ``<state_dir>/web-sessions`` not written for
    ``older_than_days`` [days]; returns how many. A missing folder is nothing to remove."""
    import time
    from pathlib import Path

    folder = Path(state_dir) / "web-sessions"
    if not folder.is_dir():
        return 0
    before = (now if now is not None else time.time()) - older_than_days * 86400.0
    n = 0
    for f in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if f.is_file() and f.stat().st_mtime < before:
                f.unlink()
                n += 1
    return n


def _timescale(conn) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')").fetchone()[0]


def compression_available(conn) -> tuple[bool, str]:
    """Whether ``readings`` can be compressed here, and why not."""
    if not _timescale(conn):
        return False, "no TimescaleDB extension (plain PostgreSQL): no compression"
    lic = conn.execute("SELECT current_setting('timescaledb.license', true)").fetchone()[0]
    if lic == "apache":
        return False, ("this TimescaleDB build is the Apache-licensed one (timescaledb.license = apache), "
                       "which has no compression")
    return True, f"timescaledb.license = {lic}"


def _state(conn, job: str):
    row = conn.execute("SELECT done_to FROM maintenance_state WHERE job = %s", (job,)).fetchone()
    return row[0] if row else None


def _set_state(conn, job: str, done_to, detail: str = "{}") -> None:
    conn.execute("INSERT INTO maintenance_state (job, done_to, last_run, detail) VALUES (%s, %s, now(), %s) "
                 "ON CONFLICT (job) DO UPDATE SET done_to = EXCLUDED.done_to, last_run = now(), "
                 "detail = EXCLUDED.detail", (job, done_to, detail))


def first_reading(conn):
    """The oldest reading's time (one index probe per sensor), or None."""
    return conn.execute("SELECT min((SELECT r.time FROM readings r WHERE r.sensor_id = s.id "
                        "ORDER BY r.time LIMIT 1)) FROM sensors s").fetchone()[0]


@contextlib.contextmanager
def _autocommit(conn):
    """``conn`` in autocommit mode meanwhile, so that each ``conn.transaction()`` commits."""
    conn.commit()
    was, conn.autocommit = conn.autocommit, True
    try:
        yield conn
    finally:
        conn.autocommit = was


def refresh_aggregates(conn, start: datetime, end: datetime, log_progress=None) -> int:
    """(Re)compute ``readings_1m`` for the minutes in ``[start, end)``; returns rows written.

    ``start`` and ``end`` are rounded down to whole minutes; slices of a day commit one by one.
    """
    with _autocommit(conn):
        return _refresh(conn, start, end, log_progress)


def _refresh(conn, start: datetime, end: datetime, log_progress, job: str | None = None, halt=None) -> int:
    """The slices of :func:`refresh_aggregates`; with ``job``, its state advances with each
    slice; a set ``halt`` (threading.Event) stops between slices."""
    start = start.replace(second=0, microsecond=0)
    end = end.replace(second=0, microsecond=0)
    rows = 0
    a = start
    while a < end and not (halt is not None and halt.is_set()):
        b = min(a + SLICE, end)
        with conn.transaction():
            rows += conn.execute(AGGREGATE, {"a": a, "b": b}).rowcount
            if job:
                _set_state(conn, job, b)
        if log_progress:
            log_progress(f"aggregates to {b:%Y-%m-%d %H:%M} UTC")
        a = b
    return rows


def maintain(conn, policy: Retention, now: datetime | None = None, log_progress=None, halt=None,
             state_dir=None) -> dict:
    """Run the storage upkeep once (see the module doc). ``conn``: the owner's (it runs in
    autocommit mode meanwhile, each step its own transaction).

    ``halt`` (a ``threading.Event``), when set, stops the run between slices of the
    aggregates (the rest waits for the next run). ``state_dir`` (a path): the state folder
    whose old office sessions are removed (none without it).

    Returns
    -------
    dict
        ``aggregated`` (minutes written), ``aggregates_to``, ``evidence_rows`` (copied),
        ``raw_removed`` (chunks dropped or rows deleted), ``raw_before``,
        ``records_removed``, ``held_sites``, ``kept_sites`` (on hold or with an open case),
        ``dead_letters_removed``, ``sessions_removed``, ``compressed_chunks``,
        ``compression`` (why not, where not).
    """
    with _autocommit(conn):
        return _maintain(conn, policy, now or datetime.now(timezone.utc), log_progress, halt, state_dir)


def _maintain(conn, policy: Retention, now: datetime, log_progress, halt, state_dir) -> dict:
    out: dict = {}
    ts = _timescale(conn)

    # 1. aggregates
    done = _state(conn, "aggregates")
    end = (now - timedelta(seconds=SETTLE_S)).replace(second=0, microsecond=0)
    start = done - timedelta(hours=policy.aggregate_lookback_h) if done else first_reading(conn)
    out["aggregated"] = 0
    if start is not None and start < end:
        out["aggregated"] = _refresh(conn, start, end, log_progress, job="aggregates", halt=halt)
    agg_to = _state(conn, "aggregates")
    out["aggregates_to"] = agg_to
    if halt is not None and halt.is_set():
        return out

    # 2. evidence, then raw readings older than raw_days (never what is not aggregated yet)
    cutoff = now - timedelta(days=policy.raw_keep_days)
    if agg_to is not None:
        cutoff = min(cutoff, agg_to)
    margin = timedelta(minutes=policy.evidence_margin_min)
    out["held_sites"] = held_sites(conn)
    out["kept_sites"] = kept_sites(conn)
    with conn.transaction():
        conn.execute(KEPT_WINDOWS, {"margin": margin})
        out["evidence_rows"] = conn.execute(KEEP_EVIDENCE, {"cutoff": cutoff}).rowcount
        if ts:
            out["raw_removed"] = len(conn.execute(
                "SELECT drop_chunks('readings', older_than => %s)", (cutoff,)).fetchall())
        else:
            out["raw_removed"] = conn.execute("DELETE FROM readings WHERE time < %s", (cutoff,)).rowcount
        _set_state(conn, "raw-retention", cutoff)
    out["raw_before"] = cutoff

    # 3. the records period: nothing a record points to, nothing of a kept site
    records = now - timedelta(days=policy.records_days)
    with conn.transaction():
        conn.execute(KEPT_WINDOWS, {"margin": margin})
        p = {"records": records}
        n = conn.execute(FORGET.format(table="readings_evidence", time="time"), p).rowcount
        pointed = conn.execute("SELECT EXISTS (SELECT 1 FROM kept_windows WHERE lower(span) < %s)",
                               (records,)).fetchone()[0]
        if ts and not pointed and not out["kept_sites"]:      # whole chunks when nothing old is kept
            n += len(conn.execute("SELECT drop_chunks('readings_1m', older_than => %s)", (records,)).fetchall())
        else:
            n += conn.execute(FORGET.format(table="readings_1m", time="minute"), p).rowcount
        _set_state(conn, "records-retention", records)
    out["records_removed"] = n

    # 4. dead letters and the office's sessions past their days
    with conn.transaction():
        out["dead_letters_removed"] = conn.execute(
            FORGET_DEAD_LETTERS, {"before": now - timedelta(days=policy.dead_letters_keep_days)}).rowcount
    out["sessions_removed"] = (forget_sessions(state_dir, policy.sessions_days, now.timestamp())
                               if state_dir is not None else 0)

    # 5. compression where the build has it
    ok, why = compression_available(conn)
    out["compression"] = why
    out["compressed_chunks"] = 0
    if ok:
        with conn.transaction():
            enabled = conn.execute("SELECT compression_enabled FROM timescaledb_information.hypertables "
                                   "WHERE hypertable_name = 'readings'").fetchone()
            if enabled and not enabled[0]:
                conn.execute("ALTER TABLE readings SET (timescaledb.compress, "
                             "timescaledb.compress_segmentby = 'sensor_id', timescaledb.compress_orderby = 'time')")
            out["compressed_chunks"] = len(conn.execute(
                "SELECT compress_chunk(c, if_not_compressed => true) "
                "FROM show_chunks('readings', older_than => %s) c",
                (now - timedelta(days=policy.compress_after_days),)).fetchall())
    return out


def storage_report(conn) -> dict:
    """What ``sewerwatch db status`` shows of storage: readings, bytes per reading, compression.

    Returns
    -------
    dict
        ``readings`` (exact below 2 million, else the planner's estimate), ``bytes``
        (table and indexes, all chunks), ``bytes_per_reading``, ``exact`` (count or
        estimate), ``compression`` (text), ``compression_ratio`` (None where nothing is
        compressed), ``aggregates_to``, ``aggregate_rows`` (estimate), ``evidence_rows``.
    """
    ts = _timescale(conn)
    size = conn.execute("SELECT hypertable_size('readings')" if ts
                        else "SELECT pg_total_relation_size('readings')").fetchone()[0]
    n, exact = _rows(conn, "readings", ts)
    ok, why = compression_available(conn)
    ratio = None
    if ok:
        row = conn.execute("SELECT sum(before_compression_total_bytes), sum(after_compression_total_bytes) "
                           "FROM hypertable_compression_stats('readings')").fetchone()
        if row and row[0] and row[1]:
            ratio = float(row[0]) / float(row[1])
            why = f"compressed chunks: {float(row[0]) / 1e6:,.0f} MB -> {float(row[1]) / 1e6:,.0f} MB"
    return {
        "readings": int(n or 0), "exact": exact, "bytes": int(size or 0),
        "bytes_per_reading": (float(size) / n) if n else None,
        "compression": why if ok else f"not available: {why}", "compression_ratio": ratio,
        "aggregates_to": _state(conn, "aggregates"),
        "aggregate_rows": _rows(conn, "readings_1m", ts)[0],
        "evidence_rows": _rows(conn, "readings_evidence", False)[0],
        "raw_before": _state(conn, "raw-retention"),
    }


def _rows(conn, table: str, hypertable: bool) -> tuple[int, bool]:
    """Rows of ``table``: counted below 2 million, else the planner's estimate; and which."""
    est = conn.execute("SELECT approximate_row_count(%s::regclass)" if hypertable else
                       "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", (table,)).fetchone()[0]
    if est is None or est < 2_000_000:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0], True
    return int(est), False


async def run_periodically(owner_url: str, policy: Retention, stop: asyncio.Event | None = None,
                          first_delay_s: float = 60.0, state_dir=None) -> None:
    """Call :func:`maintain` every ``policy.maintain_every_s`` (in a worker thread) until
    cancelled or ``stop`` is set; a failed run is logged and tried again next time. The
    first run waits ``first_delay_s`` (a starting pipeline has more urgent work).

    The hook ``sewerwatch run`` starts: ``asyncio.create_task(run_periodically(url, cfg.retention))``;
    ``state_dir`` as :func:`maintain`'s.
    """
    loop = asyncio.get_running_loop()
    halt = threading.Event()   # a long first build stops between slices when cancelled

    def once():
        with psycopg.connect(owner_url) as conn:
            return maintain(conn, policy, halt=halt, state_dir=state_dir)

    await asyncio.sleep(first_delay_s)
    while stop is None or not stop.is_set():
        try:
            out = await loop.run_in_executor(None, once)
            log.info("storage maintained: %s", out)
        except asyncio.CancelledError:
            halt.set()
            raise
        except Exception:  # noqa: BLE001 - the live pipeline must keep running
            log.exception("storage maintenance failed; trying again in %.0f s", policy.maintain_every_s)
        await asyncio.sleep(policy.maintain_every_s)
