"""Throw-away services: a TimescaleDB cluster and a Mosquitto broker in a scratch state
folder, on free loopback ports, removed afterwards. For tests that stop, restart or kill
their services, and for benchmarks that want a quiet pair of their own."""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt

from foundation import secrets
from sewerwatch.db import bootstrap, migrate
from sewerwatch.services.mosquitto import EmbeddedMosquitto
from sewerwatch.services.postgres import EmbeddedPostgres


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mqtt_client(url: str, client_id: str, clean_session: bool = True, on_message=None) -> mqtt.Client:
    """A paho client of the account in ``url``, connected, its network loop running (QoS 1
    publishes unbounded in number, 1,000 in flight); ``on_message`` is set before it
    connects, so a persistent session's backlog is not missed."""
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean_session,
                    protocol=mqtt.MQTTv311)
    c.username_pw_set(u.username, u.password)
    c.max_inflight_messages_set(1000)
    c.max_queued_messages_set(0)
    c.on_message = on_message
    ok = threading.Event()
    c.on_connect = lambda client, ud, flags, rc, props: ok.set() if not rc.is_failure else None
    c.connect(u.hostname, u.port)
    c.loop_start()
    if not ok.wait(10):
        raise RuntimeError(f"cannot connect to the broker at {u.hostname}:{u.port}")
    return c


def state_dir(prefix: str = "sewerwatch-scratch-") -> Path:
    """A fresh folder the ``postgres`` and ``mosquitto`` users can reach (not under a 0700 home)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    d.chmod(0o755)
    return d


@dataclass
class Scratch:
    """The scratch services: ``pg`` and ``mq`` are None where not asked for."""

    state: Path
    pg: EmbeddedPostgres | None
    mq: EmbeddedMosquitto | None


@contextlib.contextmanager
def scratch(postgres: bool = True, mosquitto: bool = True, migrated: bool = True, prefix: str = "sewerwatch-scratch-"):
    """Start the services asked for; stop them and remove their folder on exit.

    Parameters
    ----------
    postgres, mosquitto : bool
        Which services to start.
    migrated : bool
        Bootstrap the cluster (roles, database, extension) and apply every migration.
    """

    d = state_dir(prefix)
    pw = secrets.load_or_create(d)
    pg = EmbeddedPostgres(d, free_port(), pw["db"]) if postgres else None
    mq = EmbeddedMosquitto(d, free_port(), pw["mqtt"], sites_port=free_port()) if mosquitto else None
    try:
        if pg is not None:
            pg.init()
            pg.start()
            bootstrap.embedded(pg)
            if migrated:
                migrate.migrate(pg.url("owner"))
        if mq is not None:
            mq.start()
        yield Scratch(d, pg, mq)
    finally:
        if mq is not None:
            mq.stop()
        if pg is not None:
            pg.stop()
        shutil.rmtree(d, ignore_errors=True)
