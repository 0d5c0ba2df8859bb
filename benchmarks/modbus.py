"""Benchmark: Modbus devices polled at 1 Hz from one collector process, against a sequential poller.

Setup: the simulator (``python -m simulators.modbus_server``, normal-day scenario from
08:00, ``generic-manhole`` profile, 247 unit ids per port) serves N devices from several
processes (one per 1,500 devices, at most 6) on its lean wire (``--wire lean``: the same
answers as its pymodbus server at about a quarter of the CPU a request), so that the
simulator is never what runs out: the figures show the simulators' CPU beside the
collector's. Each simulated device answers after ``BENCH_LATENCY_MS`` (default 10 ms: a
Modbus TCP field device or a TCP-to-RTU gateway takes milliseconds to answer, a loopback
simulator none at all); the whole comparison also runs with 0 ms.

- sewerwatch: :class:`ingest.modbus.collector.ModbusCollector` polls N devices (one TCP
  connection each, staggered) at 1 Hz for ``DURATION_S`` once every device is up,
  decoding in batches and handing readings to a :class:`ingest.sink.Sink` drained by a
  thread. A run passes when fewer than 1 % of due polls are missed and no transport error
  occurred. N is raised step by step (1,000, 2,000, 4,000, 6,000, 8,000, 10,000;
  ``BENCH_QUICK=1``: 100) while runs pass; ``value`` is the largest N that passed: the
  collector's own ceiling on this machine.
- peer: a plain sequential synchronous loop (pymodbus ``ModbusTcpClient``, one connection
  per device, read the plan, decode the registers) polling devices back to back as fast
  as it can, against the same simulator; ``peer_value`` is the polls per second it
  completes = the number of devices it could poll at 1 Hz (an upper bound: it never
  waits and misses nothing by design).

``ratio`` = value / peer_value. The zero-latency figures are printed on the line before
and under ``"zero_latency"``.
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
STEPS = (100,) if QUICK else (1000, 2000, 4000, 6000, 8000, 10000)
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
    """A base of ``n`` consecutive free ports below the ephemeral range (thousands of client
    connections, and their TIME_WAIT, use ports from that range)."""
    import random

    for _ in range(200):
        base = random.randrange(12000, 32000 - n)
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
             "--profile", PROFILE, "--processes", str(self.processes), "--wire", "lean"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("simulating"):
            self.close()
            raise RuntimeError(f"simulator did not start: {line!r}")
        self._drain = threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True)
        self._drain.start()

    def cpu_seconds(self) -> float:
        """CPU time [s] used so far by the simulator processes (Linux ``/proc``)."""
        pids = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                pids.append(int(stat.parent.name))
        total = 0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])      # utime, stime [clock ticks]
        return total / os.sysconf("SC_CLK_TCK")

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
        # the first seconds open N connections; count from a clean slate once every device
        # is up (at most 15 s; a device still in backoff then counts its misses)
        await asyncio.sleep(2.0)
        for _ in range(130):
            if all(h.state == "up" for h in col.health().values()):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        base = {k: (h.polls, h.missed_polls, h.transport_errors) for k, h in col.health().items()}
        c0, t0, s0 = os.times(), time.monotonic(), server.cpu_seconds()
        await asyncio.sleep(duration_s)
        c1, t1, s1 = os.times(), time.monotonic(), server.cpu_seconds()
        got["server_cpu"] = (s1 - s0) / (t1 - t0)
        end = {k: (h.polls, h.missed_polls, h.transport_errors) for k, h in col.health().items()}
        col.stop()
        await task
        return base, end, ((c1.user - c0.user) / (t1 - t0), (c1.system - c0.system) / (t1 - t0)), t1 - t0

    base, end, (user, system), elapsed = asyncio.run(go())
    cpu = user + system
    sink.close()
    th.join()
    polls = sum(end[k][0] - base[k][0] for k in end)
    missed = sum(end[k][1] - base[k][1] for k in end)
    errors = sum(end[k][2] - base[k][2] for k in end)
    due = polls + missed
    return {"devices": n, "polls": polls, "missed": missed, "missed_fraction": missed / max(1, due),
            "transport_errors": errors, "polls_per_s": polls / elapsed, "cpu": cpu,
            "cpu_user": user, "cpu_system": system, "server_cpu": got["server_cpu"],
            "server_processes": server.processes,
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
              f"cpu {100 * r['cpu']:.0f} % of a core (simulators: {100 * r['server_cpu']:.0f} % in "
              f"{r['server_processes']} processes) -> {'pass' if r['passed'] else 'FAIL'}", flush=True)
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
    zl = None
    if zero is not None:
        zbest = next((r for r in zero["runs"] if r["devices"] == zero["value"]), zero["runs"][-1])
        zl = {"latency_ms": 0, "value": zero["value"], "peer_value": round(zero["peer_value"], 1),
              "ratio": round(zero["value"] / zero["peer_value"], 2),
              "collector_cpu": round(zbest["cpu"], 3), "simulator_cpu": round(zbest["server_cpu"], 3)}
        print(json.dumps(zl))
    best = next((r for r in main_run["runs"] if r["devices"] == main_run["value"]), main_run["runs"][-1])
    print(json.dumps({
        "benchmark": f"modbus-collector-1hz-{LATENCY_MS:g}ms" + ("-quick" if QUICK else ""),
        "value": main_run["value"], "unit": "devices polled at 1 Hz (missed < 1 %)",
        "peer": "sequential synchronous pymodbus loop", "peer_value": round(main_run["peer_value"], 1),
        "ratio": round(main_run["value"] / main_run["peer_value"], 2),
        "latency_ms": LATENCY_MS, "missed_fraction": round(best["missed_fraction"], 5),
        "collector_cpu": round(best["cpu"], 3), "simulator_cpu": round(best["server_cpu"], 3),
        "duration_s": DURATION_S, "zero_latency": zl,
    }))


if __name__ == "__main__":
    main()
