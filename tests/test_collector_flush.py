"""The collector hands a quiet line's reading on at once, and a busy line's in batches
(ingest/mqtt/collector.py: ``flush_gap``), with the real broker and database.

The timer (``flush_interval``) is set to ten minutes here, so a batch that comes at all
came because a message found the buffer empty; and messages published right after a batch
come as one batch, because the next may not follow within ``flush_gap``.
"""

from __future__ import annotations

import json
import threading
import uuid

from foundation import config
from ingest import service
from support import HISTORIC, add_site_and_sensors, mqtt_client, publish_all, wait_until

MS0 = 1_772_366_400_000  # 2026-03-01T12:00:00Z


def test_a_lone_reading_goes_on_at_once_and_the_next_ones_wait_out_the_gap_together(db, services, tmp_path):
    site = "f" + uuid.uuid4().hex[:10]
    ids = add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    batches: list[list[float]] = []
    lock = threading.Lock()

    def tap(readings, seq):
        mine = readings.sensor_id == ids["ph"]
        if mine.any():
            with lock:
                batches.append(sorted(readings.value[mine].tolist()))

    ing = service.start(config.from_dict({"ingest": HISTORIC}), ingest_url=db.urls["ingest"],
                        mqtt_url=services.mqtt_urls["collector"], spool_dir=tmp_path / "spool",
                        client_id=f"c-{site}", max_delay=0.05, listeners=[tap])
    try:
        col = ing.mqtt
        col.flush_interval, col.flush_gap = 600.0, 3.0
        assert col.wait_subscribed()
        pub = mqtt_client(services.mqtt_urls["device"], f"p-{site}")

        def reading(k: int, v: float):
            return (f"sewerwatch/{site}/ph", json.dumps({"t": MS0 + 1000 * k, "v": v, "u": "pH"}).encode())

        # a lone reading on a quiet line: handed on without waiting for the ten-minute timer
        publish_all(pub, [reading(0, 3.0)])
        assert wait_until(lambda: len(batches) >= 1, 20), "a lone reading waited for the timer"
        # three more right after that batch: within the gap, so they wait for it together
        publish_all(pub, [reading(1, 3.1), reading(2, 3.2), reading(3, 3.3)])
        assert wait_until(lambda: len(batches) >= 2, 20)
        pub.disconnect()
        with lock:
            assert batches == [[3.0], [3.1, 3.2, 3.3]], batches
        # and each was stored once
        assert wait_until(lambda: ing.writer.stats.readings_inserted >= 4, 20)
    finally:
        ing.stop()
