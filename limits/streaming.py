"""Streaming evaluation: batches as they arrive, the same episodes as the batch evaluator.

:class:`StreamingEvaluator` keeps, per sensor, only what later readings can still need:

* the readings of the last ``window`` (24 h for a slug rule) before the sensor's latest
  reading, and one before that (it holds into the window), each with the trailing average
  computed when it arrived (a reading's average depends only on earlier readings, so it is
  final once computed);
* every reading of an episode that is still open (its last reading is the sensor's latest),
  and a window of history before it;
* the sensor's first usable reading ever (a slug needs a full window of history), its
  latest reading time, and per rule the last episode already reported.

An episode is reported once it is closed: a later usable reading of the sensor exists, so
its end and (for a slug) its duration are known. :meth:`StreamingEvaluator.flush` closes
the rest at the end of the data, as the batch evaluator does at the end of its arrays.
With the sensors' nominal intervals given, the reported episodes equal
:func:`limits.evaluator.evaluate` on the concatenated batches, bit for bit, whatever the
batch boundaries (``tests/test_limits_streaming.py`` checks this property with hypothesis).

Readings must arrive in time order per sensor: a reading at or before the latest time
already seen for its sensor is dropped and counted in ``dropped_late``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from limits import core
from limits.evaluator import DEFAULT_GAP_MULTIPLE, SensorMeta, prepare, rule_episodes, sensor_segments
from limits.packs import Pack, Rule

_NEG = np.iinfo(np.int64).min


class StreamingEvaluator:
    """Evaluate continuous rules over batches of readings, keeping per-sensor state.

    Parameters
    ----------
    rules : Pack or sequence of Rule
        As for :func:`limits.evaluator.evaluate`; episodes' ``rule`` indexes this sequence.
    meta : mapping of sensor code to SensorMeta
        Every sensor that may appear. A sensor without ``interval_s`` gets the median
        spacing of its first batch (then fixed; give the interval for exact equivalence).
    gap_multiple : float
        A gap longer than this many sample intervals ends an episode.
    """

    def __init__(self, rules: Pack | Sequence[Rule], meta: Mapping[int, SensorMeta],
                 gap_multiple: float = DEFAULT_GAP_MULTIPLE):
        self.rules = tuple(rules.continuous_rules()) if isinstance(rules, Pack) else tuple(rules)
        self.meta = dict(meta)
        self.gap_multiple = gap_multiple
        self.window = max((int(round(r.window_h * core.HOUR_US)) for r in self.rules
                           if r.kind == "slug"), default=0)
        self._s = np.empty(0, dtype=np.int64)
        self._t = np.empty(0, dtype=np.int64)
        self._v = np.empty(0, dtype=np.float64)
        self._avg = {i: np.empty(0) for i, r in enumerate(self.rules) if r.kind == "slug"}
        self._first: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._gap: dict[int, int] = {}
        self._mark: dict[tuple[int, int], int] = {}
        self._open = np.empty(0, dtype=core.EPISODE_DTYPE)
        self.dropped_late = 0

    # -- public -----------------------------------------------------------------------

    def push(self, sensor, time, value, quality=None) -> np.ndarray:
        """Add a batch; return the episodes it closed (EPISODE_DTYPE, by sensor, start).

        Parameters
        ----------
        sensor, time, value, quality : array_like
            Sensor codes, [us UTC], [canonical unit], quality (0 good) or None; any order.
        """
        sensor = np.asarray(sensor, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64)
        ok = core.valid_mask(value, quality)
        s, t, v, _ = prepare(sensor[ok], np.asarray(time, dtype=np.int64)[ok], value[ok])
        if len(t):
            starts, codes, seg = sensor_segments(s)
            last = np.array([self._last.get(c, _NEG) for c in codes.tolist()], dtype=np.int64)
            fresh = t > last[seg]
            self.dropped_late += int((~fresh).sum())
            if not fresh.all():
                s, t, v = s[fresh], t[fresh], v[fresh]
                starts, codes, seg = sensor_segments(s)
        if len(t):
            ends = np.append(starts[1:], len(t)) - 1
            for c, a, b in zip(codes.tolist(), t[starts].tolist(), t[ends].tolist()):
                self._first.setdefault(c, a)
                self._last[c] = b
            self._learn_intervals(s, t, codes)
        return self._step(s, t, v, final=False)

    def flush(self) -> np.ndarray:
        """Close every open episode at the end of the data and return those not yet reported."""
        e = np.empty(0, dtype=np.int64)
        return self._step(e, e, np.empty(0), final=True)

    def open_episodes(self) -> np.ndarray:
        """Episodes still open after the last push (a slug here may still be too short)."""
        return self._open.copy()

    @property
    def kept_readings(self) -> int:
        """Readings held in state (the memory the evaluator needs)."""
        return len(self._t)

    # -- internals --------------------------------------------------------------------

    def _learn_intervals(self, s, t, codes):
        unknown = [c for c in codes.tolist() if c not in self._gap]
        if not unknown:
            return
        med_codes, med = core.median_interval(s, t)
        med_of = dict(zip(med_codes.tolist(), med.tolist()))
        for c in unknown:
            m = self.meta[c]
            iv = int(round(m.interval_s * core.US)) if m.interval_s else med_of.get(c, 0)
            self._gap[c] = int(np.rint(self.gap_multiple * iv))

    def _step(self, s, t, v, final: bool) -> np.ndarray:
        n_old = len(self._t)
        S = np.concatenate([self._s, s])
        T = np.concatenate([self._t, t])
        V = np.concatenate([self._v, v])
        order = np.argsort(S, kind="stable")       # tail readings are older within a sensor
        S, T, V = S[order], T[order], V[order]
        is_new = order >= n_old
        n = len(T)
        if n == 0:
            return np.empty(0, dtype=core.EPISODE_DTYPE)
        starts, codes, seg = sensor_segments(S)
        clist = codes.tolist()
        gap_seg = np.array([self._gap[c] for c in clist], dtype=np.int64)
        max_gap = gap_seg[seg]
        brk = core.segment_starts(S, T, max_gap)
        hist = np.array([self._first[c] for c in clist], dtype=np.int64)[seg]
        last_idx = np.append(starts[1:], n) - 1          # each sensor's latest reading
        params = [self.meta[c].parameter for c in clist]

        emitted, still_open = [], []
        open_start = T[last_idx].copy()                 # per sensor: keep from here (min)
        new_avg = {}
        for ri, rule in enumerate(self.rules):
            applies = np.array([rule.applies_to(p) for p in params], dtype=bool)
            if not applies.any():
                if rule.kind == "slug":
                    new_avg[ri] = np.full(n, np.nan)
                continue
            m = applies[seg]
            idx = np.flatnonzero(m)
            sub = (S[idx], T[idx], V[idx], brk[idx], max_gap[idx])
            avg = None
            if rule.kind == "slug":
                old_avg = np.full(n, np.nan)
                stored = self._avg[ri]
                old_avg[~is_new] = stored[order[~is_new]]
                computed = core.trailing_time_weighted_average(
                    sub[0], sub[1], sub[2], int(round(rule.window_h * core.HOUR_US)), sub[4],
                    history_start=hist[idx])
                avg = np.where(is_new[idx], computed, old_avg[idx])
                full = np.full(n, np.nan)
                full[idx] = avg
                new_avg[ri] = full
            eps, _, flag = rule_episodes(ri, rule, *sub[:4], sub[4], history_start=hist[idx], avg=avg)
            # open runs: those reaching the sensor's latest reading
            if not final:
                first, lastr = core.runs(flag, sub[3])
                if len(first):
                    sidx = idx[lastr]
                    at_end = sidx == last_idx[seg[sidx]]
                    if at_end.any():
                        np.minimum.at(open_start, seg[sidx[at_end]], T[idx[first[at_end]]])
            if len(eps):
                code_last = dict(zip(clist, T[last_idx].tolist()))
                closed = np.array([final or e_last < code_last[c]
                                   for c, e_last in zip(eps["sensor"].tolist(), eps["last"].tolist())],
                                  dtype=bool)
                mark = np.array([self._mark.get((c, ri), _NEG) for c in eps["sensor"].tolist()],
                                dtype=np.int64)
                fresh_ep = eps["start"] > mark
                out = eps[closed & fresh_ep]
                for c, e_last in zip(out["sensor"].tolist(), out["last"].tolist()):
                    self._mark[(c, ri)] = max(self._mark.get((c, ri), _NEG), e_last)
                emitted.append(out)
                still_open.append(eps[~closed & fresh_ep])

        self._open = (np.concatenate(still_open) if still_open
                      else np.empty(0, dtype=core.EPISODE_DTYPE))
        # trim the state: per sensor keep [min(open start, latest) - window, ...] and the
        # reading before that (it holds into the window)
        keep_from = open_start - self.window
        keep = T >= keep_from[seg]
        keep[:-1] |= keep[1:] & (S[1:] == S[:-1])
        if final:
            keep[:] = True
        self._s, self._t, self._v = S[keep], T[keep], V[keep]
        for ri in self._avg:
            self._avg[ri] = new_avg.get(ri, np.full(n, np.nan))[keep]
        out = (np.concatenate(emitted) if emitted else np.empty(0, dtype=core.EPISODE_DTYPE))
        order2 = np.lexsort((out["rule"], out["start"], out["sensor"]))
        return out[order2]
