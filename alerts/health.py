"""Sensor health from the readings stream: no data for too long, a flat line for too long,
a sensor fault.

:class:`HealthWatch` is fed every batch the collectors put (numpy arrays, one pass per
batch, per-sensor work only over the sensors present) and answers which sensors are
silent, flat or faulty. Silence is judged on the wall clock (when readings last *arrived*),
a flat line on the readings' own times (the value has not changed for longer than the
limit, whatever the speed of a replay). A sensor whose latest reading is implausible
(outside the physically possible range or the sensor's full scale, quality 1) or flagged
by its device (quality 2) has a *sensor fault* from the first reading of that run until a
good reading arrives: one condition, so one alert, per episode (plausibility); such readings are stored but never judged as violations. A reading in a
maintenance window (quality 3) is neither good nor a fault: it shows the sensor is
alive (no "no data") and is left out of the flat line and the faults (a flow meter lifted out
of the flume reads 0 for 20 minutes; a pH probe in a buffer reads 4.00).
"""

from __future__ import annotations

import numpy as np

from foundation.quality import MAINTENANCE

US = 1_000_000


class HealthWatch:
    """Per-sensor arrival and change times.

    Parameters
    ----------
    sensors : iterable of int
        The sensors expected to report (a sensor never heard from counts as silent from
        the moment the watch starts).
    no_data_after_s : float
        Silence [s, wall clock] after which a sensor has "no data".
    flatline_after_s : float
        Time [s, reading time] a value may stay exactly the same before it is a flat line.
    now : float
        The wall clock at start [epoch s].
    """

    def __init__(self, sensors, no_data_after_s: float, flatline_after_s: float, now: float):
        self.no_data_after_s = float(no_data_after_s)
        self.flatline_after_us = int(round(flatline_after_s * US))
        self.arrived: dict[int, float] = {int(s): float(now) for s in sensors}
        self.last_time: dict[int, int] = {}
        self.last_value: dict[int, float] = {}
        self.changed_at: dict[int, int] = {}
        self.fault_seen: dict[int, int] = {}     # latest reading time looked at for faults [us]
        self.faults: dict[int, dict] = {}        # sensor -> {"since" [us], "value", "quality"}

    def observe(self, sensor, time_us, value, quality, now: float) -> None:
        """Add a batch (any order) that arrived at wall time ``now`` [epoch s]."""
        sensor = np.asarray(sensor, dtype=np.int64)
        if len(sensor) == 0:
            return
        time_us = np.asarray(time_us, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64)
        quality = np.asarray(quality)
        ok = np.isfinite(value) & (quality == 0)
        codes = np.unique(sensor)
        for c in codes.tolist():
            self.arrived[c] = now
        judged = quality != MAINTENANCE
        if judged.all():
            self._faults(sensor, time_us, value, quality, ok)
        elif judged.any():
            self._faults(sensor[judged], time_us[judged], value[judged], quality[judged], ok[judged])
        s, t, v = sensor[ok], time_us[ok], value[ok]
        if len(s) == 0:
            return
        order = np.lexsort((t, s))
        s, t, v = s[order], t[order], v[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        ends = np.r_[starts[1:], len(s)] - 1
        ucodes = s[starts].tolist()
        prev = np.empty(len(v))
        prev[1:] = v[:-1]
        prev[starts] = [self.last_value.get(c, np.nan) for c in ucodes]
        # a reading at or before the sensor's latest time is a repeat: never a change
        later = t > np.array([self.last_time.get(c, -1) for c in ucodes], dtype=np.int64)[
            np.repeat(np.arange(len(starts)), ends - starts + 1)]
        changed = (v != prev) & later
        idx = np.where(changed, np.arange(len(v)), -1)
        last_change = np.maximum.reduceat(idx, starts)
        for k, c in enumerate(ucodes):
            lc = int(last_change[k])
            if lc >= 0:
                self.changed_at[c] = int(t[lc])
            elif c not in self.changed_at:
                self.changed_at[c] = int(t[starts[k]])
            if int(t[ends[k]]) > self.last_time.get(c, -1):
                self.last_time[c] = int(t[ends[k]])
                self.last_value[c] = float(v[ends[k]])

    def _faults(self, sensor, time_us, value, quality, ok) -> None:
        """Per sensor in the batch: is its latest reading faulty, and since when (the first
        reading of the faulty run that ends it)? A faulty run that ended within the batch
        is kept as ended, so :meth:`problems` reports it once."""
        order = np.lexsort((time_us, sensor))
        s, t, v, q, good = sensor[order], time_us[order], value[order], quality[order], ok[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        ends = np.r_[starts[1:], len(s)] - 1
        idx = np.arange(len(s))
        last_good = np.maximum.reduceat(np.where(good, idx, -1), starts)
        first_bad = np.minimum.reduceat(np.where(good, len(s), idx), starts)
        run_start = np.maximum(last_good + 1, starts)
        for c, e, r, b in zip(s[starts].tolist(), ends.tolist(), run_start.tolist(), first_bad.tolist()):
            te = int(t[e])
            if te <= self.fault_seen.get(c, -1):
                continue                               # an older batch arriving late
            self.fault_seen[c] = te
            f = self.faults.get(c)
            if good[e]:
                if f is not None:
                    f["ended"] = True
                elif b < len(s):                       # a faulty run came and went in this batch
                    self.faults[c] = {"since": int(t[b]), "value": float(v[b]), "quality": int(q[b]), "ended": True}
            elif f is not None and not f.get("ended"):
                f.update(value=float(v[e]), quality=int(q[e]))
            else:
                self.faults[c] = {"since": int(t[r]), "value": float(v[e]), "quality": int(q[e]), "ended": False}

    def problems(self, now: float) -> dict[tuple[str, int], dict]:
        """Current conditions: ``{(rule, sensor): {"since": epoch s, "detail": text}}`` with
        rule ``no-data``, ``flatline`` or ``sensor-fault``."""
        out = {}
        for c, f in list(self.faults.items()):
            what = (f"reading {f['value']:g} is outside the physically possible range (or the sensor's full scale)"
                    if f["quality"] == 1 else "the device flags a fault or sends no number")
            out[("sensor-fault", c)] = {"since": f["since"] / US, "detail": f"{what}; stored, not judged"}
            if f["ended"]:
                del self.faults[c]                     # reported once: the episode is over
        # copies: the pipeline asks from its loop while a batch is observed in the evaluator's thread
        for c, a in list(self.arrived.items()):
            if now - a > self.no_data_after_s:
                out[("no-data", c)] = {"since": a, "detail": f"no reading for {now - a:.0f} s "
                                       f"(limit {self.no_data_after_s:g} s)"}
        for c, ch in list(self.changed_at.items()):
            last = self.last_time[c]
            if last - ch > self.flatline_after_us and ("no-data", c) not in out:
                out[("flatline", c)] = {"since": ch / US, "detail": f"value {self.last_value[c]:g} unchanged for "
                                        f"{(last - ch) / US:.0f} s of readings (limit {self.flatline_after_us / US:g} s)"}
        return out
