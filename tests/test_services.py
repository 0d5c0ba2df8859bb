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
           "SEWERWATCH_PG_PORT": str(free_port()), "SEWERWATCH_MQTT_PORT": str(free_port()),
           "SEWERWATCH_MQTT_SITES_PORT": str(free_port())}
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


def _command_lines() -> list[str]:
    """Every process's command line now (what ``ps`` shows anyone on the machine)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                pass
    return out


def test_no_password_on_a_command_line_nor_in_any_output_without_show_secrets(tmp_path):
    """``services up`` (initdb, PostgreSQL, Mosquitto and its password files)
    puts no password on any command line, watched every few milliseconds while it runs; no
    output of ``services up|status`` or ``status`` shows one, with or without ``--json``;
    ``--show-secrets`` shows them (for integrators)."""
    state = state_dir("sewerwatch-secrets-")
    cfg = tmp_path / "village.toml"
    cfg.write_text(f'[utility]\nname = "Secret village"\n[services]\nstate_dir = "{state}"\npg_port = {free_port()}\n'
                   f'mqtt_port = {free_port()}\nmqtt_sites_port = {free_port()}\n'
                   '[[sites]]\nid = "acme"\nname = "Acme"\nmqtt_devices = ["probe"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}

    def sw(*argv):
        return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), *argv], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=180)

    seen: set[str] = set()
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen.update(_command_lines())
            time.sleep(0.005)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        up = sw("services", "up")
        assert up.returncode == 0, up.stderr
        assert sw("db", "migrate").returncode == 0
        done.set()
        watcher.join(5)
        secrets = json.loads((state / "secrets.json").read_text())
        passwords = [p for section in ("db", "mqtt", "mqtt_sites") for p in secrets[section].values()]
        assert len(secrets["mqtt_sites"]) == 2 and len(passwords) >= 10     # acme and acme.probe among them
        outputs = {"services up": up.stdout + up.stderr}
        for argv in (("services", "status"), ("services", "status", "--json"), ("status",), ("status", "--json"),
                     ("services", "credentials", "acme", "--json")):
            r = sw(*argv)
            outputs[" ".join(argv)] = r.stdout + r.stderr
        leaked = [(where, p[:4] + "...") for where, text in outputs.items() for p in passwords
                  if p in text and not where.startswith("services credentials")]
        assert not leaked, leaked
        on_cmdline = [p[:4] + "..." for p in passwords if any(p in line for line in seen)]
        assert not on_cmdline, on_cmdline
        # the watcher ran (it saw the commands); the short-lived mosquitto_passwd -U it usually sees
        # too, but on a loaded machine a 5 ms poll can miss a process that lives a few milliseconds
        assert any("services" in line and " up" in line for line in seen) or \
            any("mosquitto_passwd -U" in line for line in seen)
        assert "***" in outputs["services status --json"] and "***" in outputs["status --json"]
        shown = sw("services", "status", "--json", "--show-secrets").stdout
        assert secrets["db"]["owner"] in shown and secrets["mqtt"]["collector"] in shown
        assert secrets["db"]["owner"] in sw("status", "--json", "--show-secrets").stdout
        # the integrator's command gives the site's and the device's own accounts, on the sites' listener
        cred = json.loads(outputs["services credentials acme --json"])
        assert secrets["mqtt_sites"]["acme"] in cred["mqtt_url"] and "probe" in cred["devices"]
        assert f":{cfg.read_text().split('mqtt_sites_port = ')[1].split()[0]}" in cred["mqtt_url"]
    finally:
        done.set()
        sw("services", "down")
        shutil.rmtree(state, ignore_errors=True)
