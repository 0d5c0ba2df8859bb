"""Helpers for tests that need services of their own (to stop, restart or kill them)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import time
from pathlib import Path

import psycopg

from sewerwatch.db import bootstrap, migrate, roles
from sewerwatch.services import secrets
from sewerwatch.services.mosquitto import EmbeddedMosquitto
from sewerwatch.services.postgres import EmbeddedPostgres


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def state_dir() -> Path:
    """A fresh state folder the postgres and mosquitto users can reach."""
    d = Path(tempfile.mkdtemp(prefix="sewerwatch-test-", dir="/var/tmp"))
    d.chmod(0o755)
    return d


@contextlib.contextmanager
def own_postgres():
    """A migrated TimescaleDB cluster of this test's own, stopped and removed afterwards."""
    d = state_dir()
    pg = EmbeddedPostgres(d, free_port(), secrets.load_or_create(d)["db"])
    try:
        pg.init()
        pg.start()
        bootstrap.embedded(pg)
        migrate.migrate(pg.url("owner"))
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def own_mosquitto():
    """A Mosquitto broker of this test's own."""
    d = state_dir()
    mq = EmbeddedMosquitto(d, free_port(), secrets.load_or_create(d)["mqtt"])
    try:
        mq.start()
        yield mq
    finally:
        mq.stop()
        shutil.rmtree(d, ignore_errors=True)


def add_site_and_sensors(url: str, site: str, sensors: dict[str, tuple[str, str]]) -> dict[str, int]:
    """Insert a site and its sensors ``{name: (parameter, unit)}``; return name -> sensor id."""
    with psycopg.connect(url) as conn:
        sid = conn.execute("INSERT INTO sites (key, name, pack) VALUES (%s, %s, 'palmyra-wi') RETURNING id",
                           (site, site)).fetchone()[0]
        out = {}
        for name, (parameter, unit) in sensors.items():
            out[name] = conn.execute(
                "INSERT INTO sensors (site_id, name, parameter, unit, source, address) "
                "VALUES (%s, %s, %s, %s, 'mqtt', %s) RETURNING id",
                (sid, name, parameter, unit, f"mqtt:sewerwatch/{site}/{name}")).fetchone()[0]
    return out


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def count(url: str, sql: str, params=()) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()[0]


__all__ = ["free_port", "state_dir", "own_postgres", "own_mosquitto", "add_site_and_sensors", "wait_until",
           "count", "roles"]
