"""What a command handler receives from the shell: the utility's config and connections.

The shell (``sewerwatch.cli``) builds one :class:`Context` per command and calls each
handler as ``handler(args, ctx)``. Handlers never load the config or find the database
themselves, so a command's dependencies run one way, down from the shell.

>>> def handler(args, ctx):
...     with ctx.connect("owner") as conn:
...         ...
"""

from __future__ import annotations

import os
import socket
from functools import cached_property
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from foundation import config as config_mod
from foundation.endpoints import Endpoints, endpoints
from foundation.errors import DatabaseError, InputError, ServiceError

#: The path :func:`foundation.config.load` gives a utility without a config file.
NO_CONFIG = "<no config>"


def config_search_note() -> str:
    """Where :func:`foundation.config.find_config_path` looked, in words, for a missing config."""
    env = os.environ.get("SEWERWATCH_CONFIG")
    return ("looked for --config FILE (not given), $SEWERWATCH_CONFIG "
            + (f"({env})" if env else "(not set)")
            + f" and {Path.cwd() / 'sewerwatch.toml'} (no such file)")


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
    schema_version : callable, optional
        ``schema_version() -> int``: the newest migration the shell knows (called once, on
        the first schema check). Without it only the schema's presence is checked.
    """

    def __init__(self, config_path: str | None = None, *,
                 start_services: Callable[..., Endpoints] | None = None,
                 config: config_mod.Config | None = None,
                 schema_version: Callable[[], int] | None = None):
        self.config_path = config_path
        self._start = start_services
        self._schema_version = schema_version
        self._schema_ok: set[str] = set()
        if config is not None:
            self.__dict__["config"] = config

    @cached_property
    def config(self) -> config_mod.Config:
        """The utility's config (loaded on first use)."""
        return config_mod.load(self.config_path)

    @property
    def has_config(self) -> bool:
        """True when a config file was found (else the utility is empty: no sites)."""
        return self.config.path != NO_CONFIG

    def require_config(self, what: str, why: str) -> config_mod.Config:
        """The config, or an :class:`InputError` saying where it was looked for.

        Parameters
        ----------
        what : str
            The command, e.g. ``"lab import"``.
        why : str
            What the command needs from the config, e.g. ``"its sites and time zone"``.
        """
        if not self.has_config:
            raise InputError(f"{what} needs the utility's config ({why}); {config_search_note()}; "
                             "pass --config FILE (examples/demo-village.toml is a complete example)")
        return self.config

    def endpoints(self, *, start: bool = False, db: bool = True, mqtt: bool = True) -> Endpoints:
        """Where the database and the broker are.

        Parameters
        ----------
        start : bool
            Bring up the embedded services the config uses (``db``/``mqtt`` choose which)
            when they are not running. A command that starts the database means to use it:
            the schema is checked too (:meth:`require_schema`; a database that cannot be
            reached is left to the command, which may spool through an outage).
        """
        cfg = self.config
        if start and self._start is not None and not (cfg.services.db_url and cfg.services.mqtt_url):
            ep = self._start(cfg, db=db and not cfg.services.db_url, mqtt=mqtt and not cfg.services.mqtt_url)
        else:
            ep = endpoints(cfg)
        if start and db:
            self.require_schema(unreachable_ok=True)
        return ep

    def connect(self, role: str = "owner", *, db_url: str | None = None, schema: bool = True, **kwargs):
        """A psycopg connection as ``role`` (or to ``db_url``, e.g. a ``--db-url`` option).

        Parameters
        ----------
        schema : bool
            Check (once per database and command) that the database holds the sewerwatch
            schema, so a command before ``sewerwatch db migrate`` says so in one line
            (:class:`foundation.errors.SchemaMissing`). Only the commands that create or
            inspect the schema pass False.
        """
        # lazy: psycopg takes about 0.15 s to import and commands on files never connect
        from foundation import db

        conn = db.connect(role, db_url=db_url, **kwargs) if db_url else db.connect(role, self.config, **kwargs)
        key = db_url or role
        if schema and key not in self._schema_ok:
            try:
                db.check_schema(conn, self._schema_version() if self._schema_version else None)
            except BaseException:
                conn.close()
                raise
            self._schema_ok.add(key)
        return conn

    def require_schema(self, role: str = "owner", *, db_url: str | None = None,
                       unreachable_ok: bool = False) -> None:
        """Check that the database holds the schema, for a command that hands URLs on.

        Raises
        ------
        SchemaMissing
            Naming the database and ``sewerwatch db migrate``.
        DatabaseError
            The database cannot be reached (unless ``unreachable_ok``).
        """
        try:
            self.connect(role, db_url=db_url).close()
        except DatabaseError:
            if not unreachable_ok:
                raise

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
