"""The TimescaleDB writer: drains the sink, writes with binary COPY, spools on outage.

Each chunk goes in one transaction as the ingest role. Readings first try the fast path,
one binary COPY straight into ``readings`` inside a savepoint; if any of them is already
stored (a replay, a redelivery after a restart) the unique index refuses the COPY, the
savepoint is rolled back and the chunk goes by binary COPY into a temporary staging table
and then ``INSERT INTO readings ... ON CONFLICT DO NOTHING``: a replayed or redelivered
reading is dropped, never doubled. (The direct COPY runs at the speed of a raw COPY; the
staging route costs about twice as much, and is only taken when it is needed.) Dead letters and device health records ride
in the same transaction. The binary COPY stream is built with numpy, one structured array
per chunk, never one Python object per reading.

While the database is unreachable every chunk is appended to the spool (fsynced) instead,
and the writer tries to reconnect with backoff; once back, it replays the spool in order,
then writes directly again. Only when a chunk is committed or fsynced are the collectors'
``on_durable`` callbacks run (an MQTT collector acknowledges its messages then).

When neither works (the database is down and the spool is full, over its cap, read-only),
the writer holds the chunk and tries again every second; it takes nothing more from the
sink meanwhile, so the sink fills, the collectors stop taking messages and the broker
keeps them. Everything resumes by itself when the database or the disk space returns.
The writer is a supervised thread (:mod:`ingest.supervise`): a chunk it held when it died
is held again by the restarted thread.

Pipelined writes (``pipeline=True``, the default): two chunks in the database at once, on
two connections, acknowledged in order (:mod:`ingest.pipelined`).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg

from ingest.batch import Readings
from ingest.pipelined import PipelinedCommits, merge_chunks, first_line, rollback, run_callbacks
from ingest.sink import Chunk, DeadLetter, Sink
from ingest.spool import Spool, SpoolUnwritable
from ingest.supervise import Component, Supervisor

log = logging.getLogger("sewerwatch.writer")

#: microseconds from 1970-01-01 to PostgreSQL's epoch 2000-01-01 (UTC)
PG_EPOCH_US = 946_684_800 * 1_000_000
#: PostgreSQL binary COPY header: signature, flags, header extension length
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_TRAILER = b"\xff\xff"
_TUPLE = np.dtype([("nfields", ">i2"), ("len_t", ">i4"), ("t", ">i8"), ("len_s", ">i4"), ("s", ">i4"),
                   ("len_v", ">i4"), ("v", ">f8"), ("len_q", ">i4"), ("q", ">i2")])

STAGING = """CREATE TEMP TABLE IF NOT EXISTS staging_readings (
    time timestamptz, sensor_id int, value double precision, quality smallint, ord bigserial)
    ON COMMIT DELETE ROWS"""

#: Readings of the staging table that differ from what is stored at their (sensor, time),
#: in the order they came (``0100_reading_conflicts.sql``: the ingest role may not read
#: ``readings``; the function answers for the keys it is given only).
CONFLICTS = """SELECT sensor_id, time, stored, received, stored_quality, received_quality, site, sensor
    FROM reading_conflicts(
        (SELECT array_agg(sensor_id ORDER BY ord) FROM staging_readings),
        (SELECT array_agg(time ORDER BY ord) FROM staging_readings),
        (SELECT array_agg(value ORDER BY ord) FROM staging_readings),
        (SELECT array_agg(quality ORDER BY ord) FROM staging_readings))"""

#: A database write that has taken longer than this is "database slow" [s] (a loaded server's
#: commit can take a second or two; a lock or a stalled server takes longer).
SLOW_AFTER_S = 5.0
#: How often the writer probes, while the database is up, that the spool could be written [s].
PROBE_EVERY_S = 10.0


def copy_binary(r: Readings) -> bytes:
    """The binary COPY stream of ``r`` for columns (time, sensor_id, value, quality)."""
    rows = np.empty(len(r), dtype=_TUPLE)
    rows["nfields"] = 4
    rows["len_t"], rows["len_s"], rows["len_v"], rows["len_q"] = 8, 4, 8, 2
    rows["t"] = r.time_us - PG_EPOCH_US
    rows["s"] = r.sensor_id
    rows["v"] = r.value
    rows["q"] = r.quality
    return COPY_HEADER + rows.tobytes() + COPY_TRAILER


def store_readings(conn: psycopg.Connection, r: Readings, conflicts: list | None = None) -> tuple[int, bool]:
    """Write ``r`` into ``readings`` in ``conn``'s open transaction, dropping what is stored
    already: binary COPY straight in (in a savepoint), or, when a reading is there already,
    COPY to the staging table and ``INSERT ... ON CONFLICT DO NOTHING`` in the order they
    came (the first of a sensor and time stays).

    Parameters
    ----------
    conflicts : list, optional
        Extended with the readings not stored because another value (or quality) is stored
        at their sensor and time: ``(sensor id, time, stored, received,
        stored quality, received quality, site, sensor)``. An identical resend is no conflict.

    Returns
    -------
    (int, bool)
        Readings newly stored, and whether the staging route was taken.
    """
    stream = copy_binary(r)
    with conn.cursor() as cur:
        try:
            with conn.transaction():  # a savepoint: a duplicate undoes only this COPY
                with cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN (FORMAT BINARY)") as cp:
                    cp.write(stream)
            return len(r), False
        except psycopg.errors.UniqueViolation:
            cur.execute(STAGING)
            with cur.copy("COPY staging_readings (time, sensor_id, value, quality) FROM STDIN (FORMAT BINARY)") as cp:
                cp.write(stream)
            cur.execute("INSERT INTO readings (time, sensor_id, value, quality) "
                        "SELECT time, sensor_id, value, quality FROM staging_readings ORDER BY ord "
                        "ON CONFLICT DO NOTHING")
            inserted = cur.rowcount
            if conflicts is not None and inserted < len(r):
                conflicts += cur.execute(CONFLICTS).fetchall()
            cur.execute("TRUNCATE staging_readings")
            return inserted, True


def conflict_letter(row) -> "DeadLetter":
    """The dead letter of a reading refused because another value is stored at its sensor
    and time (a row of :data:`CONFLICTS`)."""
    sensor_id, t, stored, received, sq, rq, site, sensor = row
    key = f"{site}/{sensor}" if site else f"sensor {sensor_id}"
    what = (f"stored {stored:g}, received {received:g}" if stored != received or sq == rq
            else f"stored {stored:g} with quality {sq}, received quality {rq}")
    payload = json.dumps({"sensor_id": sensor_id, "time": t.isoformat(), "value": received, "quality": rq,
                          "stored": stored, "stored_quality": sq}).encode()
    return DeadLetter("readings", key, payload,
                      f"conflict: {what} ({key} at {t.astimezone(timezone.utc).isoformat().replace('+00:00', 'Z')}; "
                      "the first stays)", {"sensor_id": sensor_id})


def _us_to_ts(us):
    return None if us is None else datetime.fromtimestamp(us / 1e6, tz=timezone.utc)


@dataclass
class WriterStats:
    """What the writer has done since it started."""

    chunks: int = 0
    readings_offered: int = 0       # readings handed to the database (including replays)
    readings_inserted: int = 0      # new rows (the rest were duplicates, dropped)
    readings_spooled: int = 0
    dead_letters: int = 0
    replayed_chunks: int = 0
    staged_chunks: int = 0          # chunks that held duplicates and went through staging
    outages: int = 0
    db_up: bool | None = None            # None: not connected yet (starting)
    db_down_since: float | None = None   # [epoch s]
    conflicts: int = 0                   # readings refused: another value stored at their sensor and time
    stored_seq: int = 0                  # the sink's batches up to this one are in the database
    spooled_seq: int = 0                 # ... up to this one are in the spool (in the database once replayed)
    last_error: str | None = None
    last_commit_at: float | None = None  # [epoch s]
    spool_failures: int = 0              # appends the spool refused
    held_readings: int = 0               # readings held: neither the database nor the spool took them
    held_since: float | None = None      # [epoch s]
    errors: list = field(default_factory=list)


class Writer(PipelinedCommits):
    """Drain ``sink`` into the database at ``db_url`` (the ingest role), spooling on outage.

    Parameters
    ----------
    db_url : str
        Connection URL (the ingest role).
    sink : ingest.sink.Sink
        Where the collectors put their batches.
    spool_dir : path-like
        The spool's folder (kept across restarts: a spool left by a crash is replayed).
    max_rows : int
        Readings per database transaction at most.
    max_delay : float
        Longest a reading waits in the sink before it is written [s].
    pipeline : bool
        Write two chunks at once on two connections, acknowledged in order
        (:mod:`ingest.pipelined`). On by default: one COPY keeps one backend busy, two keep
        two, and batched ingest keeps up with a raw COPY only so (``benchmarks/README.md``);
        False writes one chunk at a time on one connection.
    """

    def __init__(self, db_url: str, sink: Sink, spool_dir, max_rows: int = 50_000,
                 max_delay: float = 0.1, backoff_max: float = 5.0, spool_max_bytes: int = 1 << 30,
                 pipeline: bool = True):
        self.db_url = db_url
        self.sink = sink
        self.spool = Spool(spool_dir, spool_max_bytes)
        self.max_rows = max_rows
        self.max_delay = max_delay
        self.backoff_max = backoff_max
        self.stats = WriterStats()
        self._conn: psycopg.Connection | None = None
        self.pipeline = pipeline
        self._init_pipeline()
        self._next_try = 0.0
        self._backoff = 0.25
        self._held: Chunk | None = None      # taken from the sink, not yet durable
        self._writing_since: float | None = None   # [monotonic s] a database write in progress
        self._chunk_taken_at: float | None = None  # [epoch s] when the chunk being written left the sink
        self._probed_at = 0.0
        self.supervisor: Supervisor | None = None
        self.component: Component | None = None
        self._own_supervisor = False

    # --- lifecycle ------------------------------------------------------------------

    def start(self, supervisor: Supervisor | None = None) -> "Writer":
        """Run the writer as a supervised thread (under ``supervisor``, else its own)."""
        try:
            cut = self.spool.recover()
            if cut:
                log.warning("spool: cut a torn tail of %d bytes left by a crash (never acknowledged)", cut)
        except OSError as exc:
            log.error("spool: cannot check %s (%s); it is checked again before the next append",
                      self.spool.path, exc.strerror or exc)
            self.spool._dirty = True
        self._own_supervisor = supervisor is None
        self.supervisor = supervisor or Supervisor()
        self.component = self.supervisor.add("writer", self._run, stall_after=120.0, check=self.problem)
        if self._own_supervisor:
            self.supervisor.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Close the sink, write (or spool) everything in it, and stop."""
        if self.component is not None:
            self.component.finished = True
        self.sink.close()
        if self.component is not None and self.component.thread is not None:
            self.component.thread.join(timeout)
            if self.component.thread.is_alive():
                log.error("writer: stopped with %d readings neither stored nor spooled (not acknowledged: "
                          "the broker sends them again)", self.stats.held_readings)
        if self._own_supervisor and self.supervisor is not None:
            self.supervisor.stop()
        if self._committer is not None:
            self._committer.shutdown(wait=True)
        for conn in (self._conn, self._conn2):
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass

    def _run(self, comp: Component) -> None:
        self._connection()          # find out now whether the database is up, not at the first chunk
        while True:
            comp.beat()
            self._probe_spool()
            if self._held is not None:
                self._wait(comp, 1.0)
                self.handle(self._held)
                continue
            chunk = self.sink.take(self.max_rows, self.max_delay)
            if chunk is None:
                break
            self.write_next(chunk)
        self._settle()
        if self._failed is not None:
            self.handle(Chunk(Readings.empty(), [], [], []))
        # Closed: one last try to empty the spool.
        if not self.spool.empty():
            self._next_try = 0.0
            self._replay()

    @staticmethod
    def _wait(comp: Component, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            comp.beat()
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))

    def _probe_spool(self) -> None:
        """While the database is up, find out every :data:`PROBE_EVERY_S` whether the spool
        could be written (a writer whose spool cannot be written is never healthy)."""
        if self.stats.db_up and time.monotonic() - self._probed_at >= PROBE_EVERY_S:
            self._probed_at = time.monotonic()
            self.spool.probe()

    def behind_s(self) -> float | None:
        """How long the database write in progress has taken [s], or None (none)."""
        starts = [s for s in (self._writing_since, self._inflight_since()) if s is not None]
        return time.monotonic() - min(starts) if starts else None

    def problem(self) -> str | None:
        """Why the writer is not storing readings as it should, or None (its health check).

        The same words as :meth:`database_state` and the "sewerwatch degraded" mail: a spool
        that cannot be written says why and how much space is free; a write that waits on a
        slow or locked database is "database slow (N s behind)", not "down"."""
        now = time.time()
        spool = self.spool.problem()
        if self.stats.held_since is not None:
            return (f"{spool or 'spool cannot be written'}; and the database is unreachable "
                    f"({first_line(self.stats.last_error) or 'down'}): cannot store {self.stats.held_readings:,} readings "
                    f"for {now - self.stats.held_since:.0f} s, the collectors are not acknowledging, the broker keeps the "
                    "messages")
        behind = self.behind_s()
        if behind is not None and behind >= SLOW_AFTER_S:
            return (f"database slow ({behind:.0f} s behind): a write of {self._pending_readings():,} readings has "
                    "waited that long (locks or load); readings wait in memory, nothing is lost")
        if self.stats.db_up is False and self.stats.outages:
            since = self.stats.db_down_since
            return ("database unreachable" + (f" for {now - since:.0f} s" if since else "") +
                    f" ({first_line(self.stats.last_error) or 'down'}); readings spooled ({len(self.spool):,} bytes "
                    "waiting)" + (f"; {spool}" if spool else ""))
        if spool:
            return f"{spool}; storing goes on while the database is up, but an outage could not be spooled"
        return None

    def database_state(self) -> str:
        """The database as the writer sees it, for ``status`` and ``collect``'s report:
        ``connecting``, ``up``, ``slow (N s behind)``, ``down (spooling)`` or ``down, NOT
        STORING (...)``."""
        if self.stats.held_since is not None:
            return f"down, NOT STORING ({self.spool.problem() or 'spool cannot be written'}; the broker keeps the messages)"
        behind = self.behind_s()
        if behind is not None and behind >= SLOW_AFTER_S:
            return f"slow ({behind:.0f} s behind)"
        if self.stats.db_up is None:
            return "connecting"
        return "up" if self.stats.db_up else "down (spooling)"

    def _pending_readings(self) -> int:
        """Readings being written: the chunk the writer holds and those in flight."""
        held = self._held
        return (len(held.readings) if held is not None else 0) + self._inflight_readings()

    def status(self) -> dict:
        """For ``sewerwatch status``: the database, the spool, what is waiting."""
        st = self.stats
        now = time.time()
        return {"db_up": st.db_up, "database": self.database_state(), "conflicts": st.conflicts,
                "stored_seq": st.stored_seq,
                "db_down_for_s": None if st.db_down_since is None else round(now - st.db_down_since, 1),
                "db_error": st.last_error, "sink_pending_readings": self.sink.pending(),
                "held_readings": st.held_readings, "readings_inserted": st.readings_inserted,
                "readings_spooled": st.readings_spooled, "dead_letters": st.dead_letters,
                "last_commit_age_s": None if st.last_commit_at is None else round(now - st.last_commit_at, 3),
                "spool": self.spool.status()}

    # --- the work -------------------------------------------------------------------

    def handle(self, chunk: Chunk) -> bool:
        """Make ``chunk`` durable (database, else spool), then run its callbacks; a pipelined
        commit in flight is waited for first (and a chunk whose commit failed goes first).

        Returns
        -------
        bool
            False when neither the database nor the spool took it: the writer holds it
            (:meth:`_run` tries again) and its callbacks have not run.
        """
        self._settle()
        if self._failed is not None:           # its commit failed: it goes first, with this one
            chunk, self._failed = merge_chunks(self._failed, chunk), None
        self._held = chunk
        if not self.spool.empty():
            self._replay()
        if len(chunk):
            if self.spool.empty() and self._write(chunk):
                self.stats.stored_seq = max(self.stats.stored_seq, chunk.seq)
            else:
                try:
                    self._spool_in_parts(chunk)
                    self.stats.spooled_seq = max(self.stats.spooled_seq, chunk.seq)
                except SpoolUnwritable as exc:
                    if self.stats.held_since is None:
                        self.stats.spool_failures += 1
                        self.stats.held_since = time.time()
                        log.error("STORING STOPPED: database unreachable and %s; %d readings held, the collectors "
                                  "stop acknowledging and the broker keeps the messages", exc,
                                  len(self._held.readings))
                    self.stats.held_readings = len(self._held.readings)
                    return False
        if self.stats.held_since is not None:
            log.warning("storing again after %.0f s", time.time() - self.stats.held_since)
            self.stats.held_since, self.stats.held_readings = None, 0
        self._held = None
        run_callbacks(chunk)
        return True

    def _spool_in_parts(self, chunk: Chunk) -> None:
        """Append ``chunk`` to the spool, in smaller parts when the disk has room for less
        than all of it; what is spooled leaves the held chunk (its callbacks stay with the
        rest and run once all of it is durable)."""
        while True:
            n = len(chunk.readings)
            part = n
            while True:
                head = Chunk(chunk.readings.take(slice(0, part)), chunk.dead_letters, chunk.health, [])
                try:
                    self.spool.append(head)
                    break
                except SpoolUnwritable:
                    if part <= 1 or self.spool.error is None or "cap" in self.spool.error:
                        raise
                    part //= 2                          # a full disk may still take a smaller part
            self.stats.readings_spooled += part
            chunk = Chunk(chunk.readings.take(slice(part, n)), [], [], chunk.callbacks, chunk.seq)
            self._held = chunk
            if not len(chunk.readings):
                return

    def _connection(self) -> psycopg.Connection | None:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        if time.monotonic() < self._next_try:
            return None
        try:
            self._conn = self._open_connection()
            if not self.stats.db_up:
                log.info("database reachable")
            self.stats.db_up = True
            self.stats.db_down_since = None
            self._backoff = 0.25
            return self._conn
        except psycopg.Error as exc:
            self._down(exc)
            return None

    def _open_connection(self) -> psycopg.Connection:
        """A new connection to the database, its staging table made."""
        conn = psycopg.connect(self.db_url, connect_timeout=3)
        conn.execute(STAGING)
        conn.commit()
        return conn

    def _down(self, exc: Exception) -> None:
        if self.stats.db_up or self.stats.outages == 0:
            self.stats.outages += 1
            log.warning("database unreachable, spooling to %s: %s", self.spool.path,
                        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        self.stats.db_up = False
        self.stats.db_down_since = self.stats.db_down_since or time.time()
        self.stats.last_error = str(exc).strip()[:500]
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None
        self._next_try = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, self.backoff_max)

    def _write(self, chunk: Chunk) -> bool:
        conn = self._connection()
        if conn is None:
            return False
        self._writing_since = time.monotonic()
        try:
            with conn.transaction():
                self._write_in(conn, chunk)
            self.stats.chunks += 1
            self.stats.last_commit_at = time.time()
            return True
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            self._down(exc)
            return False
        except psycopg.Error as exc:
            # Not an outage: the database refused the chunk. Keep it in the spool (never
            # lost) and say so loudly; replay will try it again.
            log.error("database refused a chunk (%s); kept in the spool", exc)
            self.stats.errors.append(str(exc)[:500])
            self._down(exc)
            return False
        finally:
            self._writing_since = None

    def _write_in(self, conn: psycopg.Connection, chunk: Chunk) -> None:
        r = chunk.readings
        letters = chunk.dead_letters
        if len(r):
            conflicts: list = []
            inserted, staged = store_readings(conn, r, conflicts)
            with self._stats_lock:              # pipelined writes add from two workers
                self.stats.staged_chunks += staged
                self.stats.readings_inserted += inserted
                self.stats.readings_offered += len(r)
            if conflicts:
                now_us = time.time_ns() // 1000
                new = [conflict_letter(c) for c in conflicts]
                for d in new:
                    d.received_at_us = now_us
                letters = letters + new
                with self._stats_lock:
                    self.stats.conflicts += len(new)
                self.sink.note_dead([d.reason for d in new])
                log.warning("%d readings refused: another value is stored at their sensor and time (first: %s)",
                            len(new), new[0].reason)
        windows = [h for h in chunk.health if h.get("kind") == "window"]
        if windows:
            letters = letters + self._windows(conn, windows)
        if letters:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO dead_letters (received_at, source, topic, payload, reason, detail) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [(_us_to_ts(d.received_at_us), d.source, d.topic, d.payload, d.reason, json.dumps(d.detail))
                     for d in letters])
            with self._stats_lock:
                self.stats.dead_letters += len(letters)
        health = [h for h in chunk.health if h.get("kind") != "window"]
        if health:
            self._health(conn, health)

    def _windows(self, conn: psycopg.Connection, records: list[dict]) -> list[DeadLetter]:
        """Record the maintenance windows devices opened and ended, in order, by
        ``device_window()`` (migration 0160, the ingest role may call it); one that cannot be
        recorded (an unknown site, an end with no window open) is a dead letter with why."""
        letters = []
        for h in records:
            with conn.cursor() as cur:
                cur.execute("SELECT device_window(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                            (h["site"], [str(i) for i in h["sensor_ids"]] or None, h["state"], _us_to_ts(h["at_us"]),
                             h["reason"], h["by"], h["source"], h["device"], h["key"]))
                outcome = cur.fetchone()[0]
            if outcome in ("opened", "closed", "seen"):
                if outcome != "seen":
                    log.info("maintenance window %s by %s (%s): %s", outcome, h["device"], h["source"], h["key"])
                continue
            when = _us_to_ts(h["at_us"]).isoformat().replace("+00:00", "Z")
            letters.append(DeadLetter(h["source"], f"{h['site']} maintenance", json.dumps(h).encode(),
                                      f"maintenance window {h['state']} at {when} not recorded: {outcome}",
                                      {"device": h["device"]}, received_at_us=time.time_ns() // 1000))
        if letters:
            self.sink.note_dead([d.reason for d in letters])
        return letters

    @staticmethod
    def _health(conn: psycopg.Connection, records: list[dict]) -> None:
        """Upsert health snapshots (the latest per device wins) and outage records, in batches."""
        outages = [h for h in records if h.get("kind") == "outage"]
        latest = {h["device"]: h for h in records if h.get("kind") != "outage"}
        with conn.cursor() as cur:
            if outages:
                cur.executemany(
                    "INSERT INTO device_outages (device, started_at, ended_at, reason) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (device, started_at) DO UPDATE SET ended_at = EXCLUDED.ended_at, "
                    "reason = COALESCE(EXCLUDED.reason, device_outages.reason)",
                    [(h["device"], _us_to_ts(h["started_us"]), _us_to_ts(h.get("ended_us")), h.get("reason"))
                     for h in outages])
            if latest:
                cur.executemany(
                    """INSERT INTO device_health (device, site_key, state, last_good_at, last_error_at, last_error,
                           polls, missed_polls, transport_errors, exception_replies, reconnects, updated_at)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())
                       ON CONFLICT (device) DO UPDATE SET site_key = EXCLUDED.site_key, state = EXCLUDED.state,
                           last_good_at = EXCLUDED.last_good_at, last_error_at = EXCLUDED.last_error_at,
                           last_error = EXCLUDED.last_error, polls = EXCLUDED.polls,
                           missed_polls = EXCLUDED.missed_polls, transport_errors = EXCLUDED.transport_errors,
                           exception_replies = EXCLUDED.exception_replies, reconnects = EXCLUDED.reconnects,
                           updated_at = now()""",
                    [(h["device"], h.get("site"), h.get("state", "up"), _us_to_ts(h.get("last_good_us")),
                      _us_to_ts(h.get("last_error_us")), h.get("last_error"), h.get("polls", 0),
                      h.get("missed_polls", 0), h.get("transport_errors", 0), h.get("exception_replies", 0),
                      h.get("reconnects", 0)) for h in latest.values()])

    def _replay(self) -> None:
        """Write the spool's records in order; clear it when all are in."""
        if self._connection() is None:
            return
        for chunk, end in self.spool.replay(self.max_rows * 4):
            if not self._write(chunk):
                return
            self.spool.commit(end)
            self.stats.replayed_chunks += 1
        self.spool.clear()
        self.stats.stored_seq = max(self.stats.stored_seq, self.stats.spooled_seq)
        log.info("spool replayed")


def default_spool_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "spool"
