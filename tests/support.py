"""Helpers for tests that need services of their own (to stop, restart or kill them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from foundation import config as sw_config
from ingest import profiles
from sewerwatch.db import roles
from sewerwatch.services.scratch import free_port, scratch, state_dir  # noqa: F401 - for the tests
from sewerwatch.services.scratch import mqtt_client as scratch_mqtt_client
from simulators import scenarios
from simulators.modbus_server import ModbusSimulator
from simulators.sources import ScenarioSource, SimClock


@contextlib.contextmanager
def own_postgres():
    """A migrated TimescaleDB cluster of this test's own, stopped and removed afterwards."""
    with scratch(mosquitto=False) as s:
        yield s.pg


@contextlib.contextmanager
def own_mosquitto():
    """A Mosquitto broker of this test's own."""
    with scratch(postgres=False) as s:
        yield s.mq


#: The tests replay fixed dates of 2026; readings older than ``[ingest] max_past_days`` (400
#: by default) are dead letters, so the configs of such tests allow a century of the past.
HISTORIC = {"max_past_days": 36500.0}
HISTORIC_TOML = "[ingest]\nmax_past_days = 36500.0\n"


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


@contextlib.contextmanager
def tiny_filesystem(path, kib: int = 64):
    """A tmpfs of ``kib`` KiB at ``path`` (a disk that fills up for real); skips the test
    where mounting is not allowed (not root, or a container without the right)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


class ServedDevice:
    """One simulated manhole (generic-manhole profile) on a loop of its own, values frozen."""

    def __init__(self, port: int, scenario: str = "normal-day"):
        src = ScenarioSource(scenarios.load(scenario), 1)
        self.sim = ModbusSimulator(src, profiles.load("generic-manhole"), SimClock(src.start, 0.0, 36000.0),
                                   "127.0.0.1", port, tick_s=3600.0)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.sim.start(), self.loop).result(10)

    def close(self):
        asyncio.run_coroutine_threadsafe(self.sim.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def village_toml(path, site: str, *, db_url: str, mqtt_url: str, state, name: str = "Live village",
                 site_name: str = "Acme", alerts: str = "", contacts=(), interval_s: float | None = 1.0,
                 console: bool = False, extra: str = "") -> "os.PathLike":
    """Write a one-site config to ``path``: a pH sensor over MQTT (read every ``interval_s``),
    the alerts on no channel but ``contacts`` (``(name, apprise URL)``) and the console if
    asked, ``alerts`` added to the ``[alerts]`` table, ``extra`` at the end."""
    text = f"""[utility]
name = "{name}"
pack = "palmyra-wi"
timezone = "America/Chicago"
[services]
db_url = "{db_url}"
mqtt_url = "{mqtt_url}"
state_dir = "{state}"
[[sites]]
id = "{site}"
name = "{site_name}"
[[sensors]]
site = "{site}"
name = "ph"
parameter = "ph"
unit = "pH"
source = "mqtt"
{f"interval_s = {interval_s}" if interval_s else ""}
[alerts]
console = {str(console).lower()}
mqtt = false
digest_at = false
{alerts}
""" + "".join(f'[[alerts.contacts]]\nname = "{n}"\nurls = ["{u}"]\n' for n, u in contacts) + extra
    path.write_text(text)
    return path


def sensors_toml(site: str, sensors: dict[str, tuple[str, str]]) -> str:
    """``[[sensors]]`` entries of MQTT sensors ``{name: (parameter, unit)}`` at ``site``."""
    return "".join(f'[[sensors]]\nsite = "{site}"\nname = "{n}"\nparameter = "{p}"\nunit = "{u}"\nsource = "mqtt"\n'
                   for n, (p, u) in sensors.items())


def own_broker_village(path, db_url: str, site: str, sensors: dict[str, tuple[str, str]], extra: str = "",
                       site_extra: str = ""):
    """Write a one-site config to ``path`` whose embedded broker is the test's own (a state
    folder of its own, a free port; its ACL generated from the config), with MQTT sensors
    ``{name: (parameter, unit)}`` and ``extra`` (``[[mqtt.inputs]]``) at the end; migrate
    the database at ``db_url`` to it (``sewerwatch db migrate`` as a subprocess). Returns
    the loaded config (bring the broker up with ``services.up(cfg, db=False)``). ``site_extra``:
    more keys of the ``[[sites]]`` table (``mqtt_devices = [...]``)."""
    state = state_dir("sewerwatch-village-")
    path.write_text(f'[utility]\nname = "Own broker village"\n[services]\ndb_url = "{db_url}"\n'
                    f'state_dir = "{state}"\nmqtt_port = {free_port()}\nmqtt_sites_port = {free_port()}\n[[sites]]\nid = "{site}"\n'
                    f'name = "Acme"\n{site_extra}'
                    + sensors_toml(site, sensors) + extra)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    mig = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(path), "db", "migrate"],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, env=env,
                         timeout=60)
    assert mig.returncode == 0, mig.stderr
    return sw_config.load(path)


def close_all(*things) -> None:
    """Stop what a test started, whatever happened: paho clients, pipelines in the
    background, subprocesses (killed when still running), catchers, open files."""
    for t in things:
        if t is None:
            continue
        if hasattr(t, "loop_stop"):
            t.loop_stop()
            t.disconnect()
        elif hasattr(t, "poll"):
            if t.poll() is None:
                t.kill()
                t.wait()
        elif hasattr(t, "close") and not hasattr(t, "stop"):
            t.close()
        else:
            t.stop()


def refused(r: subprocess.CompletedProcess, *words: str) -> str:
    """The one line a command refused with (exit 2, nothing on standard output, no traceback),
    holding each of ``words``."""
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sewerwatch: error: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


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
           "count", "roles", "HISTORIC", "HISTORIC_TOML", "tiny_filesystem", "ServedDevice", "village_toml",
           "close_all"]


def mqtt_client(url: str, client_id: str, clean_session: bool = True):
    """A connected paho client (network loop running) for the account in ``url``, quick to
    reconnect (:func:`sewerwatch.services.scratch.mqtt_client`)."""
    c = scratch_mqtt_client(url, client_id, clean_session)
    c.reconnect_delay_set(0.2, 2)
    return c


def topic_watcher(url: str, topic: str = "sewerwatch/#", client_id: str = "watcher"):
    """A subscriber to ``topic`` (QoS 1) and the list of the topics it receives, once its
    subscription stands: what the broker let through."""
    import threading

    got: list[str] = []
    answered = threading.Event()
    watcher = mqtt_client(url, client_id)
    watcher.on_message = lambda c, u, m: got.append(m.topic)
    watcher.on_subscribe = lambda c, u, mid, codes, props: answered.set()
    watcher.subscribe(topic, qos=1)
    assert answered.wait(10), f"the broker did not answer {client_id}'s subscription to {topic}"
    return watcher, got


def publish_all(client, messages, qos: int = 1, rate: float | None = None, timeout: float = 120) -> None:
    """Publish ``(topic, payload)`` pairs, at ``rate`` messages/s if given, and wait until the
    broker has acknowledged every one (a message published while the client is disconnected
    is queued by paho and sent on reconnect)."""
    import threading

    acked: set = set()
    lock = threading.Lock()
    previous = client.on_publish

    def on_publish(c, userdata, mid, reason_code, properties):
        with lock:
            acked.add(mid)

    client.on_publish = on_publish
    mids = []
    start = time.monotonic()
    try:
        for i, (topic, payload) in enumerate(messages):
            if rate:
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            mids.append(client.publish(topic, payload, qos=qos).mid)
        if qos == 0:
            return
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with lock:
                if acked.issuperset(mids):
                    return
            time.sleep(0.01)
        raise AssertionError(f"{len(set(mids) - acked)} QoS {qos} publishes never acknowledged by the broker")
    finally:
        client.on_publish = previous


class Sender(threading.Thread):
    """:func:`publish_all` in a thread; :meth:`join` re-raises what went wrong in it."""

    def __init__(self, client, messages, **kwargs):
        super().__init__(daemon=True)
        self.args_ = (client, messages, kwargs)
        self.error: BaseException | None = None
        self.start()

    def run(self):
        client, messages, kwargs = self.args_
        try:
            publish_all(client, messages, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc

    def join(self, timeout=None):
        super().join(timeout)
        if self.is_alive():
            raise AssertionError("the publisher did not finish in time")
        if self.error is not None:
            raise self.error
