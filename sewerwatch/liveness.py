"""Liveness others can watch: systemd's notify protocol and watchdog, and
a dead man's switch URL.

``sewerwatch run`` under systemd (``Type=notify``, ``WatchdogSec=``; the guide's
docs/running/systemd.md) says ``READY=1`` once it stands by or leads, ``STATUS=...`` as it goes, and
``WATCHDOG=1`` every half ``WatchdogSec`` from its event loop while its status thread is
alive: a loop or a status writer that hangs (SIGSTOP, a hung disk) stops the pings, and
systemd kills and restarts the process (and ``OnFailure=`` can tell someone). The protocol
is one datagram to ``$NOTIFY_SOCKET`` (sd_notify(3)); it is written here, in a few lines,
rather than taken from a package: ``sdnotify`` (PyPI) was last released in 2017, and
``systemd-python``/``cysystemd`` compile against libsystemd's headers, which a plain
``pip install`` of sewerwatch should not need.

With ``[run] deadman_url`` (a healthchecks.io check, an Uptime Kuma push monitor, ...) the
leader GETs the URL every ``deadman_every_s`` (60 s) while its loop answers: the service
alerts when the pings stop, whatever stopped them (the host, the network, a frozen run).
A standby does not ping (the leader's pings are the ones that must not stop).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import urllib.request
from urllib.parse import urlsplit

log = logging.getLogger("sewerwatch.liveness")

#: A status thread that has not beaten for this long stops the watchdog pings [s].
STATUS_FRESH_S = 10.0


def notify(message: str) -> bool:
    """Send ``message`` (``READY=1``, ``WATCHDOG=1``, ``STATUS=...``, ``STOPPING=1``) to the
    service manager's ``$NOTIFY_SOCKET``; False when there is none (not run by systemd)."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    addr = "\0" + path[1:] if path.startswith("@") else path      # "@": the abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.connect(addr)
            s.sendall(message.encode())
        return True
    except OSError as exc:
        log.warning("cannot notify the service manager at %s: %s", path, exc)
        return False


def watchdog_interval_s() -> float | None:
    """Half of systemd's ``WatchdogSec`` for this process, or None (no watchdog)."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid.isdigit() and int(pid) != os.getpid()):
        return None
    try:
        return max(int(usec) / 2e6, 0.1)
    except ValueError:
        return None


def ping(url: str, timeout_s: float = 10.0) -> None:
    """One GET of the dead man's switch (raises on failure)."""
    req = urllib.request.Request(url, headers={"User-Agent": "sewerwatch-run"})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:    # noqa: S310 - the configured URL
        resp.read(1024)


class Liveness:
    """The pings of one ``run`` process.

    Parameters
    ----------
    deadman_url : str or None
        ``[run] deadman_url``.
    deadman_every_s : float
        ``[run] deadman_every_s``.
    leading : callable
        Whether this process leads now (only the leader pings the dead man's switch).
    status_fresh : callable
        Whether the status thread beat lately (else no watchdog ping).
    describe : callable
        One line for systemd's ``STATUS=``.
    """

    def __init__(self, deadman_url: str | None, deadman_every_s: float, leading, status_fresh=lambda: True,
                 describe=lambda: ""):
        self.deadman_url, self.deadman_every_s = deadman_url, deadman_every_s
        self.leading, self.status_fresh, self.describe = leading, status_fresh, describe
        self.pings = 0
        self.last_ping_at: float | None = None
        self.last_error: str | None = None
        self.watchdog_pings = 0

    def status(self) -> dict:
        host = urlsplit(self.deadman_url).hostname if self.deadman_url else None
        return {"deadman": None if not self.deadman_url else {
                    "host": host, "every_s": self.deadman_every_s, "pings": self.pings,
                    "last_ping_age_s": None if self.last_ping_at is None else round(time.time() - self.last_ping_at, 1),
                    "last_error": self.last_error},
                "watchdog_s": watchdog_interval_s(), "watchdog_pings": self.watchdog_pings}

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: watchdog pings, ``STATUS=``, and the dead man's switch."""
        loop = asyncio.get_running_loop()
        notify("READY=1")
        wd = watchdog_interval_s()
        step = min(wd or 1.0, 1.0)
        next_deadman = time.monotonic()
        last_status = ""
        while not stop.is_set():
            if wd is not None and self.status_fresh() and notify("WATCHDOG=1"):
                self.watchdog_pings += 1
            text = self.describe()
            if text and text != last_status:
                notify(f"STATUS={text}")
                last_status = text
            if self.deadman_url and time.monotonic() >= next_deadman:
                next_deadman = time.monotonic() + self.deadman_every_s
                if self.leading():
                    try:
                        await loop.run_in_executor(None, ping, self.deadman_url)
                        self.pings += 1
                        self.last_ping_at, self.last_error = time.time(), None
                    except Exception as exc:  # noqa: BLE001 - said in status and the log, tried again
                        text = f"{type(exc).__name__}: {exc}"[:200]
                        if text != self.last_error:
                            log.warning("dead man's switch %s not reached: %s", urlsplit(self.deadman_url).hostname,
                                        text)
                        self.last_error = text
            try:
                await asyncio.wait_for(stop.wait(), step)
            except asyncio.TimeoutError:
                pass
        notify("STOPPING=1")
