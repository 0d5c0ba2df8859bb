"""Who leads ``sewerwatch run``: one leader judges and alerts, a standby waits to take over.

Several ``run`` instances may run against one database (issue 15, item 4). The leader holds
a PostgreSQL session-level advisory lock on a connection of its own; the others are
standbys that collect nothing, judge nothing, alert nobody, and try the lock every
``POLL_S``. Why a lock and not a lease row with a heartbeat: the server releases the lock
the moment the leader's session ends, and a leader killed by SIGKILL or a crash ends it at
once (the kernel closes its socket), so a standby takes over within a poll (0.5 s) with no
lease length to tune, no clock to trust and no write every few seconds. A leader whose host
vanishes without closing the socket is found by TCP keepalives, set here on both sides
(``KEEPALIVE_*``: about 10 s).

What the new leader does so that no episode is alerted twice or missed:

- it connects to the broker with the same MQTT client id as every leader (``run
  --client-id``, default ``sewerwatch-run``), so the persistent session has queued every
  reading published during the takeover, with the ones the old leader had not acknowledged;
- before it starts collecting, its evaluator judges again the readings stored in the last
  ``WARM_UP_S`` (and back to the start of any episode still open in ``violations``, at most
  a day), so it sees the episodes the old leader saw, with the same starts;
- its alert manager takes up the alerts not resolved from the database, with the starts of
  the episodes they cover, so an episode the old leader alerted continues that alert (no
  second alert, no second e-mail), and an episode the old leader had not alerted yet (it
  died first) is alerted now.

The database going down while both run: both lose the lock. The leader keeps judging and
alerting from memory (alerts never wait for the database, issue 12) and tries to take the
lock back every ``CHECK_S``; a standby that lost its own connection waits ``GRACE_S``
after the database returns before it tries, so the old leader takes the lock back first. A
leader that finds the database reachable and the lock held by another steps down at once
(its collectors stop, it becomes a standby). Two leaders alert at the same time only while
a leader is cut off from a database the standby still reaches (a network partition): the
standby takes over when the server drops the old session (keepalives, about 10 s), and the
old leader goes on from memory until it reaches the database again, then steps down; the
database's episode records keep the alert rows single, not the e-mails. README "A standby
for run" has the figures.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time

import psycopg

log = logging.getLogger("sewerwatch.leader")

#: The advisory lock's key (per database): "SW" and 1.
LOCK_KEY = 0x5357_0001
#: A standby tries the lock this often [s].
POLL_S = 0.5
#: A leader checks its lock's connection this often, and tries to take a lost lock back [s].
CHECK_S = 1.0
#: After the database was unreachable for a standby, it waits this long before it tries the
#: lock, so that the leader of before the outage takes it back first [s].
GRACE_S = 5.0
#: Readings judged again by a new leader before it collects [s].
WARM_UP_S = 900.0
#: TCP keepalives of the lock's connection, client and server side: idle [s], interval [s], count.
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 4, 2, 3

HOLDER_SQL = """SELECT a.pid, a.application_name, a.client_addr::text, a.backend_start
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = %s AND l.objsubid = 1"""


class LeaderLock:
    """The right to lead: ``pg_try_advisory_lock`` on a dedicated connection.

    Parameters
    ----------
    url : str
        Database URL (any role may take an advisory lock).
    name : str
        Who asks (``application_name`` of the connection, shown in ``sewerwatch status``).
    """

    def __init__(self, url: str, name: str | None = None):
        self.url = url
        self.name = name or f"sewerwatch-run {socket.gethostname()} pid {os.getpid()}"
        self.conn: psycopg.Connection | None = None
        self.held = False

    def _connect(self) -> psycopg.Connection:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=3, application_name=self.name[:63],
                keepalives=1, keepalives_idle=KEEPALIVE_IDLE_S, keepalives_interval=KEEPALIVE_INTERVAL_S,
                keepalives_count=KEEPALIVE_COUNT)
            # the server side too: a leader's host that vanishes frees the lock in ~10 s
            self.conn.execute(f"SET tcp_keepalives_idle = {KEEPALIVE_IDLE_S}; "
                              f"SET tcp_keepalives_interval = {KEEPALIVE_INTERVAL_S}; "
                              f"SET tcp_keepalives_count = {KEEPALIVE_COUNT}; SET statement_timeout = '3s'")
        return self.conn

    def try_acquire(self) -> bool:
        """Take the lock if it is free. Raises :class:`psycopg.OperationalError` when the
        database is unreachable."""
        try:
            got = self._connect().execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]
        except psycopg.Error:
            self.close()
            raise
        self.held = bool(got)
        return self.held

    def connect(self) -> None:
        """Open the connection only (raises when the database is unreachable)."""
        try:
            self._connect().execute("SELECT 1")
        except psycopg.Error:
            self.close()
            raise

    def still_held(self) -> bool:
        """Whether the lock's session is alive (then the lock is ours: only its end frees it)."""
        if not self.held or self.conn is None:
            return False
        try:
            self.conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            self.close()
            return False

    def holder(self) -> dict | None:
        """Who holds the lock now (pid, application name, address, since), or None."""
        try:
            row = self._connect().execute(HOLDER_SQL, (LOCK_KEY,)).fetchone()
        except psycopg.Error:
            self.close()
            return None
        if row is None:
            return None
        return {"pid": row[0], "name": row[1], "address": row[2], "since": row[3].isoformat()}

    def close(self) -> None:
        """Drop the connection (and with it the lock)."""
        self.held = False
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
            self.conn = None


class Leadership:
    """Stand by until the lock is free, lead while it is held (:func:`lead_or_stand_by`).

    ``role`` is ``standby`` or ``leader``; ``status()`` is what the status file shows.
    """

    def __init__(self, lock: LeaderLock, standby: bool = True, grace_s: float = GRACE_S):
        self.lock, self.standby, self.grace_s = lock, standby, grace_s
        self.role = "standby"
        self.since = time.time()
        self.leader: dict | None = None          # who leads, as a standby sees it
        self.db_error: str | None = None
        self.lock_lost_since: float | None = None
        self.took_over_in_s: float | None = None   # from the lock's release seen to leading [s]
        self.terms = 0

    def status(self) -> dict:
        out = {"role": self.role, "since": self.since, "terms": self.terms}
        if self.role == "standby":
            out["leader"] = self.leader
            out["database_error"] = self.db_error
        else:
            out["lock"] = "held" if self.lock_lost_since is None else (
                f"lost {time.time() - self.lock_lost_since:.0f} s ago (database unreachable); leading from memory")
        return out

    async def wait_for_lock(self, stop: asyncio.Event, on_standby=lambda: None) -> bool:
        """Stand by until the lock is ours (True) or ``stop`` is set (False)."""
        loop = asyncio.get_running_loop()
        not_before = 0.0
        was_down = False
        self.role, self.since = "standby", time.time()
        while not stop.is_set():
            try:
                if was_down:
                    await loop.run_in_executor(None, self.lock.connect)     # raises while it is down
                    # the database is back: the leader of before the outage takes its lock back first
                    was_down, not_before = False, time.monotonic() + self.grace_s
                    log.info("database reachable again; standing by %.0f s for the leader to take its lock back",
                             self.grace_s)
                elif time.monotonic() >= not_before and await loop.run_in_executor(None, self.lock.try_acquire):
                    self.role, self.since, self.leader, self.db_error = "leader", time.time(), None, None
                    self.terms += 1
                    return True
                self.leader = await loop.run_in_executor(None, self.lock.holder)
                self.db_error = None
            except psycopg.OperationalError as exc:
                if not was_down:
                    log.warning("standby: database unreachable (%s)", _first_line(exc))
                was_down, self.db_error = True, _first_line(exc)
            on_standby()
            try:
                await asyncio.wait_for(stop.wait(), POLL_S)
            except asyncio.TimeoutError:
                pass
        return False

    async def keep(self, step_down: asyncio.Event, stop: asyncio.Event) -> None:
        """While leading: check the lock every :data:`CHECK_S`. Lost with the database
        unreachable: lead on from memory and take it back when it returns; the database
        reachable and the lock another's: set ``step_down``."""
        loop = asyncio.get_running_loop()
        while not stop.is_set() and not step_down.is_set():
            await asyncio.sleep(CHECK_S)
            if await loop.run_in_executor(None, self.lock.still_held):
                continue
            if self.lock_lost_since is None:
                self.lock_lost_since = time.time()
                log.error("leader: lost the lock's connection; leading on from memory, taking it back when the "
                          "database returns")
            try:
                got = await loop.run_in_executor(None, self.lock.try_acquire)
            except psycopg.OperationalError:
                continue                         # the database is down for everyone: lead on
            if got:
                log.info("leader: lock taken back after %.1f s", time.time() - self.lock_lost_since)
                self.lock_lost_since = None
            else:
                holder = await loop.run_in_executor(None, self.lock.holder)
                log.error("leader: another run leads now (%s); stepping down", holder)
                self.lock_lost_since = None
                step_down.set()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def lead_or_stand_by(leadership: Leadership, make_pipeline, stop: asyncio.Event, on_standby=lambda: None):
    """Stand by, lead, step down and stand by again, until ``stop`` is set.

    ``make_pipeline()`` builds a :class:`sewerwatch.pipeline.Pipeline` for one term (with
    ``--standby``, one that judges the recent readings again first: it may be taking over).
    Without ``leadership.standby`` (a plain ``run``) the caller holds the lock already and a
    step-down ends the run. Returns the last term's pipeline (None when it never led).
    """
    pipeline = None
    while not stop.is_set():
        if not leadership.lock.held:
            if not leadership.standby or not await leadership.wait_for_lock(stop, on_standby):
                return pipeline
        term_stop, step_down = asyncio.Event(), asyncio.Event()
        pipeline = make_pipeline()
        keeper = asyncio.get_running_loop().create_task(leadership.keep(step_down, stop), name="leadership")

        async def relay():
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(step_down.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                term_stop.set()
            finally:
                for w in waits:
                    w.cancel()
        relayer = asyncio.get_running_loop().create_task(relay(), name="leadership relay")
        try:
            await pipeline.run(term_stop)
        finally:
            for t in (keeper, relayer):
                t.cancel()
            leadership.lock.close()
        if step_down.is_set():
            if not leadership.standby:
                raise StepDown("another run leads now; this one stepped down (start it with --standby to wait)")
            log.info("stepped down; standing by")
    return pipeline


class StepDown(Exception):
    """A plain ``run`` (not ``--standby``) found another leader and stopped."""
