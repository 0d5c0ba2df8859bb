"""Sensor-health alerts through the running pipeline: a sensor that never reports (no data),
a flat line arriving over MQTT, and a device the Modbus collector recorded as down in
``device_health``; each resolves once the condition ends and the hold-off passes."""

from __future__ import annotations

import io
import json
import time
import uuid

import psycopg

from foundation import config as sw_config
from sewerwatch.pipeline import Background, Pipeline
from support import HISTORIC, add_site_and_sensors, mqtt_client, publish_all, wait_until


def _alerts(db):
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT rule, state, sensor_id, device FROM alerts WHERE kind = 'sensor-health' "
                            "ORDER BY id").fetchall()


def test_no_data_flatline_and_device_unreachable(db, services, tmp_path):
    site = "health-" + uuid.uuid4().hex[:8]
    ids = add_site_and_sensors(db.url, site, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    cfg = sw_config.from_dict({
        "utility": {"name": "Health village", "timezone": "America/Chicago"},
        "sites": [{"id": site, "name": "Acme"}],
        "devices": [{"id": f"{site}-mh1", "site": site}], "ingest": HISTORIC,
        "alerts": {"console": True, "mqtt": False, "digest_at": False, "hold_off_s": 0.5,
                   "no_data_after_s": 1.5, "flatline_after_s": 600, "escalate_after_min": 60}}, "<test>")
    out = io.StringIO()
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp_path / "spool", client_id=f"test-{site}", tick_s=0.05,
                 console_stream=out)
    bg = Background(p)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        time.sleep(0.3)
        # pH: 20 minutes of exactly 7.0 (a flat line longer than 600 s of readings)
        t0 = 1_780_290_000_000
        publish_all(pub, [(f"sewerwatch/{site}/ph", json.dumps(
            {"u": "pH", "t": [t0 + k * 60_000 for k in range(20)], "v": [7.0] * 20}))])
        assert wait_until(lambda: ("flatline", "open", ids["ph"], None) in _alerts(db)
                          or ("flatline", "notified", ids["ph"], None) in _alerts(db), 10)
        # flow never reports: no data after 1.5 s
        assert wait_until(lambda: any(a[0] == "no-data" and a[2] == ids["flow"] for a in _alerts(db)), 10)
        # the Modbus collector's health record: the device is down
        with psycopg.connect(db.url) as conn:
            conn.execute("INSERT INTO device_health (device, site_key, state, last_error) VALUES (%s, %s, 'down', "
                         "'connection refused')", (f"{site}-mh1", site))
        assert wait_until(lambda: any(a[0] == "device-unreachable" for a in _alerts(db)), 10)
        # the pH changes: the flat line ends and resolves after the hold-off
        publish_all(pub, [(f"sewerwatch/{site}/ph", json.dumps({"u": "pH", "t": [t0 + 20 * 60_000], "v": [7.2]}))])
        assert wait_until(lambda: ("flatline", "resolved", ids["ph"], None) in _alerts(db), 10)
        with psycopg.connect(db.url) as conn:
            conn.execute("UPDATE device_health SET state = 'up'")
        assert wait_until(lambda: any(a[0] == "device-unreachable" and a[1] == "resolved" for a in _alerts(db)), 10)
        bg.call(p.manager.idle())
    finally:
        pub.loop_stop()
        pub.disconnect()
        bg.stop()
    rows = _alerts(db)
    # pH also fell silent between its two messages (no data after 1.5 s): that is right too
    assert {(r[0], r[2] or r[3]) for r in rows} == {
        ("flatline", ids["ph"]), ("no-data", ids["flow"]), ("no-data", ids["ph"]), ("device-unreachable", f"{site}-mh1")}
    assert [r[1] for r in rows if r[0] == "no-data" and r[2] == ids["flow"]] == ["open"] or \
        [r[1] for r in rows if r[0] == "no-data" and r[2] == ids["flow"]] == ["notified"]
    text = out.getvalue()
    assert "flatline" in text and "no data" in text and "device unreachable" in text
    assert "value 7 unchanged for 1140 s of readings" in text
