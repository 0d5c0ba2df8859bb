"""Scenarios: a day of a control manhole, with events overlaid on the device models.

A scenario is one TOML file in ``simulators/scenarios/``::

    name = "acid-dump"
    description = "..."
    start = 2026-06-01T00:00:00-05:00   # the simulated start; its UTC offset is the local time
    duration_s = 86400
    seed = 7
    sites = ["acme-plating"]             # optional names of the first sites (then site-NNN)

    [devices]                            # optional, model parameters of every device
    flow_mean_gpm = 120.0
    ph_mean = 7.3
    temperature_mean_degf = 68.0
    meter = "parshall"                   # parshall (level -> flow) or direct
    throat_in = 6                        # Parshall throat width [in]

    [[events]]
    kind = "set"                         # see EVENT_KINDS
    parameter = "ph"
    at = "10:30"                         # offset from start, "HH:MM[:SS]" or seconds
    minutes = 30                         # or seconds = 1800
    value = 3.5
    ramp_s = 60                          # optional ramp before and after the plateau
    devices = "all"                      # or a list of device indices (0-based)

Event kinds (the process is changed before the meters measure it; sensor faults change
what a meter reports; device faults change how it communicates):

============== ======================================= ===================================
kind           keys                                    effect
============== ======================================= ===================================
set            parameter, value                        process value set (acid dump, hot)
scale          parameter, factor, of=mean|current      process scaled (slug: 6 x mean)
flatline       parameter                               sensor stuck at its value at start
drift          parameter, rate_per_h                   sensor offset grows linearly
spikes         parameter, rate_per_h, magnitude        random one-second spikes
dropout        parameter                               no reading (NaN, status fault bit)
comms_loss     --                                      device silent (no Modbus reply, no
                                                       MQTT publish, MQTT link dropped)
modbus_error   code (device_busy, illegal_address,     Modbus exception reply
               device_failure, gateway_no_response)
bad_payload    variant (garbage, nan, wrong_units,     MQTT payload broken; ``nan`` also
               missing_fields), parameter optional     reaches the Modbus registers
reads          parameter, value                        the sensor reads ``value`` whatever
                                                       the process: a pH probe in a
                                                       calibration buffer, a flow meter
                                                       lifted out to be cleaned (0)
maintenance    reason, parameter optional (default:    the device announces a maintenance
               every sensor of the site)               window for the event's time on
                                                       ``sewerwatch/<site>/maintenance``
                                                       (ingest/mqtt/maintenance.py)
============== ======================================= ===================================
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from foundation import tomlfile
from foundation.errors import InputError
from simulators import models

SCENARIOS_DIR = Path(__file__).resolve().parent / "scenarios"

SENSORS = ("flow", "level", "ph", "temperature")
#: canonical unit of each simulated sensor (foundation.units.CANONICAL)
UNITS = {"flow": "gpm", "level": "ft", "ph": "pH", "temperature": "degF"}
PROCESS_PARAMETERS = ("flow", "ph", "temperature")

EVENT_KINDS = ("set", "scale", "flatline", "drift", "spikes", "dropout", "comms_loss",
               "modbus_error", "bad_payload", "reads", "maintenance")
#: Modbus exception codes (Modbus Application Protocol V1.1b3 §7)
MODBUS_ERRORS = {"illegal_function": 1, "illegal_address": 2, "illegal_value": 3,
                 "device_failure": 4, "device_busy": 6, "gateway_no_response": 11}
#: bad payload variants and their codes in :attr:`Series.payload`
PAYLOAD_VARIANTS = {"garbage": 1, "nan": 2, "wrong_units": 3, "missing_fields": 4}

DEFAULT_START = dt.datetime(2026, 6, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5)))


@dataclass(frozen=True)
class Event:
    """One scenario event (see the module docstring)."""

    kind: str
    start_s: float            # offset from the scenario start [s]
    duration_s: float
    parameter: str | None = None
    devices: tuple[int, ...] | None = None   # None: every device
    value: float | None = None
    factor: float | None = None
    of: str = "current"
    ramp_s: float = 0.0
    rate_per_h: float = 0.0
    magnitude: float = 0.0
    code: int = 0
    variant: int = 0
    reason: str = ""

    def mask(self, devices: np.ndarray) -> np.ndarray:
        """Bool (n_devices,): which of ``devices`` the event touches."""
        if self.devices is None:
            return np.ones(len(devices), dtype=bool)
        return np.isin(devices, np.asarray(self.devices, dtype=np.int64))

    def weight(self, offsets: np.ndarray) -> np.ndarray:
        """0..1 (n_times,): 1 on the plateau, linear ramps of ``ramp_s`` outside it."""
        a, b, r = self.start_s, self.start_s + self.duration_s, self.ramp_s
        if r <= 0:
            return ((offsets >= a) & (offsets < b)).astype(np.float64)
        up = np.clip((offsets - (a - r)) / r, 0.0, 1.0)
        down = np.clip(((b + r) - offsets) / r, 0.0, 1.0)
        return np.minimum(up, down)

    def active(self, offsets: np.ndarray) -> np.ndarray:
        """Bool (n_times,): inside [start, start + duration)."""
        return (offsets >= self.start_s) & (offsets < self.start_s + self.duration_s)


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario (see the module docstring for the file's keys)."""

    name: str
    description: str
    start: float                  # epoch [s]
    utc_offset_s: float
    duration_s: float
    seed: int
    sites: tuple[str, ...] = ()
    flow_mean_gpm: float = 120.0
    ph_mean: float = 7.3
    temperature_mean_degf: float = 68.0
    meter: str = "parshall"
    throat_in: int = 6
    events: tuple[Event, ...] = ()
    path: str = ""

    def site(self, i: int) -> str:
        """Site id of device ``i`` (0-based)."""
        return self.sites[i] if i < len(self.sites) else f"site-{i + 1:03d}"

    def with_sites(self, sites) -> "Scenario":
        """The scenario with the first sites renamed (short lowercase ids)."""
        for s in sites:
            if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", s):
                raise InputError(f"--sites: expected short lowercase site ids, got {s!r}")
        return replace(self, sites=tuple(sites))

    def with_start(self, start: float) -> "Scenario":
        """The scenario beginning at ``start`` [epoch s] (its events keep their offsets from
        the start; its UTC offset, the local time of its daily patterns, stays)."""
        return replace(self, start=float(start))

    def with_seed(self, seed: int | None) -> "Scenario":
        if seed is None:
            return self
        return replace(self, seed=int(seed))


# --- loading -------------------------------------------------------------------------

from simulators.options import _CLOCK  # noqa: E402  (one clock syntax for files and --offset)


def _fail(path, key, problem):
    raise InputError(f"{path}: {key}: {problem}")


def _num(path, key, v, positive=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (positive and not v > 0):
        _fail(path, key, f"expected a {'positive ' if positive else ''}number, got {v!r}")
    return float(v)


def _offset(path, key, v):
    if isinstance(v, str):
        m = _CLOCK.match(v)
        if not m:
            _fail(path, key, f"expected 'HH:MM[:SS]' after the start or seconds, got {v!r}")
        return int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3] or 0)
    return _num(path, key, v)


def _event(path, i, t) -> Event:
    w = f"events[{i}]"
    if not isinstance(t, dict):
        _fail(path, w, "expected a table")
    allowed = {"kind", "at", "minutes", "seconds", "parameter", "devices", "value", "factor",
               "of", "ramp_s", "rate_per_h", "magnitude", "code", "variant", "reason"}
    for k in t:
        if k not in allowed:
            _fail(path, f"{w}.{k}", f"unknown key (expected one of: {', '.join(sorted(allowed))})")
    kind = t.get("kind")
    if kind not in EVENT_KINDS:
        _fail(path, f"{w}.kind", f"expected one of {', '.join(EVENT_KINDS)}, got {kind!r}")
    if "at" not in t:
        _fail(path, f"{w}.at", "missing (required)")
    start = _offset(path, f"{w}.at", t["at"])
    if ("minutes" in t) == ("seconds" in t):
        _fail(path, w, "give exactly one of minutes or seconds for the duration")
    duration = _num(path, f"{w}.minutes", t["minutes"], True) * 60 if "minutes" in t \
        else _num(path, f"{w}.seconds", t["seconds"], True)
    kw: dict = {}
    parameter = t.get("parameter")
    needs_param = kind in ("set", "scale", "flatline", "drift", "spikes", "dropout", "reads")
    if needs_param or parameter is not None:
        ok = PROCESS_PARAMETERS if kind in ("set", "scale") else SENSORS
        if parameter not in ok:
            _fail(path, f"{w}.parameter", f"expected one of {', '.join(ok)}, got {parameter!r}")
        kw["parameter"] = parameter
    devices = t.get("devices", "all")
    if devices != "all":
        if not isinstance(devices, list) or not devices or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices):
            _fail(path, f"{w}.devices", f"expected \"all\" or a list of device indices (0-based), got {devices!r}")
        kw["devices"] = tuple(devices)
    if kind in ("set", "reads"):
        kw["value"] = _num(path, f"{w}.value", t.get("value"))
    if kind == "maintenance":
        reason = t.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            _fail(path, f"{w}.reason", "a maintenance window needs a reason (e.g. \"calibration\")")
        kw["reason"] = reason.strip()
    if kind == "scale":
        kw["factor"] = _num(path, f"{w}.factor", t.get("factor"), True)
        kw["of"] = t.get("of", "current")
        if kw["of"] not in ("current", "mean"):
            _fail(path, f"{w}.of", f"expected current or mean, got {kw['of']!r}")
    if "ramp_s" in t:
        kw["ramp_s"] = _num(path, f"{w}.ramp_s", t["ramp_s"])
    if kind in ("drift", "spikes"):
        kw["rate_per_h"] = _num(path, f"{w}.rate_per_h", t.get("rate_per_h"))
    if kind == "spikes":
        kw["magnitude"] = _num(path, f"{w}.magnitude", t.get("magnitude"))
    if kind == "modbus_error":
        code = t.get("code")
        if code not in MODBUS_ERRORS:
            _fail(path, f"{w}.code", f"expected one of {', '.join(MODBUS_ERRORS)}, got {code!r}")
        kw["code"] = MODBUS_ERRORS[code]
    if kind == "bad_payload":
        variant = t.get("variant")
        if variant not in PAYLOAD_VARIANTS:
            _fail(path, f"{w}.variant", f"expected one of {', '.join(PAYLOAD_VARIANTS)}, got {variant!r}")
        kw["variant"] = PAYLOAD_VARIANTS[variant]
    return Event(kind=kind, start_s=float(start), duration_s=float(duration), **kw)


def parse(data: dict, path: str = "<scenario>") -> Scenario:
    """Validate a parsed scenario TOML (see the module docstring)."""
    allowed = {"name", "description", "start", "duration_s", "seed", "sites", "devices", "events"}
    for k in data:
        if k not in allowed:
            _fail(path, k, f"unknown key (expected one of: {', '.join(sorted(allowed))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        _fail(path, "name", "missing or not a string")
    start = data.get("start", DEFAULT_START)
    if not isinstance(start, dt.datetime) or start.tzinfo is None:
        _fail(path, "start", f"expected a TOML date-time with a UTC offset, got {start!r}")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        _fail(path, "seed", f"expected a non-negative integer, got {seed!r}")
    sites = data.get("sites", [])
    if not isinstance(sites, list) or not all(isinstance(s, str) and re.fullmatch(r"[a-z0-9][a-z0-9_-]*", s) for s in sites):
        _fail(path, "sites", "expected a list of short lowercase site ids")
    dev = data.get("devices", {})
    if not isinstance(dev, dict):
        _fail(path, "devices", "expected a table")
    dkeys = {"flow_mean_gpm", "ph_mean", "temperature_mean_degf", "meter", "throat_in"}
    for k in dev:
        if k not in dkeys:
            _fail(path, f"devices.{k}", f"unknown key (expected one of: {', '.join(sorted(dkeys))})")
    kw = {}
    for k in ("flow_mean_gpm", "ph_mean", "temperature_mean_degf"):
        if k in dev:
            kw[k] = _num(path, f"devices.{k}", dev[k], True)
    if "meter" in dev:
        if dev["meter"] not in ("parshall", "direct"):
            _fail(path, "devices.meter", f"expected parshall or direct, got {dev['meter']!r}")
        kw["meter"] = dev["meter"]
    if "throat_in" in dev:
        if dev["throat_in"] not in models.PARSHALL_FREE_FLOW:
            _fail(path, "devices.throat_in", f"expected a standard Parshall throat width [in] "
                  f"({', '.join(map(str, models.PARSHALL_FREE_FLOW))}), got {dev['throat_in']!r}")
        kw["throat_in"] = dev["throat_in"]
    events = data.get("events", [])
    if not isinstance(events, list):
        _fail(path, "events", "expected an array of tables ([[events]])")
    return Scenario(
        name=name, description=str(data.get("description", "")),
        start=start.timestamp(), utc_offset_s=start.utcoffset().total_seconds(),
        duration_s=_num(path, "duration_s", data.get("duration_s", 86400), True), seed=seed,
        sites=tuple(sites), events=tuple(_event(path, i, e) for i, e in enumerate(events)),
        path=path, **kw)


def load_file(path) -> Scenario:
    return parse(tomlfile.read(path, "scenario file"), str(Path(path)))


def names() -> list[str]:
    """The shipped scenarios' names."""
    return sorted(p.stem for p in SCENARIOS_DIR.glob("*.toml"))


@lru_cache(maxsize=None)
def load(name: str) -> Scenario:
    """Load a shipped scenario by name, or a TOML file by path."""
    if name.endswith(".toml") or "/" in name:
        return load_file(name)
    p = SCENARIOS_DIR / f"{name}.toml"
    if not p.is_file():
        raise InputError(f"unknown scenario {name!r} (known: {', '.join(names())})")
    return load_file(p)


# --- evaluation ------------------------------------------------------------------------


@dataclass
class Series:
    """Readings of many devices at many times, as arrays.

    Attributes
    ----------
    times : numpy.ndarray of float64, shape (n_times,)
        Epoch times [s].
    devices : numpy.ndarray of int64, shape (n_devices,)
        Device indices (0-based).
    sites : tuple of str
        Site id per device.
    values : dict of str -> numpy.ndarray of float64, shape (n_devices, n_times)
        Per sensor (``flow``, ``level``, ``ph``, ``temperature``) the reported value in
        :data:`UNITS`; NaN where the sensor reports nothing (dropout, no level sensor).
    faults : dict of str -> numpy.ndarray of bool, shape (n_devices, n_times)
        Per sensor, the device flags the sensor as faulted (dropout).
    silent : numpy.ndarray of bool, shape (n_devices, n_times)
        Communications lost: no Modbus reply, no MQTT message.
    modbus_error : numpy.ndarray of uint8, shape (n_devices, n_times)
        Modbus exception code replied instead of data (0: none).
    payload : numpy.ndarray of uint8, shape (n_devices, n_sensors, n_times)
        Bad MQTT payload variant per sensor (0: good; :data:`PAYLOAD_VARIANTS`).
    events : list of dict
        The events the scenario claims: kind, parameter, start and end [epoch s], devices.
    """

    times: np.ndarray
    devices: np.ndarray
    sites: tuple
    values: dict
    faults: dict
    silent: np.ndarray
    modbus_error: np.ndarray
    payload: np.ndarray
    events: list = field(default_factory=list)
    units: dict = field(default_factory=lambda: dict(UNITS))
    #: (n_devices, n_times) bool: the device is in a maintenance window (an event ``maintenance``);
    #: a Modbus device shows it as its profile's maintenance status bit
    maintenance: np.ndarray | None = None

    def long_rows(self):
        """Rows ``(time [epoch s], site, parameter, value, unit)`` of every reading a collector
        would receive (no NaN, nothing while silent), in time order per device and sensor."""
        for i, site in enumerate(self.sites):
            for s in SENSORS:
                v = self.values[s][i]
                keep = ~np.isnan(v) & ~self.silent[i]
                for t, x in zip(self.times[keep].tolist(), v[keep].tolist()):
                    yield t, site, s, x, self.units[s]

    def to_csv(self, path, sensors=("flow", "ph", "temperature")) -> int:
        """Write the long-format CSV of ``sewerwatch check`` (``time,site,parameter,value,unit``).

        Times are ISO-8601 UTC with offset. Returns the number of rows written.
        """
        n = 0
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["time", "site", "parameter", "value", "unit"])
            iso = np.datetime_as_string((self.times * 1e3).astype("datetime64[ms]"), unit="ms")
            for i, site in enumerate(self.sites):
                for s in sensors:
                    v = self.values[s][i]
                    keep = ~np.isnan(v) & ~self.silent[i]
                    vals = np.round(v[keep], 4).tolist()
                    for t, x in zip(iso[keep].tolist(), vals):
                        w.writerow([t + "+00:00", site, s, x, self.units[s]])
                    n += len(vals)
        return n


def _process(scn: Scenario, devices, times):
    seed, start = scn.seed, scn.start
    flow = models.true_flow_gpm(seed, start, times, devices, scn.flow_mean_gpm, scn.utc_offset_s)
    ph = models.true_ph(seed, start, times, devices, scn.ph_mean)
    temp = models.true_temperature_degf(seed, start, times, devices, scn.temperature_mean_degf, scn.utc_offset_s)
    proc = {"flow": flow, "ph": ph, "temperature": temp}
    offsets = np.asarray(times, dtype=np.float64) - scn.start
    for ev in scn.events:
        if ev.kind not in ("set", "scale"):
            continue
        m = ev.mask(devices)
        w = ev.weight(offsets)
        if not m.any() or not w.any():
            continue
        arr = proc[ev.parameter]
        ww = w[None, :]
        if ev.kind == "set":
            arr[m] = arr[m] * (1 - ww) + ev.value * ww
        elif ev.of == "mean":
            mean = models.device_flow_mean_gpm(seed, devices[m], scn.flow_mean_gpm) if ev.parameter == "flow" \
                else np.nanmean(arr[m], axis=1)
            arr[m] = arr[m] * (1 - ww) + ev.factor * mean[:, None] * ww
        else:
            arr[m] = arr[m] * (1 + (ev.factor - 1) * ww)
    return proc


def _measure(scn: Scenario, devices, times):
    proc = _process(scn, devices, times)
    seed = scn.seed
    if scn.meter == "parshall":
        level, flow = models.flume_meter(seed, proc["flow"], times, devices, scn.throat_in)
    else:
        flow = models.direct_meter(seed, proc["flow"], times, devices)
        level = np.full_like(flow, np.nan)
    return {
        "flow": flow, "level": level,
        "ph": models.ph_probe(seed, proc["ph"], times, devices),
        "temperature": models.temperature_probe(seed, proc["temperature"], times, devices),
    }


def evaluate(scn: Scenario, devices, times) -> Series:
    """The readings of ``devices`` at ``times`` under scenario ``scn``.

    Parameters
    ----------
    scn : Scenario
    devices : array_like of int, shape (n_devices,)
        Device indices (0-based); a device's readings do not depend on the others.
    times : array_like of float, shape (n_times,)
        Epoch times [s]; any spacing, any order.

    Returns
    -------
    Series
    """
    devices = np.atleast_1d(np.asarray(devices, dtype=np.int64))
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    nd, nt = len(devices), len(times)
    values = _measure(scn, devices, times)
    faults = {s: np.zeros((nd, nt), dtype=bool) for s in SENSORS}
    silent = np.zeros((nd, nt), dtype=bool)
    modbus_error = np.zeros((nd, nt), dtype=np.uint8)
    payload = np.zeros((nd, len(SENSORS), nt), dtype=np.uint8)
    maintenance = np.zeros((nd, nt), dtype=bool)
    offsets = times - scn.start
    claimed = []
    for ev in scn.events:
        claimed.append({"kind": ev.kind, "parameter": ev.parameter,
                        "start": scn.start + ev.start_s, "end": scn.start + ev.start_s + ev.duration_s,
                        "devices": None if ev.devices is None else list(ev.devices),
                        **({"reason": ev.reason} if ev.kind == "maintenance" else {})})
        if ev.kind == "maintenance":
            maintenance[np.ix_(ev.mask(devices), ev.active(offsets))] = True
        if ev.kind in ("set", "scale", "maintenance"):
            continue
        m = ev.mask(devices)
        a = ev.active(offsets)
        if not m.any() or not a.any():
            continue
        sel = np.ix_(m, a)
        if ev.kind == "flatline":
            frozen = _measure(scn, devices[m], np.array([scn.start + ev.start_s]))[ev.parameter]
            values[ev.parameter][sel] = np.broadcast_to(frozen, (m.sum(), a.sum()))
        elif ev.kind == "reads":
            values[ev.parameter][sel] = ev.value
        elif ev.kind == "drift":
            values[ev.parameter][sel] += ev.rate_per_h * (offsets[a] - ev.start_s)[None, :] / 3600.0
        elif ev.kind == "spikes":
            ticks = models.seconds(times[a])
            u = models.uniform(scn.seed, devices[m], models.CH_SPIKE, ticks)
            sign = np.where(models.uniform(scn.seed, devices[m], models.CH_SPIKE_SIGN, ticks) < 0.5, -1.0, 1.0)
            hit = u < ev.rate_per_h / 3600.0
            values[ev.parameter][sel] += np.where(hit, sign * ev.magnitude, 0.0)
        elif ev.kind == "dropout":
            values[ev.parameter][sel] = np.nan
            faults[ev.parameter][sel] = True
        elif ev.kind == "comms_loss":
            silent[sel] = True
        elif ev.kind == "modbus_error":
            modbus_error[sel] = ev.code
        elif ev.kind == "bad_payload":
            idx = [SENSORS.index(ev.parameter)] if ev.parameter else list(range(len(SENSORS)))
            for j in idx:
                payload[:, j, :][sel] = ev.variant
    if "ph" in values:
        values["ph"] = np.clip(values["ph"], 0.0, 14.0)
    return Series(times=times, devices=devices, sites=tuple(scn.site(int(d)) for d in devices),
                  values=values, faults=faults, silent=silent, modbus_error=modbus_error,
                  payload=payload, events=claimed, maintenance=maintenance)


def maintenance_messages(scn: Scenario, devices, t0: float, t1: float) -> list[tuple[float, int, dict]]:
    """The maintenance messages the devices publish in ``(t0, t1]`` of simulated time (the
    events of kind ``maintenance``): ``(time [epoch s], device index, payload dict)`` in time
    order, a ``start`` at the event's beginning and an ``end`` at its end (the payload of
    ingest/mqtt/maintenance.py, ``t`` in epoch milliseconds)."""
    devices = np.atleast_1d(np.asarray(devices, dtype=np.int64))
    out = []
    for ev in scn.events:
        if ev.kind != "maintenance":
            continue
        sensors = [ev.parameter] if ev.parameter else None
        for state, at in (("start", scn.start + ev.start_s), ("end", scn.start + ev.start_s + ev.duration_s)):
            if not t0 < at <= t1:
                continue
            for i in np.flatnonzero(ev.mask(devices)).tolist():
                body = {"state": state, "t": int(round(at * 1000))}
                if state == "start":
                    body.update(reason=ev.reason, by="sewerwatch simulator")
                if sensors:
                    body["sensors"] = sensors
                out.append((at, i, body))
    out.sort(key=lambda x: (x[0], x[1]))
    return out
