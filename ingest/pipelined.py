"""Pipelined writes of the TimescaleDB writer (``Writer(pipeline=True)``).

While the database is up and the spool empty, a chunk of readings is written (BEGIN, binary
COPY, COMMIT) by a worker thread on one of two connections while the writer takes the next
chunk and hands it to the other: two chunks are in the database at once, on two backends.
One raw COPY keeps one backend, and so one core, busy; two keep two
(``benchmarks/README.md``, "Two chunks at once").

Each chunk commits as soon as it is written, so no transaction ever waits for another
in Python while it holds its rows' locks (two chunks that share a reading wait for each
other only inside the database, which sees any deadlock and ends one of them). What stays
in order is what the rest of sewerwatch relies on:

* a chunk's callbacks (a collector's acknowledgements) run only once it and every chunk
  taken before it are durable, in the order taken, and the writer's ``stored_seq`` only
  moves over chunks that are all in the database;
* a chunk that failed (an outage, a refusal at COMMIT, a deadlock) is written again by the
  ordinary path (again, the spool, or held) with the callbacks of the chunks after it,
  which wait for it; a chunk after it that did commit is not written twice.

A chunk that carries device health or maintenance windows (records whose order matters)
waits for every chunk in flight and takes the ordinary path.

The writer (:class:`ingest.writer.Writer`) inherits :class:`PipelinedCommits`; it gives
the mixin ``_connection()``, ``_open_connection()``, ``_write_in()``, ``_down()``,
``handle()``, ``stats`` and the state of the chunk it holds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import psycopg

from ingest.batch import Readings
from ingest.sink import Chunk

log = logging.getLogger("sewerwatch.writer")

#: Chunks in the database at once (one connection each).
IN_FLIGHT = 2


def rollback(conn: psycopg.Connection) -> None:
    """Roll back what ``conn`` has begun; a broken connection has nothing to roll back."""
    try:
        conn.rollback()
    except Exception:  # noqa: BLE001 - a broken connection has nothing to roll back
        pass


def first_line(text: str | None) -> str:
    """The first line of a database's message, at most 160 characters."""
    return (text or "").strip().splitlines()[0][:160] if (text or "").strip() else ""


def run_callbacks(chunk: Chunk) -> None:
    """Run ``chunk``'s ``on_durable`` callbacks once it is durable; one failing (a collector's
    acknowledgement) is logged and never stops the writer."""
    for cb in chunk.callbacks:
        try:
            cb()
        except Exception:  # a collector's ack failing must not stop the writer
            log.exception("on_durable callback failed")


@dataclass(eq=False)
class InFlight:
    """A chunk handed to a worker: its connection, when it started [monotonic s], its
    outcome once done."""

    chunk: Chunk
    conn: psycopg.Connection
    started: float = field(default_factory=time.monotonic)
    future: Future | None = None

    @property
    def writing(self) -> bool:
        """Handed over and not yet committed or failed."""
        return self.future is None or not self.future.done()

    @property
    def failed(self) -> bool:
        return self.future is not None and self.future.done() and self.future.exception() is not None


class PipelinedCommits:
    """The writer's chunks written two at a time, on two connections (module docstring)."""

    def _init_pipeline(self) -> None:
        self._conn2: psycopg.Connection | None = None        # the second connection of pipelined writes
        self._committer: ThreadPoolExecutor | None = None
        self._inflight: deque[InFlight] = deque()             # in the order taken from the sink
        self._order = threading.Lock()                        # over _inflight and the in-order completion
        self._stats_lock = threading.Lock()                   # over the counts workers add to
        self._failed: Chunk | None = None    # a chunk whose pipelined write failed: written again first

    def write_next(self, chunk: Chunk) -> bool:
        """What the writer's loop does with a chunk taken from the sink: handed to a worker
        where it can (:meth:`_write_pipelined`), else :meth:`handle`. Unlike :meth:`handle`,
        it may return before the chunk is committed (its callbacks run then)."""
        if self._write_pipelined(chunk):
            return True
        return self.handle(chunk)

    def _write_pipelined(self, chunk: Chunk) -> bool:
        """Hand ``chunk`` to a worker on a connection no chunk in flight is using. False: it
        is not pipelined now (off, the database down, the spool not empty, a failure to
        settle first, records whose order matters); :meth:`handle` goes the ordinary way."""
        if not (self.pipeline and len(chunk.readings) and self._held is None and self._failed is None
                and not chunk.health and self.stats.db_up and self.spool.empty()):
            return False
        if self._front_failed():
            return False
        conn = self._spare_connection()
        if conn is None or self._front_failed():
            return False
        if self._committer is None:
            self._committer = ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="sewerwatch-write")
        job = InFlight(chunk, conn)
        with self._order:
            self._inflight.append(job)
        job.future = self._committer.submit(self._copy_and_commit, job)
        job.future.add_done_callback(lambda _f: self._complete())
        return True

    def _copy_and_commit(self, job: InFlight) -> None:
        """In a worker: the chunk in one transaction of its own."""
        conn = job.conn
        try:
            conn.execute("BEGIN")          # one transaction to the COMMIT (the COPY's own is a savepoint)
            self._write_in(conn, job.chunk)
            conn.commit()
        except psycopg.Error:
            rollback(conn)
            raise

    def _front_failed(self) -> bool:
        with self._order:
            return bool(self._inflight) and self._inflight[0].failed

    def _complete(self) -> None:
        """Finish the chunks at the front that are committed, in order: counted, marked
        stored, their callbacks run. Stops at one not done or failed (:meth:`_settle`)."""
        with self._order:
            while self._inflight:
                job = self._inflight[0]
                if job.writing or job.failed:
                    return
                self._inflight.popleft()
                self.stats.chunks += 1
                self.stats.last_commit_at = time.time()
                self.stats.stored_seq = max(self.stats.stored_seq, job.chunk.seq)
                run_callbacks(job.chunk)

    def _settle(self) -> None:
        """Wait for every chunk in flight. Those after a failed one wait for it: the failed
        chunks (their readings) and the callbacks of all from the first failure on are left
        in ``_failed``, for :meth:`handle` to make durable first."""
        if not self._inflight:
            return
        wait([j.future for j in list(self._inflight) if j.future is not None])   # their outcomes: below, in order
        self._complete()
        with self._order:
            left, self._inflight = list(self._inflight), deque()
        if not left:
            return
        failed = [j for j in left if j.failed]
        for j in failed:
            self._failure(j)
        readings = Readings.concat([j.chunk.readings for j in failed])
        merged = Chunk(readings, [d for j in failed for d in j.chunk.dead_letters], [],
                       [cb for j in left for cb in j.chunk.callbacks], max(j.chunk.seq for j in left))
        self.stats.chunks += len(left) - len(failed)
        self._failed = merged if self._failed is None else merge_chunks(self._failed, merged)

    def _failure(self, job: InFlight) -> None:
        """What a failed pipelined write says about the database: an outage (its connection
        closed), a refusal (logged; the ordinary path decides), or a deadlock between the two
        chunks in flight (nothing: the ordinary path writes it alone)."""
        exc = job.future.exception()
        if isinstance(exc, psycopg.Error) and (exc.sqlstate or "").startswith("40"):   # deadlock, serialization
            log.info("a chunk was written again alone after it met the one beside it (%s)", first_line(str(exc)))
            return
        if not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
            log.error("database refused a chunk at commit (%s); written again or spooled", exc)
            self.stats.errors.append(str(exc)[:500])
        if job.conn is self._conn2:
            self._conn2 = None
            try:
                job.conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
        self._down(exc)

    def _writing(self) -> list[InFlight]:
        """The chunks still being written (behind_s, the health's count, the busy connections)."""
        with self._order:
            return [j for j in self._inflight if j.writing]

    def _busy_connections(self) -> set[int]:
        return {id(j.conn) for j in self._writing()}

    def _spare_connection(self) -> psycopg.Connection | None:
        """A connection no chunk in flight is using (the second one made when needed); waits
        for the oldest chunk in flight when both are busy."""
        main = self._connection()
        if main is None:
            return None
        busy = self._busy_connections()
        if id(main) not in busy:
            return main
        if self._conn2 is None or self._conn2.closed:
            try:
                self._conn2 = self._open_connection()
            except psycopg.Error as exc:
                log.warning("a second database connection for pipelined writes failed (%s); writing on one",
                            first_line(str(exc)))
                self._conn2 = None
                return None
        if id(self._conn2) not in busy:
            return self._conn2
        with self._order:
            oldest = self._inflight[0] if self._inflight else None
        if oldest is not None and oldest.future is not None:
            wait([oldest.future])          # its outcome is looked at in order
        busy = self._busy_connections()
        for conn in (main, self._conn2):
            if conn is not None and not conn.closed and id(conn) not in busy:
                return conn
        return None

    def _inflight_readings(self) -> int:
        """Readings of the chunks still being written."""
        return sum(len(j.chunk.readings) for j in self._writing())

    def _inflight_since(self) -> float | None:
        """When the oldest chunk still being written was handed over [monotonic s], or None."""
        return min((j.started for j in self._writing()), default=None)


def merge_chunks(first: Chunk, then: Chunk) -> Chunk:
    """Two chunks as one, in their order (a chunk whose write failed and the one after it)."""
    return Chunk(Readings.concat([first.readings, then.readings]), first.dead_letters + then.dead_letters,
                 first.health + then.health, first.callbacks + then.callbacks, max(first.seq, then.seq))
