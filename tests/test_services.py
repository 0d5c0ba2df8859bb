"""The embedded services, run for real in a state folder and on ports of this test's own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
import psycopg
import pytest

from sewerwatch.services.scratch import free_port, state_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def own_services():
    """CLI runner for services in a fresh state folder (reachable by the postgres user)."""
    state = state_dir("sewerwatch-test-")
    env = {**os.environ, "SEWERWATCH_STATE_DIR": str(state),
           "SEWERWATCH_PG_PORT": str(free_port()), "SEWERWATCH_MQTT_PORT": str(free_port())}
    env.pop("SEWERWATCH_CONFIG", None)

    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=180)
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def status() -> dict:
        return json.loads(cli("services", "status", "--json", "--show-secrets").stdout)

    cli.status = status
    yield cli
    cli("services", "down", check=False)
    shutil.rmtree(state, ignore_errors=True)


def _query(url: str) -> int:
    with psycopg.connect(url, connect_timeout=5) as conn:
        return conn.execute("SELECT 1").fetchone()[0]


def test_up_twice_down_and_a_killed_service_restarted(own_services):
    own_services("services", "up")
    st = own_services.status()
    assert st["timescaledb"]["running"] and st["mosquitto"]["running"]
    assert st["db_url"].startswith("postgresql://sewerwatch_owner:")
    assert st["mqtt_url"].startswith("mqtt://sewerwatch:")
    assert _query(st["db_url"]) == 1
    pids = (st["timescaledb"]["pid"], st["mosquitto"]["pid"])

    own_services("services", "up")  # harmless: the same processes keep running
    st2 = own_services.status()
    assert (st2["timescaledb"]["pid"], st2["mosquitto"]["pid"]) == pids

    # Kill both the hard way; the next `up` starts them again.
    os.kill(pids[0], signal.SIGKILL)
    os.kill(pids[1], signal.SIGKILL)
    time.sleep(0.5)
    st3 = own_services.status()
    assert not st3["timescaledb"]["running"] and not st3["mosquitto"]["running"]
    own_services("services", "up")
    st4 = own_services.status()
    assert st4["timescaledb"]["running"] and st4["mosquitto"]["running"]
    assert st4["timescaledb"]["pid"] != pids[0] and st4["mosquitto"]["pid"] != pids[1]
    assert _query(st4["db_url"]) == 1

    own_services("services", "down")
    st5 = own_services.status()
    assert not st5["timescaledb"]["running"] and not st5["mosquitto"]["running"]
    with pytest.raises(psycopg.OperationalError):
        _query(st4["db_url"])
    own_services("services", "up")  # and back, with its data
    assert _query(own_services.status()["db_url"]) == 1


def test_port_taken_by_another_program_is_a_clear_error(own_services):
    port = int(own_services.status()["timescaledb"]["port"])
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        proc = own_services("services", "up", check=False)
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use by another program" in proc.stderr


# --- the broker's accounts, against the session's embedded Mosquitto ---------------------


def _client(url: str, client_id: str) -> tuple[mqtt.Client, list]:
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
    c.username_pw_set(u.username, u.password)
    got: list = []
    c.on_message = lambda client, userdata, msg: got.append((msg.topic, msg.payload))
    return c, got


def _connect(c: mqtt.Client, url: str) -> int:
    u = urlsplit(url)
    result: dict = {}
    done = threading.Event()

    def on_connect(client, userdata, flags, reason_code, properties):
        result["rc"] = reason_code
        done.set()

    c.on_connect = on_connect
    c.connect(u.hostname, u.port)
    c.loop_start()
    assert done.wait(5), "no CONNACK"
    return result["rc"]


def test_broker_refuses_anonymous_and_wrong_passwords(services):
    u = urlsplit(services.mqtt_url)
    anon = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="anon-test")
    rc = _connect(anon, f"mqtt://{u.hostname}:{u.port}")
    anon.loop_stop()
    assert rc.is_failure
    bad, _ = _client(f"mqtt://collector:wrong@{u.hostname}:{u.port}", "bad-test")
    rc = _connect(bad, f"mqtt://collector:wrong@{u.hostname}:{u.port}")
    bad.loop_stop()
    assert rc.is_failure


def test_broker_acls_keep_each_account_to_its_topics(services):
    """collector may only read readings; device may only write them; admin sees everything."""
    watcher, seen = _client(services.mqtt_urls["admin"], "acl-watcher")
    assert not _connect(watcher, services.mqtt_urls["admin"]).is_failure
    watcher.subscribe("#", qos=1)
    collector, collected = _client(services.mqtt_urls["collector"], "acl-collector")
    assert not _connect(collector, services.mqtt_urls["collector"]).is_failure
    # (this test's own topics: the session's broker is shared and holds retained messages)
    collector.subscribe("sewerwatch/acl/#", qos=1)
    collector.subscribe("sewerwatch-alerts/acl/#", qos=1)  # not allowed: nothing arrives
    device, _ = _client(services.mqtt_urls["device"], "acl-device")
    assert not _connect(device, services.mqtt_urls["device"]).is_failure
    time.sleep(0.3)

    device.publish("sewerwatch/acl/ph", b'{"t": 0, "v": 7, "u": "pH"}', qos=1).wait_for_publish(5)
    device.publish("sewerwatch-alerts/acl/x", b"forged alert", qos=1).wait_for_publish(5)
    collector.publish("sewerwatch/acl/ph", b"forged reading", qos=1).wait_for_publish(5)
    watcher.publish("sewerwatch-alerts/acl/x", b"real alert", qos=1).wait_for_publish(5)
    deadline = time.time() + 3
    while time.time() < deadline and len(seen) < 2:
        time.sleep(0.05)
    time.sleep(0.3)
    for c in (watcher, collector, device):
        c.disconnect()
        c.loop_stop()
    payloads = sorted(p for t, p in seen if "acl" in t)
    assert payloads == sorted([b'{"t": 0, "v": 7, "u": "pH"}', b"real alert"])
    assert collected == [("sewerwatch/acl/ph", b'{"t": 0, "v": 7, "u": "pH"}')]
