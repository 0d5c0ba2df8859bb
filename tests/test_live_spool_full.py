"""A full or broken spool is loud and lossless: the database is down and the
spool's disk (a real 64 KiB tmpfs) fills up. ``sewerwatch run`` says so in its status (why,
and how much space is free) and in a "sewerwatch degraded" alert, stops acknowledging so
the broker keeps the messages, and when space and then the database return every
published reading is stored exactly once, with no manual step."""

from __future__ import annotations

import json
import time
import uuid

import psycopg

from alerts.catchers import WebhookCatcher
from foundation import config as sw_config
from sewerwatch.db import sync
from sewerwatch.pipeline import Background, Pipeline
from support import close_all, count, mqtt_client, own_postgres, publish_all, tiny_filesystem, wait_until


def test_a_full_spool_disk_is_loud_and_loses_nothing(services, tmp_path):
    site = "spool-" + uuid.uuid4().hex[:6]
    hook = WebhookCatcher().start()
    cfg = sw_config.from_dict({
        "utility": {"name": "Full disk village", "pack": "palmyra-wi", "timezone": "America/Chicago"},
        "sites": [{"id": site, "name": "Acme"}],
        "sensors": [{"site": site, "name": "flow", "parameter": "flow", "unit": "gpm", "source": "mqtt",
                     "interval_s": 1.0}],
        "alerts": {"console": False, "mqtt": False, "digest_at": False, "hold_off_s": 600.0,
                   "contacts": [{"name": "Hook", "urls": [hook.url("/hook")]}]}}, "<test>")
    with own_postgres() as pg, tiny_filesystem(tmp_path / "tiny", kib=64) as disk:
        with psycopg.connect(pg.url("owner")) as conn:
            sync.sync(conn, cfg)
        filler = disk / "filler"
        filler.write_bytes(b"x" * (44 << 10))                      # about 20 KiB left for the spool
        p = Pipeline(cfg, owner_url=pg.url("owner"), ingest_url=pg.url("ingest"),
                     mqtt_url=services.mqtt_urls["collector"], notifier_url=None, spool_dir=disk / "spool",
                     state_dir=tmp_path / "state", client_id=f"test-{site}", tick_s=0.05, degraded_after_s=1.0)
        bg = Background(p)
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        topic = f"sewerwatch/{site}/flow"
        t0 = int(time.time() * 1000) - 3_600_000
        msgs = [(topic, json.dumps({"u": "gpm", "t": [t0 + 1000 * (100 * b + k) for k in range(100)],
                                    "v": [100.0 + k for k in range(100)]})) for b in range(20)]

        def degraded(word):
            return [x["body"]["title"] for x in hook.received("/hook") if word in x["body"].get("title", "")]

        try:
            assert p.ingest.mqtt.wait_subscribed(10)
            time.sleep(0.3)
            pg.stop()
            publish_all(pub, msgs[:2])
            assert wait_until(lambda: p.ingest.writer.stats.readings_spooled == 200, 15)
            publish_all(pub, msgs[2:])
            assert wait_until(lambda: p.ingest.writer.stats.held_readings > 0, 15)
            st = p.status()
            writer = st["components"]["writer"]
            assert st["state"] == "degraded" and "No space left on device" in st["problems"]["writer"]
            assert "the broker keeps the messages" in st["problems"]["writer"]
            assert writer["spool"]["writable"] is False and writer["spool"]["free_bytes"] < 20 << 10
            assert st["database"].startswith("down, NOT STORING (spool cannot be written: No space left on device")
            assert wait_until(lambda: degraded("DEGRADED: Full disk village: writer"), 10), \
                [x["body"]["title"] for x in hook.posts]
            stored_while_full = p.ingest.writer.stats.readings_spooled
            assert stored_while_full < 2000
            filler.unlink()                                        # space returns
            assert wait_until(lambda: p.ingest.writer.stats.readings_spooled == 2000, 20), \
                p.ingest.writer.stats
            assert wait_until(lambda: "writer" in p.problems() and "database unreachable" in p.problems()["writer"]
                              and "spool cannot" not in p.problems()["writer"], 10)
            assert p.status()["components"]["writer"]["spool"]["writable"] is True
            pg.start()                                             # then the database
            owner = pg.url("owner")
            assert wait_until(lambda: count(owner, "SELECT count(*) FROM readings") == 2000, 30)
            assert wait_until(lambda: p.ingest.writer.spool.empty(), 10)
            assert wait_until(lambda: "writer" not in p.problems(), 10)
        finally:
            close_all(pub, bg, hook)
        assert count(owner, "SELECT count(*) FROM (SELECT DISTINCT sensor_id, time FROM readings) d") == 2000
        assert count(owner, "SELECT count(*) FROM readings") == 2000
        assert len(degraded("DEGRADED: Full disk village: writer")) == 1
