"""Who leads ``sewerwatch run``: one leader judges and alerts, a standby waits to take over.

Several ``run`` instances may run against one database. Leadership is a
**lease** in the database (``run_lease``, migration 0101): the leader
renews it every :data:`CHECK_S`, each renewal good for ``[run] lease_s`` (5 s) of the
database's clock; a standby tries to take it every :data:`POLL_S` and succeeds once it has
expired. A lock was not enough: a frozen leader (SIGSTOP, a hung disk, a paused VM) keeps
its connection, so it kept the lock, and nobody took over. A lease a frozen process cannot
renew expires, and a standby leads within ``lease_s`` and a poll. Only the database's clock
is compared with itself; the hosts' clocks never are.

A leader that dies (SIGKILL, a crash) is taken over within a poll, as when this was a lock:
the lease names the server process of the leader's connection, and a lease whose
connection is gone is void. A frozen leader's connection stays open, so only the expiry
frees its lease.

The leader that thaws must not act on what it had in hand. :meth:`Leadership.fence` is the
gate every notification, every database write of the alerts and every (re)connection of its
MQTT collector passes: closed when the lease is known lost, and *unsure* when the last
renewal is older than the lease without the database being down (the process stood still):
then it waits for the next renewal, which either succeeds (nobody took over: go on) or
finds another term (step down: nothing in hand is sent). While the database is unreachable
the leader leads on from memory (alerts never wait for the database); a standby
cannot take an expired lease meanwhile, and after the database returns it waits
:data:`GRACE_S` so the leader of before the outage renews first.

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

Two leaders alert at the same time only while a leader is cut off from a database the
standby still reaches (a network partition): the standby takes over once the lease has
expired, the old leader goes on from memory until it reaches the database again, then finds
another term and steps down; the database's episode records keep the alert rows single, not
the e-mails. The guide's docs/running/scale-out.md has the figures.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets as _random
import socket
import time

import psycopg

log = logging.getLogger("sewerwatch.leader")

#: A standby tries to take the lease this often [s].
POLL_S = 0.5
#: The leader renews its lease this often [s].
CHECK_S = 1.0
#: After the database was unreachable for a standby, it waits this long before it tries the
#: lease, so that the leader of before the outage renews it first [s].
GRACE_S = 5.0
#: Readings judged again by a new leader before it collects [s].
WARM_UP_S = 900.0
#: The lease's length unless configured ([run] lease_s) [s].
LEASE_S = 5.0

#: Taken when expired, or when its holder's connection is gone (a leader killed or crashed:
#: the kernel closed its socket and the server ended its session), or when its holder is a
#: process of this host that no longer runs.
ACQUIRE_SQL = """INSERT INTO run_lease AS l (id, holder, term, acquired_at, renewed_at, expires_at, backend_pid)
    VALUES (1, %(me)s, 1, now(), now(), now() + make_interval(secs => %(lease)s), pg_backend_pid())
    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, term = l.term + 1, acquired_at = now(),
        renewed_at = now(), expires_at = EXCLUDED.expires_at, backend_pid = EXCLUDED.backend_pid
    WHERE l.expires_at < now() OR l.holder = %(dead)s
        OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.backend_pid)
    RETURNING term"""
RENEW_SQL = """UPDATE run_lease SET renewed_at = now(), expires_at = now() + make_interval(secs => %(lease)s),
        backend_pid = pg_backend_pid()
    WHERE id = 1 AND holder = %(me)s AND term = %(term)s RETURNING term"""
HOLDER_SQL = """SELECT holder, term, acquired_at, renewed_at, expires_at, expires_at < now() FROM run_lease
    WHERE id = 1"""


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class LeaderLease:
    """The right to lead: the row of ``run_lease``, taken when expired, renewed while led.

    Parameters
    ----------
    url : str
        Database URL (the owner role).
    name : str, optional
        Who asks (``sewerwatch-run <host> pid <pid>``, shown in ``sewerwatch status``); a
        random token is added so two processes never share a name.
    lease_s : float
        How long a renewal is good for [s].
    """

    def __init__(self, url: str, name: str | None = None, lease_s: float = LEASE_S):
        self.url = url
        base = name or f"sewerwatch-run {socket.gethostname()} pid {os.getpid()}"
        self.name = base
        self.me = f"{base} {_random.token_hex(4)}"
        self.lease_s = float(lease_s)
        self.conn: psycopg.Connection | None = None
        self.held = False
        self.term: int | None = None

    def _connect(self) -> psycopg.Connection:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=3,
                                        application_name=self.name[:63],
                                        options="-c statement_timeout=3000")
        return self.conn

    def _run(self, sql: str, params=None):
        try:
            return self._connect().execute(sql, params).fetchone()
        except psycopg.Error:
            self.close(keep_held=True)
            raise

    def try_acquire(self) -> bool:
        """Take the lease if it has expired (or its holder is a process of this host that is
        gone). Raises :class:`psycopg.OperationalError` when the database is unreachable."""
        row = self._run(ACQUIRE_SQL, {"me": self.me, "lease": self.lease_s, "dead": self._dead_holder() or ""})
        self.held = row is not None
        self.term = row[0] if row else None
        return self.held

    def _dead_holder(self) -> str | None:
        """The holder's name when it is a process of this host that no longer runs (a
        ``run`` killed and started again need not wait out its own lease)."""
        try:
            row = self._connect().execute(HOLDER_SQL).fetchone()
        except psycopg.Error:
            return None
        if row is None:
            return None
        parts = row[0].split()
        if len(parts) >= 5 and parts[0] == "sewerwatch-run" and parts[1] == socket.gethostname() and parts[2] == "pid":
            try:
                os.kill(int(parts[3]), 0)
            except ProcessLookupError:
                return row[0]
            except (OSError, ValueError):
                return None
        return None

    def renew(self) -> bool:
        """Renew the lease; False when another term holds it (lost). Raises
        :class:`psycopg.OperationalError` when the database is unreachable."""
        if self.term is None:
            return False
        row = self._run(RENEW_SQL, {"me": self.me, "lease": self.lease_s, "term": self.term})
        if row is None:
            self.held = False
        return row is not None

    def connect(self) -> None:
        """Open the connection only (raises when the database is unreachable)."""
        self._run("SELECT 1")

    def holder(self) -> dict | None:
        """Who holds the lease (name, term, since, renewed, expires, expired), or None."""
        try:
            row = self._connect().execute(HOLDER_SQL).fetchone()
        except psycopg.Error:
            self.close(keep_held=True)
            return None
        if row is None:
            return None
        return {"name": row[0].rsplit(" ", 1)[0], "term": row[1], "since": row[2].isoformat(),
                "renewed": row[3].isoformat(), "expires": row[4].isoformat(), "expired": row[5]}

    def close(self, keep_held: bool = False) -> None:
        """Drop the connection (the lease stays until it expires, unless released)."""
        if not keep_held:
            self.held = False
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
            self.conn = None

    def release(self) -> None:
        """Give the lease up at once (a clean stop: a standby need not wait for it to expire)."""
        if self.term is not None:
            try:
                self._connect().execute("DELETE FROM run_lease WHERE id = 1 AND holder = %s AND term = %s",
                                        (self.me, self.term))
            except psycopg.Error:
                pass
        self.close()


class Leadership:
    """Stand by until the lease is free, lead while it is held (:func:`lead_or_stand_by`).

    ``role`` is ``standby`` or ``leader``; ``status()`` is what the status file shows;
    :meth:`fence` (and :meth:`may_act`) gate what a leader does.
    """

    def __init__(self, lock: LeaderLease, standby: bool = True, grace_s: float = GRACE_S):
        self.lock, self.standby, self.grace_s = lock, standby, grace_s
        self.role = "standby"
        self.since = time.time()
        self.leader: dict | None = None          # who leads, as a standby sees it
        self.db_error: str | None = None
        self.renewed_at: float | None = None     # [monotonic s] the last renewal that succeeded
        self.unreachable_since: float | None = None   # [monotonic s] renewals failing: database down
        self.lost = False
        self.terms = 0
        self.stepped_down = 0

    # -- the fence ---------------------------------------------------------------------

    def may_act(self) -> bool | None:
        """True: lead on; False: the lease is lost (do nothing more); None: unsure — the
        last renewal is older than the lease and the database was not down (this process
        stood still), wait for the next renewal."""
        if self.role != "leader" or self.lost:
            return False
        if self.renewed_at is None:
            return True
        if time.monotonic() - self.renewed_at <= self.lock.lease_s or self.unreachable_since is not None:
            return True
        return None

    async def fence(self, timeout: float = 30.0) -> bool:
        """Wait until :meth:`may_act` is sure; True to go on (send, write, connect)."""
        end = time.monotonic() + timeout
        while True:
            ok = self.may_act()
            if ok is not None:
                return ok
            if time.monotonic() > end:
                return False
            await asyncio.sleep(0.05)

    def status(self) -> dict:
        out = {"role": self.role, "since": self.since, "terms": self.terms, "lease_s": self.lock.lease_s}
        if self.role == "standby":
            out["leader"] = self.leader
            out["database_error"] = self.db_error
        else:
            age = None if self.renewed_at is None else time.monotonic() - self.renewed_at
            out["term"] = self.lock.term
            out["lease"] = ("held" + ("" if age is None else f", renewed {age:.1f} s ago")
                            if self.unreachable_since is None else
                            f"not renewed for {time.monotonic() - self.unreachable_since:.0f} s (database unreachable); "
                            "leading from memory")
        return out

    # -- standing by and leading ---------------------------------------------------------

    async def wait_for_lock(self, stop: asyncio.Event, on_standby=lambda: None) -> bool:
        """Stand by until the lease is ours (True) or ``stop`` is set (False)."""
        loop = asyncio.get_running_loop()
        not_before = 0.0
        was_down = False
        self.role, self.since = "standby", time.time()
        while not stop.is_set():
            try:
                if was_down:
                    await loop.run_in_executor(None, self.lock.connect)     # raises while it is down
                    # the database is back: the leader of before the outage renews first
                    was_down, not_before = False, time.monotonic() + self.grace_s
                    log.info("database reachable again; standing by %.0f s for the leader to renew its lease",
                             self.grace_s)
                elif time.monotonic() >= not_before and await loop.run_in_executor(None, self.lock.try_acquire):
                    self._led()
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

    def _led(self) -> None:
        self.role, self.since, self.leader, self.db_error = "leader", time.time(), None, None
        self.renewed_at, self.unreachable_since, self.lost = time.monotonic(), None, False
        self.terms += 1
        log.info("leading (term %s of the lease, %.0f s, renewed every %.0f s)", self.lock.term, self.lock.lease_s,
                 CHECK_S)

    def acquired(self) -> None:
        """A plain ``run`` took the lease before it started (:func:`acquire_or_wait`)."""
        self._led()

    async def keep(self, step_down: asyncio.Event, stop: asyncio.Event) -> None:
        """While leading: renew every :data:`CHECK_S`. The database unreachable: lead on from
        memory; another term holds the lease: set ``step_down`` (the fence is closed first)."""
        loop = asyncio.get_running_loop()
        while not stop.is_set() and not step_down.is_set():
            try:
                ok = await loop.run_in_executor(None, self.lock.renew)
            except psycopg.OperationalError as exc:
                if self.unreachable_since is None:
                    self.unreachable_since = time.monotonic()
                    log.error("leader: cannot renew the lease (%s); leading on from memory, renewing when the "
                              "database returns", _first_line(exc))
                await asyncio.sleep(CHECK_S)
                continue
            if ok:
                if self.unreachable_since is not None:
                    log.info("leader: lease renewed after %.1f s", time.monotonic() - self.unreachable_since)
                self.renewed_at, self.unreachable_since = time.monotonic(), None
                await asyncio.sleep(CHECK_S)
                continue
            self.lost = True
            holder = await loop.run_in_executor(None, self.lock.holder)
            log.error("leader: the lease is another's now (%s, term %s); stepping down without sending what was "
                      "in hand", (holder or {}).get("name"), (holder or {}).get("term"))
            self.stepped_down += 1
            step_down.set()


async def lead_or_stand_by(leadership: Leadership, make_pipeline, stop: asyncio.Event, on_standby=lambda: None):
    """Stand by, lead, step down and stand by again, until ``stop`` is set.

    ``make_pipeline()`` builds a :class:`sewerwatch.pipeline.Pipeline` for one term (with
    ``--standby``, one that judges the recent readings again first: it may be taking over).
    Without ``leadership.standby`` (a plain ``run``) the caller holds the lease already and a
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
            if step_down.is_set():
                leadership.lock.close()
            else:
                await asyncio.get_running_loop().run_in_executor(None, leadership.lock.release)
            leadership.role = "standby"
        if step_down.is_set():
            if not leadership.standby:
                raise StepDown("another run leads now; this one stepped down (start it with --standby to wait)")
            log.info("stepped down; standing by")
    return pipeline


def acquire_or_wait(lease: LeaderLease, wait_s: float) -> bool:
    """A plain ``run``: take the lease, waiting up to ``wait_s`` for a holder that stopped
    renewing it (a run killed a moment ago) to let it expire. False when it is still held."""
    end = time.monotonic() + wait_s
    while True:
        if lease.try_acquire():
            return True
        holder = lease.holder()
        if holder is not None and not holder["expired"] and time.monotonic() >= end:
            return False
        if time.monotonic() >= end + 1.0:
            return False
        time.sleep(0.25)


class StepDown(Exception):
    """A plain ``run`` (not ``--standby``) found another leader and stopped."""


#: The old name of the leader's right (it was an advisory lock before it was a lease).
LeaderLock = LeaderLease
