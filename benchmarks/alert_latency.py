"""Alert latency: from publishing an out-of-limit reading to the notification at a webhook.

A TimescaleDB cluster and a Mosquitto broker of the benchmark's own (scratch state folder,
removed afterwards) and the real pipeline (``sewerwatch.pipeline.Pipeline``: MQTT
collector, writer, streaming evaluator, alert manager with one apprise ``json://``
webhook channel). A separate process publishes a background load of 10,000 readings/s
(100 pH sensors, batched JSON messages of 100 readings, QoS 0) the whole time.

Trials: each trial takes a fresh probe sensor, publishes one pH 3.0 reading (palmyra-wi
ph-min: lower than 6.0) and records the time just before ``publish``; the latency is the
time until the webhook catcher receives the alert for that probe. The catcher is a process
of its own, as a real receiver is (in the pipeline's process its thread would wait for the
pipeline's turns at the interpreter's lock before it could take the time of arrival). One
alert goes before the trials and is not one of them: the first alert of a process also
loads the HTTP client's lazily imported parts (10-40 ms, once); its latency is printed
apart, under ``first_alert_ms``.

Peer, in the same run and under the same load: the way dashboard alerting works, an
evaluator that polls the database every second for probe readings below the limit and
posts to the same webhook catcher (through apprise, the same channel code) when it finds
one. Its latency is the writer's delay plus up to a polling interval.

The floor, in the same run and under the same load, before the trials: the p99 of a bare
paho publish -> receive round trip on the same broker (QoS 1, a subscriber of its own) plus
the p99 of a bare HTTP POST to the same webhook catcher, under ``floor_ms``: no pipeline can
deliver faster than the two together.

Prints one JSON line: ``value`` = sewerwatch p99 [ms], ``peer_value`` = poller p99 [ms],
``ratio`` = peer p99 / sewerwatch p99 (target >= 5); p50s under ``p50_ms``.
``BENCH_QUICK=1``: 10 trials instead of 40. ``BENCH_BURN=1``: a second process burns one
core the whole run (the figure on a machine with other work). ``BENCH_TRACE=1``: also where
each trial's time went, step by step (medians and the slowest trials, on standard error),
from timestamps taken by wrappers the benchmark puts around the pipeline's parts.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

QUICK = os.environ.get("BENCH_QUICK") == "1"
BURN = os.environ.get("BENCH_BURN") == "1"
TRACE = os.environ.get("BENCH_TRACE") == "1"
TRIALS = 10 if QUICK else 40
LOAD_SENSORS = 100
LOAD_RATE = 10_000          # readings/s
PER_MESSAGE = 100


def _mqtt(url: str, client_id: str):
    import paho.mqtt.client as mqtt
    from urllib.parse import urlsplit

    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311)
    c.username_pw_set(u.username, u.password)
    c.max_queued_messages_set(0)
    ok = threading.Event()
    c.on_connect = lambda *a: ok.set()
    c.connect(u.hostname, u.port)
    c.loop_start()
    if not ok.wait(10):
        raise RuntimeError("cannot connect to the broker")
    return c


def _load(url: str, duration: float) -> None:
    import numpy as np

    c = _mqtt(url, f"bench-load-{os.getpid()}")
    rng = np.random.default_rng(1)
    msgs_per_s = LOAD_RATE // PER_MESSAGE
    step_ms = 1000 * LOAD_SENSORS // LOAD_RATE            # each sensor: one reading every 10 ms
    start = time.time()
    base_ms = int(start * 1000)
    k = 0
    sent = 0
    while time.time() - start < duration:
        target = start + k / msgs_per_s
        delay = target - time.time()
        if delay > 0:
            time.sleep(delay)
        s = k % LOAD_SENSORS
        rnd = k // LOAD_SENSORS
        t0 = base_ms + rnd * PER_MESSAGE * step_ms
        t = list(range(t0, t0 + PER_MESSAGE * step_ms, step_ms))
        v = np.round(rng.normal(7.0, 0.2, PER_MESSAGE), 3).tolist()
        c.publish(f"sewerwatch/load{s}/ph", json.dumps({"u": "pH", "t": t, "v": v}), qos=0)
        sent += PER_MESSAGE
        k += 1
    seconds = time.time() - start
    time.sleep(0.5)
    c.disconnect()
    c.loop_stop()
    print(json.dumps({"sent": sent, "seconds": seconds}), flush=True)


def _floor(mq, hook_port: int, n: int) -> dict:
    """p99 [ms] of ``n`` bare paho publish -> receive round trips and of ``n`` bare HTTP POSTs
    to the webhook catcher, one after the other, and their sum."""
    import urllib.request

    got: dict[bytes, float] = {}
    arrived = threading.Event()
    sub = _mqtt(mq.url("admin"), "bench-floor-sub")
    sub.on_message = lambda c, u, m: (got.setdefault(m.payload, time.perf_counter()), arrived.set())
    subscribed = threading.Event()
    sub.on_subscribe = lambda *a: subscribed.set()
    sub.subscribe("bench/floor", qos=1)
    subscribed.wait(5)
    pub = _mqtt(mq.url("admin"), "bench-floor-pub")
    rtts, posts = [], []
    for k in range(n):
        arrived.clear()
        key = b"%d" % k
        t0 = time.perf_counter()
        pub.publish("bench/floor", key, qos=1)
        arrived.wait(2)
        if key in got:
            rtts.append(got[key] - t0)
        time.sleep(0.02)
    for c in (sub, pub):
        c.disconnect()
        c.loop_stop()
    for k in range(n):
        req = urllib.request.Request(f"http://127.0.0.1:{hook_port}/floor", data=b'{"title": "floor"}',
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()
        posts.append(time.perf_counter() - t0)
        time.sleep(0.02)
    if not rtts:
        raise SystemExit("floor: no bare MQTT round trip arrived (the admin account may not use bench/floor)")
    m99, h99 = _percentiles(rtts)[1], _percentiles(posts)[1]
    return {"mqtt_p99": round(m99, 2), "http_p99": round(h99, 2), "sum_p99": round(m99 + h99, 2)}


class _CatcherProcess:
    """The webhook catcher run alone (``python -m alerts.catchers webhook``), a process of its
    own; a thread here hands each POST's path, body and time of arrival [epoch s] to
    ``on_post``."""

    def __init__(self, on_post):
        self.proc = subprocess.Popen([sys.executable, "-m", "alerts.catchers", "webhook", "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.port = int(self.proc.stderr.readline().rsplit(":", 1)[1])     # "... listening on 127.0.0.1:PORT"
        self._on_post = on_post
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            d = json.loads(line)
            self._on_post(d["path"], d["body"], d["at"])

    def url(self, path: str) -> str:
        return f"json://127.0.0.1:{self.port}{path}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def _percentiles(xs):
    import numpy as np
    a = np.asarray(xs) * 1000.0
    return float(np.percentile(a, 50)), float(np.percentile(a, 99))


def _trace(p, channel, probes: dict) -> dict:
    """``BENCH_TRACE=1``: the time [epoch s] each probe's reading passes each step of the
    alert path, from wrappers put around the pipeline's parts for this run only (nothing of
    it is in sewerwatch's code): the collector hands the batch to the sink (``sink``), the
    collector has the message (``collector``), the evaluator starts and ends the batch (``judge``, ``judged``), the manager notifies
    (``notify``), the channel's send starts and returns (``post``, ``posted``)."""
    import numpy as np

    marks: dict[int, dict[str, float]] = {k: {} for k in probes}
    by_sensor = {sid: k for k, sid in probes.items()}
    ids = np.array(sorted(by_sensor), dtype=np.int64)
    lock = threading.Lock()

    def mark(ks, step):
        at = time.time()
        with lock:
            for k in ks:
                marks[k].setdefault(step, at)

    def probes_in(sensor_ids, values=None):
        s = np.asarray(sensor_ids, dtype=np.int64)
        hit = np.isin(s, ids)
        if values is not None:
            hit &= np.asarray(values) < 6.0
        return [by_sensor[int(x)] for x in np.unique(s[hit])]

    col = p.ingest.mqtt
    keep = col._keep

    def traced_keep(msg, *a, **kw):
        topic = msg.topic if isinstance(msg.topic, str) else ""
        if topic.startswith("sewerwatch/probe") and b'"v": 3.0' in bytes(msg.payload):
            mark([int(topic.split("/")[1][5:])], "collector")
        return keep(msg, *a, **kw)
    col._keep = traced_keep
    sink = p.ingest.mqtt.sink
    put = sink.put

    def traced_put(batch, *a, **kw):
        mark(probes_in(batch.sensor_id, batch.value), "sink")
        return put(batch, *a, **kw)
    sink.put = traced_put
    push = p.episodes.push

    def traced_push(sensor, time_us, value, quality, *a, **kw):
        ks = probes_in(sensor, value)
        mark(ks, "judge")
        out = push(sensor, time_us, value, quality, *a, **kw)
        mark(ks, "judged")
        return out
    p.episodes.push = traced_push
    notify = p.manager._notify

    def traced_notify(a, event):
        if a.site.startswith("probe"):
            mark([int(a.site[5:])], "notify")
        return notify(a, event)
    p.manager._notify = traced_notify
    send = channel.send

    def traced_send(title, body, payload):
        ks = [int(w[5:]) for w in title.replace(":", " ").split() if w.startswith("probe") and w[5:].isdigit()]
        mark(ks, "post")
        out = send(title, body, payload)
        mark(ks, "posted")
        return out
    channel.send = traced_send
    return marks


def _trace_report(marks: dict, sent_at: dict, arrived: dict) -> str:
    """Each step's share of the latency: medians over the trials and the steps of the slowest
    trials [ms]."""
    steps = ("collector", "sink", "judge", "judged", "notify", "post")
    rows = []
    for k, m in marks.items():
        if k not in arrived or any(s not in m for s in steps):
            continue
        t = [sent_at[k]] + [m[s] for s in steps] + [arrived[k]]
        rows.append([1000 * (b - a) for a, b in zip(t, t[1:])] + [1000 * (arrived[k] - sent_at[k])])
    if not rows:
        return "trace: no trial passed every step"
    names = ("publish>collector", "collector>sink", "sink>judge", "judging", "judged>notify", "notify>post", "post>receipt", "total")
    med = [sorted(c)[len(c) // 2] for c in zip(*rows)]
    out = ["trace, medians [ms]: " + ", ".join(f"{n} {v:.1f}" for n, v in zip(names, med))]
    for r in sorted(rows, key=lambda r: -r[-1])[:4]:
        out.append("  slow trial [ms]: " + ", ".join(f"{n} {v:.1f}" for n, v in zip(names, r)))
    return "\n".join(out)


def main() -> None:
    import psycopg

    from alerts.channels import AppriseChannel, Route
    from foundation import config as sw_config
    from sewerwatch.pipeline import Background, Pipeline
    from sewerwatch.services.scratch import scratch

    stack = contextlib.ExitStack()  # the scratch services, closed last
    scr = stack.enter_context(scratch(prefix="sewerwatch-bench-"))
    state, pg, mq = scr.state, scr.pg, scr.mq
    arrivals: dict[tuple[str, str], float] = {}
    lock = threading.Lock()

    def on_post(path, body, at):
        text = body.get("title", "") if isinstance(body, dict) else ""
        for word in text.replace(":", " ").split():
            if word.startswith("probe"):
                with lock:
                    arrivals.setdefault((path, word), at)

    hook = _CatcherProcess(on_post)
    load = None
    bg = None
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if BURN else None
    try:
        with psycopg.connect(pg.url("owner")) as conn:
            for k in range(LOAD_SENSORS):
                sid = conn.execute("INSERT INTO sites (key, name, pack) VALUES (%s, %s, 'palmyra-wi') RETURNING id",
                                   (f"load{k}", f"Load {k}")).fetchone()[0]
                conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
                             "VALUES (%s, 'ph', 'ph', 'pH', 'mqtt', %s, 0.01)", (sid, f"mqtt:sewerwatch/load{k}/ph"))
            probes = {}
            for k in range(TRIALS + 1):                      # the last: the alert before the trials
                sid = conn.execute("INSERT INTO sites (key, name, pack) VALUES (%s, %s, 'palmyra-wi') RETURNING id",
                                   (f"probe{k}", f"probe{k}")).fetchone()[0]
                probes[k] = conn.execute(
                    "INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
                    "VALUES (%s, 'ph', 'ph', 'pH', 'mqtt', %s, 1) RETURNING id",
                    (sid, f"mqtt:sewerwatch/probe{k}/ph")).fetchone()[0]
        cfg = sw_config.from_dict({"utility": {"name": "Bench", "timezone": "America/Chicago"},
                                   "alerts": {"console": False, "mqtt": False, "digest_at": False,
                                              "escalate_after_min": 600, "hold_off_s": 600}}, "<bench>")
        routes = [Route(AppriseChannel(hook.url("/sewerwatch"), "bench"))]
        p = Pipeline(cfg, owner_url=pg.url("owner"), ingest_url=pg.url("ingest"), mqtt_url=mq.url("collector"),
                     notifier_url=None, spool_dir=state / "spool", client_id="bench-run", routes=routes)
        bg = Background(p)
        p.ingest.mqtt.wait_subscribed(10)
        trace = _trace(p, routes[0].channel, probes) if TRACE else None
        time.sleep(0.5)

        # the peer: poll the database every second, like dashboard alerting
        stop_peer = threading.Event()
        peer_channel = AppriseChannel(hook.url("/peer"), "peer")
        id_to_probe = {v: k for k, v in probes.items()}

        def poller():
            alerted = set()
            conn = psycopg.connect(pg.url("owner"), autocommit=True)
            next_t = time.monotonic() + random.random()
            while not stop_peer.is_set():
                time.sleep(max(0.0, next_t - time.monotonic()))
                next_t += 1.0
                rows = conn.execute("SELECT sensor_id, min(time) FROM readings WHERE sensor_id = ANY(%s) "
                                    "AND value < 6.0 AND time > now() - interval '10 minutes' GROUP BY 1",
                                    (list(probes.values()),)).fetchall()
                for sid, _ in rows:
                    if sid not in alerted:
                        alerted.add(sid)
                        k = id_to_probe[sid]
                        peer_channel.send(f"[poller] VIOLATION probe{k} pH below 6.0", "poll", {})
            conn.close()

        peer = threading.Thread(target=poller, daemon=True)
        peer.start()

        duration = TRIALS * 1.6 + 8 + TRIALS * 0.1
        load = subprocess.Popen([sys.executable, __file__, "--load", mq.url("device"), str(duration)],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(3.0)                               # the load runs before the first trial
        floor = _floor(mq, hook.port, TRIALS)
        pub = _mqtt(mq.url("device"), "bench-probe")
        sent_at = {}
        rng = random.Random(7)
        for k in [TRIALS] + list(range(TRIALS)):
            now_ms = int(time.time() * 1000)
            # a normal reading first, then the out-of-limit one a second later (data time)
            pub.publish(f"sewerwatch/probe{k}/ph", json.dumps({"u": "pH", "t": now_ms - 1000, "v": 7.1}), qos=1)
            time.sleep(0.05)
            msg = json.dumps({"u": "pH", "t": now_ms, "v": 3.0})
            sent_at[k] = time.time()
            pub.publish(f"sewerwatch/probe{k}/ph", msg, qos=1)
            time.sleep(0.9 + rng.random() * 0.6)
        end = time.time() + 5
        while time.time() < end:
            with lock:
                if len(arrivals) >= 2 * (TRIALS + 1):
                    break
            time.sleep(0.1)
        stop_peer.set()
        load_out = load.communicate(timeout=duration + 30)[0]
        load_stats = json.loads(load_out.strip().splitlines()[-1])
        st = p.status()
        ours, theirs = [], []
        for k in range(TRIALS):
            a = arrivals.get(("/sewerwatch", f"probe{k}"))
            b = arrivals.get(("/peer", f"probe{k}"))
            if a is not None:
                ours.append(a - sent_at[k])
            if b is not None:
                theirs.append(b - sent_at[k])
        pub.loop_stop()
        pub.disconnect()
        if len(ours) < TRIALS or len(theirs) < TRIALS:
            raise SystemExit(f"missing notifications: sewerwatch {len(ours)}/{TRIALS}, poller {len(theirs)}/{TRIALS}")
        o50, o99 = _percentiles(ours)
        first = arrivals.get(("/sewerwatch", f"probe{TRIALS}"))
        first_ms = round(1000 * (first - sent_at[TRIALS]), 1) if first is not None else None
        if trace is not None:
            got = {k: arrivals[("/sewerwatch", f"probe{k}")] for k in range(TRIALS)}
            print(_trace_report(trace, sent_at, got), file=sys.stderr)
        p50, p99 = _percentiles(theirs)
        rate = load_stats["sent"] / load_stats["seconds"]
        print(f"background load: {load_stats['sent']} readings in {load_stats['seconds']:.1f} s = {rate:,.0f}/s; "
              f"pipeline accepted {st['readings']['accepted']}, inserted {st['readings']['inserted']}",
              file=sys.stderr)
        print(f"sewerwatch: p50 {o50:.1f} ms, p99 {o99:.1f} ms; poller (1 s): p50 {p50:.1f} ms, p99 {p99:.1f} ms; "
              f"floor: MQTT round trip p99 {floor['mqtt_p99']} ms + HTTP POST p99 {floor['http_p99']} ms; "
              f"the first alert (before the trials): {first_ms} ms"
              + ("; a second process burning one core" if BURN else ""), file=sys.stderr)
        print(json.dumps({"benchmark": "alert-latency-publish-to-webhook", "value": round(o99, 1), "unit": "ms p99",
                          "peer": "database poller every 1 s (dashboard-style alerting)", "peer_value": round(p99, 1),
                          "ratio": round(p99 / o99, 2), "p50_ms": {"sewerwatch": round(o50, 1), "peer": round(p50, 1)},
                          "trials": TRIALS, "first_alert_ms": first_ms, "load_readings_per_s": round(rate), "floor_ms": floor,
                          "burning_one_core": BURN}))
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        if bg is not None:
            bg.stop()
        hook.stop()
        stack.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        _load(sys.argv[2], float(sys.argv[3]))
    else:
        main()
