"""Episode openings and closings from the streaming evaluator, for every site's pack.

:class:`LiveEpisodes` holds one :class:`limits.streaming.StreamingEvaluator` per rule pack
(sites may use different packs) and turns each batch into the episodes that *opened*
(seen in ``open_episodes()`` for the first time: an alert must go out while the violation
lasts, not after) and those that *closed* (returned by ``push``). An episode that opens and
closes within one batch is reported in both lists. A slug episode opens only once it has
lasted longer than the rule's minimum duration (the evaluator reports nothing shorter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from limits.evaluator import SensorMeta, violations
from limits.packs import load_pack
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


SENSORS_SQL = """SELECT se.id, si.id, si.key, se.name, se.parameter, se.interval_s, si.pack
                 FROM sensors se JOIN sites si ON si.id = se.site_id ORDER BY se.id"""


def sensors_from_db(conn) -> list[SensorInfo]:
    """Every sensor with its site and the site's pack."""
    return [SensorInfo(*r) for r in conn.execute(SENSORS_SQL).fetchall()]


class LiveEpisodes:
    """Streaming evaluation of every sensor by its site's pack.

    Parameters
    ----------
    sensors : list of SensorInfo
        The sensors that may report (others are ignored).
    """

    def __init__(self, sensors: list[SensorInfo]):
        self.sensors = {s.id: s for s in sensors}
        packs = sorted({s.pack for s in sensors})
        self.packs = [load_pack(p) for p in packs]
        self.rules = [tuple(p.continuous_rules()) for p in self.packs]
        self.meta = [{s.id: SensorMeta(s.parameter, s.interval_s, s.site, s.name) for s in sensors
                      if s.pack == p} for p in packs]
        self.evaluators = [StreamingEvaluator(r, m) for r, m in zip(self.rules, self.meta)]
        top = max(self.sensors, default=0) + 1
        self.pack_of = np.full(top, -1, dtype=np.int32)
        for s in sensors:
            self.pack_of[s.id] = packs.index(s.pack)
        self._open: list[set] = [set() for _ in packs]
        self.ignored = 0

    def push(self, sensor, time_us, value, quality) -> tuple[list[dict], list[dict]]:
        """Evaluate a batch; return the violation records that opened and that closed.

        Records are :func:`limits.evaluator.violations` records with ``sensor_id`` and
        ``site_id`` added.
        """
        sensor = np.asarray(sensor, dtype=np.int64)
        known = (sensor >= 0) & (sensor < len(self.pack_of))
        pk = np.full(len(sensor), -1, dtype=np.int32)
        pk[known] = self.pack_of[sensor[known]]
        self.ignored += int((pk < 0).sum())
        opened, closed = [], []
        for k, ev in enumerate(self.evaluators):
            m = pk == k
            if not m.any():
                continue
            done = ev.push(sensor[m], np.asarray(time_us)[m], np.asarray(value)[m], np.asarray(quality)[m])
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

    def _records(self, k: int, eps) -> list[dict]:
        recs = violations(eps, self.rules[k], self.packs[k], self.meta[k])
        for r, e in zip(recs, eps):
            s = self.sensors[int(e["sensor"])]
            r["sensor_id"], r["site_id"] = s.id, s.site_id
        return recs

    @property
    def dropped_late(self) -> int:
        return sum(ev.dropped_late for ev in self.evaluators)
