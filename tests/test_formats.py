"""The formats integrators send, selected per topic pattern
(``[[mqtt.inputs]]``): Telegraf's JSON output and bare numbers, decoded into numpy batches;
wrong shapes are dead letters naming the format expected with an example. The end-to-end
test publishes with paho to an embedded broker of its own (its ACL generated from the
config's inputs) into the real collector, writer and TimescaleDB."""

from __future__ import annotations

import json
import time
import uuid

import numpy as np
import psycopg
import pytest

from foundation import config as sw_config
from foundation.errors import ConfigError
from foundation.config import MqttInput
from ingest import service
from ingest.mqtt.formats import decode
from ingest.mqtt.payload import Unusable
from ingest.mqtt.topics import SensorRef, TopicMap
from sewerwatch import services as sw_services
from support import close_all, count, mqtt_client, own_broker_village, publish_all, wait_until

NOW_S = 1_772_366_400                       # 2026-03-01T12:00:00Z
NOW_US = NOW_S * 1_000_000
REFS = [SensorRef(1, "acme/ph", "ph", unit="pH"), SensorRef(2, "acme/flow", "flow", unit="gpm"),
        SensorRef(3, "acme/temp", "temperature", unit="degC", full_scale=None)]


def _map(*inputs) -> TopicMap:
    return TopicMap(REFS, {}, ("sewerwatch/{site}/{sensor}", *inputs))


def test_telegraf_metric_and_batch_forms_become_one_numpy_batch():
    tm = _map(MqttInput("telegraf/{site}", "telegraf"))
    one = {"fields": {"ph": 7.25, "flow": 120, "status": "ok"}, "name": "manhole", "tags": {"host": "mh1"},
           "timestamp": NOW_S}
    d = decode(tm, "telegraf/acme", json.dumps(one).encode(), now_us=NOW_US)
    assert d.bad is None
    assert d.readings.sensor_id.tolist() == [1, 2] and d.readings.time_us.tolist() == [NOW_US, NOW_US]
    assert d.readings.value.tolist() == [7.25, 120.0]
    batch = {"metrics": [{**one, "fields": {"temp": 20.0}, "tags": {"unit": "degC"}, "timestamp": NOW_S - 60 * k}
                         for k in range(50)]}
    d = decode(tm, "telegraf/acme", json.dumps(batch).encode(), now_us=NOW_US)
    assert isinstance(d.readings.value, np.ndarray) and len(d.readings) == 50
    assert np.allclose(d.readings.value, 68.0)                               # 20 °C in canonical °F
    assert d.readings.time_us[-1] == (NOW_S - 49 * 60) * 1_000_000


def test_telegraf_site_and_sensor_from_tags_names_and_timestamp_units():
    tm = _map(MqttInput("metrics/{sensor}", "telegraf", site_from="tag:plant", timestamp_units="1ms"))
    doc = {"fields": {"value": 7.5}, "name": "x", "tags": {"plant": "acme"}, "timestamp": NOW_S * 1000 + 250}
    d = decode(tm, "metrics/ph", json.dumps(doc).encode(), now_us=NOW_US)
    assert d.readings.time_us.tolist() == [NOW_US + 250_000] and d.readings.sensor_id.tolist() == [1]
    tm = _map(MqttInput("tg/{site}", "telegraf", sensor_from="name", timestamp_units="1ns"))
    doc = {"fields": {"gauge": 99.5}, "name": "flow", "tags": {}, "timestamp": NOW_S * 10**9}
    assert decode(tm, "tg/acme", json.dumps(doc).encode(), now_us=NOW_US).readings.value.tolist() == [99.5]


@pytest.mark.parametrize("payload, reason", [
    (b'{"t": 1, "v": 7, "u": "pH"}', "not a Telegraf metric: needs 'fields' (an object) and 'timestamp' "
     '(expected telegraf format, e.g. {"fields": {"ph": 7.21}, "name": "probe"'),
    (b"7.21", "not a Telegraf metric"),
    (b"\x00\x01", "not JSON"),
    (b'{"fields": {"ph": 7.1}, "timestamp": 1772366400000}', "time out of range: metrics[0].timestamp = "
     "1772366400000 (epoch us 1772366400000000000) is ahead of the collector's clock by more than [ingest] "
     "max_future_s (are timestamp_units right?)"),
    (b'{"fields": {"cod": 7.1}, "timestamp": 1772366400}', "metrics[0]: unknown sensor acme/cod (site from topic, sensor from field)"),
])
def test_telegraf_wrong_shapes_say_what_was_expected(payload, reason):
    with pytest.raises(Unusable) as e:
        decode(_map(MqttInput("telegraf/{site}", "telegraf")), "telegraf/acme", payload, now_us=NOW_US)
    assert str(e.value).startswith(reason)


def test_bare_numbers_are_stamped_on_receipt_in_the_sensors_unit():
    tm = _map(MqttInput("plc/{site}/{sensor}", "number"))
    d = decode(tm, "plc/acme/temp", b" 25.0\n", now_us=NOW_US)
    assert d.readings.time_us.tolist() == [NOW_US] and d.readings.value.tolist() == [77.0]
    with pytest.raises(Unusable, match=r"^not a bare number: b'\{\"t\": 1\}' \(expected number format, e.g. "
                                       r"7.21, in the sensor's unit degC\)"):
        decode(tm, "plc/acme/temp", b'{"t": 1}', now_us=NOW_US)
    with pytest.raises(Unusable, match="not a finite number"):
        decode(tm, "plc/acme/temp", b"nan", now_us=NOW_US)


@pytest.mark.parametrize("inputs, where, problem", [
    ([{"topic": "x/{site}/{sensor}", "format": "csv"}], "mqtt.inputs[0].format", "expected one of sewerwatch"),
    ([{"topic": "x/{site}", "format": "number"}], "mqtt.inputs[0].topic", "needs exactly one {site} and one"),
    ([{"topic": "x/{site}", "format": "telegraf", "sensor_from": "topic"}], "mqtt.inputs[0].sensor_from",
     "'topic' needs a {sensor} level"),
    ([{"topic": "x/+/{sensor}", "format": "telegraf"}], "mqtt.inputs[0].topic", "instead of MQTT wildcards"),
    ([{"topic": "x/{site}", "format": "telegraf", "timestamp_units": "1h"}], "mqtt.inputs[0].timestamp_units",
     "expected one of 1ns, 1us, 1ms, 1s"),
])
def test_config_check_names_a_bad_input_in_one_line(inputs, where, problem):
    with pytest.raises(ConfigError) as e:
        sw_config.from_dict({"mqtt": {"inputs": inputs}}, "v.toml")
    assert str(e.value).startswith(f"v.toml: {where}: ") and problem in str(e.value) and "\n" not in str(e.value)


INPUTS = """[[mqtt.inputs]]
topic = "telegraf/{site}"
format = "telegraf"
[[mqtt.inputs]]
topic = "plc/{site}/{sensor}"
format = "number"
"""


def test_telegraf_json_and_bare_numbers_published_with_paho_arrive_as_readings(db, tmp_path, monkeypatch):
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    site = "fm" + uuid.uuid4().hex[:8]
    cfg = own_broker_village(tmp_path / "v.toml", db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm"),
                                                                 "temp": ("temperature", "degC")}, INPUTS)
    ep = sw_services.up(cfg, db=False)
    ing = pub = None
    now_s = int(time.time()) - 30
    try:
        ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=ep.mqtt("collector"),
                            spool_dir=tmp_path / "spool", client_id=f"c-{site}", max_delay=0.05)
        assert ing.mqtt.wait_subscribed()
        assert sorted(ing.mqtt.topics.subscriptions()) == ["plc/#", "sewerwatch/#", "telegraf/#"]
        pub = mqtt_client(ep.site_urls[site], f"p-{site}")            # the site's own account may publish
        node_red = {"fields": {"ph": 7.2, "flow": 130.5}, "name": "manhole", "tags": {"host": "mh1"},
                    "timestamp": now_s}
        batch = {"metrics": [{"fields": {"temp": 20.0 + k}, "name": "probe", "tags": {}, "timestamp": now_s - k}
                             for k in range(1, 6)]}
        publish_all(pub, [
            (f"telegraf/{site}", json.dumps(node_red)), (f"telegraf/{site}", json.dumps(batch)),
            (f"plc/{site}/flow", b"101.5"),
            (f"telegraf/{site}", b'{"t": 1, "v": 7.0, "u": "pH"}'),          # sewerwatch JSON on a telegraf topic
            (f"plc/{site}/ph", b'{"v": 7}'),                                 # JSON on a bare-number topic
            (f"plc/{site}/mh1/ph", b"7.0"),                                  # no pattern fits
        ])
        received = time.time()
        dead = f"SELECT count(*) FROM dead_letters WHERE topic LIKE '%%/{site}%%'"
        stored = ("SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t "
                  "ON t.id = s.site_id WHERE t.key = %s")
        assert wait_until(lambda: count(db.url, stored, (site,)) >= 8 and count(db.url, dead) >= 3, 20)
    finally:
        close_all(pub)
        if ing is not None:
            ing.stop()
        sw_services.down(cfg)
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT s.name, extract(epoch FROM r.time)::float8, r.value FROM readings r "
                            "JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id "
                            "WHERE t.key = %s ORDER BY s.name, r.time", (site,)).fetchall()
        reasons = dict(conn.execute("SELECT topic || ' ' || left(encode(payload, 'escape'), 7), reason "
                                    "FROM dead_letters WHERE topic LIKE %s", (f"%/{site}%",)).fetchall())
    by = {}
    for name, t, v in rows:
        by.setdefault(name, []).append((t, v))
    assert by["ph"] == [(now_s, 7.2)]
    assert (now_s, 130.5) in by["flow"]
    plc = [x for x in by["flow"] if x != (now_s, 130.5)]
    assert len(plc) == 1 and plc[0][1] == 101.5 and abs(plc[0][0] - received) < 10   # stamped on receipt
    assert [t for t, _ in by["temp"]] == [now_s - k for k in range(5, 0, -1)]
    assert np.allclose([v for _, v in by["temp"]], [(20.0 + k) * 9 / 5 + 32 for k in range(5, 0, -1)])
    assert reasons[f'telegraf/{site} {{"t": 1'].startswith("not a Telegraf metric: needs 'fields' (an object) "
                                                           "and 'timestamp' (expected telegraf format, e.g. {")
    assert reasons[f'plc/{site}/ph {{"v": 7'].startswith("not a bare number: b'{\"v\": 7}' (expected number format, "
                                                         "e.g. 7.21, in the sensor's unit pH)")
    assert reasons[f"plc/{site}/mh1/ph 7.0"] == (
        "topic does not match any of: sewerwatch/{site}/{sensor} (expected sewerwatch/<site>/<sensor>); "
        "telegraf/{site} (expected telegraf/<site>); plc/{site}/{sensor} (expected plc/<site>/<sensor>)")
