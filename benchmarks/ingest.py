"""Ingest throughput: MQTT to TimescaleDB, against raw binary COPY and bare paho, in one run.

Two cases, each on a broker and a TimescaleDB cluster of the benchmark's own (started in a
scratch state folder, removed afterwards):

batched
    ``N`` readings in messages of 1,000 (the batched JSON wire format), queued at the
    broker for the collector's persistent session, then drained by the collector and the
    writer into the ``readings`` hypertable (binary COPY to staging, INSERT ... ON CONFLICT
    DO NOTHING, manual acknowledgement after commit). Peer: the same rows written by one
    raw binary COPY straight into the same table.
single
    ``M`` single-reading messages queued the same way and drained by the collector into
    the database. Peer: a bare paho subscriber (auto acknowledgement, no parsing, no
    database) draining the same queue.

broker-durability
    What the broker's prompt persistence costs (the generated config saves the
    queued messages of offline sessions every second instead of every five): the batched
    messages queued for an offline session and drained by a bare paho subscriber, timed
    from the first publish to the last message received, on the generated config. Peer: the
    same on the same broker restarted with the old setting (``autosave_interval 5``).

Queueing first, then draining, measures the receiving side alone: the publisher's speed
does not enter the first two figures. Prints one JSON line per case; the last line is the
batched case with the other cases under ``"also"``.

The batched case runs ``BENCH_ROUNDS`` rounds (default 3), each with readings of new days,
the order alternating (sewerwatch then the peer, the peer then sewerwatch, ...) and a
``CHECKPOINT`` before each side, so that neither side pays for the other's writes being
flushed, nor always runs into the larger table: one run of each differed by up to a fifth
from the next, on the same code. Its figures are the medians of the rounds, each round's
figures under ``"rounds"``.

``BENCH_QUICK=1``: 200,000 batched readings and 20,000 single messages.
``BENCH_CASES=batched,single,persistence`` (the default: all): which cases run (the profile,
``benchmarks/profile.py``, takes one at a time); the last line is the first case run, the
others under ``"also"``. ``BENCH_PIPELINE=0``: the writer one chunk at a time (its default is two
at once, on two connections); ``BENCH_WRITER_ROWS``: its readings per transaction (default 50,000).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import paho.mqtt.client as mqtt
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ingest.mqtt.topics import SensorRef, TopicMap  # noqa: E402
from ingest.mqtt.collector import MqttCollector  # noqa: E402
from ingest.sink import Sink  # noqa: E402
from ingest.writer import Writer, copy_binary  # noqa: E402
from ingest.batch import Readings  # noqa: E402
from sewerwatch.services.mosquitto import AUTOSAVE  # noqa: E402
from sewerwatch.services.scratch import scratch  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
CASES = os.environ.get("BENCH_CASES", "batched,single,persistence").split(",")
#: ``BENCH_PIPELINE=0``: the writer writes one chunk at a time on one connection (its
#: ``pipeline`` option, on by default: two chunks at once)
PIPELINE = os.environ.get("BENCH_PIPELINE", "1") == "1"
#: ``BENCH_WRITER_ROWS``: the writer's readings per transaction at most (its default 50,000)
WRITER_ROWS = int(os.environ.get("BENCH_WRITER_ROWS", "50000"))
N_BATCHED = 200_000 if QUICK else 2_000_000
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
DAY_MS = 86_400_000
M_SINGLE = 20_000 if QUICK else 100_000
PER_MESSAGE = 1000
SENSORS = 100
#: the readings' times start 30 days ago (the collector takes readings up to 400 days old,
#: [ingest] max_past_days, and none from the future)
T0_MS = (int(time.time()) // 86_400 - 30) * 86_400_000


def _client(url: str, client_id: str, clean: bool, manual_ack: bool = False) -> mqtt.Client:
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean,
                    protocol=mqtt.MQTTv311, manual_ack=manual_ack)
    c.username_pw_set(u.username, u.password)
    c.max_inflight_messages_set(1000)
    c.max_queued_messages_set(0)
    ok = threading.Event()
    c.on_connect = lambda *a: ok.set()
    c.connect(u.hostname, u.port)
    c.loop_start()
    ok.wait(10)
    return c


def _register_session(url: str, client_id: str) -> None:
    """Create a persistent session subscribed to the readings, then leave it offline."""
    c = _client(url, client_id, clean=False)
    c.subscribe("sewerwatch/+/+", qos=1)
    time.sleep(0.3)
    c.disconnect()
    c.loop_stop()


def _publish(url: str, messages) -> None:
    c = _client(url, f"bench-pub-{os.getpid()}", clean=True)
    acked = [0]
    cond = threading.Condition()
    total = len(messages)

    def on_publish(*a):
        with cond:
            acked[0] += 1
            cond.notify_all()

    c.on_publish = on_publish
    # Keep at most 1,000 unacknowledged: paho scans its whole queue on every ack.
    for i, (topic, payload) in enumerate(messages):
        with cond:
            cond.wait_for(lambda: i - acked[0] < 1000, timeout=60)
        c.publish(topic, payload, qos=1)
    with cond:
        cond.wait_for(lambda: acked[0] >= total, timeout=600)
    c.disconnect()
    c.loop_stop()


def _batched_messages(n: int, offset_ms: int = 0):
    msgs = []
    per_sensor = n // SENSORS
    t0 = T0_MS + offset_ms
    for s in range(SENSORS):
        for k in range(0, per_sensor, PER_MESSAGE):
            t = list(range(t0 + k * 1000, t0 + (k + PER_MESSAGE) * 1000, 1000))
            v = np.round(np.random.default_rng(s * 7919 + k).normal(7, 0.3, PER_MESSAGE), 3).tolist()
            msgs.append((f"sewerwatch/site{s}/ph", json.dumps({"u": "pH", "t": t, "v": v}).encode()))
    return msgs


def _single_messages(m: int, offset_ms: int = 10**9):
    return [(f"sewerwatch/site{i % SENSORS}/ph",
             b'{"t": %d, "v": 7.%02d, "u": "pH"}' % (T0_MS + offset_ms + (i // SENSORS) * 1000, i % 100))
            for i in range(m)]


def _count(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM readings").fetchone()[0]


def _drain_with_collector(pg, mq, client_id: str, expected_rows: int, refs, spool: Path) -> float:
    """Seconds from the collector's start until ``expected_rows`` rows are stored."""
    owner = pg.url("owner")
    before = _count(owner)
    sink = Sink()
    writer = Writer(pg.url("ingest"), sink, spool, max_rows=WRITER_ROWS, max_delay=0.05, pipeline=PIPELINE).start()
    t0 = time.perf_counter()
    col = MqttCollector(mq.url("collector"), TopicMap(refs), sink, client_id=client_id).start()
    while writer.stats.readings_inserted < expected_rows:
        time.sleep(0.01)
        if time.perf_counter() - t0 > 900:
            raise RuntimeError("collector did not finish in 15 minutes")
    elapsed = time.perf_counter() - t0
    col.stop()
    writer.stop()
    assert _count(owner) - before == expected_rows
    return elapsed


def _drain_bare_paho(mq, client_id: str, expected: int) -> float:
    got = [0]
    done = threading.Event()
    u = urlsplit(mq.url("collector"))
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False, protocol=mqtt.MQTTv311)
    c.username_pw_set(u.username, u.password)

    def on_message(client, userdata, msg):
        got[0] += 1
        if got[0] >= expected:
            done.set()

    c.on_message = on_message
    t0 = time.perf_counter()
    c.connect(u.hostname, u.port)
    c.loop_start()
    done.wait(600)
    elapsed = time.perf_counter() - t0
    c.disconnect()
    c.loop_stop()
    return elapsed


def main() -> None:
    with scratch(prefix="sewerwatch-bench-") as services:
        run(services.state, services.pg, services.mq)


def run(state: Path, pg, mq) -> None:
    with psycopg.connect(pg.url("owner")) as conn:
        conn.execute("INSERT INTO sites (key, name, pack) SELECT 'site' || g, 'Site ' || g, 'palmyra-wi' "
                     "FROM generate_series(0, %s) g", (SENSORS - 1,))
        conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source) "
                     "SELECT id, 'ph', 'ph', 'pH', 'mqtt' FROM sites")
        refs = [SensorRef(i, f"{k}/ph", "ph") for i, k in
                conn.execute("SELECT se.id, si.key FROM sensors se JOIN sites si ON si.id = se.site_id")]

    results = []
    msgs = _batched_messages(N_BATCHED)
    if "batched" in CASES:
        results.append(_batched(state, pg, mq, refs, msgs))
    if "single" in CASES:
        results.append(_single(state, pg, mq, refs))
        print(json.dumps(results[-1]))
    if "persistence" in CASES:
        results.append(_persistence(mq, msgs))
        print(json.dumps(results[-1]))
    print(json.dumps({**results[0], "also": results[1:]}))


def _batched(state: Path, pg, mq, refs, msgs) -> dict:
    """Batched messages: collector and writer versus raw binary COPY, ``ROUNDS`` rounds."""
    n_rows = len(msgs) * PER_MESSAGE
    ours, peers = [], []
    for r in range(ROUNDS):
        # round r: sewerwatch's readings on day 2r after T0, the peer's on day 2r + 1 (new rows, new chunks)
        sides = [("ours", 2 * r), ("peer", 2 * r + 1)]
        for side, day in (sides if r % 2 == 0 else sides[::-1]):
            _checkpoint(pg)
            if side == "ours":
                ours.append(_batched_ours(state, pg, mq, refs, msgs if day == 0 else
                                          _batched_messages(n_rows, day * DAY_MS), r))
            else:
                peers.append(_batched_peer(pg, refs, msgs, day * DAY_MS))
        print(f"round {r + 1}: collector {ours[-1]:,.0f} readings/s, raw binary COPY {peers[-1]:,.0f} rows/s "
              f"({ours[-1] / peers[-1]:.3f})", file=sys.stderr)
    o, p = float(np.median(ours)), float(np.median(peers))
    return {"benchmark": "ingest-mqtt-batched-to-timescaledb", "value": round(o), "unit": "readings/s",
            "peer": "raw binary COPY into the same hypertable", "peer_value": round(p),
            "ratio": round(o / p, 3), "readings": n_rows, "writer": "two chunks at once" if PIPELINE else "one chunk at a time",
            "rounds": [{"value": round(a), "peer_value": round(b), "ratio": round(a / b, 3)} for a, b in zip(ours, peers)]}


def _checkpoint(pg) -> None:
    with psycopg.connect(pg.url("admin"), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def _batched_ours(state: Path, pg, mq, refs, msgs, r: int) -> float:
    """Readings/s the collector and the writer store of ``msgs`` queued for their session."""
    n_rows = len(msgs) * PER_MESSAGE
    _register_session(mq.url("admin"), f"bench-collector-b{r}")
    print(f"queueing {len(msgs)} batched messages ({n_rows} readings) ...", file=sys.stderr)
    _publish(mq.url("device"), msgs)
    _checkpoint(pg)                                 # the publishing wrote nothing to the database
    secs = _drain_with_collector(pg, mq, f"bench-collector-b{r}", n_rows, refs, state / f"spool-b{r}")
    print(f"collector: {n_rows} readings stored in {secs:.2f} s = {n_rows / secs:,.0f} readings/s", file=sys.stderr)
    return n_rows / secs


def _batched_peer(pg, refs, msgs, offset_ms: int) -> float:
    """Rows/s of one raw binary COPY of the same readings, ``offset_ms`` later."""
    n_rows = len(msgs) * PER_MESSAGE
    ids = {r.key: r.id for r in refs}
    parts = []
    for topic, payload in msgs:
        doc = json.loads(payload)
        t = (np.asarray(doc["t"], dtype=np.int64) + offset_ms) * 1000
        parts.append(Readings(t, np.full(len(t), ids[topic.split("/")[1] + "/ph"], np.int32),
                              np.asarray(doc["v"]), np.zeros(len(t), np.int16)))
    stream = copy_binary(Readings.concat(parts))
    with psycopg.connect(pg.url("owner")) as conn:
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN (FORMAT BINARY)") as cp:
            cp.write(stream)
        conn.commit()
        peer_secs = time.perf_counter() - t0
    print(f"raw binary COPY: {n_rows} rows in {peer_secs:.2f} s = {n_rows / peer_secs:,.0f} rows/s", file=sys.stderr)
    return n_rows / peer_secs


def _single(state: Path, pg, mq, refs) -> dict:
    """Single-reading messages: collector to database versus bare paho."""
    singles = _single_messages(M_SINGLE)
    _register_session(mq.url("admin"), "bench-bare")
    _publish(mq.url("device"), singles)
    bare_secs = _drain_bare_paho(mq, "bench-bare", M_SINGLE)
    bare = M_SINGLE / bare_secs
    print(f"bare paho: {M_SINGLE} messages in {bare_secs:.2f} s = {bare:,.0f} messages/s", file=sys.stderr)
    singles = _single_messages(M_SINGLE, offset_ms=2 * 10**9)   # new times, new rows
    _register_session(mq.url("admin"), "bench-collector-2")
    _publish(mq.url("device"), singles)
    secs = _drain_with_collector(pg, mq, "bench-collector-2", M_SINGLE, refs, state / "spool2")
    ours_single = M_SINGLE / secs
    print(f"collector: {M_SINGLE} single messages stored in {secs:.2f} s = {ours_single:,.0f} messages/s",
          file=sys.stderr)
    return {"benchmark": "ingest-mqtt-single-to-timescaledb", "value": round(ours_single), "unit": "messages/s",
            "peer": "bare paho-mqtt subscriber (receive only)", "peer_value": round(bare),
            "ratio": round(ours_single / bare, 3), "messages": M_SINGLE}


def _persistence(mq, msgs) -> dict:
    """What prompt broker persistence costs: queue and drain, new versus old setting."""
    durable = _queue_and_drain(mq, msgs, "bench-durable-1")
    mq.stop()
    mq.autosave = "autosave_interval 5"
    mq.start()
    lazy = _queue_and_drain(mq, msgs, "bench-durable-2")
    mq.stop()
    mq.autosave = AUTOSAVE
    mq.start()
    print(f"queue and drain {len(msgs)} batched messages: saving every second {durable:,.0f} messages/s, "
          f"every 5 s {lazy:,.0f} messages/s", file=sys.stderr)
    return {"benchmark": "broker-persistence-cost", "value": round(durable), "unit": "messages/s",
            "peer": "the same broker saving every 5 s (the old config)", "peer_value": round(lazy),
            "ratio": round(durable / lazy, 3), "messages": len(msgs), "bytes": sum(len(p) for _, p in msgs)}


def _queue_and_drain(mq, msgs, client_id: str) -> float:
    """Messages/s from the first publish to the last message a bare subscriber received, the
    messages queued for its offline session in between."""
    _register_session(mq.url("admin"), client_id)
    t0 = time.perf_counter()
    _publish(mq.url("device"), msgs)
    _drain_bare_paho(mq, client_id, len(msgs))
    return len(msgs) / (time.perf_counter() - t0)


if __name__ == "__main__":
    main()
