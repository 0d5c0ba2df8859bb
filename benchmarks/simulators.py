"""Benchmark: one process serving 500 simulated Modbus devices, every register updated at 1 Hz.

The simulator (``simulators.modbus_server.ModbusSimulator``) runs the normal-day scenario
for N devices (500; ``BENCH_QUICK=1``: 100) on one asyncio loop: 247 unit ids per port,
so three ports. Every second it samples all devices at the simulated time and re-encodes
all registers in one numpy batch. Meanwhile a separate poller process (pymodbus client)
reads every device once a second over TCP and counts reads whose registers changed since
the previous read of that device (fresh data).

When the embedded Mosquitto runs, the same process also publishes every device's three
readings a second over MQTT (one paho client per device, single-reading JSON, QoS 0) and the
poller's subscriber counts what arrives (``mqtt_*`` fields); without a broker that leg is
skipped.

The peer is the target itself: N devices x 1 update per second. ``ratio`` = achieved
device updates per second / target. Also reported: missed ticks, the tick's compute time
(p50/p99) and the update capacity it implies (devices / p99 tick time), poller reads per second, the fresh fraction and request errors.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import uuid
from pathlib import Path

# run as a script, this file's folder would shadow the ``simulators`` package
ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from ingest import profiles  # noqa: E402
from simulators import scenarios  # noqa: E402
from simulators.modbus_server import MAX_UNITS_PER_PORT, ModbusSimulator  # noqa: E402
from simulators.mqtt_publisher import MqttPublisher  # noqa: E402
from simulators.sources import ScenarioSource, SimClock  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
DEVICES = 100 if QUICK else 500
DURATION_S = 6.0 if QUICK else 30.0

POLLER = r"""
import asyncio, json, sys, time
from pymodbus.client import AsyncModbusTcpClient

async def main(port, n, duration):
    nports = (n + 246) // 247
    clients = []
    for k in range(nports):
        c = AsyncModbusTcpClient("127.0.0.1", port=port + k, timeout=2, retries=0)
        await c.connect()
        clients.append(c)
    last = {}
    stats = {"reads": 0, "fresh": 0, "errors": 0, "rounds": 0}

    async def poll(k, units):
        c = clients[k]
        for u in units:
            try:
                r = await c.read_holding_registers(0, count=7, device_id=u)
            except Exception:
                stats["errors"] += 1
                continue
            if r.isError():
                stats["errors"] += 1
                continue
            key = (k, u)
            regs = tuple(r.registers)
            stats["reads"] += 1
            if key in last and last[key] != regs:
                stats["fresh"] += 1
            last[key] = regs

    t_start = time.monotonic()
    next_round = t_start
    while time.monotonic() - t_start < duration:
        groups = [(k, range(1, min(247, n - 247 * k) + 1)) for k in range(nports)]
        await asyncio.gather(*(poll(k, us) for k, us in groups))
        stats["rounds"] += 1
        next_round += 1.0
        await asyncio.sleep(max(0.0, next_round - time.monotonic()))
    stats["elapsed"] = time.monotonic() - t_start
    for c in clients:
        c.close()
    return stats


def subscribe(url, prefix, counts):
    # count reading messages of the benchmark sites (paho, its own thread)
    from urllib.parse import urlsplit
    import paho.mqtt.client as mqtt
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=prefix + "-sub")
    c.username_pw_set(u.username, u.password)
    def on_message(client, userdata, msg):
        if msg.topic.startswith(f"sewerwatch/{prefix}-"):
            counts["n"] += 1
    c.on_message = on_message
    c.on_connect = lambda client, *a: client.subscribe(f"sewerwatch/+/+", qos=0)
    c.connect(u.hostname, u.port)
    c.loop_start()
    return c


def run(port, n, duration, url=None, prefix=None):
    counts = {"n": 0, "t0": None}
    sub = subscribe(url, prefix, counts) if url else None
    time.sleep(0.5)
    counts["t0"] = time.monotonic()
    stats = asyncio.run(main(port, n, duration))
    if sub:
        time.sleep(2.5)  # the publisher runs about a second longer than the poller
        stats["mqtt_received"] = counts["n"]
        stats["mqtt_elapsed"] = time.monotonic() - counts["t0"]
        sub.loop_stop()
        sub.disconnect()
    print(json.dumps(stats))

run(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), *(sys.argv[4:6]))
"""


def free_base_port(n: int) -> int:
    for _ in range(200):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        try:
            socks = []
            for p in range(base, base + n):
                t = socket.socket()
                t.bind(("127.0.0.1", p))
                socks.append(t)
            for t in socks:
                t.close()
            return base
        except OSError:
            for t in socks:
                t.close()
    raise RuntimeError("no free ports")


def broker_urls() -> dict | None:
    """The embedded broker's accounts when it is running, else None (the MQTT leg is skipped)."""
    try:
        from foundation import config
        from sewerwatch import services
        st = services.status(config.load(), show_secrets=True)
    except Exception:  # no services package, not set up, or no config: Modbus only
        return None
    if not st.get("mosquitto", {}).get("running", not st.get("mosquitto", {}).get("embedded", True)):
        return None
    urls = st.get("mqtt_urls") or {}
    return urls if "device" in urls and "collector" in urls else None


async def run() -> dict:
    scn = scenarios.load("normal-day")
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    scn = scn.with_sites([f"{prefix}-{i}" for i in range(DEVICES)])
    nports = (DEVICES + MAX_UNITS_PER_PORT - 1) // MAX_UNITS_PER_PORT
    port = free_base_port(nports)
    source = ScenarioSource(scn, DEVICES)
    clock = SimClock(scn.start + 8 * 3600, 1.0)
    sim = ModbusSimulator(source, profiles.load("generic-manhole"), clock, "127.0.0.1", port, tick_s=1.0)
    await sim.start()
    urls = broker_urls()
    pub = None
    if urls:
        pub = MqttPublisher(source, clock, urls["device"], "single", 0, 1.0, "ms", client_prefix=prefix)
        await pub.start(timeout_s=60)
    sim.ticks, sim.update_seconds = 0, []
    extra = [urls["collector"], prefix] if urls else []
    poller = await asyncio.create_subprocess_exec(
        sys.executable, "-c", POLLER, str(port), str(DEVICES), str(DURATION_S - 1.0), *extra,
        stdout=asyncio.subprocess.PIPE, cwd=str(ROOT))
    await asyncio.sleep(0.6)  # the subscriber connects before counting starts
    t_reset = clock.now()
    if pub:
        pub.last_t = t_reset
        pub.messages = pub.readings = 0
    await asyncio.gather(sim.run(DURATION_S), *([pub.run(DURATION_S)] if pub else []))
    elapsed = int(DURATION_S // sim.tick_s) * sim.tick_s   # the span the due ticks cover
    out, _ = await poller.communicate()
    await sim.stop()
    if pub:
        await pub.stop(clear_retained=True)
    polled = json.loads(out.decode().strip().splitlines()[-1])
    ticks_expected = int(DURATION_S // sim.tick_s)
    upd = np.array(sim.update_seconds) * 1e3
    return {
        "achieved": sim.ticks * DEVICES / elapsed,
        "target": DEVICES / sim.tick_s,
        "ticks": sim.ticks,
        "ticks_expected": ticks_expected,
        "missed_ticks": sim.missed_ticks,
        "tick_ms_p50": float(np.percentile(upd, 50)),
        "tick_ms_p99": float(np.percentile(upd, 99)),
        "poll_reads_per_s": polled["reads"] / polled["elapsed"],
        "poll_fresh_fraction": polled["fresh"] / max(1, polled["reads"] - DEVICES),
        "poll_errors": polled["errors"],
        "server_requests": sim.requests,
        "mqtt_published_per_s": pub.messages / (pub.last_t - t_reset) if pub else None,  # over the span published
        "mqtt_target_per_s": DEVICES * len(pub.sensors) if pub else None,
        "mqtt_received": polled.get("mqtt_received") if pub else None,
        "mqtt_published": pub.messages if pub else None,
    }


def main() -> None:
    r = asyncio.run(run())
    print(f"devices {DEVICES} on {(DEVICES + 246) // 247} port(s), {DURATION_S:g} s, tick 1 s")
    print(f"  ticks {r['ticks']}/{r['ticks_expected']}, missed {r['missed_ticks']}, "
          f"tick compute p50 {r['tick_ms_p50']:.2f} ms, p99 {r['tick_ms_p99']:.2f} ms (all {DEVICES} devices)")
    print(f"  poller: {r['poll_reads_per_s']:.0f} reads/s, {100 * r['poll_fresh_fraction']:.1f} % fresh, "
          f"{r['poll_errors']} errors")
    if r["mqtt_published_per_s"] is not None:
        print(f"  mqtt (same process, one client per device): {r['mqtt_published_per_s']:.0f} messages/s published, "
              f"target {r['mqtt_target_per_s']}/s; a subscriber received {r['mqtt_received']} of {r['mqtt_published']}")
    else:
        print("  mqtt: skipped (no running embedded broker)")
    print(json.dumps({
        "benchmark": "simulators-modbus-500-devices-1hz" if not QUICK else "simulators-modbus-100-devices-1hz",
        "value": round(r["achieved"], 2), "unit": "device updates/s",
        "peer": f"target: {DEVICES} devices x 1 Hz", "peer_value": r["target"],
        "ratio": round(r["achieved"] / r["target"], 4),
        "devices": DEVICES, "missed_ticks": r["missed_ticks"],
        "tick_ms_p50": round(r["tick_ms_p50"], 3), "tick_ms_p99": round(r["tick_ms_p99"], 3),
        "encode_capacity_updates_per_s": round(DEVICES / (r["tick_ms_p99"] / 1e3)),
        "poll_reads_per_s": round(r["poll_reads_per_s"], 1),
        "poll_fresh_fraction": round(r["poll_fresh_fraction"], 4), "poll_errors": r["poll_errors"],
        "mqtt_published_per_s": None if r["mqtt_published_per_s"] is None else round(r["mqtt_published_per_s"], 1),
        "mqtt_delivered_fraction": None if not r["mqtt_published"] else round(r["mqtt_received"] / r["mqtt_published"], 4),
        "mqtt_target_per_s": r["mqtt_target_per_s"],
    }))


if __name__ == "__main__":
    main()
