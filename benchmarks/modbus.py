"""Benchmark: Modbus devices polled at 1 Hz from one process, against a sequential poller.

Setup: the simulator (``simulators.modbus_server.ModbusSimulator``, normal-day scenario,
``generic-manhole`` profile, 247 unit ids per port) serves N devices in a separate process
(its own core and GIL). Each simulated device answers after a response time of
``BENCH_LATENCY_MS`` (default 10 ms: a Modbus TCP field device or a TCP-to-RTU gateway
takes milliseconds to answer, a loopback simulator none at all); the same server also runs
with 0 ms for a second comparison.

- sewerwatch: :class:`ingest.modbus.collector.ModbusCollector` polls N devices (one TCP
  connection each, staggered) at 1 Hz for ``DURATION_S``, decoding in batches and handing
  readings to a :class:`ingest.sink.Sink` drained by a thread. A run passes when fewer than
  1 % of due polls are missed and no transport error occurred. N is raised step by step
  (1,000, 2,000, 3,000, 4,000, 6,000; ``BENCH_QUICK=1``: 100) while runs pass; ``value`` is the largest N
  that passed.
- peer: a plain sequential synchronous loop (pymodbus ``ModbusTcpClient``, one connection
  per device, read the plan, decode the registers) polling devices back to back as fast
  as it can; ``peer_value`` is the polls per second it completes = the number of devices
  it could poll at 1 Hz (an upper bound: it never waits and misses nothing by design).

``ratio`` = value / peer_value. The zero-latency figures are printed on the line before.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

QUICK = os.environ.get("BENCH_QUICK") == "1"
LATENCY_MS = float(os.environ.get("BENCH_LATENCY_MS", "10"))
STEPS = (100,) if QUICK else (1000, 2000, 3000, 4000, 6000)
DURATION_S = 5.0 if QUICK else 20.0
PEER_S = 3.0 if QUICK else 8.0
PROFILE = "generic-manhole"


# --- the simulators: several processes, so that the server is never the limit ----------

def simulator_processes(n: int) -> int:
    """Simulator processes for ``n`` devices: one pymodbus server answers about 9,500 reads a
    second on a core of its own, so one per 1,500 devices (at most 6): the collector must
    be what runs out first, not the simulator."""
    return max(1, min(6, -(-n // 1500)))


def free_base_port(n: int) -> int:
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        socks = []
        try:
            for p in range(base, base + n):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no free ports")


class Server:
    """``python -m simulators.modbus_server`` serving N devices from several processes
    (normal-day scenario from 08:00, ``generic-manhole`` profile), each device answering
    after ``latency_ms``."""

    def __init__(self, n: int, latency_ms: float, duration_s: float, processes: int | None = None):
        from simulators.modbus_server import MAX_UNITS_PER_PORT

        self.n = n
        self.processes = processes or simulator_processes(n)
        self.port = free_base_port((n + MAX_UNITS_PER_PORT - 1) // MAX_UNITS_PER_PORT)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simulators.modbus_server", "--devices", str(n), "--modbus-port", str(self.port),
             "--latency-ms", str(latency_ms), "--duration", str(duration_s), "--offset", "08:00",
             "--profile", PROFILE, "--processes", str(self.processes)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("simulating"):
            self.close()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self._drain = threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True)
        self._drain.start()

    def devices(self, n: int | None = None):
        from foundation.config import Device
        from simulators.modbus_server import device_address

        out = []
        for i in range(self.n if n is None else n):
            port, unit = device_address(i, self.port)
            out.append(Device(f"dev{i}", "bench", "127.0.0.1", port, unit, PROFILE, 1.0))
        return out

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- sewerwatch: the async collector ------------------------------------------------------

def run_collector(server: Server, n: int, duration_s: float) -> dict:
    from ingest import profiles
    from ingest.modbus.collector import ModbusCollector, Options
    from ingest.sink import Sink

    devs = server.devices(n)
    fields = profiles.load(PROFILE).fields
    smap = {(d.id, f.name): 10 * i + j for i, d in enumerate(devs) for j, f in enumerate(fields)}
    sink = Sink()
    got = {"readings": 0, "puts": 0}

    def drain():
        while (chunk := sink.take(max_delay=0.5)) is not None:
            got["readings"] += len(chunk.readings)

    th = threading.Thread(target=drain, daemon=True)
    th.start()
    col = ModbusCollector(devs, smap, sink, Options(timeout_s=2.0))

    async def go():
        task = asyncio.create_task(col.run())
        # the first seconds open N connections; count from a clean slate after them
        await asyncio.sleep(2.0)
        base = {k: (h.polls, h.missed_polls, h.transport_errors) for k, h in col.health().items()}
        cpu0, t0 = time.process_time(), time.monotonic()
        await asyncio.sleep(duration_s)
        cpu1, t1 = time.process_time(), time.monotonic()
        end = {k: (h.polls, h.missed_polls, h.transport_errors) for k, h in col.health().items()}
        col.stop()
        await task
        return base, end, (cpu1 - cpu0) / (t1 - t0), t1 - t0

    base, end, cpu, elapsed = asyncio.run(go())
    sink.close()
    th.join()
    polls = sum(end[k][0] - base[k][0] for k in end)
    missed = sum(end[k][1] - base[k][1] for k in end)
    errors = sum(end[k][2] for k in end)
    due = polls + missed
    return {"devices": n, "polls": polls, "missed": missed, "missed_fraction": missed / max(1, due),
            "transport_errors": errors, "polls_per_s": polls / elapsed, "cpu": cpu,
            "readings": got["readings"], "passed": due > 0 and missed / due < 0.01 and errors == 0}


# --- the peer: a plain sequential synchronous loop ----------------------------------------

def run_sequential(server: Server, n: int, duration_s: float) -> dict:
    import numpy as np
    from pymodbus.client import ModbusTcpClient

    from ingest import profiles
    from ingest.modbus.plan import plan

    prof = profiles.load(PROFILE)
    reqs = plan(prof)
    devs = server.devices(n)
    clients = []
    for d in devs:
        c = ModbusTcpClient(d.host, port=d.port, timeout=2.0, retries=0)
        c.connect()
        clients.append(c)
    polls = errors = 0
    values = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < duration_s:
        for d, c in zip(devs, clients):
            row = [0] * prof.span("holding")[1]
            ok = True
            for r in reqs:
                rr = c.read_holding_registers(r.address, count=r.count, device_id=d.unit_id)
                if rr.isError():
                    ok = False
                    break
                row[r.offset:r.offset + r.count] = rr.registers
            if ok:
                vals, _status = prof.decode_tables({"holding": np.array([row])})
                values.append(vals["ph"][0])
                polls += 1
            else:
                errors += 1
            if time.monotonic() - t0 >= duration_s:
                break
    elapsed = time.monotonic() - t0
    for c in clients:
        c.close()
    return {"devices": n, "polls": polls, "errors": errors, "polls_per_s": polls / elapsed}


def compare(latency_ms: float) -> dict:
    results = []
    for n in STEPS:
        server = Server(n, latency_ms, DURATION_S + 30)
        try:
            r = run_collector(server, n, DURATION_S)
        finally:
            server.close()
        results.append(r)
        print(f"  [{latency_ms:g} ms] collector {n} devices: {r['polls_per_s']:.0f} polls/s, missed "
              f"{100 * r['missed_fraction']:.2f} %, transport errors {r['transport_errors']}, "
              f"cpu {100 * r['cpu']:.0f} % of a core -> {'pass' if r['passed'] else 'FAIL'}", flush=True)
        if not r["passed"]:
            break
    # the sequential loop never gets through more devices than it can poll in the time
    m = min(STEPS[0], 300)
    server = Server(m, latency_ms, PEER_S + 30)
    try:
        peer = run_sequential(server, m, PEER_S)
    finally:
        server.close()
    print(f"  [{latency_ms:g} ms] sequential loop: {peer['polls_per_s']:.0f} polls/s over {m} devices "
          f"({peer['errors']} errors)", flush=True)
    passed = [r["devices"] for r in results if r["passed"]]
    value = max(passed) if passed else 0
    return {"value": value, "peer_value": peer["polls_per_s"], "runs": results, "peer": peer}


def main() -> None:
    import logging
    logging.getLogger("pymodbus").setLevel(logging.CRITICAL)
    print(f"Modbus polling at 1 Hz, profile {PROFILE}, {DURATION_S:g} s per run", flush=True)
    zero = compare(0.0) if LATENCY_MS != 0 else None
    main_run = compare(LATENCY_MS)
    if zero is not None:
        print(json.dumps({"latency_ms": 0, "value": zero["value"], "peer_value": round(zero["peer_value"], 1),
                          "ratio": round(zero["value"] / zero["peer_value"], 2)}))
    best = next((r for r in main_run["runs"] if r["devices"] == main_run["value"]), main_run["runs"][-1])
    print(json.dumps({
        "benchmark": f"modbus-collector-1hz-{LATENCY_MS:g}ms" + ("-quick" if QUICK else ""),
        "value": main_run["value"], "unit": "devices polled at 1 Hz (missed < 1 %)",
        "peer": "sequential synchronous pymodbus loop", "peer_value": round(main_run["peer_value"], 1),
        "ratio": round(main_run["value"] / main_run["peer_value"], 2),
        "latency_ms": LATENCY_MS, "missed_fraction": round(best["missed_fraction"], 5),
        "collector_cpu": round(best["cpu"], 3), "duration_s": DURATION_S,
    }))


if __name__ == "__main__":
    main()
