"""The alert manager's writes, in order, kept on local disk until the database has them.

Alerts never wait for the database: the manager decides and notifies from
memory, and every database write it would make (a violation row, an alert row, a state
change, a delivery attempt, an audit row) becomes an *op* put here. :meth:`Outbox.run`
applies the ops in order through :meth:`alerts.store.AlertStore.apply`; while the database
is unreachable they wait, and are applied when it returns, each exactly once (the
``alert_ops`` table records every op applied, in the op's own transaction).

Each op is also appended to a journal file (JSON lines, fsynced) before it is queued, so
ops not yet applied survive a restart: :meth:`Outbox.load` queues them again at start. The
journal is emptied whenever every op is applied. A journal that cannot be written (full or
read-only disk) is said so once; the ops are then kept in memory only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from collections import deque
from pathlib import Path

import psycopg

log = logging.getLogger("sewerwatch.alerts")

#: Longest one op may take before the connection is dropped and the op tried again [s].
APPLY_TIMEOUT_S = 10.0
#: Retry backoff while the database is unreachable [s]: from the first to the last, doubling.
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.25, 5.0
#: Alert numbers kept taken ahead, so an opening's message need not wait for its row.
IDS_AHEAD = 4


class Outbox:
    """Ops waiting for the database, journalled in ``path``.

    Parameters
    ----------
    store : alerts.store.AlertStore
        Applies the ops.
    path : path-like or None
        The journal (``<state dir>/alerts-outbox.jsonl``); None keeps ops in memory only.
    on_db_up : coroutine function, optional
        Awaited (once each time) when the database becomes reachable again.
    """

    def __init__(self, store, path: Path | None = None, on_db_up=None, gate=None):
        self.store = store
        self.gate = gate      # async (timeout) -> bool: ops wait while this run is unsure it still leads
        self.path = Path(path) if path is not None else None
        self.on_db_up = on_db_up
        self._ops: deque = deque()
        self._futures: dict[str, asyncio.Future] = {}
        self._wake: asyncio.Event | None = None
        self.db_up: bool | None = None           # None: not tried yet
        self.down_since: float | None = None     # [epoch s]
        self.last_error: str | None = None
        self.journal_error: str | None = None
        self.applied = 0
        self.dropped = 0
        self.applying_since: float | None = None   # [monotonic s] an op being applied
        self.slow_since: float | None = None       # [monotonic s] ops time out: the database is slow, not down
        self._refused_logged = 0.0
        self._ids: deque = deque()               # alert numbers taken ahead (IDS_AHEAD)
        self._taking: asyncio.Future | None = None   # set while numbers are being taken

    def __len__(self) -> int:
        return len(self._ops)

    def behind_s(self) -> float | None:
        """How long the alert writes have been held up by a slow database [s], or None."""
        since = self.slow_since if self.slow_since is not None else self.applying_since
        return None if since is None else time.monotonic() - since

    def status(self) -> dict:
        return {"pending_ops": len(self._ops), "db_up": self.db_up, "applied": self.applied,
                "db_down_for_s": None if self.down_since is None else round(time.time() - self.down_since, 1),
                "last_error": self.last_error, "journal": str(self.path) if self.path else None,
                "journal_error": self.journal_error, "dropped": self.dropped, "numbers_ahead": len(self._ids)}

    async def take_id(self) -> int | None:
        """An alert number taken ahead from the database's sequence (the next opening's), or
        None when none is at hand (the database down, or not yet asked). While numbers are
        being taken it waits for them (1 s at most): an opening numbered by its row meanwhile
        would come after them, and the alerts' numbers would not follow their order."""
        if not self._ids and self._taking is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._taking), 1.0)
            except asyncio.TimeoutError:
                pass
        return self._ids.popleft() if self._ids else None

    async def _top_up_ids(self) -> None:
        """Take alert numbers ahead while idle, the database up and this run leading."""
        if len(self._ids) >= IDS_AHEAD or not self.db_up:
            return
        if self.gate is not None and not await self.gate(0.0):
            return
        self._taking = asyncio.get_running_loop().create_future()
        try:
            self._ids.extend(await asyncio.wait_for(self.store.reserve_ids(IDS_AHEAD - len(self._ids)),
                                                    APPLY_TIMEOUT_S))
        except (psycopg.Error, OSError, asyncio.TimeoutError) as exc:
            log.debug("alert outbox: no alert numbers taken ahead (%s)", exc)
        finally:
            taking, self._taking = self._taking, None
            taking.set_result(None)

    # -- putting ------------------------------------------------------------------------

    def load(self) -> int:
        """Queue the ops a previous run journalled but did not apply; returns their number."""
        if self.path is None or not self.path.is_file():
            return 0
        n = 0
        try:
            lines = self.path.read_bytes().splitlines()
        except OSError as exc:
            log.error("alert outbox: cannot read %s (%s); its ops are lost", self.path, exc.strerror or exc)
            return 0
        for line in lines:
            try:
                op = json.loads(line)
            except ValueError:
                continue                 # a line torn by a crash: its op was never acted on
            if isinstance(op, dict) and "op_id" in op:
                self._ops.append(op)
                n += 1
        if n:
            log.warning("alert outbox: %d database writes of an earlier run are waiting; applying them", n)
        return n

    def put(self, op: dict) -> asyncio.Future:
        """Journal ``op`` and queue it; the future gets its result once applied."""
        op = {**op, "op_id": uuid.uuid4().hex}
        self._journal(op)
        self._ops.append(op)
        fut = asyncio.get_running_loop().create_future()
        self._futures[op["op_id"]] = fut
        if self._wake is not None:
            self._wake.set()
        return fut

    def _journal(self, op: dict) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, "ab") as f:
                f.write(json.dumps(op, default=str).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            self.journal_error = None
        except OSError as exc:
            if self.journal_error is None:
                log.error("alert outbox: cannot journal to %s (%s); pending writes are kept in memory only",
                          self.path, exc.strerror or exc)
            self.journal_error = f"{self.path}: {exc.strerror or exc}"

    def _truncate(self) -> None:
        if self.path is None:
            return
        try:
            if self.path.exists() and self.path.stat().st_size:
                os.truncate(self.path, 0)
        except OSError as exc:
            log.warning("alert outbox: cannot empty %s (%s); its ops are applied again at the next start, "
                        "and skipped as applied", self.path, exc.strerror or exc)

    # -- applying -----------------------------------------------------------------------

    async def run(self, beat=lambda: None) -> None:
        """Apply ops in order, forever (cancel to stop); ``beat`` is called as it goes."""
        self._wake = asyncio.Event()
        backoff = BACKOFF_MIN_S
        while True:
            beat()
            if not self._ops:
                self._truncate()
                self._wake.clear()
                await self._top_up_ids()
                try:
                    await asyncio.wait_for(self._wake.wait(), 1.0)
                except asyncio.TimeoutError:
                    pass
                continue
            op = self._ops[0]
            if self.gate is not None and not await self.gate(1.0):
                await asyncio.sleep(0.5)          # not leading (or unsure): the ops wait in the journal
                continue
            self.applying_since = time.monotonic()
            try:
                result = await asyncio.wait_for(self.store.apply(op), APPLY_TIMEOUT_S)
            except asyncio.TimeoutError:
                # the op waited its whole time (a lock, a loaded server): slow, not down
                self.applying_since = None
                if self.slow_since is None:
                    self.slow_since = time.monotonic() - APPLY_TIMEOUT_S
                    log.warning("alert database slow: a write waited %.0f s; %d writes wait, notifications go on",
                                APPLY_TIMEOUT_S, len(self._ops))
                await self.store.reset()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            except (psycopg.OperationalError, psycopg.InterfaceError, OSError) as exc:
                self.applying_since = None
                self._down(exc)
                await self.store.reset()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            except psycopg.Error as exc:
                self.applying_since = None
                # the database refused this op (not an outage): kept, tried again, said loudly
                self._refused(op, exc)
                await self.store.reset()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            except Exception as exc:  # noqa: BLE001 - a malformed op can never be applied
                self.applying_since = None
                self._drop(op, exc)
                continue
            self.applying_since = self.slow_since = None
            backoff = BACKOFF_MIN_S
            self._ops.popleft()
            self.applied += 1
            fut = self._futures.pop(op["op_id"], None)
            if fut is not None and not fut.done():
                fut.set_result(result)
            await self._up()

    def _refused(self, op: dict, exc: Exception) -> None:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if self.last_error != text or time.monotonic() - self._refused_logged > 30:
            self._refused_logged = time.monotonic()
            log.error("ALERT NOT YET RECORDED (database refused %s: %s); %d writes wait, retrying",
                      op.get("op"), text, len(self._ops))
        self.last_error = text[:300]

    def _drop(self, op: dict, exc: Exception) -> None:
        self._ops.popleft()
        self.dropped += 1
        log.exception("alert outbox: %s cannot be applied (%s: %s); dropped: %s", op.get("op"),
                      type(exc).__name__, exc, json.dumps(op, default=str)[:500])
        fut = self._futures.pop(op["op_id"], None)
        if fut is not None and not fut.done():
            fut.set_exception(exc)

    def _down(self, exc: Exception) -> None:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if self.db_up or self.db_up is None:
            log.warning("alert database unreachable (%s); %d writes wait, notifications go on", text, len(self._ops))
            self.down_since = time.time()
        self.db_up = False
        self.last_error = text[:300]

    async def _up(self) -> None:
        if self.db_up:
            return
        was_down = self.db_up is False
        self.db_up, self.down_since = True, None
        if was_down:
            log.info("alert database reachable again; %d writes left to apply", len(self._ops))
        if self.on_db_up is not None:
            try:
                await self.on_db_up()
            except Exception:  # noqa: BLE001 - merging may fail; the writes go on
                log.exception("alert outbox: catching up with the database failed")

    async def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every op to be applied; True when none is left."""
        end = time.monotonic() + timeout
        while self._ops and time.monotonic() < end:
            await asyncio.sleep(0.05)
        return not self._ops

    async def probe(self) -> None:
        """Find out whether the database is reachable when no op has told yet."""
        if self.db_up is not None:
            return
        try:
            await asyncio.wait_for(self.store.open(), APPLY_TIMEOUT_S)
        except (psycopg.Error, OSError, asyncio.TimeoutError) as exc:
            self._down(exc)
            return
        await self._up()
