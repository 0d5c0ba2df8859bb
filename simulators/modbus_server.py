"""Modbus TCP simulator: many control-manhole devices in one process, one asyncio loop.

Device ``i`` (0-based) answers on port ``port + i // 247`` as unit id ``1 + i % 247``
(unit ids 1..247 are the addressable devices, Modbus over Serial Line V1.02 §2.2; a
Modbus TCP server behind one port is addressed the same way). Its registers follow a
device profile (``ingest/profiles/<name>.toml``).

Once per tick (default 1 s real time) the simulator samples its source for *all*
devices at the current simulated time and encodes every register of every device in one
numpy batch (:meth:`ingest.profiles.Profile.encode_tables`); a read request copies the
device's row. Scenario faults show on the wire: a ``modbus_error`` event answers with a
real exception response (e.g. 06 device busy, 02 illegal data address), ``comms_loss``
leaves requests unanswered, ``dropout`` sends NaN (or the field's ``invalid`` raw value)
and sets the sensor's status bit. Requests to a unit id that hosts no device get
exception 0B (gateway target device failed to respond). Registers are read-only: writes
get exception 02.

Run alone::

    python -m simulators.modbus_server --scenario acid-dump --devices 10 --port 15020
    python -m simulators.modbus_server --devices 6000 --processes 4 --latency-ms 10

``--wire lean`` answers on asyncio's own TCP server (read functions 03 and 04, the same
answers, exceptions and silences as the pymodbus server, checked against it by
``tests/test_simulators_modbus.py``) at a fraction of pymodbus's CPU a request, so that a
collector benchmark on a small machine measures the collector. ``--latency-ms`` makes every device answer after that long (a field device or a TCP-to-RTU
gateway takes milliseconds; a loopback simulator none). ``--processes N`` serves the
devices from N processes, each a slice of whole ports (its own core and GIL): one
pymodbus server answers about 9,500 reads a second, so a benchmark of a collector polling
thousands of devices needs several, or it measures the simulator.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import datetime as dt
import functools
import logging
import signal
import struct
import subprocess
import sys
import threading
import time

import numpy as np
from pymodbus.constants import ExcCodes
from pymodbus.exceptions import NoSuchIdException
from pymodbus.server import ModbusTcpServer
from pymodbus.simulator import DataType, SimData, SimDevice

from foundation.errors import InputError, ServiceError, SewerwatchError, report
from foundation.units import from_canonical
from ingest import profiles
from ingest.modbus.link import split_frames
from ingest.profiles import Profile
from simulators import scenarios
from simulators.options import DEFAULT_MODBUS_PORT as DEFAULT_PORT
from simulators.options import add_source_arguments, parse_offset, parse_start
from simulators.sources import NAN_VARIANT, ReplaySource, ScenarioSource, SimClock

#: highest unit id of a device (Modbus over Serial Line V1.02 §2.2: 1..247 individual addresses)
MAX_UNITS_PER_PORT = 247
_HOLDING_FCS = frozenset((3, 6, 16, 22, 23))


def device_address(i: int, port: int) -> tuple[int, int]:
    """``(port, unit id)`` of device ``i`` (0-based)."""
    return port + i // MAX_UNITS_PER_PORT, 1 + i % MAX_UNITS_PER_PORT


class ModbusSimulator:
    """Serve a source's devices over Modbus TCP with one profile.

    Parameters
    ----------
    source : ScenarioSource or ReplaySource
    profile : ingest.profiles.Profile
    clock : SimClock
    host : str
    port : int
        First TCP port; more devices than 247 use the following ports.
    tick_s : float
        Real seconds between register updates.
    latency_s : float
        Each device answers this long after a request [s].
    wire : {'pymodbus', 'lean'}
        The TCP server: pymodbus's (every function) or :class:`_LeanWire` (reads only, a
        fraction of the CPU; see the module doc).
    """

    def __init__(self, source, profile: Profile, clock: SimClock, host: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, tick_s: float = 1.0, latency_s: float = 0.0, wire: str = "pymodbus"):
        self.source, self.profile, self.clock = source, profile, clock
        self.host, self.port, self.tick_s = host, int(port), float(tick_s)
        self.latency_s = float(latency_s)
        if wire not in ("pymodbus", "lean"):
            raise InputError(f"--wire: expected pymodbus or lean, got {wire!r}")
        self.wire = wire
        self.raw: dict = {}                 # table -> big-endian register bytes of every device (lean)
        self.n = source.n_devices
        self.spans = {t: profile.span(t) for t in profile.tables()}
        self.blocks = {t: np.zeros((self.n, c), dtype=np.uint16) for t, (_, c) in self.spans.items()}
        self.rows: dict = {t: [[0] * c for _ in range(self.n)] for t, (_, c) in self.spans.items()}
        self.silent = np.zeros(self.n, dtype=bool)
        self.error = np.zeros(self.n, dtype=np.uint8)
        self.servers: list = []
        self.ticks = 0
        self.missed_ticks = 0
        self.update_seconds: list[float] = []
        self.sim_time = float("nan")
        self.requests = 0

    # --- one tick: every device in one batch -------------------------------------------
    def update(self, t_sim: float | None = None) -> None:
        """Sample the source at ``t_sim`` (default: now) and re-encode every device's registers."""
        t0 = time.perf_counter()
        t = self.clock.now() if t_sim is None else float(t_sim)
        snap = self.source.sample(t)
        values, faults = {}, {}
        sensors = list(snap.values)
        for f in self.profile.fields:
            if f.name not in snap.values and f.parameter not in snap.values:
                continue
            key = f.name if f.name in snap.values else f.parameter
            v = from_canonical(f.parameter, f.unit, snap.values[key])
            j = sensors.index(key)
            bad = snap.payload[:, j] == NAN_VARIANT
            values[f.name] = np.where(bad, np.nan, v)
            faults[f.name] = snap.faults[key]
        status = self.profile.fault_word(faults) if self.profile.status else None
        if status is not None and snap.maintenance is not None and snap.maintenance.any():
            status = status | self.profile.maintenance_word(snap.maintenance)     # the maintenance bit
        blocks = self.profile.encode_tables(values, status if status is not None and status.size else None, n=self.n)
        # Python lists the request path hands out; tolist() of the whole block is one C call
        for table, b in blocks.items():
            self.blocks[table] = b
            if self.wire == "lean":
                self.raw[table] = b.astype(">u2").tobytes()
            else:
                self.rows[table] = b.tolist()
        self.silent = snap.silent.copy()
        self.error = snap.modbus_error.copy()
        self.sim_time = t
        self.ticks += 1
        self.update_seconds.append(time.perf_counter() - t0)

    # --- request path ------------------------------------------------------------------
    async def _action(self, function_code, start_address, address, count, registers, set_values, *, device):

        self.requests += 1
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if self.silent[device]:
            raise NoSuchIdException(f"device {device} is silent (comms loss)")  # no reply at all
        code = int(self.error[device])
        if code:
            return ExcCodes(code)
        if set_values is not None:
            return ExcCodes.ILLEGAL_ADDRESS
        table = "holding" if function_code in _HOLDING_FCS else "input"
        row = self.rows.get(table)
        if row is None:
            return ExcCodes.ILLEGAL_ADDRESS
        registers[: len(row[device])] = row[device]
        return None

    async def _no_device(self, *args, **kwargs):
        return ExcCodes.GATEWAY_NO_RESPONSE

    def _simdevice(self, unit: int, device: int | None):

        def table(name):
            if name not in self.spans:
                return [SimData(0, count=1, values=0, datatype=DataType.INVALID)]
            start, count = self.spans[name]
            return [SimData(start, count=count, values=0, datatype=DataType.REGISTERS)]

        bits = [SimData(0, count=1, values=False, datatype=DataType.BITS)]
        action = self._no_device if device is None else functools.partial(self._action, device=device)
        return SimDevice(id=unit, simdata=(list(bits), list(bits), table("holding"), table("input")),
                         action=action)

    def endpoints(self) -> list[tuple[str, int, int, int]]:
        """``(host, port, first unit id, last unit id)`` per TCP server."""
        out = []
        for k in range((self.n + MAX_UNITS_PER_PORT - 1) // MAX_UNITS_PER_PORT):
            units = min(MAX_UNITS_PER_PORT, self.n - k * MAX_UNITS_PER_PORT)
            out.append((self.host, self.port + k, 1, units))
        return out

    async def start(self) -> None:
        """Encode the first tick and start listening on every port."""

        self.update()
        for host, port, _, units in self.endpoints():
            base = (port - self.port) * MAX_UNITS_PER_PORT
            if self.wire == "lean":
                try:
                    server = await asyncio.get_running_loop().create_server(
                        functools.partial(_LeanWire, self, base, units), host, port, backlog=4096)
                except OSError as exc:
                    await self.stop()
                    raise ServiceError(f"cannot serve Modbus TCP on {host}:{port} ({exc}); "
                                       "is the port in use? choose another with --modbus-port") from None
                self.servers.append(server)
                continue
            devices = [self._simdevice(0, None)] + [self._simdevice(u + 1, base + u) for u in range(units)]
            server = ModbusTcpServer(devices, address=(host, port), ignore_missing_devices=True)
            try:
                await server.serve_forever(background=True)
            except (RuntimeError, OSError) as exc:
                await self.stop()
                raise ServiceError(f"cannot serve Modbus TCP on {host}:{port} ({exc}); "
                                   "is the port in use? choose another with --modbus-port") from None
            self.servers.append(server)

    async def run(self, duration_s: float | None = None) -> None:
        """Update at every ``tick_s`` for ``duration_s`` real seconds (None: forever).

        Tick ``k`` is due at ``k * tick_s`` after the call; one that cannot start within
        half a tick of its due time counts as missed and is skipped, so the schedule never
        drifts. The ticks due are ``floor(duration_s / tick_s)``.
        """
        loop = asyncio.get_running_loop()
        t_start = loop.time()
        k = 0
        while duration_s is None or (k + 1) * self.tick_s <= duration_s + 1e-9:
            k += 1
            due = t_start + k * self.tick_s
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if loop.time() - due > self.tick_s / 2:
                self.missed_ticks += 1
                continue
            self.update()
        if duration_s is not None:
            await asyncio.sleep(max(0.0, t_start + duration_s - loop.time()))

    async def stop(self) -> None:
        for s in self.servers:
            if isinstance(s, asyncio.AbstractServer):
                s.close()
                await s.wait_closed()
            else:
                await s.shutdown()
        self.servers = []

    def answer(self, base: int, units: int, frame: bytes) -> bytes | None:
        """The reply of the lean wire to one request frame (None: stay silent), as the
        pymodbus server with :meth:`_action` answers it (see :class:`_LeanWire`)."""
        tid, proto, _, unit, fc = _MBAP.unpack_from(frame)
        if proto != 0:
            return None
        if not 1 <= unit <= units:
            return _exception(tid, unit, fc, ExcCodes.GATEWAY_NO_RESPONSE)
        table = {3: "holding", 4: "input"}.get(fc) or ("holding" if fc in (6, 16) else None)
        if table is None:
            return _exception(tid, unit, fc, 1)   # the lean wire serves registers only
        if len(frame) < 12:
            return _exception(tid, unit, fc, 3)
        address, count = struct.unpack_from(">HH", frame, 8)
        if fc == 6:
            count = 1
        elif not 1 <= count <= 125:                           # Application Protocol V1.1b3 §6.3
            return _exception(tid, unit, fc, 3)
        # as pymodbus: the address range first, then the device (silence, its exception)
        span = self.spans.get(table)
        if span is None or address < span[0] or address + count > span[0] + span[1]:
            return _exception(tid, unit, fc, ExcCodes.ILLEGAL_ADDRESS)
        device = base + unit - 1
        self.requests += 1
        if self.silent[device]:
            return None                                       # comms loss: no reply at all
        code = int(self.error[device])
        if code:
            return _exception(tid, unit, fc, code)
        if fc in (6, 16):
            return _exception(tid, unit, fc, ExcCodes.ILLEGAL_ADDRESS)   # registers are read-only
        width = 2 * span[1]
        lo = device * width + 2 * (address - span[0])
        return _MBAP.pack(tid, 0, 3 + 2 * count, unit, fc) + bytes((2 * count,)) + self.raw[table][lo:lo + 2 * count]


_MBAP = struct.Struct(">HHHBB")   # transaction id, protocol id, length, unit id, function (MBAP, Messaging on TCP/IP V1.0b §3.1.3)


def _exception(tid: int, unit: int, fc: int, code) -> bytes:
    """An exception reply: function + 0x80 and the code (Application Protocol V1.1b3 §7)."""
    return _MBAP.pack(tid, 0, 3, unit, (fc & 0x7F) | 0x80) + bytes((int(code),))


class _LeanWire(asyncio.Protocol):
    """One client connection of the lean wire: request frames in, replies out (after the
    simulator's latency). Answers come from :meth:`ModbusSimulator.answer`."""

    def __init__(self, sim: ModbusSimulator, base: int, units: int):
        self.sim, self.base, self.units = sim, base, units
        self.transport = None
        self.buf = b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        frames, self.buf = split_frames(self.buf + data if self.buf else data)
        for frame in frames:
            reply = self.sim.answer(self.base, self.units, frame)
            if reply is None:
                continue
            if self.sim.latency_s > 0:
                asyncio.get_running_loop().call_later(self.sim.latency_s, self._send, reply)
            else:
                self.transport.write(reply)

    def _send(self, reply: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(reply)


# --- running alone ---------------------------------------------------------------------


def build_source(args):
    """The source an argument set names (a scenario or a replay) and its clock."""

    if args.replay:
        source = ReplaySource(args.replay)
    else:
        scn = scenarios.load(args.scenario).with_seed(args.seed)
        if getattr(args, "sites", None):
            scn = scn.with_sites(args.sites.split(","))
        source = ScenarioSource(scn, args.devices, getattr(args, "first_device", 0))
    if args.devices < 1:
        raise InputError(f"--devices: expected at least 1, got {args.devices}")
    if args.duration is not None and args.duration < 0:
        raise InputError(f"--duration: expected 0 or more seconds, got {args.duration:g}")
    if not args.tick > 0:
        raise InputError(f"--tick: expected a positive number of seconds, got {args.tick:g}")
    if args.replay and (args.sites or args.devices != 1):
        raise InputError("--replay takes its devices and sites from the CSV; drop --devices/--sites")
    offset = parse_offset(args.offset, source.duration_s)
    if not args.replay:
        start = parse_start(getattr(args, "start", "scenario"), scn.start, offset)
        if start != scn.start:
            source = ScenarioSource(scn.with_start(start), args.devices, getattr(args, "first_device", 0))
    clock = SimClock(source.start, args.speed, offset)
    return source, clock


def quiet_pymodbus() -> None:
    """Command-line runs report problems as one line; pymodbus's own log would repeat them."""
    logging.getLogger("pymodbus.logging").setLevel(logging.CRITICAL)


def run_duration(args, source) -> float | None:
    """Real seconds to run: ``--duration``, else the rest of the scenario at ``--speed``."""
    if args.duration is not None:
        return args.duration
    if args.speed == 0:
        return None
    return max(0.0, (source.duration_s - parse_offset(args.offset)) / args.speed)


def describe(sim: ModbusSimulator) -> list[str]:
    lines = []
    for host, port, first, last in sim.endpoints():
        lines.append(f"modbus: tcp://{host}:{port} unit ids {first}-{last} profile {sim.profile.name} "
                     f"({', '.join(f'{f.name} {f.register} {f.address} {f.type} {f.word_order} [{f.unit}]' for f in sim.profile.fields)})")
    return lines


async def serve(args) -> int:

    quiet_pymodbus()
    source, clock = build_source(args)
    profile = profiles.load(args.profile)
    sim = ModbusSimulator(source, profile, clock, args.host, args.modbus_port, args.tick, args.latency_ms / 1e3,
                          wire=args.wire)
    await sim.start()
    print(f"simulating {source.n_devices} device(s): {source.name}, speed {args.speed:g}x", flush=True)
    for line in describe(sim):
        print(line, flush=True)
    try:
        await sim.run(run_duration(args, source))
    finally:
        await sim.stop()
    return 0


def process_slices(n: int, processes: int) -> list[tuple[int, int]]:
    """``(first device, devices)`` of each process: whole ports (247 devices) each, as even
    as they go; fewer processes than asked when there are fewer ports."""
    ports = (n + MAX_UNITS_PER_PORT - 1) // MAX_UNITS_PER_PORT
    k = max(1, min(processes, ports))
    edges = [round(i * ports / k) * MAX_UNITS_PER_PORT for i in range(k + 1)]
    return [(a, min(b, n) - a) for a, b in zip(edges[:-1], edges[1:]) if a < n]


def _die_with_parent() -> None:
    """In a child, before exec: SIGTERM when the parent dies, even by SIGKILL (Linux prctl
    PR_SET_PDEATHSIG; elsewhere the parent's SIGTERM handler is all there is)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG = 1
    except OSError:
        pass


def serve_processes(args, argv: list[str], out=sys.stdout) -> int:
    """Serve ``args.devices`` devices from ``args.processes`` child processes (see the module
    doc): each runs this module for its slice; their lines are passed on, and the first line
    of this process says when all of them listen."""
    if args.replay:
        raise InputError("--processes: a replay is served by one process")
    # SIGTERM ends this process through the finally below, which ends the children
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    children = []
    # one start for every process (each resolving 'now' itself could differ by a second)
    scn = scenarios.load(args.scenario)
    start = dt.datetime.fromtimestamp(parse_start(args.start, scn.start, parse_offset(args.offset, scn.duration_s)),
                                      dt.timezone.utc).isoformat()
    try:
        for first, n in process_slices(args.devices, args.processes):
            child_argv = list(argv) + ["--processes", "1", "--first-device", str(first), "--devices", str(n),
                                       "--start", start,
                                       "--modbus-port", str(args.modbus_port + first // MAX_UNITS_PER_PORT)]
            children.append(subprocess.Popen([sys.executable, "-m", "simulators.modbus_server", *child_argv],
                                             stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent))
        firsts = [c.stdout.readline() for c in children]
        if not all(f.startswith("simulating") for f in firsts):
            raise ServiceError("a simulator process did not start: " + "; ".join(f.strip() for f in firsts))
        print(f"simulating {args.devices} device(s) in {len(children)} process(es)", file=out, flush=True)

        def relay(c):
            for line in c.stdout:
                print(line, end="", file=out, flush=True)
        threads = [threading.Thread(target=relay, args=(c,), daemon=True) for c in children]
        for t in threads:
            t.start()
        codes = [c.wait() for c in children]
        for t in threads:
            t.join(timeout=1)
        return max(codes)
    finally:
        for c in children:
            if c.poll() is None:
                c.terminate()
        for c in children:
            try:
                c.wait(timeout=5)
            except subprocess.TimeoutExpired:
                c.kill()


def main(argv=None) -> int:

    p = argparse.ArgumentParser(prog="python -m simulators.modbus_server",
                                description="Simulated control-manhole devices over Modbus TCP.")
    add_source_arguments(p)
    p.add_argument("--latency-ms", type=float, default=0.0, help="each device answers after this many ms (default 0)")
    p.add_argument("--wire", choices=("pymodbus", "lean"), default="pymodbus",
                   help="the TCP server: pymodbus's (default) or the lean one (reads only, less CPU)")
    p.add_argument("--processes", type=int, default=1,
                   help="serve the devices from this many processes, whole ports each (default 1)")
    p.add_argument("--first-device", type=int, default=0, help=argparse.SUPPRESS)   # a process's slice
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    try:
        if args.latency_ms < 0:
            raise InputError(f"--latency-ms: expected 0 or more, got {args.latency_ms:g}")
        if args.processes < 1:
            raise InputError(f"--processes: expected at least 1, got {args.processes}")
        if args.processes > 1:
            return serve_processes(args, argv)
        return asyncio.run(serve(args))
    except SewerwatchError as exc:
        return report(exc)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
