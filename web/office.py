"""What every page of the office needs: the config, the database, the time zone, the
health of ``run`` (:class:`Office`); and the one way a page reads or acts.

Pages read with :meth:`Office.read` and act with :meth:`Office.act`: ``act(request, fn,
*args)`` calls the package function ``fn(conn, *args, actor=<the signed-in account>)``, the
same function the command line calls with the operating-system user, so the audit trail
names who acted and no rule lives in a handler.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from foundation.actor import Actor

log = logging.getLogger("sewerwatch.web")


class DatabaseDown(Exception):
    """The database could not be reached; the text says why (one line)."""


class _Flight:
    """One read that requests asking meanwhile share (:meth:`Office.shared`)."""

    __slots__ = ("writes", "done", "value", "error", "started")

    def __init__(self, writes: int):
        self.writes, self.done, self.value, self.error = writes, threading.Event(), None, None
        self.started = time.monotonic()     # [monotonic s] when the read began


class Office:
    """The office of one utility.

    Parameters
    ----------
    cfg : foundation.config.Config
    opts : foundation.config.WebOptions
        ``[web]`` (the defaults where the config has none).
    db_url : str
        The database (owner role: acknowledging and replaying write).
    state_dir : Path
        The state folder (sessions, the status of ``run``).
    status_source : callable, optional
        ``() -> dict | None``: the live status of ``run`` (its pipeline's :meth:`status`
        when the office runs inside ``run``; the status file otherwise).
    ack_page : alerts.ackpage.AckPage, optional
        Mounted at ``/ack/<token>`` (needs ``[web]`` and the links' key).
    invite_key : str, optional
        The portal's invitation links' key (``secrets.json`` ``keys.portal_invites``); without
        it no invitation can be made.
    """

    def __init__(self, cfg, opts, db_url: str, *, state_dir: Path, status_source: Callable[[], dict | None]
                 | None = None, ack_page=None, pool_size: int = 4, invite_key: str | None = None):
        self.cfg, self.opts, self.db_url, self.state_dir = cfg, opts, db_url, Path(state_dir)
        self.status_source = status_source or (lambda: None)
        self.ack_page = ack_page
        self.utility = cfg.name
        #: The key the calendar feeds' addresses are signed with (:mod:`web.feeds`; the state
        #: folder's ``secrets.json`` ``keys.calendar_feeds``, set by ``sewerwatch.office``).
        self.feed_key: str | None = None
        #: The path the reverse proxy serves the office under (``public_url``'s: "/sewerwatch"),
        #: put before every link and redirect; "" at the root of its host.
        self.prefix = urlsplit(opts.public_url or "").path.rstrip("/")
        self.tz = timezone_of(cfg)
        self.pool = ConnectionPool(db_url, min_size=1, max_size=pool_size, open=False, timeout=3.0,
                                   kwargs={"connect_timeout": 3, "autocommit": True},
                                   check=_check_unless_just_back, reset=_note_back, name="sewerwatch-web",
                                   reconnect_timeout=24 * 3600.0)
        self.stats = {"requests": 0, "errors": 0, "database_down": 0, "signed_in": 0, "refused_sign_ins": 0,
                      "forbidden": 0}
        self._cache: dict[str, tuple[float, object]] = {}
        #: The reads in flight that every request asking meanwhile shares (:meth:`shared`), and
        #: the count of the office's writes (a read begun before one is never shared after it).
        self._flights: dict[str, _Flight] = {}
        self._flights_lock = threading.Lock()
        self._writes = 0
        #: how many :meth:`shared` reads were made and how many requests were served by them
        self.shared_reads = {"made": 0, "served": 0}
        #: Threads for a read that runs while the page does the rest (:meth:`read_meanwhile`).
        self._meanwhile = ThreadPoolExecutor(max_workers=max(1, pool_size // 2),
                                             thread_name_prefix="sewerwatch-web-read")
        from web.documents import Documents
        #: Rendered documents (notices, bills) and their pages as pictures (web/documents.py).
        self.documents = Documents()
        #: (method, path, status, server time [s]) of the latest requests (the access log's figures)
        self.timings: deque = deque(maxlen=2000)
        #: the portal: its invitation links, its mail, the letterhead of its PDFs
        from ereport.invitations import InviteLinks
        from ereport.mail import Mailer
        self.invite_links = InviteLinks(invite_key or "", opts.link_base, opts.invitation_days * 86400.0) \
            if invite_key else None
        self.mailer = Mailer(opts.mail_url)
        self.imports = self.state_dir / "portal-imports"

    def today(self) -> date:
        """Today's date in the village's time zone (a form's default date, the period in view)."""
        return datetime.now(ZoneInfo(self.tz)).date()

    @property
    def letterhead(self):
        """The utility's letterhead (``[documents]``) for the portal's PDFs."""
        from lab.documents.pdf import letterhead
        return letterhead(self.cfg)

    def url(self, path: str) -> str:
        """A path of the office as the browser reaches it (behind the proxy's prefix)."""
        return self.prefix + path

    def open(self) -> None:
        """Open the pool without waiting for the database (pages say when it is down)."""
        self.pool.open(wait=False)

    def close(self) -> None:
        self._meanwhile.shutdown(wait=True)
        self.pool.close(timeout=5.0)

    # -- the one way to read and to act ------------------------------------------------------

    def read(self, work: Callable):
        """``work(conn)`` on a pooled autocommit connection; :class:`DatabaseDown` when the
        database cannot be reached."""
        try:
            with self.pool.connection() as conn:
                return work(conn)
        except (PoolTimeout, psycopg.OperationalError) as exc:
            self.stats["database_down"] += 1
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, PoolTimeout):
                text = "no connection to the database within 3 s"
            log.warning("office: the database is unreachable: %s", text)
            raise DatabaseDown(text) from None

    def read_meanwhile(self, work: Callable) -> Future:
        """Start ``work(conn)`` (:meth:`read`, on a connection of its own) and return at once
        its future (``result()`` waits for it, raising what it raised: :class:`DatabaseDown`).
        The Today page reads its users, their episodes and alerts so while it streams and
        arranges its sensors' last values."""
        return self._meanwhile.submit(self.read, work)

    def act(self, account, fn: Callable, *args, **kwargs):
        """Call the package function ``fn(conn, *args, actor=..., **kwargs)`` as ``account``."""
        actor: Actor = account.actor
        return self.read(lambda conn: fn(conn, *args, actor=actor, **kwargs))

    def cached(self, key: str, ttl_s: float, make: Callable):
        """``make()``, kept ``ttl_s`` seconds (what changes by the day, such as what is due)."""
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < ttl_s:
            return hit[1]
        value = make()
        self._cache[key] = (now, value)
        return value

    def shared(self, key: str, make: Callable, keep_s: float = 0.0):
        """``make()`` once for every request that asks for ``key`` while it is being made, or
        within ``keep_s`` seconds of when it began.

        Many viewers of one page (a control-room screen, the superintendent's phone, the
        coordinator's desk, each refreshing Today every 2 s) then cost the database one read
        for those that arrive together, not one each. Nothing older than ``keep_s`` is served
        (0, the default: a read is shared only with requests that arrive while it runs), and
        never after a write of the office's (:meth:`wrote`) that came in between; a read that
        failed is not kept.

        Parameters
        ----------
        key : str
            What is read (the same for every request that may share it).
        make : callable
            The read; its value is shared, not copied.
        keep_s : float
            How long after it began a finished read is still served [s].
        """
        with self._flights_lock:
            flight = self._flights.get(key)
            # a finished read stays here only when it succeeded (the ``finally`` below)
            leader = (flight is None or flight.writes != self._writes
                      or (flight.done.is_set() and time.monotonic() - flight.started >= keep_s))
            if leader:
                flight = self._flights[key] = _Flight(self._writes)
                self.shared_reads["made"] += 1
            self.shared_reads["served"] += 1
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value
        try:
            flight.value = make()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._flights_lock:
                if self._flights.get(key) is flight and (keep_s <= 0 or flight.error is not None):
                    del self._flights[key]
            flight.done.set()
        return flight.value

    def wrote(self) -> None:
        """A request that may have written is done: reads in flight are not shared after it."""
        with self._flights_lock:
            self._writes += 1

    def run_status(self) -> dict | None:
        try:
            return self.status_source()
        except Exception as exc:  # noqa: BLE001 - the banner says it, the page goes on
            return {"state": "unknown", "problems": {"status": f"could not be read: {exc}"}}


#: A pooled connection given back less than this long ago [s] is handed out unchecked (it
#: answered a moment ago); one idle for longer is checked first (psycopg_pool's check), so a
#: database restarted meanwhile costs no page an error.
CHECK_AFTER_IDLE_S = 2.0


def _note_back(conn) -> None:
    """The pool's reset: when the connection came back [monotonic s]."""
    conn._sewerwatch_back = time.monotonic()


def _check_unless_just_back(conn) -> None:
    """The pool's check (:data:`CHECK_AFTER_IDLE_S`): the round trip of psycopg_pool's own
    check, saved for a connection that was in use a moment ago (a page reads on two)."""
    if time.monotonic() - getattr(conn, "_sewerwatch_back", float("-inf")) >= CHECK_AFTER_IDLE_S:
        ConnectionPool.check_connection(conn)


def timezone_of(cfg) -> str:
    """The village's time zone: ``[utility] timezone``, else its pack's."""
    if cfg.timezone:
        return cfg.timezone
    return _pack_tz(cfg.pack)


@lru_cache(maxsize=None)
def _pack_tz(pack: str) -> str:
    from limits.packs import load_pack

    return load_pack(pack).timezone
