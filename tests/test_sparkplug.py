"""Sparkplug B: births and aliases honoured, sequence numbers checked (0-255,
wrapping), data before birth and a gap in the sequence are dead letters with the reason and
a rebirth request (NCMD ``Node Control/Rebirth``). Payloads are built with protobuf from the
specification's schema; the end-to-end test publishes them with paho to an embedded broker
of its own, into the real collector, writer and TimescaleDB."""

from __future__ import annotations

import time
import uuid

import numpy as np
import psycopg
import pytest

from foundation import config as sw_config
from foundation.config import MqttInput
from foundation.errors import ConfigError
from ingest import service
from ingest.mqtt.payload import Unusable
from ingest.mqtt.sparkplug import REBIRTH_METRIC, SparkplugHost
from ingest.mqtt.sparkplug_schema import Payload
from ingest.mqtt.topics import SensorRef, TopicMap
from sewerwatch import services as sw_services
from support import close_all, count, mqtt_client, own_broker_village, publish_all, wait_until

NOW_MS = 1_772_366_400_000
DOUBLE, FLOAT, INT32, BOOLEAN = 10, 9, 3, 11


def payload(seq, metrics, ts=NOW_MS) -> bytes:
    """A Sparkplug B payload: ``metrics`` as (name or None, alias or None, datatype, value)."""
    p = Payload(timestamp=ts, seq=seq)
    for name, alias, dtype, value in metrics:
        m = p.metrics.add(datatype=dtype)
        if name is not None:
            m.name = name
        if alias is not None:
            m.alias = alias
        field = {DOUBLE: "double_value", FLOAT: "float_value", INT32: "int_value", BOOLEAN: "boolean_value"}[dtype]
        setattr(m, field, value)
    return p.SerializeToString()


def _host(rebirths=None):
    refs = [SensorRef(1, "acme/ph", "ph", unit="pH"), SensorRef(2, "acme/flow", "flow", unit="gpm"),
            SensorRef(3, "acme/temp", "temperature", unit="degC")]
    inp = MqttInput("spBv1.0/plant", "sparkplug", metrics=(
        ("mh1", "probe", "Inputs/pH", "acme/ph"), ("mh1", "probe", "Inputs/Temp", "acme/temp"),
        ("mh1", "", "Flow", "acme/flow")))
    tm = TopicMap(refs, {}, ("sewerwatch/{site}/{sensor}", inp))
    host = SparkplugHost(tm, request_rebirth=None if rebirths is None else lambda t, p: rebirths.append(t))
    return tm, host


def _decode(tm, host, topic, raw):
    return host.decode(tm.match(topic), topic, raw, now_us=NOW_MS * 1000).readings


def test_births_aliases_and_a_50_metric_ddata_as_one_batch():
    tm, host = _host()
    nb = payload(0, [("bdSeq", 0, INT32, 0), ("Node Control/Rebirth", 1, BOOLEAN, False), ("Flow", 2, DOUBLE, 120.0)])
    res = host.decode(tm.match("spBv1.0/plant/NBIRTH/mh1"), "spBv1.0/plant/NBIRTH/mh1", nb, now_us=NOW_MS * 1000)
    assert len(res.readings) == 0 and res.held == ("plant", "mh1")     # held until the history, if any, is in
    db = payload(1, [("Inputs/pH", 10, DOUBLE, 7.0), ("Inputs/Temp", 11, FLOAT, 20.0), ("Status", 12, INT32, 1)])
    assert len(_decode(tm, host, "spBv1.0/plant/DBIRTH/mh1/probe", db)) == 0
    # DDATA by alias only: 50 metrics, one numpy batch, each with its own timestamp; the
    # births' values (a birth's values are readings) come first
    p = Payload(timestamp=NOW_MS, seq=2)
    for k in range(50):
        m = p.metrics.add(alias=10 if k % 2 == 0 else 11, timestamp=NOW_MS - 1000 * k, datatype=DOUBLE)
        m.double_value = 7.0 + k / 100 if k % 2 == 0 else 25.0
    res = host.decode(tm.match("spBv1.0/plant/DDATA/mh1/probe"), "spBv1.0/plant/DDATA/mh1/probe",
                      p.SerializeToString(), now_us=NOW_MS * 1000)
    assert res.released == ("plant", "mh1")
    births, r = res.readings.take(slice(0, 3)), res.readings.take(slice(3, None))
    assert births.sensor_id.tolist() == [2, 1, 3] and births.value[:2].tolist() == [120.0, 7.0]
    assert len(r) == 50 and isinstance(r.value, np.ndarray)
    assert r.time_us[:2].tolist() == [NOW_MS * 1000, (NOW_MS - 1000) * 1000]
    assert np.allclose(r.value[r.sensor_id == 3], 77.0)                          # 25 °C in canonical °F
    assert np.allclose(r.value[r.sensor_id == 1][:2], [7.0, 7.02])


def test_seq_wraps_after_255_and_a_gap_or_data_before_birth_is_refused_with_a_rebirth_request():
    rebirths = []
    tm, host = _host(rebirths)
    with pytest.raises(Unusable, match=r"^data before birth: NDATA of plant/mh1 before its edge node's NBIRTH "
                                       r"\(aliases unknown\); rebirth requested$"):
        _decode(tm, host, "spBv1.0/plant/NDATA/mh1", payload(5, [(None, 2, DOUBLE, 1.0)]))
    assert rebirths == ["spBv1.0/plant/NCMD/mh1"]
    _decode(tm, host, "spBv1.0/plant/NBIRTH/mh1", payload(254, [("Flow", 2, DOUBLE, 1.0)]))
    _decode(tm, host, "spBv1.0/plant/NDATA/mh1", payload(255, [(None, 2, DOUBLE, 2.0)]))
    assert _decode(tm, host, "spBv1.0/plant/NDATA/mh1", payload(0, [(None, 2, DOUBLE, 3.0)])).value.tolist() == [3.0]
    with pytest.raises(Unusable, match=r"^data before birth: DDATA of plant/mh1/probe before the device's DBIRTH"):
        _decode(tm, host, "spBv1.0/plant/DDATA/mh1/probe", payload(1, [(None, 10, DOUBLE, 7.0)]))
    with pytest.raises(Unusable, match=r"^sequence gap: NDATA of plant/mh1 has seq 5, expected 2 \(a message from "
                                       r"the edge node was lost\); rebirth requested$"):
        _decode(tm, host, "spBv1.0/plant/NDATA/mh1", payload(5, [(None, 2, DOUBLE, 4.0)]))
    # after a gap the session is stale until the next NBIRTH
    with pytest.raises(Unusable, match="^data before birth"):
        _decode(tm, host, "spBv1.0/plant/NDATA/mh1", payload(6, [(None, 2, DOUBLE, 5.0)]))
    assert len(rebirths) == 1                         # at most one request every 5 s per node
    with pytest.raises(Unusable, match=r"^not a Sparkplug B payload .*expected sparkplug format, e.g. a Sparkplug B"):
        _decode(tm, host, "spBv1.0/plant/NBIRTH/mh1", b'{"t": 1, "v": 7}')
    assert tm.match("spBv1.0/plant/NDATA") == ("topic does not match spBv1.0/plant/<message type>/<edge node>"
                                               "[/<device>] (Sparkplug B)")


def test_config_maps_metrics_to_known_sensors_in_one_line():
    base = {"sites": [{"id": "acme", "name": "Acme"}],
            "sensors": [{"site": "acme", "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"}]}
    ok = sw_config.from_dict({**base, "mqtt": {"inputs": [{"topic": "spBv1.0/plant", "format": "sparkplug",
                              "metrics": [{"node": "mh1", "metric": "pH", "sensor": "acme/ph"}]}]}}, "v.toml")
    assert ok.mqtt_inputs[-1].metrics == (("mh1", "", "pH", "acme/ph"),)
    with pytest.raises(ConfigError, match=r"^v.toml: mqtt.inputs\[0\].metrics\[0\].sensor: unknown MQTT sensor "
                                          r"'acme/cod' \(MQTT sensors: acme/ph\)$"):
        sw_config.from_dict({**base, "mqtt": {"inputs": [{"topic": "spBv1.0/plant", "format": "sparkplug",
                             "metrics": [{"node": "mh1", "metric": "pH", "sensor": "acme/cod"}]}]}}, "v.toml")
    with pytest.raises(ConfigError, match=r"^v.toml: mqtt.inputs\[0\].topic: a sparkplug input's topic is "
                                          r"spBv1.0/<group id>"):
        sw_config.from_dict({**base, "mqtt": {"inputs": [{"topic": "spBv1.0/{site}/x", "format": "sparkplug",
                             "metrics": [{"node": "mh1", "metric": "pH", "sensor": "acme/ph"}]}]}}, "v.toml")


INPUTS = """[[mqtt.inputs]]
topic = "spBv1.0/{group}"
format = "sparkplug"
[[mqtt.inputs.metrics]]
node = "mh1"
device = "probe"
metric = "Inputs/pH"
sensor = "{site}/ph"
[[mqtt.inputs.metrics]]
node = "mh1"
device = "probe"
metric = "Inputs/Temp"
sensor = "{site}/temp"
"""


def test_sparkplug_births_and_data_published_with_paho_arrive_and_a_gap_asks_for_rebirth(db, tmp_path, monkeypatch):
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    site, group = "sp" + uuid.uuid4().hex[:8], "g" + uuid.uuid4().hex[:6]
    cfg = own_broker_village(tmp_path / "v.toml", db.url, site, {"ph": ("ph", "pH"), "temp": ("temperature", "degC")},
                             INPUTS.format(group=group, site=site))
    ep = sw_services.up(cfg, db=False)
    ing = edge = None
    commands = []
    t0 = int(time.time() * 1000) - 60_000
    base = f"spBv1.0/{group}"
    try:
        ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=ep.mqtt("collector"),
                            spool_dir=tmp_path / "spool", client_id=f"c-{site}", max_delay=0.05)
        assert ing.mqtt.wait_subscribed()
        edge = mqtt_client(ep.mqtt("device"), f"edge-{site}")           # the gateway's account
        edge.on_message = lambda c, u, m: commands.append((m.topic, Payload.FromString(m.payload)))
        edge.subscribe(f"{base}/NCMD/mh1", qos=0)
        time.sleep(0.3)
        publish_all(edge, [
            (f"{base}/DDATA/mh1/probe", payload(3, [(None, 10, DOUBLE, 6.0)], t0)),          # before any birth
        ])
        assert wait_until(lambda: len(commands) >= 1, 10)
        ddata = Payload(timestamp=t0 + 2000, seq=2)
        for k in range(50):
            m = ddata.metrics.add(alias=10 if k % 2 == 0 else 11, timestamp=t0 + 2000 + 10 * k, datatype=DOUBLE)
            m.double_value = 7.5 if k % 2 == 0 else 20.0
        publish_all(edge, [
            (f"{base}/NBIRTH/mh1", payload(0, [("bdSeq", 0, INT32, 0), (REBIRTH_METRIC, 1, BOOLEAN, False)], t0)),
            (f"{base}/DBIRTH/mh1/probe", payload(1, [("Inputs/pH", 10, DOUBLE, 7.0), ("Inputs/Temp", 11, DOUBLE, 19.0)],
                                                  t0 + 1000)),
            (f"{base}/DDATA/mh1/probe", ddata.SerializeToString()),
            (f"{base}/DDATA/mh1/probe", payload(7, [(None, 10, DOUBLE, 1.0)], t0 + 9000)),   # seq gap: 3 expected
            (f"{base}/NDATA", b"\x08\x01"),                                                  # wrong topic shape
        ])
        stored = ("SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t "
                  "ON t.id = s.site_id WHERE t.key = %s")
        dead = f"SELECT count(*) FROM dead_letters WHERE topic LIKE '{base}/%%'"
        assert wait_until(lambda: count(db.url, stored, (site,)) >= 52 and count(db.url, dead) >= 3, 20)
        time.sleep(5.2)                   # past the rebirth request's hold-off: the gap asks again
        publish_all(edge, [(f"{base}/DDATA/mh1/probe", payload(8, [(None, 10, DOUBLE, 1.0)], t0 + 9500))])
        assert wait_until(lambda: len(commands) >= 2, 10)
        time.sleep(0.3)
    finally:
        close_all(edge)
        if ing is not None:
            ing.stop()
        sw_services.down(cfg)
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT s.name, (extract(epoch FROM r.time) * 1000)::bigint, r.value FROM readings r "
                            "JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id WHERE t.key = %s "
                            "ORDER BY r.time, s.name", (site,)).fetchall()
        reasons = [r for (r,) in conn.execute("SELECT reason FROM dead_letters WHERE topic LIKE %s ORDER BY id",
                                              (f"{base}/%",)).fetchall()]
    assert len(rows) == 52
    assert rows[:2] == [("ph", t0 + 1000, 7.0), ("temp", t0 + 1000, pytest.approx(19.0 * 9 / 5 + 32))]
    assert [r[1] for r in rows[2:]] == [t0 + 2000 + 10 * k for k in range(50)]
    assert {r[0] for r in rows[2::2]} == {"ph"} and {r[2] for r in rows[2::2]} == {7.5}
    assert reasons[0].startswith(f"data before birth: DDATA of {group}/mh1/probe before its edge node's NBIRTH")
    assert reasons[1] == (f"sequence gap: DDATA of {group}/mh1/probe has seq 7, expected 3 (a message from the edge "
                          "node was lost); rebirth requested")
    assert reasons[2] == f"topic does not match {base}/<message type>/<edge node>[/<device>] (Sparkplug B)"
    assert reasons[3].startswith(f"data before birth: DDATA of {group}/mh1/probe")     # stale after the gap
    assert [t for t, _ in commands] == [f"{base}/NCMD/mh1"] * 2
    cmd = commands[0][1].metrics[0]
    assert cmd.name == REBIRTH_METRIC and cmd.boolean_value is True and cmd.datatype == BOOLEAN
