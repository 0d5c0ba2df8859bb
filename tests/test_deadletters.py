"""No reading vanishes at the broker: the collector subscribes to the whole
``sewerwatch/#`` tree, a topic of the wrong shape is a dead letter showing the expected form,
and ``sewerwatch deadletters list|show|replay`` and ``status`` work with them (the CLI as a
subprocess). Against the real Mosquitto and TimescaleDB; the broker's refusals (MQTT 5
reason codes, Mosquitto's log) on an embedded broker of the test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlsplit

import paho.mqtt.client as mqtt
import psycopg

from foundation import config as sw_config
from ingest import service
from sewerwatch import services as sw_services
from sewerwatch.services.scratch import free_port
from support import (close_all, count, mqtt_client, publish_all, sensors_toml, state_dir, topic_watcher, village_toml,
                     wait_until)

ROOT = Path(__file__).resolve().parent.parent


def _env():
    return {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}


def _sw(cfg_path, *args):
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg_path), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=_env())


def _stored(url: str, site: str) -> int:
    return count(url, "SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                      "JOIN sites si ON si.id = s.site_id WHERE si.key = %s", (site,))


def test_wrong_topics_are_dead_letters_that_replay_once_after_the_config_is_fixed(db, services, tmp_path):
    site = "dl" + uuid.uuid4().hex[:8]
    cfg_path = village_toml(tmp_path / "v.toml", site, db_url=db.url, mqtt_url=services.mqtt_urls["collector"],
                            state=tmp_path / "state")
    assert _sw(cfg_path, "db", "migrate").returncode == 0
    cfg = sw_config.load(cfg_path)
    ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                        spool_dir=tmp_path / "spool", client_id=f"c-{site}", max_delay=0.05)
    pub = None
    now = int(time.time() * 1000) - 60_000
    try:
        assert ing.mqtt.wait_subscribed()
        pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
        publish_all(pub, [
            (f"sewerwatch/{site}/ph", json.dumps({"t": now, "v": 7.1, "u": "pH"})),            # good
            (f"sewerwatch/{site}/mh1/ph", json.dumps({"t": now + 1000, "v": 7.2, "u": "pH"})),  # wrong shape
            (f"sewerwatch/{site}/temp", json.dumps({"t": now, "v": 21.5, "u": "degC"})),        # unknown sensor
            (f"sewerwatch/{site}/ph", b"\x00\xffnot json"),                                    # not JSON
        ])
        dead = f"SELECT count(*) FROM dead_letters WHERE topic LIKE 'sewerwatch/{site}/%%'"
        # a generous bound (it returns as soon as all four are in): 20 s once ran out on a loaded machine
        assert wait_until(lambda: count(db.url, dead) >= 3 and _stored(db.url, site) >= 1, 60), \
            (count(db.url, dead), _stored(db.url, site))
    finally:
        close_all(pub)
        ing.stop()
    with psycopg.connect(db.url) as conn:
        reasons = dict(conn.execute("SELECT topic || ' ' || left(encode(payload, 'hex'), 4), reason "
                                    "FROM dead_letters WHERE topic LIKE %s", (f"sewerwatch/{site}/%",)).fetchall())
        ids = dict(conn.execute("SELECT topic || ' ' || left(encode(payload, 'hex'), 4), id "
                                "FROM dead_letters WHERE topic LIKE %s", (f"sewerwatch/{site}/%",)).fetchall())
    wrong, temp, binary = f"sewerwatch/{site}/mh1/ph 7b22", f"sewerwatch/{site}/temp 7b22", f"sewerwatch/{site}/ph 00ff"
    assert reasons[wrong] == ("topic does not match sewerwatch/{site}/{sensor} "
                              "(expected sewerwatch/<site>/<sensor>)")
    assert reasons[temp] == f"unknown sensor 'temp' at site '{site}' (its MQTT sensors: ph)"
    assert reasons[binary].startswith("not JSON") and '(expected sewerwatch format, e.g. {"t": ' in reasons[binary]

    # list: newest first, counts by source and reason; filters
    out = _sw(cfg_path, "deadletters", "list", "--source", "mqtt", "--reason", "does not match")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("dead letters not replayed: 1 (mqtt 1)")
    assert f"#{ids[wrong]}" in out.stdout and "(expected sewerwatch/<site>/<sensor>)" in out.stdout
    js = json.loads(_sw(cfg_path, "deadletters", "list", "--json", "--since", "1h").stdout)
    assert js["by_source"] == {"mqtt": 3} and [d["id"] for d in js["letters"]] == sorted(ids.values(), reverse=True)
    assert _sw(cfg_path, "deadletters", "list", "--since", "yesterday-ish").returncode == 2

    # show: the payload as text, or as hex when it is not text
    shown = _sw(cfg_path, "deadletters", "show", str(ids[wrong])).stdout
    assert f"topic:  sewerwatch/{site}/mh1/ph" in shown and '"v": 7.2' in shown and "as text" in shown
    shown = _sw(cfg_path, "deadletters", "show", str(ids[binary])).stdout
    assert "as hex" in shown and "00 ff 6e 6f 74 20 6a 73 6f 6e" in shown
    assert _sw(cfg_path, "deadletters", "show", "999999999").returncode == 2

    # status: counts by source over the last hour and in all, the latest reasons
    st = _sw(cfg_path, "status")
    assert "dead letters not replayed: 3 in the last 1 h, 3 in all (mqtt 3/3)" in st.stdout, st.stdout
    assert "(expected sewerwatch/<site>/<sensor>)" in st.stdout

    # the config is fixed: the manhole's topic pattern and the temperature sensor
    with open(cfg_path, "a") as f:
        f.write(sensors_toml(site, {"temp": ("temperature", "degC")}) + '\n[mqtt]\ntopics = ["sewerwatch/{site}/{sensor}", '
                '"sewerwatch/{site}/mh1/{sensor}"]\n')
    assert _sw(cfg_path, "config", "check").returncode == 0
    assert _sw(cfg_path, "db", "migrate").returncode == 0          # the new sensor into the database
    before = _stored(db.url, site)
    dry = _sw(cfg_path, "deadletters", "replay", "--since", "1h", "--dry-run")
    assert dry.returncode == 1                                      # the binary one is still unusable
    assert "would store 1 reading" in dry.stdout and _stored(db.url, site) == before
    rep = _sw(cfg_path, "deadletters", "replay", "--since", "1h")
    assert rep.returncode == 1, rep.stderr
    assert f"#{ids[wrong]} sewerwatch/{site}/mh1/ph: stored 1 reading (1 new)" in rep.stdout
    assert "2 stored 2 readings (2 new); 1 still unusable" in rep.stdout
    assert _stored(db.url, site) == before + 2
    with psycopg.connect(db.url) as conn:
        temp_row = conn.execute("SELECT r.value FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                                "JOIN sites si ON si.id = s.site_id WHERE si.key = %s AND s.name = 'temp'",
                                (site,)).fetchone()
        state = {r[0]: r[1:] for r in conn.execute(
            "SELECT id, replayed_at IS NOT NULL, replayed_as, replay_tries FROM dead_letters WHERE id = ANY(%s)",
            (list(ids.values()),)).fetchall()}
    assert abs(temp_row[0] - (21.5 * 9 / 5 + 32)) < 1e-9                     # canonical °F
    assert state[ids[temp]][0] is True and state[ids[temp]][1] == f"1 reading of {site}/temp"
    assert state[ids[binary]][0] is False and state[ids[binary]][2] == 1

    # replaying again stores nothing twice; a replayed one asked for by id says so
    again = _sw(cfg_path, "deadletters", "replay", "--since", "1h")
    assert "0 stored 0 readings (0 new); 1 still unusable; 0 skipped" in again.stdout
    by_id = _sw(cfg_path, "deadletters", "replay", "--id", str(ids[wrong]))
    assert by_id.returncode == 0 and "skipped: replayed already at" in by_id.stdout
    assert _stored(db.url, site) == before + 2
    listed = _sw(cfg_path, "deadletters", "list", "--state", "replayed").stdout
    assert f"[replayed as 1 reading of {site}/ph]" in listed
    st = _sw(cfg_path, "status").stdout
    assert "dead letters not replayed: 1 in the last 1 h, 1 in all (mqtt 1/1)" in st

    # lab-import dead letters are replayed by importing the corrected file
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO dead_letters (source, topic, payload, reason) VALUES "
                     "('lab-import', 'q1.csv:7', 'acme,BOD,x', 'value ''x'' is not a number')")
    lab = _sw(cfg_path, "deadletters", "replay", "--source", "lab-import")
    assert "replayed by importing the corrected file ('sewerwatch lab import FILE'" in lab.stdout


def _site_client(url: str, client_id: str, protocol):
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol)
    c.username_pw_set(unquote(u.username), unquote(u.password))
    acks: dict = {}
    done = threading.Event()

    def on_publish(client, userdata, mid, reason_code, properties):
        acks[mid] = reason_code
        done.set()

    c.on_publish = on_publish
    c.connect(u.hostname, u.port)
    c.loop_start()
    return c, acks


def test_the_broker_refuses_a_publish_outside_the_site_mqtt5_says_so_and_the_log_names_it(tmp_path, monkeypatch):
    """What an integrator sees when the ACL refuses a publish (the guide's ``docs/devices/dead-letters.md``): an MQTT 5
    client gets PUBACK reason code 0x87 Not authorized; an MQTT 3.1.1 client gets a plain
    PUBACK (the broker drops the message silently); with ``[services] mqtt_log_denied`` the
    broker's log names the client and topic."""
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    state = state_dir("sewerwatch-denied-")
    cfg = sw_config.from_dict({"services": {"state_dir": str(state), "mqtt_port": free_port(),
                                            "mqtt_sites_port": free_port(),
                                            "db_url": "postgresql://unused@127.0.0.1:1/x", "mqtt_log_denied": True},
                               "sites": [{"id": "acme", "name": "acme", "mqtt_devices": ["v3"]},
                                         {"id": "candy", "name": "candy"}]}, "<test>")
    ep = sw_services.up(cfg, db=False)
    v5 = v3 = watcher = None
    try:
        watcher, got = topic_watcher(ep.mqtt("admin"))
        v5, acks5 = _site_client(ep.site_urls["acme"], "acme-v5", mqtt.MQTTv5)
        v3, acks3 = _site_client(ep.site_urls["acme.v3"], "acme-v3", mqtt.MQTTv311)   # a device of its own
        assert wait_until(lambda: v5.is_connected() and v3.is_connected(), 5)
        denied5 = v5.publish("sewerwatch/candy/ph", b"7.0", qos=1).mid
        allowed5 = v5.publish("sewerwatch/acme/ph", b"7.0", qos=1).mid
        denied3 = v3.publish("sewerwatch/candy/flow", b"7.0", qos=1).mid
        assert wait_until(lambda: {denied5, allowed5} <= set(acks5) and denied3 in acks3, 5)
        assert wait_until(lambda: "sewerwatch/acme/ph" in got, 5)
        time.sleep(0.3)
    finally:
        close_all(v5, v3, watcher)
        sw_services.down(cfg)
    assert acks5[denied5].value == 0x87 and str(acks5[denied5]) == "Not authorized"
    assert acks5[allowed5].value == 0x00
    assert not acks3[denied3].is_failure                       # MQTT 3.1.1: acknowledged, silently dropped
    assert got == ["sewerwatch/acme/ph"]
    log = (state / "mqtt" / "mosquitto.log").read_text()
    # the client ids are the accounts' names, whatever the clients asked for
    assert "Denied PUBLISH from site-acme " in log and "'sewerwatch/candy/ph'" in log
    assert "Denied PUBLISH from site-acme.v3 " in log and "'sewerwatch/candy/flow'" in log
