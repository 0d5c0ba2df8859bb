"""What a command handler receives from the shell: the utility's config and connections.

The shell (``sewerwatch.cli``) builds one :class:`Context` per command and calls each
handler as ``handler(args, ctx)``. Handlers never load the config or find the database
themselves, so a command's dependencies run one way, down from the shell.

>>> def handler(args, ctx):
...     with ctx.connect("owner") as conn:
...         ...
"""

from __future__ import annotations

import socket
from functools import cached_property
from typing import Callable
from urllib.parse import urlsplit

from foundation import config as config_mod
from foundation.endpoints import Endpoints, endpoints
from foundation.errors import ServiceError


class Context:
    """The config and the services of one command.

    Parameters
    ----------
    config_path : str, optional
        ``--config``; without it :func:`foundation.config.find_config_path` decides.
    start_services : callable, optional
        ``start_services(cfg, db=True, mqtt=True) -> Endpoints``: brings up the embedded
        services that ``cfg`` uses and that are not running (the shell passes
        ``sewerwatch.services.up``). Without it, :meth:`endpoints` with ``start=True``
        only computes the URLs.
    config : foundation.config.Config, optional
        An already loaded config (tests, embedding).
    """

    def __init__(self, config_path: str | None = None, *,
                 start_services: Callable[..., Endpoints] | None = None,
                 config: config_mod.Config | None = None):
        self.config_path = config_path
        self._start = start_services
        if config is not None:
            self.__dict__["config"] = config

    @cached_property
    def config(self) -> config_mod.Config:
        """The utility's config (loaded on first use)."""
        return config_mod.load(self.config_path)

    def endpoints(self, *, start: bool = False, db: bool = True, mqtt: bool = True) -> Endpoints:
        """Where the database and the broker are.

        Parameters
        ----------
        start : bool
            Bring up the embedded services the config uses (``db``/``mqtt`` choose which)
            when they are not running.
        """
        cfg = self.config
        if start and self._start is not None and not (cfg.services.db_url and cfg.services.mqtt_url):
            return self._start(cfg, db=db and not cfg.services.db_url, mqtt=mqtt and not cfg.services.mqtt_url)
        return endpoints(cfg)

    def connect(self, role: str = "owner", *, db_url: str | None = None, **kwargs):
        """A psycopg connection as ``role`` (or to ``db_url``, e.g. a ``--db-url`` option)."""
        # lazy: psycopg takes about 0.15 s to import and commands on files never connect
        from foundation import db

        if db_url:
            return db.connect(role, db_url=db_url, **kwargs)
        return db.connect(role, self.config, **kwargs)

    def require_broker(self, account: str = "admin", hint: str = "") -> str:
        """The broker URL of ``account``, after checking that something listens there.

        Raises
        ------
        ServiceError
            When nothing accepts connections at the broker's address.
        """
        url = self.endpoints().mqtt(account)
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 1883
        try:
            with socket.create_connection((host, port), timeout=2.0):
                pass
        except OSError as exc:
            raise ServiceError(f"no MQTT broker at {host}:{port} ({exc.strerror or exc})"
                               + (f"; {hint}" if hint else "")) from None
        return url
