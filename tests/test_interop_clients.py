"""Clients nobody here wrote, against the real collector, writer,
Mosquitto (its ACL generated from the config) and TimescaleDB, each publishing with its
site's own broker account (``sewerwatch services credentials SITE``):

* pysparkplug (in its own venv: it needs paho-mqtt 1.x): NBIRTH with a UInt64, DBIRTH and
  DDATA of Int8/16/32/64 (negative), Float, Boolean and a String metric mapped to a sensor,
  DDEATH and NDEATH;
* mqtt-spb-wrapper (its own venv): ``DATA/ph`` in its DBIRTH, ``ph`` in its DDATA;
* Node-RED 4.1 (npm), its mqtt-out node publishing sewerwatch JSON on an explicit topic
  ``nodered/<site>/ph`` outside the pattern trees;
* one plant's account publishing another plant's Sparkplug metrics: refused (MQTT 5 0x87).

Counted: published = stored, each once, values exact (temperatures converted to °F by hand);
the String metric a dead letter naming its type; ``config check`` lists the collector's
subscriptions and the one each site topic arrives by; ``status`` shows the broker granted
them and that its ACL gives the collector read on each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from urllib.parse import unquote, urlsplit

import paho.mqtt.client as mqtt
import pytest

from ingest import service
from interop_support import INTEROP, ROOT, clean_env, dead_letters, need_npm_package, need_venv, stored
from sewerwatch import services as sw_services
from support import own_broker_village, wait_until

SENSORS = {"t8": ("temperature", "degC"), "t16": ("temperature", "degC"), "t32": ("temperature", "degC"),
           "t64": ("temperature", "degC"), "ph": ("ph", "pH"), "flow": ("flow", "gpm"), "pump": ("level", "ft"),
           "label": ("ph", "pH"), "wph": ("ph", "pH")}
PSP = {"T8": "t8", "T16": "t16", "T32": "t32", "T64": "t64", "pH": "ph", "Pump": "pump", "Label": "label"}


def _config(tmp_path, db_url, site, other, group):
    metrics = "".join(f'[[mqtt.inputs.metrics]]\nnode = "psp1"\ndevice = "probe"\nmetric = "{m}"\nsensor = "{site}/{s}"\n'
                      for m, s in PSP.items())
    metrics += f'[[mqtt.inputs.metrics]]\nnode = "psp1"\nmetric = "Flow"\nsensor = "{site}/flow"\n'
    metrics += f'[[mqtt.inputs.metrics]]\nnode = "wrap1"\ndevice = "dev1"\nmetric = "ph"\nsensor = "{site}/wph"\n'
    metrics += f'[[mqtt.inputs.metrics]]\nnode = "other1"\ndevice = "probe"\nmetric = "pH"\nsensor = "{other}/ph"\n'
    extra = (f'[[sites]]\nid = "{other}"\nname = "Other plant"\n'
             f'[[sensors]]\nsite = "{other}"\nname = "ph"\nparameter = "ph"\nunit = "pH"\nsource = "mqtt"\n'
             f'[[sensors]]\nsite = "{site}"\nname = "nrph"\nparameter = "ph"\nunit = "pH"\nsource = "mqtt"\n'
             f'topic = "nodered/{site}/ph"\n'
             f'[[mqtt.inputs]]\ntopic = "spBv1.0/{group}"\nformat = "sparkplug"\n' + metrics)
    # mqtt-spb-wrapper connects its edge node and its device on connections of their own: the device
    # has an account of its own (an account is one connection on the sites' listener)
    return own_broker_village(tmp_path / "v.toml", db_url, site, SENSORS, extra, site_extra='mqtt_devices = ["dev1"]\n')


def _account(cfg, site, device: str | None = None):
    cred = sw_services.site_credentials(cfg, site)
    u = urlsplit(cred["devices"][device] if device else cred["mqtt_url"])
    return u.hostname, u.port, unquote(u.username), unquote(u.password)


@pytest.fixture
def plant(db, tmp_path, monkeypatch):
    """A two-site village on a broker of its own, the collector and writer running."""
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    site, other, group = "ia" + uuid.uuid4().hex[:6], "ib" + uuid.uuid4().hex[:6], "g" + uuid.uuid4().hex[:6]
    cfg = _config(tmp_path, db.url, site, other, group)
    ep = sw_services.up(cfg, db=False)
    ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=ep.mqtt("collector"), spool_dir=tmp_path / "spool",
                        client_id=f"c-{site}", max_delay=0.05)
    assert ing.mqtt.wait_connected() and wait_until(
        lambda: all(v.startswith("granted") for v in ing.mqtt.subscriptions.values()), 10)
    yield cfg, ing, site, other, group, db
    ing.stop()
    sw_services.down(cfg)


def test_pysparkplug_and_mqtt_spb_wrapper_values_exact_and_a_string_metric_a_dead_letter(plant):
    cfg, ing, site, other, group, db = plant
    py_psp, py_wrap = need_venv("pysparkplug"), need_venv("mqtt-spb-wrapper")
    host, port, user, password = _account(cfg, site)
    base = {"host": host, "port": port, "username": user, "password": password, "group": group}
    psp = subprocess.run([str(py_psp), str(INTEROP / "pysparkplug_edge.py"), json.dumps({**base, "node": "psp1",
                          "rounds": 20})], capture_output=True, text=True, timeout=60)
    assert psp.returncode == 0, psp.stderr[-2000:]
    _, _, dev_user, dev_password = _account(cfg, site, "dev1")
    wrap = subprocess.run([str(py_wrap), str(INTEROP / "spb_wrapper_edge.py"), json.dumps({**base, "node": "wrap1",
                           "device": "dev1", "rounds": 10, "device_username": dev_user,
                           "device_password": dev_password})], capture_output=True, text=True, timeout=60)
    assert wrap.returncode == 0, wrap.stderr[-2000:]
    want = {}
    for m, t, v in json.loads(psp.stdout.strip().splitlines()[-1])["published"]:
        name = PSP.get(m, "flow")
        want[(name, t)] = v * 9 / 5 + 32 if name.startswith("t") else v
    for m, t, v in json.loads(wrap.stdout.strip().splitlines()[-1])["published"]:
        want[("wph", t)] = v
    assert wait_until(lambda: len(stored(db.url, site)) >= len(want), 20)
    time.sleep(0.5)
    rows = stored(db.url, site)
    assert set(rows) == set(want) and rows == pytest.approx(want, abs=1e-9)       # each once, exact
    assert min(v for (n, _), v in rows.items() if n == "t8") == pytest.approx(-25 * 9 / 5 + 32)   # Int8 -25
    assert rows[next(k for k in rows if k[0] == "flow")] == 2 ** 40 + 7                          # UInt64
    reasons = [r for _, r, _ in dead_letters(db.url, f"spBv1.0/{group}/%")]
    assert len(reasons) == 21 and all(  # the DBIRTH and 20 DDATA
"metric 'Label' of" in r and "datatype String (12) is not a number "
                                      "sewerwatch can judge" in r for r in reasons), reasons[:2]


def test_node_red_mqtt_out_on_an_explicit_topic_is_read_and_config_check_shows_it(plant, tmp_path):
    cfg, ing, site, other, group, db = plant
    need_npm_package("node-red")
    host, port, user, password = _account(cfg, site)
    ud = tmp_path / "nodered"
    ud.mkdir()
    (ud / "settings.js").write_text(
        'module.exports = { uiPort: 0, uiHost: "127.0.0.1", httpAdminRoot: false, httpNodeRoot: false, '
        'credentialSecret: false, flowFile: "flows.json", logging: { console: { level: "info" } }, '
        'telemetry: { enabled: false }, diagnostics: { enabled: false }, runtimeState: { enabled: false } };\n')
    fn = ("const t0 = Date.now(); for (let k = 0; k < 20; k++) { "
          "node.send({payload: {t: t0 + 10 * k, v: 6 + k / 8, u: 'pH'}}); } return null;")
    flows = [{"id": "b1", "type": "mqtt-broker", "name": "sewerwatch", "broker": host, "port": str(port),
              "clientid": f"nodered-{site}", "autoConnect": True, "usetls": False, "protocolVersion": "4",
              "keepalive": "60", "cleansession": True},
             {"id": "t1", "type": "tab", "label": "manhole"},
             {"id": "i1", "type": "inject", "z": "t1", "props": [{"p": "payload"}], "once": True, "onceDelay": "1",
              "repeat": "", "payload": "", "payloadType": "date", "wires": [["f1"]]},
             {"id": "f1", "type": "function", "z": "t1", "func": fn, "outputs": 1, "wires": [["o1"]]},
             {"id": "o1", "type": "mqtt out", "z": "t1", "topic": f"nodered/{site}/ph", "qos": "1", "retain": "false",
              "broker": "b1", "wires": []}]
    (ud / "flows.json").write_text(json.dumps(flows))
    (ud / "flows_cred.json").write_text(json.dumps({"b1": {"user": user, "password": password}}))
    log = open(tmp_path / "nodered.log", "w")
    red = subprocess.Popen(["node", str(INTEROP / "node_modules" / "node-red" / "red.js"), "--userDir", str(ud),
                            "--settings", str(ud / "settings.js"), str(ud / "flows.json")], stdout=log,
                           stderr=subprocess.STDOUT, cwd=INTEROP)
    try:
        assert wait_until(lambda: sum(1 for k in stored(db.url, site) if k[0] == "nrph") >= 20 or red.poll() is not None,
                          40), (tmp_path / "nodered.log").read_text()[-2000:]
    finally:
        red.terminate()
        red.wait(20)
    rows = {k: v for k, v in stored(db.url, site).items() if k[0] == "nrph"}
    assert sorted(rows.values()) == [6 + k / 8 for k in range(20)]
    assert "Connected to broker" in (tmp_path / "nodered.log").read_text()
    # config check: the collector's subscriptions, the one each site topic arrives by
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", cfg.path, "config", "check"], cwd=ROOT,
                         capture_output=True, text=True, env=clean_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert (f"mqtt: the collector subscribes to sewerwatch/#, spBv1.0/#, nodered/{site}/ph (each readable under "
            "the embedded broker's ACL)") in out.stdout
    assert f"nodered/{site}/ph (via nodered/{site}/ph)" in out.stdout
    assert f"spBv1.0/{group}/DDATA/psp1/+ (via spBv1.0/#)" in out.stdout
    acc = sw_services.mqtt_access(cfg, ing.mqtt.subscriptions)
    assert acc["problems"] == [] and set(acc["collector_reads"]) == {"sewerwatch/#", "spBv1.0/#", f"nodered/{site}/ph"}
    assert all(acc["collector_reads"].values())
    # the same check catches an ACL that does not give the collector the topic
    acl = cfg.services.state_dir / "mqtt" / "acl"
    acl.write_text(acl.read_text().replace(f"topic read nodered/{site}/ph\n", ""))
    acc = sw_services.mqtt_access(cfg, ing.mqtt.subscriptions)
    assert acc["problems"] == [f"the broker's ACL ({acl}) gives the collector no read on nodered/{site}/ph: nothing "
                               "published there arrives (run 'sewerwatch services up' to write it again)"]


def test_one_plants_account_cannot_publish_another_plants_sparkplug_metrics(plant):
    cfg, ing, site, other, group, db = plant
    host, port, user, password = _account(cfg, site)
    creds = sw_services.site_credentials(cfg, site)
    assert f"spBv1.0/{group}/NBIRTH/psp1" in creds["topics"] and f"spBv1.0/{group}/DDATA/wrap1/+" in creds["topics"]
    assert not any("other1" in t for t in creds["topics"])
    assert f"spBv1.0/STATE/{cfg.sparkplug_host_id}" in creds["reads"]
    codes = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"gw-{site}", protocol=mqtt.MQTTv5)
    c.username_pw_set(user, password)
    c.on_publish = lambda cl, ud, mid, rc, props: codes.__setitem__(mid, rc.value)
    c.connect(host, port)
    c.loop_start()
    try:
        from ingest.mqtt.sparkplug_schema import Payload
        p = Payload(timestamp=int(time.time() * 1000), seq=0)
        p.metrics.add(name="pH", datatype=10, double_value=3.0)
        theirs = c.publish(f"spBv1.0/{group}/NBIRTH/other1", p.SerializeToString(), qos=1)
        ours = c.publish(f"spBv1.0/{group}/NBIRTH/psp1", Payload(timestamp=p.timestamp, seq=0).SerializeToString(),
                         qos=1)
        assert wait_until(lambda: theirs.mid in codes and ours.mid in codes, 10)
    finally:
        c.loop_stop()
        c.disconnect()
    assert codes[theirs.mid] == 0x87 and codes[ours.mid] in (0, 0x10)     # Not authorized / taken
    time.sleep(0.5)
    assert stored(db.url, other) == {}
