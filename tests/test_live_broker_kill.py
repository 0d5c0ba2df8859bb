"""Broker durability: the collector is offline, readings acknowledged by the broker
wait in its persistent session, and the broker is killed with SIGKILL. What the generated
Mosquitto config saved is delivered after the restart. Mosquitto 2.0 saves its whole state on
an integer clock every second, which is every 2 s: readings acknowledged 3 s before the kill
(2 s and the broker loop's wake-up) are all stored; of those acknowledged 1 s before, the
stored fraction is measured (printed here; ``benchmarks/broker_kill.py`` measures it over
trials at random phases for the guide, ``docs/running/services.md``)."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

from foundation import config
from ingest import service
from support import HISTORIC, add_site_and_sensors, count, mqtt_client, own_mosquitto, publish_all, wait_until


def _trial(db, mq, tmp_path, site: str, ids: dict, batch: int, wait_s: float, n: int = 5000) -> float:
    cid = f"c-{site}-{batch}"
    cfg = config.from_dict({"ingest": HISTORIC})
    ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=mq.url("collector"), spool_dir=tmp_path / cid,
                        client_id=cid, max_delay=0.05)
    assert ing.mqtt.wait_subscribed()
    time.sleep(0.3)
    ing.stop()                                             # the collector goes offline; its session stays
    t0 = int(time.time() * 1000) - 86_400_000 + batch * 10_000_000
    per = 10
    pub = mqtt_client(mq.url("device"), f"p-{site}-{batch}")
    publish_all(pub, [(f"sewerwatch/{site}/ph", json.dumps({"u": "pH", "t": [t0 + 1000 * (k * per + j) for j in range(per)],
                                                            "v": [7.0] * per})) for k in range(n // per)])
    pub.loop_stop()
    pub.disconnect()
    time.sleep(wait_s)
    os.kill(mq.pid(), signal.SIGKILL)
    assert wait_until(lambda: mq.pid() is None, 5)
    mq.start()
    before = count(db.url, "SELECT count(*) FROM readings WHERE time >= to_timestamp(%s)", (t0 / 1000,))
    assert before == 0
    ing = service.start(cfg, ingest_url=db.urls["ingest"], mqtt_url=mq.url("collector"), spool_dir=tmp_path / cid,
                        client_id=cid, max_delay=0.05)
    stored = "SELECT count(*) FROM readings WHERE time >= to_timestamp(%s) AND time < to_timestamp(%s)"
    args = (t0 / 1000, (t0 + 1000 * n) / 1000)
    last, same_since = -1, time.monotonic()
    while time.monotonic() - same_since < 2.0:            # until nothing more arrives for 2 s
        now = count(db.url, stored, args)
        if now != last:
            last, same_since = now, time.monotonic()
        time.sleep(0.1)
    ing.stop()
    return last / n


def test_readings_acknowledged_before_a_broker_sigkill_are_delivered_after_its_restart(db, tmp_path, capsys):
    site = "kill-" + uuid.uuid4().hex[:6]
    ids = add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    with own_mosquitto() as mq:
        assert "autosave_interval 1" in (mq.base / "mosquitto.conf").read_text()
        within_window = _trial(db, mq, tmp_path, site, ids, 1, wait_s=3.0)
        one_second = _trial(db, mq, tmp_path, site, ids, 2, wait_s=1.0)
    with capsys.disabled():
        print(f"\nbroker SIGKILL: stored {within_window:.1%} of 5,000 readings acknowledged 3 s before, "
              f"{one_second:.1%} of those acknowledged 1 s before")
    assert within_window == 1.0
    assert 0.0 <= one_second <= 1.0
