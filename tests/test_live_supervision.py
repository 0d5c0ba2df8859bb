"""Supervision and honest status: a thread or task of ``sewerwatch run`` killed from
inside (an injected exception) is restarted, reported in the status, and announced by a
"sewerwatch degraded" alert; readings keep flowing. Every component is killed in turn: the
MQTT network loop and flusher, the Modbus loop, the writer, the evaluator, the alert timers."""

from __future__ import annotations

import json
import time
import uuid

import psycopg

from alerts.catchers import WebhookCatcher
from foundation import config as sw_config
from sewerwatch.db import sync
from sewerwatch.pipeline import Background, Pipeline
from sewerwatch.services.scratch import free_port
from support import ServedDevice, close_all, count, mqtt_client, publish_all, wait_until


def test_every_component_killed_from_inside_is_restarted_reported_and_alerted(db, services, tmp_path):
    site = "sup-" + uuid.uuid4().hex[:8]
    port = free_port()
    device = ServedDevice(port)
    hook = WebhookCatcher().start()
    cfg = sw_config.from_dict({
        "utility": {"name": "Supervised village", "pack": "palmyra-wi", "timezone": "America/Chicago"},
        "sites": [{"id": site, "name": "Acme"}],
        "devices": [{"id": f"{site}-mh1", "site": site, "port": port, "unit_id": 1, "interval_s": 0.5}],
        "sensors": [{"site": site, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt", "interval_s": 1.0},
                    {"site": site, "name": "flow", "parameter": "flow", "unit": "gpm", "source": "modbus",
                     "device": f"{site}-mh1"}],
        "modbus": {"flush_s": 0.2, "health_s": 1.0},
        "alerts": {"console": False, "mqtt": False, "digest_at": False, "hold_off_s": 600.0,
                   "contacts": [{"name": "Hook", "urls": [hook.url("/hook")]}]}}, "<test>")
    with psycopg.connect(db.url) as conn:
        sync.sync(conn, cfg)
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp_path / "spool", client_id=f"test-{site}", tick_s=0.05)
    bg = Background(p)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    ph = f"SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.name = 'ph'"
    flow = f"SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.name = 'flow'"
    sent = [0]
    t0 = int(time.time() * 1000) - 600_000

    def publish(n=3):
        publish_all(pub, [(f"sewerwatch/{site}/ph", json.dumps({"t": t0 + 1000 * (sent[0] + k), "v": 7.0, "u": "pH"}))
                          for k in range(n)])
        sent[0] += n

    def degraded(name):
        return [x["body"] for x in hook.received("/hook")
                if x["body"].get("title", "").startswith("[sewerwatch] DEGRADED") and f": {name}: " in x["body"]["title"]]

    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        time.sleep(0.3)
        publish()
        assert wait_until(lambda: count(db.url, ph) == sent[0] and count(db.url, flow) > 0, 15)
        for name in ("mqtt-network", "mqtt-flusher", "modbus", "writer", "evaluator", "alerts"):
            before = p.status()["components"][name]["restarts"]
            flows = count(db.url, flow)
            p.supervisor.inject(name)
            assert wait_until(lambda: p.status()["components"][name]["restarts"] == before + 1
                              and p.status()["components"][name]["alive"], 15), (name, p.status()["components"][name])
            st = p.status()
            assert st["state"] == "degraded" and name in st["problems"], st["problems"]
            assert "InjectedFault" in st["components"][name]["last_error"]
            publish()
            assert wait_until(lambda: count(db.url, ph) == sent[0] and count(db.url, flow) > flows, 15), name
            assert wait_until(lambda: len(degraded(name)) == 1, 10), (name, [x["body"]["title"] for x in hook.posts])
            body = degraded(name)[0]["message"]
            assert "InjectedFault" in body and "sewerwatch status" in body
        published = sent[0]
        time.sleep(0.5)
        assert p.status()["components"]["evaluator"]["evaluated"] >= published
    finally:
        close_all(pub, bg, device, hook)
    assert count(db.url, ph) == published
    with psycopg.connect(db.url) as conn:
        audit = conn.execute("SELECT object FROM audit_log WHERE action = 'system-degraded' ORDER BY id").fetchall()
    assert {a[0] for a in audit} == {f"system:{n}" for n in ("mqtt-network", "mqtt-flusher", "modbus", "writer",
                                                             "evaluator", "alerts")}
