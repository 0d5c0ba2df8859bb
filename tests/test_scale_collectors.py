"""Several collectors share the load.

MQTT: two ``sewerwatch collect`` subprocesses in one shared-subscription group (real
Mosquitto, real TimescaleDB), a publisher streaming readings, one collector killed with
SIGKILL mid-stream and restarted with its client id, as a service manager would: every
reading is stored exactly once. Mosquitto 2.0 goes on routing a dead member's share of the
messages into its persistent session (and keeps the QoS 1 messages it had in flight there):
they wait for that client id to come back, which this test shows before the restart.

Modbus: two collectors with two ``[modbus] shards`` poll disjoint devices.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from foundation import config as sw_config
from foundation.errors import InputError
from ingest import service
from sewerwatch.db import sync
from support import HISTORIC, HISTORIC_TOML, Sender, ServedDevice, add_site_and_sensors, close_all, count, free_port, \
    mqtt_client, wait_until

ROOT = Path(__file__).resolve().parents[1]
MS0 = int((time.time() - 3 * 86400) * 1000)


def _stored(url: str, site: str) -> tuple[int, int]:
    """Rows stored for ``site`` and distinct (sensor, time) among them."""
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*), count(DISTINCT (r.sensor_id, r.time)) FROM readings r "
                            "JOIN sensors s ON s.id = r.sensor_id JOIN sites si ON si.id = s.site_id "
                            "WHERE si.key = %s", (site,)).fetchone()


def _settled(url: str, site: str, quiet_s: float = 2.0, timeout: float = 60.0) -> int:
    """The stored count once nothing more has arrived for ``quiet_s``."""
    last, since, end = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() - since < quiet_s and time.monotonic() < end:
        now = _stored(url, site)[0]
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(0.1)
    return last


def test_two_collectors_in_a_group_one_killed_mid_stream_store_every_reading_once(db, services, tmp_path):
    site = "g" + uuid.uuid4().hex[:8]
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    cfg = tmp_path / "collector.toml"
    cfg.write_text(f'[services]\ndb_url = "{db.urls["ingest"]}"\nmqtt_url = "{services.mqtt_urls["collector"]}"\n'
                   f'state_dir = "{tmp_path / "state"}"\n[mqtt]\nshare_group = "grp-{site}"\n' + HISTORIC_TOML)

    def start(name: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "sewerwatch", "--config", str(cfg), "collect", "--client-id", f"{name}-{site}",
               "--report-every", "1"]
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:                      # wait until it runs and is subscribed
            if "subscribed to" in line:
                assert f"$share/grp-{site}/sewerwatch/#" in line
                threading.Thread(target=p.stderr.read, daemon=True).start()
                return p
        raise AssertionError(f"collector {name} did not start (exit {p.wait()})")

    per_msg, n_msgs = 3, 800                       # 1,600 messages on two sensors, 4,800 readings
    msgs = []
    for sensor, unit, base in (("ph", "pH", 7.0), ("flow", "gpm", 120.0)):
        for k in range(n_msgs):
            ts = [MS0 + 1000 * (k * per_msg + j) for j in range(per_msg)]
            msgs.append((f"sewerwatch/{site}/{sensor}",
                         json.dumps({"u": unit, "t": ts, "v": [base + 0.1 * (j % 5) for j in range(per_msg)]})))
    msgs = [m for pair in zip(msgs[:n_msgs], msgs[n_msgs:]) for m in pair]   # the sensors interleaved
    total = len(msgs) * per_msg
    one = two = pub = None
    try:
        one, two = start("one"), start("two")
        pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
        sender = Sender(pub, msgs, rate=400)
        assert wait_until(lambda: _stored(db.url, site)[0] > total // 5, 30)
        one.send_signal(signal.SIGKILL)           # mid-stream: messages in flight, unacknowledged
        one.wait()
        killed_at = _stored(db.url, site)[0]
        sender.join(60)                           # the rest published while "one" is dead
        without_one = _settled(db.url, site)
        one = start("one")                        # restarted with its client id, as a service manager would
        assert wait_until(lambda: _stored(db.url, site)[0] >= total, 60), _stored(db.url, site)
        time.sleep(1.0)                           # anything delivered twice would land now
        stored, distinct = _stored(db.url, site)
        for p in (one, two):
            p.send_signal(signal.SIGTERM)
            assert p.wait(30) == 0
        status = {name: json.loads((tmp_path / "state" / f"collect-status-{name}-{site}.json").read_text())
                  for name in ("one", "two")}
    finally:
        close_all(pub, one, two)
    print(f"\ntwo collectors, one SIGKILLed at {killed_at} of {total} readings stored: {without_one} stored "
          f"while it was down (its share waits in its session), {stored} after its restart")
    assert killed_at < total
    # Mosquitto routes the dead member's share into its persistent session: not all is stored
    # until it comes back (docs/running/scale-out.md: restart a collector with its client id, or drain it)
    assert without_one < total
    assert stored == distinct == total
    accepted = {name: st["readings"]["accepted"] for name, st in status.items()}
    assert accepted["two"] > 0 and accepted["one"] > 0, accepted     # both took a share
    assert status["two"]["components"]["mqtt-network"]["share_group"] == f"grp-{site}"


def test_two_collectors_with_two_shards_poll_disjoint_devices(db, tmp_path):
    u = uuid.uuid4().hex[:6]
    site = f"shard-{u}"
    ports = {"north": free_port(), "south": free_port()}
    served = {name: ServedDevice(port) for name, port in ports.items()}
    cfg = sw_config.from_dict({
        "sites": [{"id": site, "name": site}],
        "modbus": {"shards": ["north", "south"], "flush_s": 0.2},
        "devices": [{"id": f"{name}-mh", "site": site, "port": port, "shard": name, "interval_s": 0.5}
                    for name, port in ports.items()],
        "sensors": [{"site": site, "name": f"{name}-ph", "parameter": "ph", "unit": "pH", "source": "modbus",
                     "device": f"{name}-mh", "field": "ph"} for name in ports],
        "ingest": HISTORIC}, "<test>")
    with psycopg.connect(db.url) as conn:
        sync.sync(conn, cfg)
    with pytest.raises(InputError, match="name this one's with --shard"):
        service.modbus_devices(cfg, None)
    with pytest.raises(InputError, match="--shard 'east'"):
        service.modbus_devices(cfg, ["east"])
    ings = {}
    try:
        for name in ports:
            ings[name] = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=None,
                                       spool_dir=tmp_path / f"spool-{name}", shards=[name], max_delay=0.05)
        per_sensor = ("SELECT s.name, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                      "GROUP BY s.name")
        assert wait_until(lambda: len(dict(psycopg.connect(db.url).execute(per_sensor).fetchall())) == 2, 20)
        polled = {name: [d.device.id for d in ing.modbus.devices] for name, ing in ings.items()}
        fed = {name: ing.sink.accepted for name, ing in ings.items()}
    finally:
        close_all(*ings.values(), *served.values())
    assert polled == {"north": ["north-mh"], "south": ["south-mh"]}
    assert all(v > 0 for v in fed.values()), fed
    # each collector stored only its own device's readings: the counts add up, no device polled twice
    rows = count(db.url, "SELECT count(*) FROM readings")
    assert rows == sum(fed.values())


@pytest.mark.parametrize("tables, error", [
    ({"devices": [{"id": "d1", "site": "a", "shard": "north"}]},
     "devices[0].shard: unknown shard 'north' (no [modbus] shards are declared)"),
    ({"modbus": {"shards": ["north", "south"]}, "devices": [{"id": "d1", "site": "a"}]},
     "devices[0].shard: missing: [modbus] shards splits the devices among collectors (north, south)"),
    ({"modbus": {"shards": ["north", "south"]}, "devices": [{"id": "d1", "site": "a", "shard": "east"}]},
     "devices[0].shard: unknown shard 'east' (shards: north, south)"),
    ({"modbus": {"shards": ["north", "north"]}}, "modbus.shards: a shard is named twice"),
    ({"mqtt": {"share_group": "a/b"}}, "mqtt.share_group: expected one topic level"),
])
def test_a_device_in_no_shard_or_an_unknown_one_is_a_one_line_config_error(tables, error):
    with pytest.raises(InputError) as e:
        sw_config.from_dict({"sites": [{"id": "a", "name": "A"}], **tables}, "village.toml")
    assert str(e.value).startswith(f"village.toml: {error}") and "\n" not in str(e.value)


def test_collect_with_an_unknown_shard_or_none_says_so_in_one_line(tmp_path):
    cfg = tmp_path / "village.toml"
    cfg.write_text('[services]\ndb_url = "postgresql://nobody@127.0.0.1:1/none"\nmqtt_url = "mqtt://127.0.0.1:1"\n'
                   '[modbus]\nshards = ["north", "south"]\n[[sites]]\nid = "a"\nname = "A"\n'
                   '[[devices]]\nid = "d1"\nsite = "a"\nshard = "north"\n'
                   '[[sensors]]\nsite = "a"\nname = "ph"\nparameter = "ph"\nunit = "pH"\nsource = "modbus"\n'
                   'device = "d1"\n')
    check = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "config", "check"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    for extra, words in ((["--shard", "east"], "--shard 'east': not a shard of"),
                         ([], "name this one's with --shard")):
        out = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "collect", *extra], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
