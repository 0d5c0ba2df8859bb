"""The office served by uvicorn on the caller's asyncio loop: one supervised component
``web`` of ``sewerwatch run``, or ``sewerwatch web`` alone.

uvicorn's ``Server.serve()`` runs as a coroutine of the loop it is awaited on. Two changes
to how it is started, so that a server inside ``run`` cannot take ``run`` down with it: the
socket is bound here (uvicorn exits the process when it cannot bind), and uvicorn does not
take over SIGTERM and SIGINT (``run`` owns them; its stop event ends the server).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
import time

import uvicorn

from web.app import asgi
from web.office import Office

log = logging.getLogger("sewerwatch.web")

#: How often the server removes expired sessions from the store [s].
PURGE_EVERY_S = 3600.0


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers (the process's owner has them)."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


class WebServer:
    """The office on ``[web] bind:port``.

    Parameters
    ----------
    office : web.office.Office
    csrf_secret : str
        The CSRF tokens' key (``secrets.json`` ``keys.web_csrf``).
    """

    def __init__(self, office: Office, csrf_secret: str):
        self.office, self.csrf_secret = office, csrf_secret
        self.listening: str | None = None
        self.started_at: float | None = None

    async def serve(self, comp, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set (``comp``: the supervised component, beaten each second)."""
        opts = self.office.opts
        family = socket.AF_INET6 if ":" in opts.bind else socket.AF_INET
        sock = socket.create_server((opts.bind, opts.port), family=family, reuse_port=False)
        sock.setblocking(False)
        self.office.open()
        config = uvicorn.Config(asgi(self.office, self.csrf_secret), lifespan="off", access_log=False,
                                log_config=None, server_header=False, date_header=True, proxy_headers=False,
                                timeout_graceful_shutdown=5, ws="none")
        server = _Server(config)
        # What exists now lives as long as the process: out of the collector's sight, so the
        # collections a page's garbage sets off scan only that garbage (benchmarks/web.py).
        gc.freeze()
        task = asyncio.create_task(self._serve(server, sock), name="web-uvicorn")
        try:
            host, port = sock.getsockname()[:2]
            self.listening = f"http://{f'[{host}]' if ':' in host else host}:{port}"
            self.started_at = time.time()
            links = self.office.ack_page.links.base_url + "/ack/..." if self.office.ack_page else "none"
            log.info("office on %s (acknowledgement links: %s)", self.listening, links)
            last_purge = time.monotonic()
            while not stop.is_set():
                comp.beat()
                if task.done():
                    task.result()          # the server stopped by itself: its error, or say so
                    raise RuntimeError("the web server stopped")
                if time.monotonic() - last_purge > PURGE_EVERY_S:
                    last_purge = time.monotonic()
                    await self._purge()
                try:
                    await asyncio.wait_for(stop.wait(), 1.0)
                except asyncio.TimeoutError:
                    pass
        finally:
            self.listening = None
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10.0)
            sock.close()
            self.office.close()

    @staticmethod
    async def _serve(server: _Server, sock) -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:      # uvicorn's way of failing; never the process's
            raise RuntimeError(f"the web server failed to start (exit {exc.code})") from None

    async def _purge(self) -> None:
        from web import forms, sessions
        try:
            await sessions.store(self.office.state_dir).delete_expired()
        except Exception as exc:  # noqa: BLE001 - next hour again
            log.warning("office: expired sessions could not be removed: %s", exc)
        try:
            await asyncio.to_thread(self.office.read, forms.purge)
        except Exception as exc:  # noqa: BLE001 - next hour again
            log.warning("office: old form keys could not be removed: %s", exc)

    def problem(self) -> str | None:
        """The supervisor's health check."""
        if not self.listening:
            return f"not listening on {self.office.opts.bind}:{self.office.opts.port} yet"
        return None

    def status(self) -> dict:
        page = self.office.ack_page
        return {"listening": self.listening, **({"public_url": page.links.base_url,
                                                 "link_lifetime_h": page.links.lifetime_s / 3600.0, **page.stats}
                                                if page is not None else {}),
                "office": dict(self.office.stats)}
