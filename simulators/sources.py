"""Where live simulators get their readings: a simulated clock, a scenario or a CSV replay.

A source answers two questions, both vectorised over all devices:

- :meth:`sample` (t): what every device shows at simulated time ``t`` (Modbus registers);
- :meth:`readings` (t0, t1, step): every reading every device takes in ``(t0, t1]`` (MQTT).
"""

from __future__ import annotations

import csv
import datetime as dt
import time
from dataclasses import dataclass

import numpy as np

from foundation.errors import InputError
from foundation.units import CANONICAL, to_canonical
from simulators.scenarios import PAYLOAD_VARIANTS, SENSORS, UNITS, Scenario, evaluate

#: sensors the MQTT publishers send (``level`` is served over Modbus by profiles that have it)
MQTT_SENSORS = ("flow", "ph", "temperature")
NAN_VARIANT = PAYLOAD_VARIANTS["nan"]


class SimClock:
    """Simulated time: ``start + offset + speed * (real elapsed)``.

    Parameters
    ----------
    start : float
        Simulated start [epoch s].
    speed : float
        Simulated seconds per real second; 0 freezes the clock at ``start + offset``.
    offset_s : float
        Where in the scenario to begin [s after ``start``].
    """

    def __init__(self, start: float, speed: float = 1.0, offset_s: float = 0.0):
        if speed < 0:
            raise InputError(f"--speed: expected 0 or more, got {speed}")
        self.start, self.speed, self.offset_s = float(start), float(speed), float(offset_s)
        self.real0 = time.monotonic()

    def now(self) -> float:
        """Current simulated time [epoch s]."""
        return self.start + self.offset_s + self.speed * (time.monotonic() - self.real0)


@dataclass
class Snapshot:
    """What every device shows at one instant (arrays of shape (n_devices,))."""

    t: float
    values: dict        # sensor -> float64 [canonical unit]
    faults: dict        # sensor -> bool
    silent: np.ndarray
    modbus_error: np.ndarray
    payload: np.ndarray  # (n_devices, n_sensors) uint8
    maintenance: np.ndarray | None = None   # (n_devices,) bool: in a maintenance window (its status bit)


@dataclass
class Readings:
    """The readings of one device's sensor over a span of simulated time."""

    device: int
    sensor: str
    unit: str
    times: np.ndarray     # epoch [s]
    values: np.ndarray
    payload: np.ndarray   # uint8 per reading, PAYLOAD_VARIANTS code or 0


class ScenarioSource:
    """Readings of ``n_devices`` devices under a scenario (see :mod:`simulators.scenarios`):
    devices ``first_device`` .. ``first_device + n_devices - 1`` (one simulator process of
    several serves a slice; a device shows the same values whichever process serves it)."""

    def __init__(self, scenario: Scenario, n_devices: int, first_device: int = 0):
        if n_devices < 1:
            raise InputError(f"--devices: expected at least 1, got {n_devices}")
        self.scenario = scenario
        self.n_devices = n_devices
        self.devices = np.arange(first_device, first_device + n_devices)
        self.sites = tuple(scenario.site(i) for i in self.devices.tolist())
        self.start = scenario.start
        self.duration_s = scenario.duration_s
        self.name = scenario.name

    def sample(self, t: float) -> Snapshot:
        s = evaluate(self.scenario, self.devices, np.array([t]))
        return Snapshot(t, {k: v[:, 0] for k, v in s.values.items()}, {k: v[:, 0] for k, v in s.faults.items()},
                        s.silent[:, 0], s.modbus_error[:, 0], s.payload[:, :, 0], s.maintenance[:, 0])

    def maintenance(self, t0: float, t1: float) -> list[tuple[float, int, dict]]:
        """The maintenance messages of ``(t0, t1]`` (:func:`simulators.scenarios.maintenance_messages`;
        devices numbered from 0 in this source)."""
        from simulators.scenarios import maintenance_messages
        return maintenance_messages(self.scenario, self.devices, t0, t1)

    def readings(self, t0: float, t1: float, step_s: float, sensors=MQTT_SENSORS) -> list[Readings]:
        k0, k1 = np.floor(t0 / step_s) + 1, np.floor(t1 / step_s)
        if k1 < k0:
            return []
        times = np.arange(k0, k1 + 1) * step_s
        s = evaluate(self.scenario, self.devices, times)
        out = []
        for j, name in enumerate(SENSORS):
            if name not in sensors:
                continue
            v, pay = s.values[name], s.payload[:, j, :]
            keep = ~s.silent & (~np.isnan(v) | (pay == NAN_VARIANT))
            for i in range(self.n_devices):
                k = keep[i]
                if k.any():
                    out.append(Readings(i, name, UNITS[name], times[k], v[i, k], pay[i, k]))
        return out


class ReplaySource:
    """Replays a long-format CSV ``time,site,parameter,value,unit`` (the ``sewerwatch check`` input).

    Each site becomes one device, in order of first appearance. Over Modbus a device
    shows, per parameter, the latest reading at or before the simulated time (NaN before
    the first); over MQTT each reading is published once, with the unit of the file.
    """

    def __init__(self, path):
        self.path = str(path)
        rows: dict = {}
        sites: list[str] = []
        try:
            fh = open(path, newline="", encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: no such replay file") from None
        with fh:
            r = csv.reader(fh)
            header = next(r, None)
            if header != ["time", "site", "parameter", "value", "unit"]:
                raise InputError(f"{path}:1: expected the header time,site,parameter,value,unit, got {header!r}")
            for line, row in enumerate(r, start=2):
                if not row:
                    continue
                if len(row) != 5:
                    raise InputError(f"{path}:{line}: expected 5 columns, got {len(row)}")
                ts, site, parameter, value, unit = row
                if parameter not in SENSORS:
                    raise InputError(f"{path}:{line}: unknown parameter {parameter!r} (known: {', '.join(SENSORS)})")
                try:
                    t = dt.datetime.fromisoformat(ts)
                except ValueError:
                    raise InputError(f"{path}:{line}: time {ts!r} is not ISO-8601") from None
                if t.tzinfo is None:
                    raise InputError(f"{path}:{line}: time {ts!r} has no UTC offset")
                try:
                    v = float(value)
                except ValueError:
                    raise InputError(f"{path}:{line}: value {value!r} is not a number") from None
                if site not in rows:
                    sites.append(site)
                    rows[site] = {}
                rows[site].setdefault((parameter, unit), []).append((t.timestamp(), v))
        if not sites:
            raise InputError(f"{path}: no readings")
        self.sites = tuple(sites)
        self.n_devices = len(sites)
        self.name = f"replay of {path}"
        # per (device, sensor): sorted times, raw values, unit, canonical values
        self.series: dict = {}
        for i, site in enumerate(sites):
            for (parameter, unit), pts in rows[site].items():
                if (i, parameter) in self.series:
                    raise InputError(f"{path}: site {site!r} has {parameter} in two units; use one")
                a = np.array(pts, dtype=np.float64)
                order = np.argsort(a[:, 0], kind="stable")
                t, v = a[order, 0], a[order, 1]
                self.series[(i, parameter)] = (t, v, unit, to_canonical(parameter, unit, v))
        all_t = np.concatenate([s[0] for s in self.series.values()])
        self.start = float(all_t.min())
        self.duration_s = float(all_t.max() - all_t.min()) + 1.0

    def sample(self, t: float) -> Snapshot:
        n = self.n_devices
        values = {s: np.full(n, np.nan) for s in SENSORS}
        for (i, parameter), (times, _, _, canon) in self.series.items():
            k = np.searchsorted(times, t, side="right") - 1
            if k >= 0:
                values[parameter][i] = canon[k]
        z = np.zeros(n, dtype=bool)
        return Snapshot(t, values, {s: z for s in SENSORS}, z, np.zeros(n, np.uint8),
                        np.zeros((n, len(SENSORS)), np.uint8))

    def readings(self, t0: float, t1: float, step_s: float = 0.0, sensors=MQTT_SENSORS) -> list[Readings]:
        out = []
        for (i, parameter), (times, raw, unit, _) in self.series.items():
            if parameter not in sensors:
                continue
            a, b = np.searchsorted(times, [t0, t1], side="right")
            if b > a:
                out.append(Readings(i, parameter, unit, times[a:b], raw[a:b], np.zeros(b - a, np.uint8)))
        return out


def canonical_unit(sensor: str) -> str:
    return CANONICAL[sensor]
