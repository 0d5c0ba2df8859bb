"""Time-weighted averages over readings: the trailing average of a window, the average of
normal operation (a slug's baseline), and the running sums the streaming evaluator extends.

The conventions are :mod:`limits.core`'s (readings sorted by sensor, then time; a reading
holds its value until the next one but never longer than ``max_hold``; a window ``[t - W, t)``
covers the readings before ``t``; exact int64 sums, so streaming reproduces batch to the last
bit). Apart from :mod:`limits.core` because it is the one part with state of its own across
calls (the running sums).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from limits.core import TWA_VALUE_MAX, exceeds, sensor_block_starts


class _TwaPrep(NamedTuple):
    """What every trailing average over the same readings shares (see :func:`_twa_prep`)."""

    seg_first: np.ndarray   # first index of each sensor's block
    seg_end: np.ndarray     # one past the last index of each sensor's block
    seg: np.ndarray         # block of each reading
    hold: np.ndarray        # how long each reading holds its value [us] (0 for a sensor's last)
    v: np.ndarray           # values clipped to +-TWA_VALUE_MAX
    term: np.ndarray        # value x hold, truncated [value x us], int64
    P: np.ndarray           # running sums of term and hold, with a leading zero
    H: np.ndarray
    key: np.ndarray         # block x stride + time: one sorted key for the window searches


def _twa_prep(sensor, time, value, window, max_hold) -> _TwaPrep:
    n = len(time)
    new = sensor_block_starts(sensor)
    seg_first = np.flatnonzero(new)
    seg_end = np.append(seg_first[1:], n)
    seg = np.repeat(np.arange(len(seg_first)), seg_end - seg_first)
    nxt_same = np.zeros(n, dtype=bool)
    nxt_same[:-1] = ~new[1:]
    hold = np.zeros(n, dtype=np.int64)
    np.subtract(time[1:], time[:-1], out=hold[:-1])
    mh = max_hold if np.isscalar(max_hold) else np.asarray(max_hold)
    np.minimum(hold, mh, out=hold)
    hold[~nxt_same] = 0
    v = np.clip(value, -TWA_VALUE_MAX, TWA_VALUE_MAX)
    # value x hold [value x us], truncated to an integer: deterministic per reading, and
    # integer sums are exact whatever their origin (the error, < 1 value x us a reading,
    # is far below any reading's precision)
    term = (v * hold).astype(np.int64)
    P = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(term, out=P[1:])
    H = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(hold, out=H[1:])
    t0 = int(time.min())
    stride = int(time.max()) - t0 + int(window) + 1
    if (len(seg_first) + 1) * stride >= 2**62:
        raise ValueError("too many sensors times too long a time span for one call: split by sensor")
    key = seg * stride + (time - t0 + window)
    return _TwaPrep(seg_first, seg_end, seg, hold, v, term, P, H, key)


class _Left(NamedTuple):
    """Readings left out of the averages: a mask and the running sums of their terms and
    holds (leading zero), so a window's sum without them is the full sum minus theirs
    (integers: exact)."""

    mask: np.ndarray
    P: np.ndarray
    H: np.ndarray

    @classmethod
    def of(cls, prep: "_TwaPrep", idx) -> "_Left":
        n = len(prep.term)
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
        P = np.zeros(n + 1, dtype=np.int64)
        P[1:][mask] = prep.term[mask]
        np.cumsum(P, out=P)
        H = np.zeros(n + 1, dtype=np.int64)
        H[1:][mask] = prep.hold[mask]
        np.cumsum(H, out=H)
        return cls(mask, P, H)


def _twa_at(prep: _TwaPrep, time, idx, window, history_start, left: _Left | None = None,
            screen_multiple=None):
    """The trailing averages at readings ``idx`` (see :func:`trailing_time_weighted_average`),
    leaving out the readings of ``left``."""
    P, H = prep.P, prep.H
    if left is not None and not left.mask.any():
        left = None
    v, seg, seg_first = prep.v, prep.seg, prep.seg_first
    out = np.full(len(idx), np.nan)
    tseg = seg[idx]
    ws = time[idx] - window
    hs = time[seg_first][tseg] if history_start is None else np.asarray(history_start)[idx]
    live = hs <= ws                                   # a full window of history exists
    if screen_multiple is not None and len(idx) and v.min() >= 0:
        # Cheap exact screen: with no negative values, the terms of the m readings before
        # i that lie wholly in the window, spread over the whole window, are a lower bound
        # of the average (its covered time is at most the window). A reading not above
        # screen_multiple x that bound cannot be above screen_multiple x the average.
        m = _lookback(prep, time, window)
        j = idx - m
        ok = j >= seg_first[tseg]
        ok[ok] = time[j[ok]] >= ws[ok]
        io, jo = idx[ok], j[ok]
        lower = P[io] - P[jo]
        if left is not None:
            lower = lower - (left.P[io] - left.P[jo])
        bound = lower.astype(np.float64) * (screen_multiple * (1 - 1e-9) / window)
        cand = np.ones(len(idx), dtype=bool)
        cand[ok] = v[io] > bound
        live &= cand
    sel = np.flatnonzero(live)
    if len(sel) == 0:
        return out
    i = idx[sel]
    k = np.searchsorted(prep.key, prep.key[i] - window, side="left")
    wsi = ws[sel]
    has_prev = k > seg_first[tseg[sel]]
    km1 = np.maximum(k - 1, 0)
    integral = P[i] - P[k]
    covered = H[i] - H[k]
    if left is not None:
        integral -= left.P[i] - left.P[k]
        covered -= left.H[i] - left.H[k]
        has_prev &= ~left.mask[km1]
    part = np.where(has_prev, np.maximum(time[km1] + prep.hold[km1] - wsi, 0), 0)
    integral += (v[km1] * part).astype(np.int64)
    covered += part
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = integral.astype(np.float64) / covered
    avg[covered <= 0] = np.nan
    out[sel] = avg
    return out


def _lookback(prep: _TwaPrep, time, window) -> int:
    """How many readings back the screen of :func:`_twa_at` looks: about half a window's."""
    span = int(time.max()) - int(time.min()) + 1
    return max(1, int(0.5 * window * len(time) / (span * len(prep.seg_first))))


def _after(prep: _TwaPrep, changed, horizon) -> np.ndarray:
    """Indices of the readings within ``horizon`` [us] after any of ``changed`` (sorted),
    same sensor, the changed readings themselves excluded: the readings whose window a
    change can reach."""
    c = np.asarray(changed, dtype=np.int64)
    if len(c) == 0:
        return c
    end = np.searchsorted(prep.key, prep.key[c] + horizon, side="left")
    np.minimum(end, prep.seg_end[prep.seg[c]], out=end)
    begin = c + 1
    reach = np.maximum.accumulate(end)
    lo = begin.copy()
    lo[1:] = np.maximum(begin[1:], reach[:-1])         # skip what an earlier range covered
    length = np.maximum(end - lo, 0)
    total = int(length.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offs = np.cumsum(length) - length
    return np.repeat(lo - offs, length) + np.arange(total)


def trailing_time_weighted_average(sensor, time, value, window, max_hold, history_start=None,
                                   targets=None, screen_multiple=None, exclude=None):
    """Trailing time-weighted average of each sensor over ``[t - window, t)``.

    Parameters
    ----------
    sensor, time, value : ndarray
        Usable readings sorted by sensor then time ([us UTC], [canonical unit]).
    window : int
        The averaging window [us] (24 h for the slug definitions).
    max_hold : int or ndarray of int64
        The longest a reading holds its value [us] (the gap limit), scalar or per reading.
    history_start : ndarray of int64, optional
        Per reading, the time of its sensor's first usable reading ever [us UTC]; default:
        the first reading of the sensor in these arrays. An average is only given once a
        full window of history exists (``history_start <= t - window``); before that it is
        NaN, because the ordinances define the reference as *the* 24-hour average
        (palmyra-wi, 003_44f871d49a02d8f5.txt §13.43 SLUG; westfield-wi,
        004_736876c28764ff16.txt definitions, SLUG).
    targets : ndarray of int, optional
        Compute the average only at these indices (the others serve as history); the
        result then has one value per target. ``history_start`` stays one per reading.
    screen_multiple : float, optional
        Only the comparison ``value > screen_multiple x average`` is wanted (the slug
        test): where a cheap exact lower bound of the average already shows the value is
        not above it, the average is not computed and NaN is returned. Where it is
        computed it is exact, so the comparison and the threshold at any reading above it
        are unchanged.
    exclude : ndarray of bool, optional
        Readings left out of every average: neither their value nor the time they hold it
        counts (the slug's "during normal operation", see :func:`normal_operation_average`).

    Returns
    -------
    ndarray of float64
        The average [canonical unit]; NaN where there is no full window of history or no
        covered time in the window.

    Notes
    -----
    Exact and origin-independent: see the module docstring.
    """
    if len(time) == 0:
        return np.empty(0)
    prep = _twa_prep(sensor, time, value, window, max_hold)
    idx = np.arange(len(time)) if targets is None else np.asarray(targets, dtype=np.int64)
    left = None if exclude is None else _Left.of(prep, np.asarray(exclude, dtype=bool))
    return _twa_at(prep, time, idx, window, history_start, left, screen_multiple)


def normal_operation_average(sensor, time, value, window, max_hold, multiple, op=">", history_start=None,
                             normal=None):
    """The slug baseline: the trailing average of each sensor "during normal operation".

    A slug is a discharge that "exceeds for any period longer than 15 minutes more than 5
    times the average 24-hour concentration or flows during normal operation" (palmyra-wi,
    003_44f871d49a02d8f5.txt §13.43 SLUG; westfield-wi, 004_736876c28764ff16.txt
    definitions, SLUG). The baseline at a reading is the time-weighted average over
    ``[t - window, t)`` of the readings that were themselves *not* above the slug line
    (``value op multiple x their own baseline``): the abnormal discharge is no part of
    normal operation, so a long slug does not raise its own baseline and stays a slug for
    its whole length. The definition is recursive in time (a reading's baseline depends on
    which earlier readings were above theirs); it is solved exactly by fixed-point
    rounds, each a vectorised pass over the readings whose window holds a reading whose
    status changed in the round before (one round when nothing is above the line, two or
    three around a slug; the first reading of each sensor to change status is final after
    each round, so the rounds end).

    Before a sensor has a full window of history the baseline is its configured normal
    value ``normal`` (the average daily flow of the permit application, palmyra-wi
    §13.54(2)(b)) where there is one, else NaN: no slug is judged.

    Parameters
    ----------
    sensor, time, value : ndarray
        Usable readings sorted by sensor then time ([us UTC], [canonical unit]).
    window : int
        [us] (24 h).
    max_hold : int or ndarray of int64
        The gap limit [us], scalar or per reading.
    multiple : float
        The slug line is ``multiple`` x the baseline (5).
    op : str
        The ordinance's comparison ("more than": ``'>'``).
    history_start : ndarray of int64, optional
        Per reading, its sensor's first usable reading ever [us UTC].
    normal : ndarray of float64, optional
        Per reading, its sensor's configured normal value [canonical unit]; NaN for none.

    Returns
    -------
    average : ndarray of float64
        The baseline at each reading [canonical unit]; NaN where no slug can be judged, or
        where an exact lower bound already shows the reading is not above the line.
    above : ndarray of bool
        Readings above the slug line (``value op multiple x average``).
    configured : ndarray of bool
        Readings whose baseline is the configured normal value (no full window yet).
    """
    n = len(time)
    if n == 0:
        e = np.empty(0, dtype=bool)
        return np.empty(0), e, e
    prep = _twa_prep(sensor, time, value, window, max_hold)
    hs = None if history_start is None else np.asarray(history_start)
    if normal is not None:
        normal = np.asarray(normal, dtype=np.float64)
        first = time[prep.seg_first][prep.seg] if hs is None else hs
        configured = (first > time - window) & np.isfinite(normal)
    else:
        configured = np.zeros(n, dtype=bool)
    avg = _twa_at(prep, time, np.arange(n), window, hs, None, multiple)
    if configured.any():
        avg[configured] = normal[configured]
    above = exceeds(value, multiple * avg, op)
    # the averages in ``avg`` were computed leaving out none; a round leaves out the readings
    # found above the line and recomputes where that can matter
    changed = np.flatnonzero(above)
    left = np.empty(0, dtype=np.int64)
    horizon = int(window) + int(np.max(max_hold))
    m = _lookback(prep, time, window)
    while len(changed):
        left = np.setxor1d(left, changed, assume_unique=True)
        targets = _after(prep, changed, horizon)
        # Of those, only readings whose average was computed (the screen did not rule them
        # out) or whose screen looks back over a changed reading can come out differently:
        # for the others the screen's bound is what it was, and they stay below the line.
        count = np.zeros(n + 1, dtype=np.int32)          # changed readings before each index
        count[changed + 1] = 1
        np.cumsum(count, out=count)
        near = count[targets] > count[np.maximum(targets - m, 0)]
        targets = targets[~configured[targets] & (np.isfinite(avg[targets]) | near)]
        if not len(targets):
            break
        new_avg = _twa_at(prep, time, targets, window, hs, _Left.of(prep, left), multiple)
        new_above = exceeds(value[targets], multiple * new_avg, op)
        avg[targets] = new_avg
        changed = targets[new_above != above[targets]]
        above[targets] = new_above
    return avg, above, configured


def extend_running_sums(sensor, time, value, max_hold, P, H, fresh, exclude=None):
    """Running integer sums of :func:`trailing_time_weighted_average`, for new readings only.

    ``P[j]`` is the sum of the integer terms (value x hold, truncated [value x us]) of the
    sensor's readings before ``j``, ``H[j]`` the sum of their holds [us], both from any
    origin: only differences within a sensor are used, and integer differences are exact.
    The streaming evaluator keeps them with its state so that a new reading costs no work
    over the kept history.

    Parameters
    ----------
    sensor, time, value : ndarray
        Readings sorted by sensor then time.
    max_hold : ndarray of int64
        The hold limit of each reading's sensor [us] (one per reading).
    P, H : ndarray of int64
        Running sums, valid at every non-fresh reading; filled in place at ``fresh``.
    fresh : ndarray of int
        Sorted indices of new readings; each later than every older reading of its sensor.
    exclude : ndarray of bool, optional
        Readings left out of the sums (see :func:`normal_operation_average`); their
        status must be known for every reading before a fresh one.
    """
    fresh = np.asarray(fresh, dtype=np.int64)
    if len(fresh) == 0:
        return
    pred = fresh - 1
    has = pred >= 0
    has[has] = sensor[pred[has]] == sensor[fresh[has]]
    predc = np.maximum(pred, 0)
    hold = np.where(has, np.minimum(time[fresh] - time[predc], max_hold[predc]), 0)
    v = np.clip(value[predc], -TWA_VALUE_MAX, TWA_VALUE_MAX)
    if exclude is not None:
        keep = ~np.asarray(exclude)[predc]
        hold = np.where(keep, hold, 0)
    term = np.where(has, (v * hold).astype(np.int64), 0)
    run_start = np.ones(len(fresh), dtype=bool)
    run_start[1:] = (fresh[1:] != fresh[:-1] + 1) | ~has[1:]
    rs = np.flatnonzero(run_start)
    rid = np.cumsum(run_start) - 1
    base_P = np.where(has[rs], P[predc[rs]], 0)
    base_H = np.where(has[rs], H[predc[rs]], 0)
    cs_t = np.cumsum(term)
    cs_h = np.cumsum(hold)
    P[fresh] = base_P[rid] + cs_t - (cs_t[rs] - term[rs])[rid]
    H[fresh] = base_H[rid] + cs_h - (cs_h[rs] - hold[rs])[rid]


def window_average_at(time, value, P, H, targets, first_index, window, max_hold, history_start, exclude=None):
    """:func:`trailing_time_weighted_average` at a few readings, from kept running sums.

    Parameters
    ----------
    time, value : ndarray
        Readings sorted by sensor then time ([us UTC], [canonical unit]).
    P, H : ndarray of int64
        Running sums (:func:`extend_running_sums`).
    targets : ndarray of int
        Where to compute the average.
    first_index : ndarray of int
        Per target, the index of its sensor's first kept reading.
    window : int
        [us].
    max_hold, history_start : ndarray of int64
        Per target: its sensor's hold limit [us] and first usable reading ever [us UTC].
    exclude : ndarray of bool, optional
        Readings left out (as in :func:`extend_running_sums`).

    Returns
    -------
    ndarray of float64
        Bit for bit what :func:`trailing_time_weighted_average` gives at these readings,
        provided the kept readings start before each target's window.
    """
    i = np.asarray(targets, dtype=np.int64)
    ws = time[i] - window
    lo = np.asarray(first_index, dtype=np.int64).copy()
    hi = i.copy()
    while True:                       # vectorised binary search: first time >= ws
        act = lo < hi
        if not act.any():
            break
        mid = (lo + hi) // 2
        less = time[mid] < ws
        lo = np.where(act & less, mid + 1, lo)
        hi = np.where(act & ~less, mid, hi)
    k = lo
    has_prev = k > first_index
    km1 = np.maximum(k - 1, 0)
    hold_km1 = np.minimum(time[k] - time[km1], max_hold)
    if exclude is not None:
        has_prev &= ~np.asarray(exclude)[km1]
    part = np.where(has_prev, np.maximum(time[km1] + hold_km1 - ws, 0), 0)
    v = np.clip(value[km1], -TWA_VALUE_MAX, TWA_VALUE_MAX)
    part_term = (v * part).astype(np.int64)
    integral = P[i] - P[k] + part_term
    covered = H[i] - H[k] + part
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = integral.astype(np.float64) / covered
    avg[(np.asarray(history_start) > ws) | (covered <= 0)] = np.nan
    return avg
