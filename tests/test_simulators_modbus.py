"""The Modbus TCP simulator on the wire, read by mbpoll (a Modbus client this project did not write).

Each shipped profile is served and read back with mbpoll; the values must be the ones the
scenario gives for that simulated instant (``simulators.generate`` at the same time), in
the profile's units and word order. Floats in ABCD and CDAB order are decoded by mbpoll
itself (``-B`` and its default word order); DCBA registers are read raw and decoded here
with ``struct``.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

import simulators
from ingest import profiles
from simulators import scenarios
from simulators.modbus_server import ModbusSimulator
from simulators.sources import ScenarioSource, SimClock

MBPOLL = "/usr/bin/mbpoll"
pytestmark = pytest.mark.skipif(not os.path.exists(MBPOLL), reason="mbpoll is not installed")


def free_ports(n: int = 1) -> int:
    """A base port with ``n`` consecutive free ports."""
    for _ in range(200):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        if base + n > 65535:
            continue
        ok = True
        for p in range(base + 1, base + n):
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                t.close()
        if ok:
            return base
    raise RuntimeError("no free ports")


def mbpoll(port: int, unit: int, ref: int, count: int, kind: str, *extra: str, timeout: float = 1.0) -> str:
    cmd = [MBPOLL, "-m", "tcp", "-a", str(unit), "-0", "-r", str(ref), "-c", str(count), "-t", kind,
           "-1", "-o", f"{timeout:g}", "-p", str(port), *extra, "127.0.0.1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def values(out: str) -> dict[int, str]:
    """``{reference: text}`` from mbpoll's ``[ref]: value`` lines."""
    return {int(m[1]): m[2].strip() for m in re.finditer(r"^\[(\d+)\]:\s+(\S+)", out, re.M)}


class Running:
    """A ModbusSimulator on its own event loop thread; the test sets the simulated time."""

    def __init__(self, scenario: str, profile: str, n: int, wire: str = "pymodbus"):
        self.scn = scenarios.load(scenario)
        self.port = free_ports((n + 246) // 247)
        self.sim = ModbusSimulator(ScenarioSource(self.scn, n), profiles.load(profile),
                                   SimClock(self.scn.start, 0.0), "127.0.0.1", self.port, wire=wire)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.sim.start(), self.loop).result(10)

    def at(self, offset_s: float) -> float:
        t = self.scn.start + offset_s
        self.loop.call_soon_threadsafe(self.sim.update, t)
        deadline = time.monotonic() + 5
        while self.sim.sim_time != t and time.monotonic() < deadline:
            time.sleep(0.01)
        return t

    def expected(self, t: float, n: int):
        return simulators.generate(self.scn, start=t, duration_s=1, step_s=1, devices=n)

    def close(self):
        asyncio.run_coroutine_threadsafe(self.sim.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def running():
    made = []

    def make(scenario, profile, n=3, wire="pymodbus"):
        r = Running(scenario, profile, n, wire)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def test_generic_manhole_abcd_read_by_mbpoll(running):
    r = running("acid-dump", "generic-manhole", 3)
    t = r.at(10 * 3600 + 45 * 60)           # inside the acid dump
    exp = r.expected(t, 3)
    for unit in (1, 2, 3):
        got = values(mbpoll(r.port, unit, 0, 3, "4:float", "-B"))
        assert sorted(got) == [0, 2, 4]
        i = unit - 1
        assert float(got[0]) == pytest.approx(exp.values["flow"][i, 0], rel=1e-5)
        assert float(got[2]) == pytest.approx(exp.values["ph"][i, 0], rel=1e-5)
        assert float(got[4]) == pytest.approx(exp.values["temperature"][i, 0], rel=1e-5)
        assert 3.4 < float(got[2]) < 3.6
        assert values(mbpoll(r.port, unit, 6, 1, "4"))[6] == "0"          # status: no faults
    # outside the dump the same devices read a normal pH
    r.at(8 * 3600)
    assert 6.0 < float(values(mbpoll(r.port, 1, 2, 1, "4:float", "-B"))[2]) < 9.0


def test_swapped_float_cdab_input_registers_read_by_mbpoll(running):
    r = running("hot-discharge", "swapped-float", 2)
    t = r.at(9 * 3600 + 25 * 60)            # inside the hot discharge
    exp = r.expected(t, 2)
    got = values(mbpoll(r.port, 2, 0, 4, "3:float"))  # mbpoll's default word order is CDAB
    assert sorted(got) == [0, 2, 4, 6]
    assert float(got[0]) == pytest.approx(exp.values["flow"][1, 0], rel=1e-5)
    assert float(got[2]) == pytest.approx(exp.values["level"][1, 0] * 12.0, rel=1e-5)    # inches
    assert float(got[4]) == pytest.approx(exp.values["ph"][1, 0], rel=1e-5)
    deg_c = (exp.values["temperature"][1, 0] - 32.0) * 5.0 / 9.0
    assert float(got[6]) == pytest.approx(deg_c, rel=1e-5) and float(got[6]) > 76.0      # 170 degF
    # the holding table is not served by this profile: a real exception reply
    assert "Illegal data address" in mbpoll(r.port, 2, 0, 2, "4")


def test_little_endian_float_dcba_raw_registers(running):
    r = running("caustic", "little-endian-float", 2)
    t = r.at(14 * 3600 + 20 * 60)           # inside the caustic discharge
    exp = r.expected(t, 2)
    got = values(mbpoll(r.port, 1, 100, 6, "4:hex"))
    regs = [int(got[100 + k], 16) for k in range(6)]

    def dcba(lo, hi):   # wire [DC] [BA] -> big-endian bytes A B C D
        d, c, b, a = struct.pack(">HH", lo, hi)
        return struct.unpack(">f", bytes([a, b, c, d]))[0]

    assert dcba(regs[0], regs[1]) == pytest.approx(exp.values["flow"][0, 0], rel=1e-6)
    assert dcba(regs[2], regs[3]) == pytest.approx(exp.values["ph"][0, 0], rel=1e-6)
    assert dcba(regs[4], regs[5]) == pytest.approx(exp.values["temperature"][0, 0], rel=1e-6)
    assert 10.8 < dcba(regs[2], regs[3]) < 11.2


def test_scaled_int16_read_by_mbpoll(running):
    r = running("normal-day", "scaled-int16", 2)
    t = r.at(13 * 3600)
    exp = r.expected(t, 2)
    got = values(mbpoll(r.port, 1, 0, 4, "4"))
    raw = {k: int(v) for k, v in got.items()}
    assert raw[0] / 10 == pytest.approx(exp.values["flow"][0, 0], abs=0.051)
    assert raw[1] / 100 == pytest.approx(exp.values["ph"][0, 0], abs=0.0051)
    assert raw[2] / 10 == pytest.approx(exp.values["temperature"][0, 0], abs=0.051)
    assert raw[3] == 0
    # int32 CDAB level [0.001 ft]: mbpoll's 32-bit int without -B is CDAB
    lvl = values(mbpoll(r.port, 1, 4, 1, "4:int"))
    assert int(lvl[4]) / 1000 == pytest.approx(exp.values["level"][0, 0], abs=0.00051)


def test_faults_on_the_wire(running):
    r = running("sensor-faults", "generic-manhole", 2)
    r.at(13 * 3600 + 5 * 60)                # modbus_error device_busy
    assert "busy" in mbpoll(r.port, 1, 0, 2, "4:float", "-B").lower()
    r.at(13 * 3600 + 35 * 60)               # modbus_error illegal_address
    assert "Illegal data address" in mbpoll(r.port, 1, 0, 2, "4:float", "-B")
    r.at(11 * 3600 + 5 * 60)                # comms loss: no reply at all
    t0 = time.monotonic()
    out = mbpoll(r.port, 1, 0, 2, "4:float", "-B", timeout=0.5)
    assert "timed out" in out.lower() and not values(out) and time.monotonic() - t0 >= 0.5
    r.at(9 * 3600 + 10 * 60)                # pH dropout: NaN and status bit 1
    got = values(mbpoll(r.port, 2, 0, 3, "4:float", "-B"))
    assert got[2].lower() == "nan" and float(got[0]) > 0 and float(got[4]) > 0
    assert values(mbpoll(r.port, 2, 6, 1, "4"))[6] == "2"
    r.at(16 * 3600)                         # after the faults: normal again
    got = values(mbpoll(r.port, 1, 0, 3, "4:float", "-B"))
    assert 6 < float(got[2]) < 9
    # an unused unit id: gateway target failed to respond; writes are refused
    assert "failed to respond" in mbpoll(r.port, 9, 0, 2, "4").lower()
    out = subprocess.run([MBPOLL, "-m", "tcp", "-a", "1", "-0", "-r", "0", "-t", "4", "-1", "-p", str(r.port),
                          "127.0.0.1", "5"], capture_output=True, text=True, timeout=30)
    assert "Illegal data address" in out.stdout + out.stderr


def test_more_than_247_devices_use_the_next_port(running):
    n = 260
    r = running("normal-day", "generic-manhole", n)
    t = r.at(6 * 3600)
    exp = r.expected(t, n)
    # device 259 (0-based) is unit 13 on the second port
    got = values(mbpoll(r.port + 1, 13, 0, 3, "4:float", "-B"))
    assert float(got[2]) == pytest.approx(exp.values["ph"][259, 0], rel=1e-5)
    got = values(mbpoll(r.port, 247, 0, 3, "4:float", "-B"))
    assert float(got[0]) == pytest.approx(exp.values["flow"][246, 0], rel=1e-5)
    assert "failed to respond" in mbpoll(r.port + 1, 14, 0, 2, "4").lower()


def test_runs_alone_and_advances_with_speed(tmp_path):
    port = free_ports()
    proc = subprocess.Popen([sys.executable, "-m", "simulators.modbus_server", "--scenario", "acid-dump",
                             "--devices", "2", "--offset", "10:29:00", "--speed", "60", "--duration", "30",
                             "--modbus-port", str(port), "--tick", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("simulating 2 device(s): acid-dump, speed 60x")
        line = proc.stdout.readline()
        assert f"modbus: tcp://127.0.0.1:{port} unit ids 1-2 profile generic-manhole" in line
        first = float(values(mbpoll(port, 1, 2, 1, "4:float", "-B"))[2])
        assert first > 6.0                  # 10:29, before the dump
        time.sleep(3.0)                     # 3 s x 60 = 3 simulated minutes: past 10:31
        later = float(values(mbpoll(port, 1, 2, 1, "4:float", "-B"))[2])
        assert 3.4 < later < 3.6
    finally:
        proc.terminate()
        proc.wait(10)


def test_several_processes_serve_the_same_devices_and_latency_delays_each_answer():
    """``--processes 3``: 600 devices from three processes, whole ports each; device i shows
    what one process would show (the scenario's values for device i); ``--latency-ms``."""
    from simulators.modbus_server import process_slices

    assert process_slices(600, 3) == [(0, 247), (247, 247), (494, 106)]
    assert process_slices(100, 4) == [(0, 100)]
    n, port = 600, free_ports(3)
    scn = scenarios.load("normal-day")
    proc = subprocess.Popen([sys.executable, "-m", "simulators.modbus_server", "--devices", str(n), "--processes", "3",
                             "--speed", "0", "--offset", "06:00", "--start", "scenario", "--modbus-port", str(port),
                             "--latency-ms", "150"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "simulating 600 device(s) in 3 process(es)"
        exp = simulators.generate(scn, start=scn.start + 6 * 3600, duration_s=1, step_s=1, devices=n)
        for i in (0, 246, 247, 500, 599):
            t0 = time.monotonic()
            got = values(mbpoll(port + i // 247, 1 + i % 247, 0, 3, "4:float", "-B"))
            assert time.monotonic() - t0 > 0.15            # the device's answer waited 150 ms
            assert float(got[2]) == pytest.approx(exp.values["ph"][i, 0], rel=1e-5), i
            assert float(got[0]) == pytest.approx(exp.values["flow"][i, 0], rel=1e-5), i
        assert "failed to respond" in mbpoll(port + 2, 107, 0, 2, "4").lower()
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode is not None


def _ask(port: int, frames: list[bytes]) -> list[bytes | None]:
    """Each frame on one connection; the reply's bytes, or None after 0.3 s of silence."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        for f in frames:
            sock.sendall(f)
            sock.settimeout(0.3)
            try:
                head = sock.recv(6)
                rest = b""
                need = int.from_bytes(head[4:6], "big")
                while len(rest) < need:
                    rest += sock.recv(need - len(rest))
                out.append(head + rest)
            except socket.timeout:
                out.append(None)
                return out + [None] * (len(frames) - len(out))   # a silent device: the stream is done
    return out


@pytest.mark.parametrize("offset_s", [6 * 3600, 9 * 3600 + 600, 11 * 3600 + 300, 13 * 3600 + 300, 13 * 3600 + 2100])
def test_lean_wire_answers_as_the_pymodbus_server(running, offset_s):
    """The lean wire (benchmarks) gives the pymodbus server's bytes for reads, exceptions,
    writes and absent units, over the sensor-faults scenario (Modbus exceptions 06 and 02,
    dropouts, comms loss)."""
    def req(tid, unit, fc, addr, count):
        return struct.pack(">HHHBBHH", tid, 0, 6, unit, fc, addr, count)

    frames = [req(1, 1, 3, 0, 7), req(2, 2, 3, 2, 2), req(3, 3, 3, 6, 1), req(4, 1, 4, 0, 2),
              req(5, 1, 3, 6, 2), req(6, 2, 6, 0, 1), req(7, 9, 3, 0, 2)]
    got = {}
    for wire in ("pymodbus", "lean"):
        r = running("sensor-faults", "generic-manhole", 4, wire)
        r.at(offset_s)
        got[wire] = [_ask(r.port, [f])[0] for f in frames]
        for unit in (1, 2, 3, 4):
            got[wire].append(_ask(r.port, [req(50 + unit, unit, 3, 0, 7)])[0])
    assert got["lean"] == got["pymodbus"]
    if offset_s == 6 * 3600:                                # a normal hour: full rows read
        assert got["lean"][0][7] == 3 and got["lean"][0][8] == 14
    # 126 registers: the lean wire answers exception 03 (illegal data value, Application
    # Protocol V1.1b3 §6.3: quantity 1 to 125); pymodbus 3.16 answers function 0x80 code 01
    assert _ask(r.port, [req(8, 4, 3, 0, 126)])[0] in (None, b"\x00\x08\x00\x00\x00\x03\x04\x83\x03")
