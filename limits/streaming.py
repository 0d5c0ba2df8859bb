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
state (:func:`limits.twa.extend_running_sums`, :func:`limits.twa.window_average_at`), so
no arithmetic runs over the kept history; rules run over the active part only. What
remains in proportion to the kept state is copying it (about 25 ns per kept reading a
push on the benchmark machine). A flow sensor read every minute keeps 1,440 readings; one
read every second, 86,400.

Readings must arrive in time order per sensor: a reading at or before the latest time
already seen for its sensor is dropped and counted in ``dropped_late``. The live path never
lets that happen silently: :class:`alerts.episodes.LiveEpisodes` takes such
readings aside, judges their sensor again from the stored readings with a fresh evaluator
(:mod:`limits.rejudge`), and puts that evaluator's state in place of the sensor's own
(:meth:`StreamingEvaluator.adopt`).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np

from limits import core, twa
from limits.evaluator import (DEFAULT_GAP_MULTIPLE, SensorMeta, prepare, rule_episodes, sensor_normals,
                              sensor_segments)
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
    history_start : mapping of sensor code to int, optional
        Each sensor's first reading ever [us UTC], as :func:`limits.evaluator.evaluate`'s
        ``history_start``: a slug needs a full window of history, and readings given from
        one window before a range's start would otherwise make a sensor look younger
        than it is. Default: the first usable reading pushed.
    """

    def __init__(self, rules: Pack | Sequence[Rule], meta: Mapping[int, SensorMeta],
                 gap_multiple: float = DEFAULT_GAP_MULTIPLE, history_start: Mapping[int, int] | None = None):
        self.rules = tuple(rules.continuous_rules()) if isinstance(rules, Pack) else tuple(rules)
        self.meta = dict(meta)
        self.gap_multiple = gap_multiple
        self.window = max((int(round(r.window_h * core.HOUR_US)) for r in self.rules
                           if r.kind == "slug"), default=0)
        self._s = np.empty(0, dtype=np.int64)
        self._t = np.empty(0, dtype=np.int64)
        self._v = np.empty(0, dtype=np.float64)
        slugs = [i for i, r in enumerate(self.rules) if r.kind == "slug"]
        # per slug rule: running sums of its baseline (readings above its line left out)
        self._P = {i: np.empty(0, dtype=np.int64) for i in slugs}
        self._H = {i: np.empty(0, dtype=np.int64) for i in slugs}
        self._trimmed_size = 0
        self._avg = {i: np.empty(0) for i in slugs}
        self._first: dict[int, int] = dict(history_start or {})
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
        return self._step(s, t, v, final=False, now=now)

    def flush(self) -> np.ndarray:
        """Close every open episode at the end of the data and return those not yet reported."""
        e = np.empty(0, dtype=np.int64)
        return self._step(e, e, np.empty(0), final=True)

    def open_episodes(self) -> np.ndarray:
        """Episodes still open after the last push (a slug here may still be too short)."""
        return self._open.copy()

    def without_baseline(self) -> list[int]:
        """Sensors a slug rule judges that have neither a full window (24 h) of history nor
        a configured normal value (:attr:`SensorMeta.normal`): "slug not judged: no
        baseline yet". Sensors not heard from yet are not listed."""
        if not self.window:
            return []
        out = []
        for c, first in sorted(self._first.items()):
            m = self.meta[c]
            if m.normal is not None:
                continue
            win = max((int(round(r.window_h * core.HOUR_US)) for r in self.rules
                       if r.kind == "slug" and r.applies_to(m.parameter)), default=0)
            if win and self._last.get(c, first) - win < first:
                out.append(c)
        return out

    def latest(self, code: int) -> int | None:
        """The latest reading time pushed for sensor ``code`` [us UTC], or None."""
        return self._last.get(code)

    def latest_many(self, codes) -> np.ndarray:
        """:meth:`latest` of each of ``codes`` [us UTC]; the int64 minimum where none."""
        return np.array([self._last.get(c, _NEG) for c in np.asarray(codes).tolist()], dtype=np.int64)

    def gap_of(self, code: int) -> int | None:
        """Sensor ``code``'s gap limit [us], once its spacing is known."""
        return self._gap.get(code)

    def adopt(self, other: "StreamingEvaluator", codes) -> None:
        """Take ``other``'s state for sensors ``codes`` in place of this evaluator's own.

        ``other`` judged the sensors again from their stored readings (late readings among
        them, :mod:`limits.rejudge`) with the same rules; what it keeps (the readings later
        ones still need, their running sums and baselines, open episodes, the episodes
        already reported) is exactly what this evaluator would hold had the readings come in
        time order. Running sums are only ever differenced within a sensor, so one sensor's
        block may come from another evaluator.
        """
        codes = np.unique(np.asarray(list(codes), dtype=np.int64))
        if not len(codes):
            return
        keep = ~np.isin(self._s, codes)
        take = np.isin(other._s, codes)
        S = np.concatenate([self._s[keep], other._s[take]])
        order = np.argsort(S, kind="stable")      # each sensor's block comes whole from one side
        self._s = S[order]
        self._t = np.concatenate([self._t[keep], other._t[take]])[order]
        self._v = np.concatenate([self._v[keep], other._v[take]])[order]
        for ri in self._P:
            self._P[ri] = np.concatenate([self._P[ri][keep], other._P[ri][take]])[order]
            self._H[ri] = np.concatenate([self._H[ri][keep], other._H[ri][take]])[order]
            self._avg[ri] = np.concatenate([self._avg[ri][keep], other._avg[ri][take]])[order]
        for c in codes.tolist():
            for mine, theirs in ((self._first, other._first), (self._last, other._last),
                                 (self._gap, other._gap), (self._active, other._active)):
                if c in theirs:
                    mine[c] = theirs[c]
                else:
                    mine.pop(c, None)
            for ri in range(len(self.rules)):
                if (c, ri) in other._mark:
                    self._mark[(c, ri)] = other._mark[(c, ri)]
                else:
                    self._mark.pop((c, ri), None)
        opened = np.concatenate([self._open[~np.isin(self._open["sensor"], codes)],
                                 other._open[np.isin(other._open["sensor"], codes)]])
        self._open = opened[np.lexsort((opened["rule"], opened["start"], opened["sensor"]))]
        self._trimmed_size = len(self._t)

    @property
    def kept_readings(self) -> int:
        """Readings held in state (the memory the evaluator needs)."""
        return len(self._t)

    # -- internals --------------------------------------------------------------------

    def _learn_intervals(self, T, starts, ends, clist) -> None:
        """The gap limit of each sensor in the state not known yet: from its nominal
        interval, else from the median spacing of its kept readings, once there are two (a
        first batch that holds one reading of a sensor says nothing about its spacing:
        learning 0 from it would break every episode into single readings). Only the blocks
        of such sensors are looked at."""
        for k, c in enumerate(clist):
            if c in self._gap:
                continue
            m = self.meta[c]
            if m.interval_s:
                self._gap[c] = int(np.rint(self.gap_multiple * int(round(m.interval_s * core.US))))
            elif ends[k] > starts[k]:
                block = T[starts[k]:ends[k] + 1]
                iv = int(core.median_interval(np.zeros(len(block), dtype=np.int64), block)[1][0])
                self._gap[c] = int(np.rint(self.gap_multiple * iv))

    def _step(self, s, t, v, final: bool, now: int | None = None) -> np.ndarray:
        """One evaluation step: merge the batch, judge the active part rule by rule, keep
        what later readings can still need. Returns the episodes closed by this step."""
        st = self._merge(s, t, v)
        if len(st.T) == 0:
            return np.empty(0, dtype=core.EPISODE_DTYPE)
        lay = self._layout(st)
        act = self._active_part(st, lay)
        emitted, still_open = [], []
        open_start = lay.latest.copy()                  # per sensor: keep from here (min)
        new_avg = {}
        for ri, rule in enumerate(self.rules):
            applies = np.array([rule.applies_to(p) for p in lay.params], dtype=bool)
            if rule.kind == "slug":
                new_avg[ri] = self._slug_averages(ri, rule, st, lay, applies)
            if not applies.any():
                continue
            closed, still = self._judge_rule(ri, rule, applies, act, lay, new_avg.get(ri), final, now,
                                             open_start)
            emitted.append(closed)
            still_open.append(still)
        self._open = (np.concatenate(still_open) if still_open
                      else np.empty(0, dtype=core.EPISODE_DTYPE))
        if not final:
            st, new_avg = self._trim(st, lay, open_start, new_avg)
        self._keep(st, lay, open_start, new_avg)
        out = (np.concatenate(emitted) if emitted else np.empty(0, dtype=core.EPISODE_DTYPE))
        return out[np.lexsort((out["rule"], out["start"], out["sensor"]))]

    # -- the steps --------------------------------------------------------------------

    def _merge(self, s, t, v) -> "_Merged":
        """The batch merged into the sorted state. A new reading is later than every kept
        reading of its sensor, so it goes after them (np.insert keeps the batch's order)."""
        if not len(t):
            return _Merged(self._s, self._t, self._v, dict(self._P), dict(self._H),
                           np.zeros(len(self._t), dtype=bool), dict(self._avg))
        pos = np.searchsorted(self._s, s, side="right")
        is_new = np.zeros(len(self._t) + len(t), dtype=bool)
        is_new[pos + np.arange(len(pos))] = True
        return _Merged(np.insert(self._s, pos, s), np.insert(self._t, pos, t), np.insert(self._v, pos, v),
                       {ri: np.insert(a, pos, 0) for ri, a in self._P.items()},
                       {ri: np.insert(a, pos, 0) for ri, a in self._H.items()}, is_new,
                       {ri: np.insert(a, pos, np.nan) for ri, a in self._avg.items()})

    def _layout(self, st: "_Merged") -> "_Layout":
        """Where each sensor's block starts and ends in the merged state, its gap limit and
        parameter, and which readings are new."""
        n = len(st.T)
        starts = np.flatnonzero(core.sensor_block_starts(st.S))
        codes = st.S[starts]
        clist = codes.tolist()
        last_idx = np.append(starts[1:], n) - 1           # each sensor's latest reading
        if any(c not in self._gap for c in clist):        # sensors whose spacing is not known yet
            self._learn_intervals(st.T, starts, last_idx, clist)
        return _Layout(
            starts=starts, codes=codes, clist=clist,
            seg=np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n))),
            last_idx=last_idx, latest=st.T[last_idx],
            gap_seg=np.array([self._gap.get(c, 0) for c in clist], dtype=np.int64),   # 0: one reading so far
            params=[self.meta[c].parameter for c in clist],
            fresh=np.flatnonzero(st.is_new),
            first=np.array([self._first[c] for c in clist], dtype=np.int64),
            normal=sensor_normals(codes, self.meta))

    def _active_part(self, st: "_Merged", lay: "_Layout") -> "_Active":
        """From each sensor's earliest open run (or its latest reading before this batch)
        on; older readings are history for the averages only. A run that truly began
        before the active part was reported already: its start here is not after the
        rule's mark, so it is not reported twice."""
        act_from = np.array([self._active.get(c, _NEG) for c in lay.clist], dtype=np.int64)
        aidx = np.flatnonzero(st.T >= act_from[lay.seg])
        aS, aT, aseg = st.S[aidx], st.T[aidx], lay.seg[aidx]
        a_gap = lay.gap_seg[aseg]
        abrk = core.segment_starts(aS, aT, a_gap)
        first_active = np.ones(len(aidx), dtype=bool)
        first_active[1:] = aseg[1:] != aseg[:-1]
        return _Active(aidx, aS, aT, st.V[aidx], aseg, a_gap, abrk | first_active)

    def _slug_averages(self, ri: int, rule: Rule, st: "_Merged", lay: "_Layout", applies) -> np.ndarray:
        """The baselines of the slug rule ``ri`` for every kept reading: stored ones are
        final; the new readings' come from the rule's running sums, leaving out readings
        above the slug line (:func:`limits.twa.normal_operation_average`). Which new
        readings are above depends on the new readings before them, so the new readings
        are solved by the same fixed-point rounds as the batch (one or two a batch)."""
        avg_all = st.avg[ri]
        fresh = lay.fresh
        fresh_app = fresh[applies[lay.seg[fresh]]] if len(fresh) else fresh
        if not len(fresh_app):
            return avg_all
        window = int(round(rule.window_h * core.HOUR_US))
        P, H = st.P[ri], st.H[ri]
        fseg = lay.seg[fresh_app]
        hist, gap = lay.first[fseg], lay.gap_seg[fseg]
        normal = lay.normal[fseg]
        configured = np.isfinite(normal) & (hist > st.T[fresh_app] - window)
        above = core.exceeds(st.V, rule.multiple * avg_all, rule.op)     # new readings: NaN, not above
        while True:
            twa.extend_running_sums(st.S, st.T, st.V, lay.gap_seg[lay.seg], P, H, fresh_app, exclude=above)
            a = twa.window_average_at(st.T, st.V, P, H, fresh_app, lay.starts[fseg], window, gap, hist,
                                       exclude=above)
            a[configured] = normal[configured]
            now_above = core.exceeds(st.V[fresh_app], rule.multiple * a, rule.op)
            if np.array_equal(now_above, above[fresh_app]):
                break
            above[fresh_app] = now_above
        avg_all[fresh_app] = a
        return avg_all

    def _configured(self, ri: int, rule: Rule, lay: "_Layout", idx, T) -> np.ndarray:
        """Per reading ``idx``: whether its slug baseline is the configured normal value."""
        seg = lay.seg[idx]
        return np.isfinite(lay.normal[seg]) & (lay.first[seg] > T - int(round(rule.window_h * core.HOUR_US)))

    def _judge_rule(self, ri: int, rule: Rule, applies, act: "_Active", lay: "_Layout", avg_all,
                    final: bool, now: int | None, open_start) -> tuple[np.ndarray, np.ndarray]:
        """Episodes of rule ``ri`` over the active part: those closed and not reported yet,
        and those still open. Lowers ``open_start`` to the start of a run still going."""
        sub_idx = np.flatnonzero(applies[act.seg])
        sub = (act.S[sub_idx], act.T[sub_idx], act.V[sub_idx], act.brk[sub_idx], act.gap[sub_idx])
        avg = conf = None
        if rule.kind == "slug":
            avg = avg_all[act.idx[sub_idx]]
            conf = self._configured(ri, rule, lay, act.idx[sub_idx], sub[1])
        eps, _, flag = rule_episodes(ri, rule, *sub, avg=avg, configured=conf)
        if not final:
            first, lastr = core.runs(flag, sub[3])
            if len(first):
                gidx = act.idx[sub_idx[lastr]]
                at_end = gidx == lay.last_idx[lay.seg[gidx]]
                if at_end.any():
                    np.minimum.at(open_start, lay.seg[gidx[at_end]], act.T[sub_idx[first[at_end]]])
        empty = np.empty(0, dtype=core.EPISODE_DTYPE)
        if not len(eps):
            return empty, empty
        es = np.searchsorted(lay.codes, eps["sensor"])
        closed = np.full(len(eps), True) if final else eps["last"] < lay.latest[es]
        if now is not None:
            closed |= (now - lay.latest[es]) > lay.gap_seg[es]
        mark_seg = np.array([self._mark.get((c, ri), _NEG) for c in lay.clist], dtype=np.int64)
        fresh_ep = eps["start"] > mark_seg[es]
        out = eps[closed & fresh_ep]
        if len(out):
            np.maximum.at(mark_seg, es[closed & fresh_ep], out["last"])
            for c, mk in zip(lay.clist, mark_seg.tolist()):
                if mk != _NEG:
                    self._mark[(c, ri)] = mk
        return out, eps[~closed & fresh_ep]

    def _trim(self, st: "_Merged", lay: "_Layout", open_start, new_avg: dict):
        """Per sensor keep ``[min(open start, latest) - window, ...]`` and the reading
        before that (it holds into the window); only sensors judged by a slug rule need a
        window of history. Keeping more is harmless, so the copy is made only once the
        state has grown by a quarter since the last trim."""
        n = len(st.T)
        if n <= self._trimmed_size + max(self._trimmed_size // 4, 1024):
            return st, new_avg
        win = np.array([max((int(round(r.window_h * core.HOUR_US)) for r in self.rules
                             if r.kind == "slug" and r.applies_to(p)), default=0) for p in lay.params],
                       dtype=np.int64)
        keep = st.T >= (open_start - win)[lay.seg]
        keep[:-1] |= keep[1:] & (st.S[1:] == st.S[:-1])
        self._trimmed_size = int(keep.sum())
        return (_Merged(st.S[keep], st.T[keep], st.V[keep], {ri: a[keep] for ri, a in st.P.items()},
                        {ri: a[keep] for ri, a in st.H.items()}, st.is_new[keep], {}),
                {ri: a[keep] for ri, a in new_avg.items()})

    def _keep(self, st: "_Merged", lay: "_Layout", open_start, new_avg: dict) -> None:
        """The state after this step."""
        self._s, self._t, self._v, self._P, self._H = st.S, st.T, st.V, st.P, st.H
        for ri in self._avg:
            self._avg[ri] = new_avg.get(ri, np.full(len(st.T), np.nan))
        for c, a_ in zip(lay.clist, open_start.tolist()):
            self._active[c] = a_


class _Merged(NamedTuple):
    """The kept readings with the batch merged in, sorted by sensor then time."""

    S: np.ndarray        # sensor code
    T: np.ndarray        # [us UTC]
    V: np.ndarray        # [canonical unit]
    P: dict              # slug rule index -> running sums of its baseline
    H: dict
    is_new: np.ndarray   # the reading came with this batch
    avg: dict            # slug rule index -> trailing average of each reading (NaN: not yet)


class _Layout(NamedTuple):
    """The sensors' blocks in :class:`_Merged`."""

    starts: np.ndarray     # first index of each sensor's block
    codes: np.ndarray      # sensor code of each block
    clist: list
    seg: np.ndarray        # block of each reading
    last_idx: np.ndarray   # index of each sensor's latest reading
    latest: np.ndarray     # time of each sensor's latest reading [us]
    gap_seg: np.ndarray    # gap limit of each sensor [us]
    params: list           # parameter of each sensor
    fresh: np.ndarray      # indices of the new readings
    first: np.ndarray      # each sensor's first usable reading ever [us]
    normal: np.ndarray     # each sensor's configured normal value (NaN: none)


class _Active(NamedTuple):
    """The active part of :class:`_Merged` (see ``StreamingEvaluator._active_part``)."""

    idx: np.ndarray      # indices into the merged state
    S: np.ndarray
    T: np.ndarray
    V: np.ndarray
    seg: np.ndarray
    gap: np.ndarray
    brk: np.ndarray      # a run cannot continue across this reading (gap, or first of a sensor)
