"""Pipelined commits of the TimescaleDB writer (``Writer(pipeline=True)``; off by default).

While the database is up and the spool empty, a chunk's COMMIT (the server's flush of its
WAL to disk) runs in a committer thread on one connection while the next chunk is copied on a second.
Chunks are committed in the order they were taken: the next is committed only after the one
before was, and when a commit fails the chunk copied meanwhile is rolled back and both take
the ordinary path (again, the spool, or held). A chunk's callbacks still run only once it is
committed.

The writer (:class:`ingest.writer.Writer`) inherits :class:`PipelinedCommits`; it gives
the mixin ``_connection()``, ``_open_connection()``, ``_write_in()``, ``_down()``,
``handle()``, ``stats`` and the state of the chunk it holds.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg

from ingest.sink import Chunk

log = logging.getLogger("sewerwatch.writer")


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


class PipelinedCommits:
    """The writer's commit of one chunk while the next is copied, on a second connection."""

    def _init_pipeline(self) -> None:
        self._conn2: psycopg.Connection | None = None        # the second connection of pipelined commits
        self._committer: ThreadPoolExecutor | None = None
        self._pending: tuple[Future, Chunk, psycopg.Connection] | None = None   # a commit in flight
        self._failed: Chunk | None = None    # a chunk whose pipelined commit failed: written again first

    def write_next(self, chunk: Chunk) -> bool:
        """What the writer's loop does with a chunk taken from the sink: copied while the chunk
        before commits where it can (:meth:`_write_pipelined`), else :meth:`handle`. Unlike
        :meth:`handle`, it may return before the chunk is committed (its callbacks run then)."""
        if self._write_pipelined(chunk):
            return True
        return self.handle(chunk)

    def _write_pipelined(self, chunk: Chunk) -> bool:
        """Copy ``chunk`` on the connection not committing and hand its COMMIT to the
        committer, once the chunk before is committed. False: nothing of it is stored (not
        pipelined now, or it failed and was rolled back); :meth:`handle` goes the ordinary way."""
        if not (self.pipeline and len(chunk.readings) and self._held is None and self._failed is None
                and self.stats.db_up and self.spool.empty()):
            return False
        conn = self._spare_connection()
        if conn is None:
            return False
        self._writing_since = time.monotonic()
        try:
            conn.execute("BEGIN")          # one transaction to the COMMIT (the COPY's own is a savepoint)
            self._write_in(conn, chunk)
        except psycopg.Error:
            rollback(conn)
            return False
        finally:
            self._writing_since = None
        self._settle()
        if self._failed is not None:          # the chunk before did not commit: never this one first
            rollback(conn)
            return False
        if self._committer is None:
            self._committer = ThreadPoolExecutor(1, thread_name_prefix="sewerwatch-commit")
        self._pending = (self._committer.submit(self._commit, conn, chunk), chunk, conn)
        return True

    def _commit(self, conn: psycopg.Connection, chunk: Chunk) -> None:
        """In the committer thread: commit, then what :meth:`handle` does once a chunk is durable."""
        conn.commit()
        self.stats.chunks += 1
        self.stats.last_commit_at = time.time()
        self.stats.stored_seq = max(self.stats.stored_seq, chunk.seq)
        run_callbacks(chunk)

    def _settle(self) -> None:
        """Wait for the commit in flight; a failed one leaves its chunk in ``_failed``."""
        if self._pending is None:
            return
        fut, chunk, conn = self._pending
        self._pending = None
        self._writing_since = time.monotonic()
        try:
            fut.result()
        except psycopg.Error as exc:
            if not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
                log.error("database refused a chunk at commit (%s); written again or spooled", exc)
                self.stats.errors.append(str(exc)[:500])
            rollback(conn)
            if conn is self._conn2:
                self._conn2 = None
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass
            self._down(exc)
            self._failed = chunk
        finally:
            self._writing_since = None

    def _spare_connection(self) -> psycopg.Connection | None:
        """The connection the commit in flight is not using (the second one made when needed)."""
        main = self._connection()
        if main is None:
            return None
        if self._pending is None or self._pending[2] is not main:
            return main
        if self._conn2 is None or self._conn2.closed:
            try:
                self._conn2 = self._open_connection()
            except psycopg.Error as exc:
                log.warning("a second database connection for pipelined commits failed (%s); writing on one",
                            first_line(str(exc)))
                self._conn2 = None
                return None
        return self._conn2
