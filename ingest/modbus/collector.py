"""The Modbus TCP collector: polls many devices from one asyncio loop, decodes in batches.

Each device has its own connection (a :class:`ingest.modbus.link.ModbusLink`) and its own poll
task, started at a staggered phase so a thousand devices at 1 Hz do not all ask in the same
millisecond. A poll sends the profile's read plan (:mod:`ingest.modbus.plan`) and keeps the
raw registers; every ``flush_s`` the collector decodes all polls of all devices of one
profile in one numpy batch (:meth:`ingest.profiles.Profile.decode_tables`), converts them
to canonical units, sets quality codes and hands one :class:`~ingest.batch.Readings` to the
sink.

Quality: a set status bit or a value that decodes to NaN (the device's "no reading") gives
:data:`~ingest.batch.DEVICE_FAULT`; a physically impossible value (pH below 0 or above 14)
:data:`~ingest.batch.OUT_OF_RANGE` (:func:`ingest.normalise.flag_out_of_range`). Both are
kept.

Failures: a transport error (refused, dropped or silent connection; the link neither
retries nor reconnects by itself) closes the connection, takes the
device down and waits a backoff (doubling from ``backoff_min_s`` to ``backoff_max_s``, with
jitter) before connecting again; polls due meanwhile count as missed. A Modbus exception
reply is an answer: it is counted in ``exception_replies`` and the device stays up. Health
records go to :meth:`ingest.sink.Sink.health` (see :mod:`ingest.modbus.health`).

Run alone against a config file (no database; sensor ids are numbered in config order)::

    python -m ingest.modbus.collector ingest/modbus/sample.toml --duration 10 --print readings
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np
from pymodbus.exceptions import ConnectionException, ModbusException

from foundation import config as sw_config
from foundation.errors import ConfigError, InputError, SewerwatchError, report
from foundation.units import to_canonical
from ingest import profiles as profiles_mod
from ingest.batch import DEVICE_FAULT, MAINTENANCE, Readings
from ingest.modbus.faults import transport_words
from ingest.modbus.health import DeviceHealth
from ingest.modbus.link import ModbusLink
from ingest.modbus.options import Options
from ingest.modbus.plan import plan as make_plan
from ingest.normalise import flag_out_of_range
from ingest.sink import Sink, WindowEvent

log = logging.getLogger("ingest.modbus")

#: Polls read but not yet handed to the sink, per profile, beyond which new polls are
#: counted as missed (the sink stays full while the writer can store nothing).
MAX_PENDING_POLLS = 200_000

#: Modbus exception codes (Modbus Application Protocol V1.1b3 §7)
EXCEPTION_NAMES = {1: "illegal function", 2: "illegal data address", 3: "illegal data value",
                   4: "server device failure", 5: "acknowledge", 6: "server device busy",
                   8: "memory parity error", 10: "gateway path unavailable",
                   11: "gateway target device failed to respond"}


class _Group:
    """The devices sharing one profile: their plan, sensor ids and the polls not yet decoded."""

    def __init__(self, profile, devices: list, sensor_map: dict, max_fill: int, full_scale: dict | None = None):
        self.profile = profile
        self.devices = list(devices)
        #: each device's maintenance bit as last seen (a window opens when it is set)
        self.maintenance = np.zeros(len(self.devices), dtype=bool)
        self.events: list = []          # maintenance windows opened or ended, for the sink
        self.plan = make_plan(profile, max_fill)
        self.spans = {t: profile.span(t) for t in profile.tables()}
        # a request filling its table's whole row needs no copying (the common case)
        self.whole = {t: len([r for r in self.plan if r.table == t]) == 1
                      and next(r for r in self.plan if r.table == t).count == c
                      for t, (_, c) in self.spans.items()}
        self.sensor_ids = {}
        self.full_scale = {}          # field -> full scale of each device's sensor [canonical] (NaN: none)
        for f in profile.fields:
            ids = np.array([sensor_map.get((d.id, f.name), -1) for d in devices], dtype=np.int64)
            if (ids >= 0).any():
                self.sensor_ids[f.name] = ids
                self.full_scale[f.name] = np.array([(full_scale or {}).get(int(i), np.nan) for i in ids])
        self.reset()

    def reset(self):
        self.rows_index: list[int] = []
        self.rows_time: list[int] = []
        self.rows: dict = {t: [] for t in self.spans}

    def decode(self) -> Readings:
        """Decode every pending poll in one batch and clear them."""
        if not self.rows_index:
            return Readings.empty()
        idx = np.array(self.rows_index, dtype=np.int64)
        times = np.array(self.rows_time, dtype=np.int64)
        blocks = {t: np.array(r, dtype=np.int64) for t, r in self.rows.items()}
        self.reset()
        values, status = self.profile.decode_tables(blocks)
        faults = self.profile.faulted(status) if status is not None else {}
        maint = self.profile.in_maintenance(status) if status is not None else None
        if maint is not None:
            self._maintenance(idx, times, maint)
        parts = []
        for f in self.profile.fields:
            ids = self.sensor_ids.get(f.name)
            if ids is None:
                continue
            sid = ids[idx]
            m = sid >= 0
            canon = to_canonical(f.parameter, f.unit, values[f.name][m])
            quality = flag_out_of_range(f.parameter, canon, self.full_scale[f.name][idx][m])
            if f.name in faults:
                quality[faults[f.name][m]] = DEVICE_FAULT
            if maint is not None:
                quality[maint[m]] = MAINTENANCE
            parts.append(Readings(times[m], sid[m], canon, quality))
        return Readings.concat(parts)

    def _maintenance(self, idx: np.ndarray, times: np.ndarray, maint: np.ndarray) -> None:
        """Windows opened or ended by the devices' maintenance bit: a poll whose bit differs
        from the device's previous poll (polls are in time order per device)."""
        order = np.argsort(idx, kind="stable")
        d, t, b = idx[order], times[order], maint[order]
        first = np.r_[True, d[1:] != d[:-1]]
        prev = np.where(first, self.maintenance[d], np.r_[False, b[:-1]])
        for k in np.flatnonzero(prev != b).tolist():          # transitions are rare: a loop over them only
            dev = self.devices[int(d[k])]
            ids = tuple(int(v[int(d[k])]) for v in self.sensor_ids.values() if v[int(d[k])] >= 0)
            self.events.append(WindowEvent(dev.site, ids, "start" if b[k] else "end", int(t[k]),
                                           "maintenance switch of the device" if b[k] else "",
                                           f"device {dev.id}", "modbus", dev.id))
        last = np.r_[d[1:] != d[:-1], True]
        self.maintenance[d[last]] = b[last]


class _Device:
    """One device's connection, schedule and health."""

    def __init__(self, device, group: _Group, row: int, phase_s: float):
        self.device, self.group, self.row, self.phase_s = device, group, row, phase_s
        self.health = DeviceHealth(device.id, device.site)
        self.client = None
        self.connected_once = False
        self.backoff_s = 0.0
        self.hold_until = 0.0  # loop time before which no reconnect is tried


class ModbusCollector:
    """Poll Modbus TCP devices and hand their readings to a sink.

    Parameters
    ----------
    devices : iterable of foundation.config.Device
    sensor_map : dict of (str, str) -> int
        ``(device id, profile field name)`` -> ``sensors.id``; fields without an entry are
        read (they share the request) but not stored.
    sink : ingest.sink.Sink
    options : Options, optional
    full_scale : dict of int -> float, optional
        ``sensors.id`` -> the sensor's full scale [canonical unit]; a reading above it is
        out of range.
    """

    def __init__(self, devices, sensor_map: dict, sink, options: Options | None = None,
                 full_scale: dict | None = None):
        self.sink = sink
        self.options = options or Options()
        devices = list(devices)
        ids = [d.id for d in devices]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InputError(f"device id {dup!r} appears twice")
        by_profile: dict = {}
        for d in devices:
            by_profile.setdefault(d.profile, []).append(d)
        self.groups = {}
        self.devices: list[_Device] = []
        n = len(devices)
        order = {d.id: i for i, d in enumerate(devices)}
        for name, members in by_profile.items():
            group = _Group(profiles_mod.load(name), members, sensor_map, self.options.max_fill, full_scale)
            self.groups[name] = group
            for row, d in enumerate(members):
                # stagger: device i of n starts i/n of its interval into the schedule
                phase = order[d.id] / max(n, 1) * d.interval_s
                self.devices.append(_Device(d, group, row, phase))
        self.devices.sort(key=lambda s: order[s.device.id])
        _check_sensor_map(sensor_map, {d.id: self.groups[d.profile].profile for d in devices})
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested = False
        self._tasks: list[asyncio.Task] = []
        self._running = False
        self.puts = 0
        self.last_reading_at: float | None = None     # [epoch s] when readings last went to the sink

    # --- public ------------------------------------------------------------------------
    def health(self) -> dict:
        """``{device id: DeviceHealth}``."""
        return {s.device.id: s.health for s in self.devices}

    async def run(self, component=None) -> None:
        """Poll until :meth:`stop`; flushes what was read before returning.

        Parameters
        ----------
        component : ingest.supervise.Component, optional
            Beaten every second while the loop runs (the supervisor's proof of life); a
            fault injected into it ends :meth:`run` with that exception.
        """
        loop = asyncio.get_running_loop()
        self._loop, self._stop = loop, asyncio.Event()
        if self._stop_requested:
            return
        self._running = True
        t0 = loop.time() + 0.05
        self._tasks = [loop.create_task(self._device_loop(s, t0), name=f"modbus {s.device.id}")
                       for s in self.devices]
        flusher = loop.create_task(self._periodic(self.options.flush_s, self.flush), name="modbus flush")
        reporter = loop.create_task(self._periodic(self.options.health_s, self._report), name="modbus health")
        waiter = loop.create_task(self._stop.wait(), name="modbus stop")
        heart = loop.create_task(self._heartbeat(component), name="modbus heartbeat")
        try:
            done, _ = await asyncio.wait({waiter, heart}, return_when=asyncio.FIRST_COMPLETED)
            if heart in done:
                heart.result()                 # an injected fault (or a bug) ends the loop here
        finally:
            self._running = False
            await _cancel_all(self._tasks + [flusher, reporter, waiter, heart])
            for s in self.devices:
                self._close(s)
            await self.flush()
            await self._report()

    @staticmethod
    async def _heartbeat(component) -> None:
        while True:
            if component is not None:
                component.beat()
            await asyncio.sleep(1.0)

    def stop(self) -> None:
        """Ask :meth:`run` to return (from any thread)."""
        self._stop_requested = True
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:   # the loop has just closed: run() has returned
                pass

    async def flush(self) -> int:
        """Decode every pending poll and hand the readings to the sink; returns their number."""
        parts = [g.decode() for g in self.groups.values()]
        for g in self.groups.values():          # the windows first: the batch is marked by them
            for ev in g.events:
                self.sink.window(ev)
            g.events.clear()
        batch = Readings.concat(parts)
        if len(batch):
            if not self.sink.put(batch, timeout=0):
                await asyncio.get_running_loop().run_in_executor(None, self.sink.put, batch)
            self.puts += 1
            self.last_reading_at = time.time()
        return len(batch)

    # --- internals ---------------------------------------------------------------------
    async def _periodic(self, period: float, fn) -> None:
        while self._running:
            await asyncio.sleep(period)
            try:
                await fn()
            except Exception:  # keep polling; the next period tries again
                log.exception("modbus collector: %s failed", getattr(fn, "__name__", fn))

    async def _report(self) -> None:
        for s in self.devices:
            if s.health.state is not None:
                self.sink.health(s.health.snapshot())

    def _emit(self, records: list[dict]) -> None:
        for r in records:
            self.sink.health(r)

    def _close(self, s: _Device) -> None:
        if s.client is not None:
            with contextlib.suppress(Exception):
                s.client.close()
            s.client = None

    async def _device_loop(self, s: _Device, t0: float) -> None:
        loop = asyncio.get_running_loop()
        interval = s.device.interval_s
        tolerance = interval * self.options.late_fraction
        due = t0 + s.phase_s
        while self._running:
            wake = max(due, s.hold_until)
            delay = wake - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            now = loop.time()
            behind = int((now - due) // interval) if now > due else 0
            slot = due + behind * interval
            if now - slot > tolerance or slot < s.hold_until:
                s.health.missed_polls += behind + 1
                due = slot + interval
                continue
            s.health.missed_polls += behind
            due = slot + interval
            await self._poll(s, loop)

    async def _poll(self, s: _Device, loop) -> None:

        d = s.device
        h = s.health
        t_us = time.time_ns() // 1000
        try:
            if s.client is None or not s.client.connected:
                await self._connect(s)
            group = s.group
            rows = {}
            for req in group.plan:
                code, regs = await s.client.read(req.function_code, req.address, req.count, d.unit_id)
                if code:
                    h.polls += 1
                    self._emit(h.exception_reply(t_us, f"exception reply {code:02X} "
                                                 f"({EXCEPTION_NAMES.get(code, 'unknown')}) to function "
                                                 f"{req.function_code:02d} at {req.address} count {req.count}"))
                    return
                if len(regs) < req.count:
                    raise _ShortReply(f"short reply: {len(regs)} of {req.count} registers at {req.address}")
                if group.whole[req.table]:
                    rows[req.table] = regs if len(regs) == req.count else regs[:req.count]
                else:
                    row = rows.get(req.table)
                    if row is None:
                        row = rows[req.table] = [0] * group.spans[req.table][1]
                    row[req.offset:req.offset + req.count] = regs[:req.count]
        except (ModbusException, OSError, asyncio.TimeoutError, _ShortReply) as exc:
            self._close(s)
            h.polls += 1
            text = transport_words(exc, d.host, d.port, self.options.timeout_s)
            self._emit(h.transport_error(t_us, text[:500]))
            lo, hi = self.options.backoff_min_s, self.options.backoff_max_s
            s.backoff_s = lo if s.backoff_s == 0 else min(hi, s.backoff_s * 2)
            s.hold_until = loop.time() + s.backoff_s * random.uniform(0.8, 1.2)
            return
        h.polls += 1
        s.backoff_s = 0.0
        if len(group.rows_index) >= MAX_PENDING_POLLS:
            # the sink has been full for long (the writer can store nothing): a reading that
            # cannot be kept is a missed poll, counted, never unbounded memory
            h.missed_polls += 1
            return
        group.rows_index.append(s.row)
        group.rows_time.append(t_us)
        for t, row in rows.items():
            group.rows[t].append(row)
        self._emit(h.good(t_us))

    async def _connect(self, s: _Device) -> None:
        """Open the device's link (:class:`ingest.modbus.link.ModbusLink`); a failure is a
        :class:`ConnectionException` whose cause is the socket's error."""

        self._close(s)
        # the link neither retries nor reconnects: the collector owns retrying and backoff
        try:
            s.client = await ModbusLink.open(s.device.host, s.device.port, self.options.timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            raise ConnectionException(f"cannot connect to {s.device.host}:{s.device.port} "
                                      f"({exc or type(exc).__name__})") from exc
        if s.connected_once:
            s.health.reconnects += 1
        s.connected_once = True


def _check_sensor_map(sensor_map: dict, profile_of: dict) -> None:
    """Every ``(device, field)`` key names a polled device and a field of its profile."""
    for key, sid in sensor_map.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise InputError(f"sensor map: key {key!r}: expected (device id, field name)")
        device, field_name = key
        if device not in profile_of:
            raise InputError(f"sensor map: {device}/{field_name}: no such Modbus device "
                             f"(devices: {', '.join(sorted(profile_of)) or 'none'})")
        prof = profile_of[device]
        if field_name not in {f.name for f in prof.fields}:
            raise InputError(f"sensor map: {device}/{field_name}: profile {prof.name!r} has no field "
                             f"{field_name!r} (fields: {', '.join(f.name for f in prof.fields)})")
        if isinstance(sid, bool) or not isinstance(sid, (int, np.integer)) or not 0 <= sid < 2**31:
            raise InputError(f"sensor map: {device}/{field_name}: sensor id {sid!r} is not a non-negative int32")


async def _cancel_all(tasks: list) -> None:
    """Cancel ``tasks`` and wait for them, cancelling again any that survived.

    In Python 3.11 ``asyncio.wait_for`` (used inside pymodbus) can swallow a cancellation
    that arrives as its inner future completes (CPython gh-86296, fixed in 3.12); the
    loops also stop on their own once ``_running`` is False.
    """
    pending = set(tasks)
    while pending:
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=1.0)


class _ShortReply(Exception):
    """A reply with fewer registers than asked for."""


# --- running alone ---------------------------------------------------------------------


def load_config(path: str | Path):
    """Read a collector config: a sewerwatch config, optionally with a ``[modbus]`` table.

    Returns
    -------
    (foundation.config.Config, Options)
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such config file")
    cfg = sw_config.load(p)
    if not cfg.devices:
        raise ConfigError(str(p), "devices", "no [[devices]] to poll")
    return cfg, Options.from_config(cfg)


def sensor_map_from_rows(rows) -> dict:
    """``(device, field) -> sensor id`` from rows of the ``sensors`` table.

    Parameters
    ----------
    rows : iterable of (int, str)
        ``(sensors.id, sensors.address)``; an address reads ``modbus:<device>/<field>``
        (:attr:`foundation.config.Sensor.address`); other sources are skipped.
    """
    out = {}
    for sid, address in rows:
        if not isinstance(address, str) or not address.startswith("modbus:"):
            continue
        device, sep, field_name = address[len("modbus:"):].partition("/")
        if not sep or not device or not field_name:
            raise InputError(f"sensor {sid}: address {address!r}: expected modbus:<device>/<field>")
        out[(device, field_name)] = int(sid)
    return out


def standalone_sensor_map(cfg) -> dict:
    """``(device, field) -> sensor id``, numbering the config's Modbus sensors 1, 2, ... in order."""
    out = {}
    for s in cfg.sensors:
        if s.source == "modbus":
            out[(s.device, s.field)] = len(out) + 1
    return out


def _printer(sink, mode: str, names: dict, out, counts: dict) -> None:
    while True:
        chunk = sink.take(max_delay=0.5)
        if chunk is None:
            return
        r = chunk.readings
        counts["readings"] += len(r)
        counts["faults"] += int((r.quality != 0).sum())
        if mode == "readings":
            for t, sid, v, q in zip(r.time_us.tolist(), r.sensor_id.tolist(), r.value.tolist(), r.quality.tolist()):
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t / 1e6)) + f".{t % 1_000_000:06d}Z"
                print(f"{stamp} {names.get(sid, sid)} {v:.6g} q={q}", file=out)
        if mode in ("readings", "health"):
            for rec in chunk.health:
                if mode == "health" or rec["kind"] == "outage":
                    print(json.dumps(rec), file=out)
        out.flush()


async def _run_for(collector: ModbusCollector, duration: float | None) -> None:
    task = asyncio.create_task(collector.run())
    try:
        if duration is None:
            await task
        else:
            await asyncio.sleep(duration)
            collector.stop()
            await task
    finally:
        if not task.done():
            collector.stop()
            await task


def main(argv=None) -> int:
    """Poll the devices of a config file and print what they send (no database)."""

    p = argparse.ArgumentParser(prog="python -m ingest.modbus.collector",
                                description="Poll Modbus TCP devices and print their readings.")
    p.add_argument("config", help="sewerwatch config with [[devices]] and [[sensors]] (and optional [modbus])")
    p.add_argument("--duration", type=float, help="stop after this many seconds (default: run until Ctrl-C)")
    p.add_argument("--print", dest="mode", choices=("readings", "counts", "health"), default="counts",
                   help="print each reading, health records, or only counts at the end (default counts)")
    args = p.parse_args(argv)
    try:
        if args.duration is not None and not args.duration > 0:
            raise InputError(f"--duration: expected a positive number of seconds, got {args.duration}")
        cfg, options = load_config(args.config)
        sensor_map = standalone_sensor_map(cfg)
        names = {sid: f"{dev}/{field}" for (dev, field), sid in sensor_map.items()}
        sink = Sink()
        collector = ModbusCollector(cfg.devices, sensor_map, sink, options)
        logging.getLogger("pymodbus").setLevel(logging.CRITICAL)
        counts = {"readings": 0, "faults": 0}
        printer = threading.Thread(target=_printer, args=(sink, args.mode, names, sys.stdout, counts), daemon=True)
        printer.start()
        try:
            asyncio.run(_run_for(collector, args.duration))
        except KeyboardInterrupt:
            pass
        sink.close()
        printer.join(timeout=5)
        for dev, h in collector.health().items():
            print(f"{dev}: state {h.state} polls {h.polls} missed {h.missed_polls} transport errors "
                  f"{h.transport_errors} exception replies {h.exception_replies} reconnects {h.reconnects}")
        print(f"readings {counts['readings']} (not good: {counts['faults']})")
        return 0
    except SewerwatchError as exc:
        return report(exc)


if __name__ == "__main__":
    sys.exit(main())
