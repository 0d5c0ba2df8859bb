"""Broker durability: readings acknowledged by the broker for an offline collector, then the
broker killed with SIGKILL one second later: what fraction is delivered after its restart?

Each trial, on a Mosquitto of the benchmark's own (scratch state folder): a persistent QoS 1
session is registered and left offline; after a random 0-2 s (so the broker's save clock
is met at any phase) ``N`` readings in messages of 10 are published and every PUBACK
awaited; one second later the broker gets SIGKILL, is started again, and a subscriber on
the session counts what it is delivered. Value: the mean stored fraction with the
generated config (``sewerwatch/services/mosquitto.py`` ``AUTOSAVE``: save every second of
Mosquitto's integer clock). Peer: the same with the old setting (``autosave_interval 5``).

``BENCH_QUICK=1``: 3 trials each (default 10). Prints one JSON line, the last line.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sewerwatch.services.mosquitto import AUTOSAVE  # noqa: E402
from sewerwatch.services.scratch import mqtt_client, scratch  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
TRIALS = 3 if QUICK else 10
N = 5000
PER_MESSAGE = 10


def trial(mq, k: int) -> float:
    cid = f"bench-offline-{k}"
    c = mqtt_client(mq.url("collector"), cid, clean_session=False)
    c.subscribe("sewerwatch/+/+", qos=1)
    time.sleep(0.3)
    c.disconnect()
    c.loop_stop()
    time.sleep(random.uniform(0.0, 2.0))
    pub = mqtt_client(mq.url("device"), f"bench-pub-{k}")
    infos = [pub.publish("sewerwatch/site/ph", json.dumps({"u": "pH", "t": list(range(i, i + PER_MESSAGE)),
                                                           "v": [7.0] * PER_MESSAGE}), qos=1)
             for i in range(0, N, PER_MESSAGE)]
    for info in infos:
        info.wait_for_publish(30)
    pub.disconnect()
    pub.loop_stop()
    time.sleep(1.0)
    os.kill(mq.pid(), signal.SIGKILL)
    while mq.pid() is not None:
        time.sleep(0.05)
    mq.start()
    got, last = set(), [time.monotonic()]

    def on_message(client, userdata, msg):
        got.add(msg.payload)
        last[0] = time.monotonic()

    c = mqtt_client(mq.url("collector"), cid, clean_session=False, on_message=on_message)
    while time.monotonic() - last[0] < 2.0:
        time.sleep(0.1)
    c.disconnect()
    c.loop_stop()
    return len(got) * PER_MESSAGE / N


def measure(autosave: str) -> list[float]:
    with scratch(postgres=False, prefix="sewerwatch-bench-kill-") as s:
        mq = s.mq
        mq.stop()
        mq.autosave = autosave
        mq.start()
        return [trial(mq, k) for k in range(TRIALS)]


def main() -> None:
    ours = measure(AUTOSAVE)
    old = measure("autosave_interval 5")
    print(f"stored fraction, SIGKILL 1 s after the last PUBACK ({TRIALS} trials of {N} readings): "
          f"generated config {[round(f, 3) for f in ours]}, old config {[round(f, 3) for f in old]}", file=sys.stderr)
    mean, peer = sum(ours) / len(ours), sum(old) / len(old)
    print(json.dumps({"benchmark": "broker-sigkill-stored-fraction", "value": round(mean, 3), "unit": "fraction stored",
                      "peer": "the old broker config (autosave_interval 5)", "peer_value": round(peer, 3),
                      "ratio": round(mean / peer, 3) if peer else None, "trials": TRIALS, "readings": N,
                      "all_stored_trials": sum(f == 1.0 for f in ours)}))


if __name__ == "__main__":
    main()
