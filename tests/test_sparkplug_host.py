"""The Sparkplug B host as units: values by their declared data type
(the specification's table: signed integers in unsigned protobuf fields), metric names as
edge nodes really send them, compressed payloads, history held in time order, STATE and
unconfigured groups passed over; Telegraf's default topic and ``ignore_unmapped_fields``.
Payloads are built with protobuf from the specification's schema; expected values by hand."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from foundation import config as sw_config
from foundation.config import MqttInput
from foundation.errors import ConfigError
from ingest.mqtt.formats import decode
from ingest.mqtt.payload import Bounds, Unusable
from ingest.mqtt.sparkplug import HISTORY_WAIT_S, SparkplugHost
from ingest.mqtt.sparkplug_schema import Payload
from ingest.mqtt.sparkplug_state import parse_state, state_payload, state_topic
from ingest.mqtt.sparkplug_values import NotANumber, numeric_value
from ingest.mqtt.topics import SPARKPLUG_OTHER, SPARKPLUG_STATE, SensorRef, TopicMap

NOW_MS = 1_772_366_400_000
U32, U64 = 2 ** 32, 2 ** 64


def _metric(datatype, **value):
    m = Payload.Metric(datatype=datatype)
    for k, v in value.items():
        setattr(m, k, v)
    return m


@pytest.mark.parametrize("datatype, field, raw, want", [
    (1, "int_value", 251, -5),                 # Int8 -5, two's complement of 8 bits (pysparkplug)
    (1, "int_value", U32 - 5, -5),             # Int8 -5 sign-extended to 32 bits (Tahu JS / protobufjs)
    (1, "int_value", 127, 127), (1, "int_value", 128, -128),
    (2, "int_value", 65536 - 300, -300), (2, "int_value", U32 - 300, -300),
    (3, "int_value", U32 - 70000, -70000), (3, "int_value", 2 ** 31 - 1, 2 ** 31 - 1),
    (4, "long_value", U64 - 5_000_000_000, -5_000_000_000),
    (1, "long_value", U64 - 5, -5),            # a narrow type in the 64-bit field, sign-extended
    (5, "int_value", 255, 255), (6, "int_value", 65535, 65535),
    (7, "int_value", U32 - 1, U32 - 1), (7, "long_value", U32 - 1, U32 - 1),   # Tahu JS: UInt32 in long_value
    (8, "long_value", 2 ** 40 + 7, 2 ** 40 + 7),
    (9, "float_value", 7.25, 7.25), (10, "double_value", -3.5, -3.5),
    (11, "boolean_value", True, 1.0), (11, "boolean_value", False, 0.0),
])
def test_numbers_by_the_datatype_table(datatype, field, raw, want):
    assert numeric_value(_metric(datatype, **{field: raw}), datatype) == want


@pytest.mark.parametrize("datatype, field, raw, reason", [
    (1, "int_value", 300, "value 300 does not fit Int8 (1)"),
    (5, "int_value", 256, "value 256 does not fit UInt8 (5)"),
    (12, "string_value", "7.2", "datatype String (12) is not a number sewerwatch can judge"),
    (13, "long_value", NOW_MS, "datatype DateTime (13) is not a number sewerwatch can judge"),
    (16, "int_value", 1, "datatype DataSet (16) is not a number sewerwatch can judge"),
    (10, "int_value", 7, "a Double (10) value in int_value"),
    (None, "int_value", 7, "no datatype in the metric or its birth certificate for a value in int_value"),
])
def test_what_is_no_number_is_refused_naming_the_type(datatype, field, raw, reason):
    with pytest.raises(NotANumber) as exc:
        numeric_value(_metric(datatype or 0, **{field: raw}), datatype)
    assert str(exc.value).startswith(reason)


def _map(*metrics, group="plant"):
    refs = [SensorRef(1, "acme/ph", "ph", unit="pH"), SensorRef(2, "acme/temp", "temperature", unit="degC"),
            SensorRef(3, "acme/flow", "flow", unit="gpm")]
    inp = MqttInput(f"spBv1.0/{group}", "sparkplug", metrics=metrics)
    return TopicMap(refs, {}, ("sewerwatch/{site}/{sensor}", inp))


class Clock:
    t = 100.0

    def __call__(self):
        return self.t


def _payload(seq, metrics, ts=NOW_MS) -> bytes:
    p = Payload(timestamp=ts, seq=seq)
    for name, alias, dtype, field, value, *hist in metrics:
        m = p.metrics.add(datatype=dtype)
        if name is not None:
            m.name = name
        if alias is not None:
            m.alias = alias
        setattr(m, field, value)
        if hist:
            m.is_historical, m.timestamp = True, hist[0]
    return p.SerializeToString()


def _dec(tm, host, topic, raw, bounds=Bounds()):
    return host.decode(tm.match(topic), topic, raw, bounds, now_us=NOW_MS * 1000)


def test_mqtt_spb_wrapper_names_and_an_unknown_data_metric_a_dead_letter_naming_the_mapped():
    # mqtt-spb-wrapper: "DATA/ph" in the DBIRTH, "ph" in DDATA, no alias; config names "ph"
    tm = _map(("wrap", "dev", "ph", "acme/ph"), ("wrap", "dev", "DATA/temp", "acme/temp"))
    host = SparkplugHost(tm, clock=Clock())
    _dec(tm, host, "spBv1.0/plant/NBIRTH/wrap", _payload(0, [("bdSeq", None, 4, "long_value", 0)]))
    birth = _dec(tm, host, "spBv1.0/plant/DBIRTH/wrap/dev", _payload(1, [
        ("DATA/ph", None, 10, "double_value", 7.0), ("DATA/temp", None, 9, "float_value", 20.0),
        ("ATTR/model", None, 12, "string_value", "probe")]))
    assert birth.held == ("plant", "wrap") and birth.bad is None          # an unmapped String: passed over
    res = _dec(tm, host, "spBv1.0/plant/DDATA/wrap/dev", _payload(2, [
        ("ph", None, 10, "double_value", 6.5), ("temp", None, 9, "float_value", -5.0),
        ("cond", None, 10, "double_value", 900.0)]))
    r = res.readings
    assert r.sensor_id.tolist() == [1, 2, 1, 2] and r.value.tolist() == [7.0, 68.0, 6.5, 23.0]   # births first
    assert res.bad == ("metric 'cond' of plant/wrap/dev is neither in its birth certificate nor mapped to a sensor "
                       "(mapped: DATA/temp, ph)")
    with pytest.raises(Unusable, match=r"^metric 'cond' of plant/wrap/dev is neither"):   # nothing else in it
        _dec(tm, host, "spBv1.0/plant/DDATA/wrap/dev", _payload(3, [("cond", None, 10, "double_value", 1.0)]))


def test_a_birth_declares_the_type_data_by_alias_leaves_out_and_a_string_mapped_is_refused():
    tm = _map(("n", "", "T", "acme/temp"), ("n", "", "Label", "acme/ph"))
    host = SparkplugHost(tm, clock=Clock())
    birth = _dec(tm, host, "spBv1.0/plant/NBIRTH/n", _payload(0, [("T", 7, 2, "int_value", U32 - 40),  # Int16 -40
                                                                  ("Label", 8, 12, "string_value", "x")]))
    assert birth.bad.startswith("metric 'Label' of plant/n/ (sensor acme/ph): datatype String (12) is not a number")
    p = Payload(timestamp=NOW_MS, seq=1)
    p.metrics.add(alias=7, int_value=65536 - 12)            # no datatype: the birth's Int16; -12 °C
    p.metrics.add(alias=8, string_value="y")
    res = _dec(tm, host, "spBv1.0/plant/NDATA/n", p.SerializeToString())
    assert res.readings.value.tolist() == [-40.0, pytest.approx(-12 * 9 / 5 + 32)]
    assert res.bad.startswith("metric 'Label' of plant/n/ (sensor acme/ph): datatype String (12) is not a number")


def test_compressed_payloads_are_opened_and_bounded():
    tm = _map(("n", "", "Flow", "acme/flow"))
    host = SparkplugHost(tm, clock=Clock())
    inner = [_payload(0, [("Flow", 1, 10, "double_value", 10.0)]), _payload(1, [(None, 1, 10, "double_value", 11.0)]),
             _payload(2, [(None, 1, 10, "double_value", 12.0)])]
    bodies = [(zlib.compress(inner[0]), None), (gzip.compress(inner[1]), "GZIP"),
              (zlib.compress(inner[2])[2:-4], "DEFLATE")]                  # raw deflate too
    got = []
    for mtype, (body, algo) in zip(("NBIRTH", "NDATA", "NDATA"), bodies):
        outer = Payload(uuid="SPBV1.0_COMPRESSED", body=body)
        if algo:
            outer.metrics.add(name="algorithm", datatype=12, string_value=algo)
        got.append(_dec(tm, host, f"spBv1.0/plant/{mtype}/n", outer.SerializeToString()).readings.value.tolist())
    assert got == [[], [10.0, 11.0], [12.0]]
    bomb = Payload(uuid="SPBV1.0_COMPRESSED", body=zlib.compress(b"\0" * 5_000_000))
    with pytest.raises(Unusable, match=r"^compressed Sparkplug B payload: the DEFLATE body opens to more than "
                                       r"1,048,576 bytes"):
        _dec(tm, host, "spBv1.0/plant/NDATA/n", bomb.SerializeToString(), Bounds(max_bytes=1 << 20))
    odd = Payload(uuid="SPBV1.0_COMPRESSED", body=b"abc")
    odd.metrics.add(name="algorithm", datatype=12, string_value="LZ4")
    with pytest.raises(Unusable, match=r"compressed with 'LZ4', not one of DEFLATE, GZIP"):
        _dec(tm, host, "spBv1.0/plant/NDATA/n", odd.SerializeToString())


def test_history_after_a_birth_comes_first_and_the_births_values_wait_for_it():
    tm = _map(("n", "", "Flow", "acme/flow"))
    clock = Clock()
    host = SparkplugHost(tm, clock=clock)
    assert _dec(tm, host, "spBv1.0/plant/NBIRTH/n", _payload(0, [("Flow", 1, 10, "double_value", 50.0)])).held
    t = NOW_MS - 60_000
    hist = _dec(tm, host, "spBv1.0/plant/NDATA/n", _payload(1, [(None, 1, 10, "double_value", 40.0, t),
                                                               (None, 1, 10, "double_value", 41.0, t + 1000)]))
    assert hist.readings.value.tolist() == [40.0, 41.0] and hist.released is None and host.historical == 2
    clock.t += HISTORY_WAIT_S - 0.5
    assert host.release_due() == []                          # still within the wait after the history
    live = _dec(tm, host, "spBv1.0/plant/NDATA/n", _payload(2, [(None, 1, 10, "double_value", 51.0)],
                                                          ts=NOW_MS + 1000))
    assert live.released == ("plant", "n") and live.readings.value.tolist() == [50.0, 51.0]
    # a birth with no history after it: its values are released after the wait
    _dec(tm, host, "spBv1.0/plant/NBIRTH/n", _payload(0, [("Flow", 1, 10, "double_value", 52.0)], ts=NOW_MS + 2000))
    clock.t += HISTORY_WAIT_S
    [(key, r)] = host.release_due()
    assert key == ("plant", "n") and r.value.tolist() == [52.0]


def test_state_and_other_groups_are_passed_over_and_state_payloads_are_the_specifications():
    tm = _map(("n", "", "Flow", "acme/flow"))
    assert tm.match("spBv1.0/STATE/scada-1").input is SPARKPLUG_STATE
    assert tm.match("spBv1.0/STATE/sewerwatch").sensor == "sewerwatch"
    m = tm.match("spBv1.0/another-plant/NDATA/x")
    assert m.input is SPARKPLUG_OTHER and m.site == "another-plant"
    assert len(decode(tm, "spBv1.0/another-plant/NDATA/x", b"\x08\x01").readings) == 0
    assert tm.match("spBv1.0/plant/NDATA").startswith("topic does not match spBv1.0/plant/")  # our group: wrong shape
    assert state_topic("sewerwatch") == "spBv1.0/STATE/sewerwatch"
    assert json.loads(state_payload(True, NOW_MS)) == {"online": True, "timestamp": NOW_MS}
    assert parse_state(state_payload(False, 5)) == (False, 5) and parse_state(b"ONLINE") is None


def test_telegraf_default_topic_and_ignore_unmapped_fields():
    refs = [SensorRef(1, "acme/ph", "ph", unit="pH")]
    quiet = MqttInput("telegraf/{site}/{measurement}", "telegraf", ignore_unmapped_fields=True)
    strict = MqttInput("tg/{site}/{measurement}", "telegraf")
    tm = TopicMap(refs, {}, ("sewerwatch/{site}/{sensor}", quiet, strict))
    msg = json.dumps({"fields": {"ph": 7.1, "uptime": 5, "signal_dbm": -60}, "name": "modbus",
                      "tags": {"host": "acme"}, "timestamp": NOW_MS // 1000}).encode()
    d = decode(tm, "telegraf/acme/modbus", msg, now_us=NOW_MS * 1000)
    assert d.readings.value.tolist() == [7.1] and d.bad is None                  # the rest passed over quietly
    only = json.dumps({"fields": {"uptime": 5}, "name": "system", "tags": {}, "timestamp": NOW_MS // 1000}).encode()
    assert len(decode(tm, "telegraf/acme/system", only, now_us=NOW_MS * 1000).readings) == 0
    d = decode(tm, "tg/acme/modbus", msg, now_us=NOW_MS * 1000)
    assert d.bad.startswith("2 unusable (metrics[0]: unknown sensor acme/uptime")
    with pytest.raises(Unusable, match="unknown site 'zzz'"):                  # a wrong site is never quiet
        decode(tm, "telegraf/zzz/modbus", msg, now_us=NOW_MS * 1000)


def test_config_keys_and_one_site_per_edge_node():
    base = {"sites": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}],
            "sensors": [{"site": s, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"} for s in "ab"]}
    cfg = sw_config.from_dict({**base, "mqtt": {"sparkplug_host_id": "village-scada", "inputs": [
        {"topic": "telegraf/{site}/{measurement}", "format": "telegraf", "ignore_unmapped_fields": True}]}}, "v.toml")
    assert cfg.sparkplug_host_id == "village-scada" and cfg.mqtt_inputs[-1].ignore_unmapped_fields
    with pytest.raises(ConfigError, match=r"^v.toml: mqtt.inputs\[0\].metrics\[1\].sensor: edge node 'mh1' maps a "
                                          r"sensor of site 'b' and one of site 'a' \(metrics\[0\]\)"):
        sw_config.from_dict({**base, "mqtt": {"inputs": [{"topic": "spBv1.0/g", "format": "sparkplug", "metrics": [
            {"node": "mh1", "metric": "pH", "sensor": "a/ph"}, {"node": "mh1", "metric": "pH2", "sensor": "b/ph"}]}]}},
            "v.toml")
    with pytest.raises(ConfigError, match=r"mqtt.inputs\[0\].ignore_unmapped_fields: only a telegraf input"):
        sw_config.from_dict({**base, "mqtt": {"inputs": [{"topic": "plc/{site}/{sensor}", "format": "number",
                                                           "ignore_unmapped_fields": True}]}}, "v.toml")
    with pytest.raises(ConfigError, match=r"mqtt.sparkplug_host_id: expected one topic level"):
        sw_config.from_dict({**base, "mqtt": {"sparkplug_host_id": "a/b"}}, "v.toml")


def test_a_refused_subscription_is_a_problem_of_the_collector_not_a_log_line():
    """Mosquitto 2.0 grants every subscription and then delivers what the ACL allows (the
    ACL check of ``status`` and ``config check`` covers that, tests/test_interop_clients.py);
    other brokers refuse in the SUBACK (0x80, MQTT 5 0x87): paho's own reason codes here."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.reasoncodes import ReasonCode

    from ingest.mqtt.collector import MqttCollector
    from ingest.sink import Sink

    tm = _map(("n", "", "Flow", "acme/flow"))
    c = MqttCollector("mqtt://collector:x@127.0.0.1:1", tm, Sink())
    c._sub_mids[7] = ["sewerwatch/#", "nodered/acme/ph"]
    c._on_subscribe(c.client, None, 7, [ReasonCode(PacketTypes.SUBACK, identifier=1),
                                        ReasonCode(PacketTypes.SUBACK, identifier=0x87)], None)
    c._connected.set()
    assert c.subscriptions == {"sewerwatch/#": "granted QoS 1", "nodered/acme/ph": "refused (Not authorized)"}
    assert c._network_problem() == ("the broker refused the subscription to nodered/acme/ph: readings on those "
                                    "topics never arrive (give the collector's account read access)")
    assert c.status()["subscriptions"]["nodered/acme/ph"].startswith("refused")
