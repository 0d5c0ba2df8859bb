"""MQTT to TimescaleDB end to end, with real Mosquitto and TimescaleDB: counting published
readings against stored rows through a database outage, a broker restart, a SIGKILLed
collector, and a thousand malformed payloads."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import service
from foundation import config
from support import (HISTORIC, HISTORIC_TOML, Sender, add_site_and_sensors, count, mqtt_client, own_mosquitto,
                     own_postgres, publish_all, wait_until)

ROOT = Path(__file__).resolve().parent.parent
MS0 = 1_772_366_400_000  # 2026-03-01T12:00:00Z


def _site() -> str:
    return "t" + uuid.uuid4().hex[:10]


def _messages(site: str, n: int, batch: int = 1, start_ms: int = MS0):
    """``n`` readings of pH and flow as ``(topic, payload)``; ``batch`` readings a message."""
    out = []
    for sensor, unit, base in (("ph", "pH", 7.0), ("flow", "gpm", 120.0)):
        for k in range(0, n, batch):
            ts = [start_ms + 1000 * j for j in range(k, min(k + batch, n))]
            vs = [base + (j % 7) * 0.1 for j in range(k, min(k + batch, n))]
            doc = {"t": ts[0], "v": vs[0], "u": unit} if batch == 1 else {"u": unit, "t": ts, "v": vs}
            out.append((f"sewerwatch/{site}/{sensor}", json.dumps(doc).encode()))
    return out


def _ingest(db_ingest_url: str, mqtt_url: str, spool: Path, client_id: str):
    return service.start(config.from_dict({"ingest": HISTORIC}), ingest_url=db_ingest_url, mqtt_url=mqtt_url, spool_dir=spool,
                         client_id=client_id, max_delay=0.05)


def _stored(url: str, site: str) -> int:
    return count(url, "SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                      "JOIN sites si ON si.id = s.site_id WHERE si.key = %s", (site,))


def test_single_and_batched_payloads_arrive_exactly_once(db, services, tmp_path):
    site = _site()
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    with db.connect() as conn:  # a Modbus sensor: the MQTT collector must not take readings for it
        conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source) "
                     "SELECT id, 'level', 'level', 'ft', 'modbus' FROM sites WHERE key = %s", (site,))
        conn.commit()
    cid = f"c-{site}"
    ing = _ingest(db.urls["ingest"], services.mqtt_urls["collector"], tmp_path / "spool", cid)
    assert ing.mqtt.wait_subscribed()           # answered: from now on nothing published is missed
    assert ing.mqtt.subscriptions and all(v.startswith("granted") for v in ing.mqtt.subscriptions.values())
    pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
    publish_all(pub, _messages(site, 300) + _messages(site, 3000, batch=100, start_ms=MS0 + 10**7))
    # QoS 0 messages carry no packet id: nothing to acknowledge, and no reason to drop them.
    publish_all(pub, [(f"sewerwatch/{site}/ph", b'{"t": %d, "v": 6.9, "u": "pH"}' % (MS0 - 1000)),
                      (f"sewerwatch/{site}/nosuch", b'{"t": %d, "v": 6.9, "u": "pH"}' % MS0)], qos=0)
    publish_all(pub, [(f"sewerwatch/{site}/level", b'{"t": %d, "v": 1.5, "u": "ft"}' % MS0)])
    pub.disconnect()
    dead = f"SELECT count(*) FROM dead_letters WHERE topic LIKE 'sewerwatch/{site}/%%'"
    # everything is in the database before the collector stops (a QoS 0 message still on
    # its way to a collector that disconnects is gone: that is what QoS 0 means)
    assert wait_until(lambda: _stored(db.url, site) >= 6601 and count(db.url, dead) >= 2, 30)
    ing.stop()
    assert _stored(db.url, site) == 6601
    assert count(db.url, dead + " AND reason LIKE 'unknown sensor%%'") == 2
    assert ing.mqtt.connects == 1


def test_database_stopped_for_30_seconds_mid_stream_loses_and_doubles_nothing(services, tmp_path):
    site = _site()
    with own_postgres() as pg:
        owner = pg.url("owner")
        add_site_and_sensors(owner, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
        ing = _ingest(pg.url("ingest"), services.mqtt_urls["collector"], tmp_path / "spool", f"c-{site}")
        assert ing.mqtt.wait_subscribed()
        pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
        msgs = _messages(site, 2000, batch=5)           # 800 messages, 4000 readings
        sender = Sender(pub, msgs, rate=20)                                   # about 40 s of traffic
        assert wait_until(lambda: _stored(owner, site) > 100, 20)
        pg.stop()
        stopped = time.monotonic()
        time.sleep(30)
        assert ing.writer.stats.readings_spooled > 0 and not ing.writer.stats.db_up
        pg.start()
        sender.join(120)
        assert wait_until(lambda: _stored(owner, site) >= 4000, 60)
        time.sleep(0.5)
        ing.stop()
        pub.disconnect()
        assert time.monotonic() - stopped >= 30
        assert _stored(owner, site) == 4000
        assert count(owner, "SELECT count(*) FROM (SELECT DISTINCT sensor_id, time FROM readings) d") == 4000
        assert ing.writer.spool.empty()


def test_mosquitto_restarted_mid_stream_every_qos1_reading_arrives(db, tmp_path):
    site = _site()
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    with own_mosquitto() as mq:
        ing = _ingest(db.urls["ingest"], mq.url("collector"), tmp_path / "spool", f"c-{site}")
        assert ing.mqtt.wait_subscribed()
        pub = mqtt_client(mq.url("device"), f"p-{site}", clean_session=False)
        msgs = _messages(site, 1500, batch=5)             # 600 messages, 3000 readings
        sender = Sender(pub, msgs, rate=60)
        assert wait_until(lambda: _stored(db.url, site) > 200, 20)
        mq.stop()
        time.sleep(2)
        mq.start()
        sender.join(120)
        assert wait_until(lambda: _stored(db.url, site) >= 3000, 60), _stored(db.url, site)
        ing.stop()
        pub.disconnect()
        pub.loop_stop()
    assert _stored(db.url, site) == 3000
    assert ing.mqtt.connects >= 2


def test_collector_killed_with_sigkill_and_restarted_loses_and_doubles_nothing(db, services, tmp_path):
    site = _site()
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    cfg = tmp_path / "collector.toml"
    cfg.write_text(f'[services]\ndb_url = "{db.urls["ingest"]}"\nmqtt_url = "{services.mqtt_urls["collector"]}"\n'
                   + HISTORIC_TOML)
    cmd = [sys.executable, "-m", "sewerwatch", "--config", str(cfg), "collect", "--client-id", f"c-{site}",
           "--spool-dir", str(tmp_path / "spool"), "--report-every", "1"]

    def start():
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:  # wait until it runs and is subscribed
            if "subscribed to" in line:
                threading.Thread(target=p.stderr.read, daemon=True).start()
                return p
        raise AssertionError(f"collector did not start (exit {p.wait()})")

    proc = start()
    pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
    msgs = _messages(site, 1500, batch=3)                 # 1000 messages, 3000 readings
    sender = Sender(pub, msgs, rate=100)
    assert wait_until(lambda: _stored(db.url, site) > 300, 20)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = _stored(db.url, site)
    assert killed_at < 3000
    time.sleep(2)                                         # messages pile up at the broker meanwhile
    proc = start()
    sender.join(60)
    assert wait_until(lambda: _stored(db.url, site) >= 3000, 60), _stored(db.url, site)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    pub.disconnect()
    assert _stored(db.url, site) == 3000


# --- a thousand malformed payloads, generated ----------------------------------------

_units = st.text(min_size=0, max_size=6).filter(lambda u: u not in ("pH",))
_good_t = st.integers(MS0, MS0 + 10**9)
_malformed = st.one_of(
    st.binary(min_size=0, max_size=40),                                           # garbage bytes
    st.fixed_dictionaries({"t": _good_t, "v": st.just(math.nan), "u": st.just("pH")}),      # NaN
    st.fixed_dictionaries({"t": _good_t, "v": st.floats(0, 14), "u": _units}),   # wrong unit
    st.fixed_dictionaries({"t": _good_t, "u": st.just("pH")}),                    # missing value
    st.fixed_dictionaries({"v": st.floats(0, 14), "u": st.just("pH")}),           # missing time
    st.fixed_dictionaries({"t": _good_t, "v": st.floats(0, 14)}),                 # missing unit
    st.fixed_dictionaries({"t": st.text(max_size=12), "v": st.floats(0, 14), "u": st.just("pH")}),  # bad time
    st.fixed_dictionaries({"t": _good_t, "v": st.one_of(st.text(), st.booleans(), st.none()), "u": st.just("pH")}),
    st.fixed_dictionaries({"t": st.lists(_good_t, min_size=2, max_size=4), "v": st.lists(st.floats(0, 14), max_size=1),
                           "u": st.just("pH")}),                                  # unequal arrays
)


def _encode(p) -> bytes:
    return p if isinstance(p, bytes) else json.dumps(p).encode()


def test_a_thousand_malformed_payloads_all_dead_lettered_while_good_readings_flow(db, services, tmp_path):
    site = _site()
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    ing = _ingest(db.urls["ingest"], services.mqtt_urls["collector"], tmp_path / "spool", f"c-{site}")
    assert ing.mqtt.wait_subscribed()
    pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")
    sent_bad: list[bytes] = []
    sent_good = [0]

    @settings(max_examples=10, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(st.lists(_malformed, min_size=100, max_size=100))
    def publish_some(payloads):
        msgs = []
        for p in payloads:
            raw = _encode(p)
            sent_bad.append(raw)
            msgs.append((f"sewerwatch/{site}/ph", raw))
            k = sent_good[0]
            sent_good[0] += 1
            msgs.append((f"sewerwatch/{site}/ph", json.dumps({"t": MS0 + 1000 * k, "v": 7.0, "u": "pH"}).encode()))
        publish_all(pub, msgs)

    publish_some()
    # One more kind: a payload for a sensor nobody configured.
    publish_all(pub, [(f"sewerwatch/{site}/nosuchsensor", b'{"t": %d, "v": 1, "u": "pH"}' % MS0)])
    sent_bad.append(b"unknown")
    assert len(sent_bad) >= 1001
    # The session's broker is shared: other tests' traffic may reach this collector too,
    # so count what was sent to this test's own topics.
    mine = f"FROM dead_letters WHERE topic LIKE 'sewerwatch/{site}/%%'"
    assert wait_until(lambda: count(db.url, f"SELECT count(*) {mine}") >= len(sent_bad)
                      and _stored(db.url, site) >= sent_good[0], 60)
    ing.stop()
    pub.disconnect()
    assert count(db.url, f"SELECT count(*) {mine}") == len(sent_bad)
    assert _stored(db.url, site) == sent_good[0]
    assert count(db.url, f"SELECT count(*) {mine} AND (reason = '' OR payload IS NULL)") == 0
    assert count(db.url, f"SELECT count(*) {mine} AND reason LIKE 'unknown sensor%%'") == 1
    assert ing.mqtt.connects == 1  # never thrown off the broker
