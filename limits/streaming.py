"""Streaming evaluation: batches as they arrive, the same episodes as the batch evaluator.

:class:`StreamingEvaluator` keeps, per sensor, only what later readings can still need:

* for a sensor a slug rule judges, the readings of the last ``window`` (24 h) before its
  latest reading, and one before that (it holds into the window), each with the trailing
  average computed when it arrived (a reading's average depends only on earlier readings,
  so it is final once computed);
* every reading of an episode that is still open (its last reading is the sensor's latest),
  and a window of history before it;
* the sensor's first usable reading ever (a slug needs a full window of history), its
  latest reading time, and per rule the last episode already reported.

An episode is reported once it is closed: a later usable reading of the sensor exists, or
(with ``now`` given to :meth:`StreamingEvaluator.push`) the sensor has been silent longer
than its gap limit, so its end and (for a slug) its duration are known. :meth:`StreamingEvaluator.flush` closes
the rest at the end of the data, as the batch evaluator does at the end of its arrays.
With the sensors' nominal intervals given, the reported episodes equal
:func:`limits.evaluator.evaluate` on the concatenated batches, bit for bit, whatever the
batch boundaries (``tests/test_limits_streaming.py`` checks this property with hypothesis).

Cost: the slug averages of new readings come from running integer sums kept with the
state (:func:`limits.core.extend_running_sums`, :func:`limits.core.window_average_at`), so
no arithmetic runs over the kept history; rules run over the active part only. What
remains in proportion to the kept state is copying it (about 25 ns per kept reading a
push on the benchmark machine). A flow sensor read every minute keeps 1,440 readings; one
read every second, 86,400.

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
        self._P = np.empty(0, dtype=np.int64)     # running sums for the slug averages
        self._H = np.empty(0, dtype=np.int64)
        self._trimmed_size = 0
        self._avg = {i: np.empty(0) for i, r in enumerate(self.rules) if r.kind == "slug"}
        self._first: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._gap: dict[int, int] = {}
        self._mark: dict[tuple[int, int], int] = {}
        self._active: dict[int, int] = {}
        self._open = np.empty(0, dtype=core.EPISODE_DTYPE)
        self.dropped_late = 0

    # -- public -----------------------------------------------------------------------

    def push(self, sensor, time, value, quality=None, now: int | None = None) -> np.ndarray:
        """Add a batch; return the episodes it closed (EPISODE_DTYPE, by sensor, start).

        Parameters
        ----------
        sensor, time, value, quality : array_like
            Sensor codes, [us UTC], [canonical unit], quality (0 good) or None; any order.
        now : int, optional
            The current time [us UTC]. An episode of a sensor silent for longer than its gap
            limit before ``now`` is closed too: whatever reading comes next comes after a
            gap and ends it, so its end is already known (``end = last``).
        """
        sensor = np.asarray(sensor, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64)
        quality = np.zeros(len(sensor), dtype=np.int16) if quality is None else np.asarray(quality)
        # as the batch evaluator: sort, drop repeated (sensor, time) keeping the first, then
        # skip NaN and bad quality
        s, t, v, q = prepare(sensor, np.asarray(time, dtype=np.int64), value, quality)
        if len(t):
            starts, codes, seg = sensor_segments(s)
            last = np.array([self._last.get(c, _NEG) for c in codes.tolist()], dtype=np.int64)
            fresh = t > last[seg]
            self.dropped_late += int((~fresh).sum())
            if not fresh.all():
                s, t, v, q = s[fresh], t[fresh], v[fresh], q[fresh]
        if len(t):
            starts, codes, _ = sensor_segments(s)
            ends = np.append(starts[1:], len(t)) - 1
            for c, b in zip(codes.tolist(), t[ends].tolist()):
                self._last[c] = b
            ok = core.valid_mask(v, q)
            s, t, v = s[ok], t[ok], v[ok]
        if len(t):
            starts, codes, _ = sensor_segments(s)
            for c, a in zip(codes.tolist(), t[starts].tolist()):
                self._first.setdefault(c, a)
            self._learn_intervals(s, t, codes)
        return self._step(s, t, v, final=False, now=now)

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

    def _step(self, s, t, v, final: bool, now: int | None = None) -> np.ndarray:
        # merge the batch into the sorted state: a new reading is later than every kept
        # reading of its sensor, so it goes after them (np.insert keeps the batch's order)
        if len(t):
            pos = np.searchsorted(self._s, s, side="right")
            S = np.insert(self._s, pos, s)
            T = np.insert(self._t, pos, t)
            V = np.insert(self._v, pos, v)
            is_new = np.zeros(len(T), dtype=bool)
            is_new[pos + np.arange(len(pos))] = True
            stored = {ri: np.insert(a, pos, np.nan) for ri, a in self._avg.items()}
            P = np.insert(self._P, pos, 0)
            H = np.insert(self._H, pos, 0)
        else:
            S, T, V = self._s, self._t, self._v
            is_new = np.zeros(len(T), dtype=bool)
            stored = dict(self._avg)
            P, H = self._P, self._H
        n = len(T)
        if n == 0:
            return np.empty(0, dtype=core.EPISODE_DTYPE)
        new = core._sensor_segments(S)
        starts = np.flatnonzero(new)
        codes = S[starts]
        clist = codes.tolist()
        seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
        last_idx = np.append(starts[1:], n) - 1          # each sensor's latest reading
        gap_seg = np.array([self._gap[c] for c in clist], dtype=np.int64)
        params = [self.meta[c].parameter for c in clist]
        fresh = np.flatnonzero(is_new)
        if self._avg and len(fresh):
            core.extend_running_sums(S, T, V, gap_seg[seg], P, H, fresh)

        # the active part: from each sensor's earliest open run (or its latest reading
        # before this batch) on; older readings are history for the averages only
        act_from = np.array([self._active.get(c, _NEG) for c in clist], dtype=np.int64)
        aidx = np.flatnonzero(T >= act_from[seg])
        aS, aT, aV, aseg = S[aidx], T[aidx], V[aidx], seg[aidx]
        a_gap = gap_seg[aseg]
        abrk = core.segment_starts(aS, aT, a_gap)
        first_active = np.ones(len(aidx), dtype=bool)
        first_active[1:] = aseg[1:] != aseg[:-1]
        abrk |= first_active
        # (a run that truly began before the active part was reported already: its start
        # here is not after the rule's mark, so it is not reported twice)
        latest = T[last_idx]
        eseg_of = lambda e: np.searchsorted(codes, e["sensor"])  # noqa: E731

        emitted, still_open = [], []
        open_start = latest.copy()                      # per sensor: keep from here (min)
        new_avg = {}
        for ri, rule in enumerate(self.rules):
            applies = np.array([rule.applies_to(p) for p in params], dtype=bool)
            if rule.kind == "slug":
                avg_all = stored[ri]
                fresh_app = fresh[applies[seg[fresh]]] if len(fresh) else fresh
                if len(fresh_app):
                    fseg = seg[fresh_app]
                    hist = np.array([self._first[c] for c in clist], dtype=np.int64)[fseg]
                    avg_all[fresh_app] = core.window_average_at(
                        T, V, P, H, fresh_app, starts[fseg], int(round(rule.window_h * core.HOUR_US)),
                        gap_seg[fseg], hist)
                new_avg[ri] = avg_all
            if not applies.any():
                continue
            am = applies[aseg]
            sub_idx = np.flatnonzero(am)
            sub = (aS[sub_idx], aT[sub_idx], aV[sub_idx], abrk[sub_idx], a_gap[sub_idx])
            avg = new_avg[ri][aidx[sub_idx]] if rule.kind == "slug" else None
            eps, _, flag = rule_episodes(ri, rule, *sub, avg=avg)
            if not final:
                first, lastr = core.runs(flag, sub[3])
                if len(first):
                    gidx = aidx[sub_idx[lastr]]
                    at_end = gidx == last_idx[seg[gidx]]
                    if at_end.any():
                        np.minimum.at(open_start, seg[gidx[at_end]], aT[sub_idx[first[at_end]]])
            if len(eps):
                es = eseg_of(eps)
                closed = np.full(len(eps), True) if final else eps["last"] < latest[es]
                if now is not None:
                    closed |= (now - latest[es]) > gap_seg[es]
                mark_seg = np.array([self._mark.get((c, ri), _NEG) for c in clist], dtype=np.int64)
                fresh_ep = eps["start"] > mark_seg[es]
                out = eps[closed & fresh_ep]
                if len(out):
                    np.maximum.at(mark_seg, es[closed & fresh_ep], out["last"])
                    for c, mk in zip(clist, mark_seg.tolist()):
                        if mk != _NEG:
                            self._mark[(c, ri)] = mk
                emitted.append(out)
                still_open.append(eps[~closed & fresh_ep])

        self._open = (np.concatenate(still_open) if still_open
                      else np.empty(0, dtype=core.EPISODE_DTYPE))
        # trim the state: per sensor keep [min(open start, latest) - window, ...] and the
        # reading before that (it holds into the window); only sensors judged by a slug rule
        # need a window of history. Keeping more is harmless, so the copy is made only once
        # the state has grown by a quarter since the last trim.
        if not final and n > self._trimmed_size + max(self._trimmed_size // 4, 1024):
            win = np.array([max((int(round(r.window_h * core.HOUR_US)) for r in self.rules
                                 if r.kind == "slug" and r.applies_to(p)), default=0) for p in params],
                           dtype=np.int64)
            keep = T >= (open_start - win)[seg]
            keep[:-1] |= keep[1:] & (S[1:] == S[:-1])
            S, T, V, P, H = S[keep], T[keep], V[keep], P[keep], H[keep]
            new_avg = {ri: a[keep] for ri, a in new_avg.items()}
            self._trimmed_size = len(T)
        self._s, self._t, self._v, self._P, self._H = S, T, V, P, H
        for ri in self._avg:
            self._avg[ri] = new_avg.get(ri, np.full(len(T), np.nan))
        for c, a_ in zip(clist, open_start.tolist()):
            self._active[c] = a_
        out = (np.concatenate(emitted) if emitted else np.empty(0, dtype=core.EPISODE_DTYPE))
        order2 = np.lexsort((out["rule"], out["start"], out["sensor"]))
        return out[order2]
