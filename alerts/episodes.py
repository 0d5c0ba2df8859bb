"""Episode openings and closings from the streaming evaluator, for every site's pack.

:class:`LiveEpisodes` holds one :class:`limits.streaming.StreamingEvaluator` per rule pack
(sites may use different packs) and turns each batch into the episodes that *opened*
(seen in ``open_episodes()`` for the first time: an alert must go out while the violation
lasts, not after) and those that *closed* (returned by ``push``). An episode that opens and
closes within one batch is reported in both lists. A slug episode opens only once it has
lasted longer than the rule's minimum duration (the evaluator reports nothing shorter).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from limits.evaluator import NO_BASELINE, SensorMeta, violations
from limits.packs import load_pack
from limits.permit_store import current_permits
from limits.permits import continuous, site_rules
from limits.streaming import StreamingEvaluator


@dataclass(frozen=True)
class SensorInfo:
    id: int
    site_id: int
    site: str
    name: str
    parameter: str
    interval_s: float | None
    pack: str
    permit: object = None        # the site's current discharge permit (limits.permits.Permit) or None


#: Readings of a sensor without a nominal interval held back to learn it (5 spacings).
LEARN_READINGS = 6

SENSORS_SQL = """SELECT se.id, si.id, si.key, se.name, se.parameter, se.interval_s, si.pack
                 FROM sensors se JOIN sites si ON si.id = se.site_id ORDER BY se.id"""


def sensors_from_db(conn) -> list[SensorInfo]:
    """Every sensor with its site, the site's pack and its current discharge permit."""
    permits = current_permits(conn)
    return [SensorInfo(*r, permit=permits.get(r[2])) for r in conn.execute(SENSORS_SQL).fetchall()]


class LiveEpisodes:
    """Streaming evaluation of every sensor by its site's pack.

    Parameters
    ----------
    sensors : list of SensorInfo
        The sensors that may report (others are ignored).
    """

    def __init__(self, sensors: list[SensorInfo]):
        self.sensors = {s.id: s for s in sensors}
        # one evaluator per rule set: a pack, or a pack merged with a site's permit (the
        # stricter of the two; limits.permits.site_rules)
        sets = sorted({(s.pack, s.permit.number if s.permit else "") for s in sensors})
        permit_of = {(s.pack, s.permit.number): s.permit for s in sensors if s.permit}
        self.packs = [load_pack(p) for p, _ in sets]
        self.rules = [continuous(site_rules(pk, permit_of.get(k))) for pk, k in zip(self.packs, sets)]
        self.meta = [{s.id: SensorMeta(s.parameter, s.interval_s, s.site, s.name,
                                       normal=s.permit.normal_flow_gpm if s.permit and s.parameter == "flow" else None)
                      for s in sensors if (s.pack, s.permit.number if s.permit else "") == k} for k in sets]
        self.evaluators = [StreamingEvaluator(r, m) for r, m in zip(self.rules, self.meta)]
        top = max(self.sensors, default=0) + 1
        self.pack_of = np.full(top, -1, dtype=np.int32)
        for s in sensors:
            self.pack_of[s.id] = sets.index((s.pack, s.permit.number if s.permit else ""))
        self._open: list[set] = [set() for _ in sets]
        self.ignored = 0
        self._learning = {s.id: [] for s in sensors if not s.interval_s}   # sensor -> held batches
        self.learned: dict[int, float] = {}    # sensor -> interval [s] learned, not yet stored

    def push(self, sensor, time_us, value, quality) -> tuple[list[dict], list[dict]]:
        """Evaluate a batch; return the violation records that opened and that closed.

        Records are :func:`limits.evaluator.violations` records with ``sensor_id`` and
        ``site_id`` added.
        """
        sensor = np.asarray(sensor, dtype=np.int64)
        time_us, value, quality = np.asarray(time_us), np.asarray(value), np.asarray(quality)
        if self._learning:
            sensor, time_us, value, quality = self._learn(sensor, time_us, value, quality)
        known = (sensor >= 0) & (sensor < len(self.pack_of))
        pk = np.full(len(sensor), -1, dtype=np.int32)
        pk[known] = self.pack_of[sensor[known]]
        self.ignored += int((pk < 0).sum())
        opened, closed = [], []
        for k, ev in enumerate(self.evaluators):
            m = pk == k
            if not m.any():
                continue
            done = ev.push(sensor[m], time_us[m], value[m], quality[m])
            still = ev.open_episodes()
            keys_now = {(int(e["sensor"]), int(e["rule"]), int(e["start"])) for e in still}
            new_open = [i for i, e in enumerate(still)
                        if (int(e["sensor"]), int(e["rule"]), int(e["start"])) not in self._open[k]]
            done_new = [i for i, e in enumerate(done)
                        if (int(e["sensor"]), int(e["rule"]), int(e["start"])) not in self._open[k]]
            if new_open:
                opened += self._records(k, still[new_open])
            if done_new:
                opened += self._records(k, done[done_new])
            if len(done):
                closed += self._records(k, done)
            self._open[k] = keys_now
        return opened, closed

    def _learn(self, sensor, time_us, value, quality):
        """Hold back the readings of sensors still learning their interval; release a
        sensor's readings (with this batch's) once it has enough to know it."""
        learning = np.isin(sensor, list(self._learning))
        if not learning.any():
            return sensor, time_us, value, quality
        released = []
        for c in np.unique(sensor[learning]).tolist():
            m = sensor == c
            held = self._learning[c]
            held.append((time_us[m], value[m], quality[m]))
            times = np.unique(np.concatenate([h[0] for h in held]))
            if len(times) < LEARN_READINGS:
                continue
            interval_us = int(np.median(np.diff(times)))
            interval_s = round(interval_us / 1000) / 1000          # whole milliseconds
            if interval_s <= 0:
                continue
            self._set_interval(c, interval_s)
            del self._learning[c]
            released.append((c, held))
        keep = ~learning
        parts = [(sensor[keep], time_us[keep], value[keep], quality[keep])]
        for c, held in released:
            t = np.concatenate([h[0] for h in held])
            parts.append((np.full(len(t), c, dtype=np.int64), t, np.concatenate([h[1] for h in held]),
                          np.concatenate([h[2] for h in held])))
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))

    def _set_interval(self, c: int, interval_s: float) -> None:
        k = self.pack_of[c]
        meta = replace(self.meta[k][c], interval_s=interval_s)
        self.meta[k][c] = meta
        self.evaluators[k].meta[c] = meta
        self.learned[c] = interval_s

    @property
    def learning(self) -> list[int]:
        """Sensors whose readings are held back until their interval is known."""
        return sorted(self._learning)

    def open_records(self) -> list[dict]:
        """Every episode still open, as records (its latest peak and last reading)."""
        out = []
        for k, ev in enumerate(self.evaluators):
            still = ev.open_episodes()
            if len(still):
                out += self._records(k, still)
        return out

    def _records(self, k: int, eps) -> list[dict]:
        recs = violations(eps, self.rules[k], self.packs[k], self.meta[k])
        for r, e in zip(recs, eps):
            s = self.sensors[int(e["sensor"])]
            r["sensor_id"], r["site_id"] = s.id, s.site_id
        return recs

    def without_baseline(self) -> list[dict]:
        """Sensors whose slug cannot be judged yet: fewer than 24 hours of readings and no
        permitted average flow (``sewerwatch status``: "slug not judged: no baseline yet")."""
        out = []
        for ev in self.evaluators:
            for c in ev.without_baseline():
                s = self.sensors[c]
                out.append({"sensor_id": s.id, "site": s.site, "sensor": s.name, "note": NO_BASELINE})
        return sorted(out, key=lambda x: (x["site"], x["sensor"]))

    @property
    def dropped_late(self) -> int:
        return sum(ev.dropped_late for ev in self.evaluators)
