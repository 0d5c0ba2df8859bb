"""The vectorised evaluation core: pure numpy functions, no classes, no loops over readings.

Every function takes parallel arrays of readings **sorted by sensor, then time** (many
sensors interleaved in one call):

``sensor``
    integer sensor codes (any integers; equal codes are one sensor).
``time``
    int64 microseconds since the Unix epoch, UTC, strictly increasing within a sensor.
``value``
    float64 in the parameter's canonical unit (:mod:`foundation.units`).

Conventions (documented once, used everywhere):

* **Skipped readings.** A NaN value or a quality other than 0 (1: outside the physically
  possible range, 2: device fault) is removed before anything else (:func:`valid_mask`). It
  is neither normal nor in violation: it neither extends nor breaks an episode by itself.
  What it does do is leave time without a usable reading, so a long run of them is a gap.
* **Gaps.** Two consecutive usable readings of a sensor further apart than ``max_gap``
  (``K`` times the sensor's sample interval, default ``K = 3``) are not continuous: an
  episode ends at the reading before the gap (:func:`segment_starts`).
* **Episodes.** A maximal run of consecutive exceeding readings without a gap. ``start`` is
  the first exceeding reading; ``last`` the last one; ``end`` is the time the exceedance was
  seen to be over: the next usable reading when it follows without a gap (a reading holds
  until the next one), else ``last``. Duration is ``end - start``.
* **Time-weighted average.** A reading holds its value until the next reading of the same
  sensor, but never longer than ``max_gap`` (a sensor that went silent is not assumed to
  have kept reading the same). The trailing average at a reading covers the window
  ``[t - W, t)``: the readings before it, not the reading itself.
* **Exactness.** The window integrals are sums of per-reading integers (value x hold time,
  truncated to value x microsecond) accumulated in int64, so a window's sum is exact whatever
  the origin of the running sum. That is what lets the streaming evaluator, which keeps only
  the last 24 hours, reproduce the batch result to the last bit.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import NamedTuple

import numpy as np

US = 1_000_000          #: microseconds per second
MINUTE_US = 60 * US
HOUR_US = 3600 * US
DAY_US = 86400 * US

#: Values beyond this magnitude are clipped inside the time-weighted integral so that a
#: 24-hour window sum (value x microseconds) cannot overflow int64 (1e8 x 8.64e10 < 9.2e18).
#: No sewer reading in a canonical unit (gpm, mg/l, degF, pH) comes near it.
TWA_VALUE_MAX = 1e8

_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}

EPISODE_DTYPE = np.dtype([
    ("sensor", np.int64),     # sensor code
    ("rule", np.int32),       # index of the rule in the caller's rule list
    ("start", np.int64),      # first exceeding reading [us UTC]
    ("end", np.int64),        # when the exceedance was seen to be over [us UTC]
    ("last", np.int64),       # last exceeding reading [us UTC]
    ("peak", np.float64),     # most extreme value [canonical unit]
    ("peak_time", np.int64),  # time of the peak [us UTC]
    ("limit", np.float64),    # the limit at the peak [canonical unit]
    ("n", np.int64),          # exceeding readings in the episode
    ("basis", np.int8),       # slug: 1 if the limit at the peak stands on the configured normal
                              # value (no full window of history yet), else 0
])


def valid_mask(value, quality=None):
    """Readings usable for evaluation: finite value and quality 0.

    Parameters
    ----------
    value : ndarray of float64
        Readings [canonical unit].
    quality : ndarray of int, optional
        0 good, 1 outside the physically possible range, 2 device fault.

    Returns
    -------
    ndarray of bool
    """
    ok = np.isfinite(value)
    if quality is not None:
        ok &= np.asarray(quality) == 0
    return ok


def exceeds(value, limit, op):
    """Readings on the wrong side of a limit, with the ordinance's comparison.

    Parameters
    ----------
    value : ndarray of float64
        Readings [canonical unit].
    limit : float or ndarray
        The limit [canonical unit], a scalar or one per reading.
    op : {'<', '<=', '>', '>='}
        Violation when ``value op limit``: "less than 5.0" is ``'<'``, so 5.0 is no
        violation; "exceeds 104" is ``'>'``, so 104.0 is none either.

    Returns
    -------
    ndarray of bool
        NaN is never a violation (a NaN comparison is false).
    """
    try:
        fn = _OPS[op]
    except KeyError:
        raise ValueError(f"unknown operator {op!r} (expected one of {', '.join(_OPS)})") from None
    return fn(value, limit)


def segment_starts(sensor, time, max_gap):
    """Where continuity breaks: a new sensor, or a gap longer than ``max_gap``.

    Parameters
    ----------
    sensor : ndarray of int
    time : ndarray of int64
        [us UTC], sorted within each sensor.
    max_gap : int or ndarray of int64
        The longest spacing that is still continuous [us], scalar or per reading (the
        limit that applies to the gap *before* each reading, i.e. its sensor's).

    Returns
    -------
    ndarray of bool
        True at the first reading of a sensor and after every gap longer than ``max_gap``
        (strictly: a gap of exactly ``max_gap`` is continuous).
    """
    n = len(time)
    brk = np.empty(n, dtype=bool)
    if n == 0:
        return brk
    brk[0] = True
    np.not_equal(sensor[1:], sensor[:-1], out=brk[1:])
    gap = np.diff(time)
    mg = max_gap if np.isscalar(max_gap) else np.asarray(max_gap)[1:]
    brk[1:] |= gap > mg
    return brk


def runs(flag, brk):
    """First and last index of each run of consecutive flagged readings.

    Parameters
    ----------
    flag : ndarray of bool
        Exceeding readings.
    brk : ndarray of bool
        :func:`segment_starts`: a run never continues across a True.

    Returns
    -------
    first, last : ndarray of int64
        Paired indices, in order.
    """
    n = len(flag)
    if n == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e
    link = np.zeros(n + 1, dtype=bool)  # link[i]: reading i continues a run from i-1
    np.logical_and(flag[:-1], flag[1:], out=link[1:n])
    link[1:n] &= ~brk[1:]
    start = flag & ~link[:n]
    stop = flag & ~link[1:]
    return np.flatnonzero(start), np.flatnonzero(stop)


def run_peaks(value, flag, first, last, lowest=False):
    """The most extreme value of each run and its index (the first if tied).

    Parameters
    ----------
    value : ndarray of float64
    flag : ndarray of bool
    first, last : ndarray of int64
        From :func:`runs`.
    lowest : bool
        True for a lower limit (the peak of a pH-too-low episode is its minimum).

    Returns
    -------
    peak : ndarray of float64
    peak_index : ndarray of int64
    """
    if len(first) == 0:
        return np.empty(0), np.empty(0, dtype=np.int64)
    fi = np.flatnonzero(flag)
    fv = value[fi]
    # runs are contiguous in fi: the k-th run occupies a slice of it
    counts = last - first + 1
    offsets = np.zeros(len(first), dtype=np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    red = np.minimum if lowest else np.maximum
    peak = red.reduceat(fv, offsets)
    rid = np.repeat(np.arange(len(first)), counts)
    cand = np.flatnonzero(fv == peak[rid])
    keep = np.ones(len(cand), dtype=bool)
    keep[1:] = rid[cand[1:]] != rid[cand[:-1]]
    return peak, fi[cand[keep]]


def run_end_times(time, brk, last):
    """When each run was seen to be over [us UTC].

    The next usable reading of the same sensor if it follows without a gap (the last
    exceeding reading held until then), else the last exceeding reading itself.
    """
    n = len(time)
    nxt = last + 1
    ok = nxt < n
    ok[ok] = ~brk[nxt[ok]]
    return np.where(ok, time[np.minimum(nxt, n - 1)], time[last])


def sensor_block_starts(sensor):
    """True at the first reading of each sensor's block in readings sorted by sensor.

    Parameters
    ----------
    sensor : ndarray of int64
        Sensor codes, sorted (grouped) by sensor.

    Returns
    -------
    ndarray of bool
    """
    n = len(sensor)
    new = np.empty(n, dtype=bool)
    if n:
        new[0] = True
        np.not_equal(sensor[1:], sensor[:-1], out=new[1:])
    return new


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


def make_episodes(sensor, time, value, flag, brk, rule, limit, lowest=False, min_duration=None, basis=None):
    """Episodes of one rule from its exceeding flags.

    Parameters
    ----------
    sensor, time, value : ndarray
        Usable readings sorted by sensor then time.
    flag : ndarray of bool
        Exceeding readings.
    brk : ndarray of bool
        :func:`segment_starts`.
    rule : int
        Rule index written into the episodes.
    limit : float or ndarray of float64
        The limit [canonical unit], scalar or per reading (slug: the threshold).
    lowest : bool
        Peak is the minimum (lower limits).
    min_duration : int, optional
        Keep only episodes lasting strictly longer than this [us] (slug: 15 min).
    basis : ndarray of bool, optional
        Per reading, whether its limit stands on a configured normal value (slug).

    Returns
    -------
    ndarray of :data:`EPISODE_DTYPE`
    """
    first, last = runs(flag, brk)
    end = run_end_times(time, brk, last)
    if min_duration is not None:
        keep = (end - time[first]) > min_duration
        if not keep.all():
            # drop the short runs' flags so peaks are taken over kept runs only
            flag = flag.copy()
            drop_first, drop_last = first[~keep], last[~keep]
            cover = np.zeros(len(flag) + 1, dtype=np.int64)
            np.add.at(cover, drop_first, 1)
            np.add.at(cover, drop_last + 1, -1)
            flag &= np.cumsum(cover[:-1]) == 0
            first, last, end = first[keep], last[keep], end[keep]
    peak, pidx = run_peaks(value, flag, first, last, lowest=lowest)
    out = np.empty(len(first), dtype=EPISODE_DTYPE)
    out["sensor"] = sensor[first]
    out["rule"] = rule
    out["start"] = time[first]
    out["end"] = end
    out["last"] = time[last]
    out["peak"] = peak
    out["peak_time"] = time[pidx]
    out["limit"] = limit if np.isscalar(limit) else np.asarray(limit)[pidx]
    out["n"] = last - first + 1
    out["basis"] = 0 if basis is None else np.asarray(basis)[pidx]
    return out


def utc_offsets(time, tz, bucket=15 * MINUTE_US):
    """UTC offset of a time zone at each time [us].

    Offsets are looked up once per distinct 15-minute bucket (every zone's transitions fall
    on a quarter hour), so the cost is in the number of distinct buckets, not readings.
    """
    time = np.asarray(time, dtype=np.int64)
    if len(time) == 0:
        return np.empty(0, dtype=np.int64)
    b = time // bucket
    ub, inv = np.unique(b, return_inverse=True)
    offs = np.fromiter(
        (int(datetime.fromtimestamp(int(x) * bucket / US, timezone.utc).astimezone(tz)
             .utcoffset().total_seconds() * US) for x in ub),
        dtype=np.int64, count=len(ub))
    return offs[inv]


def local_day(time, tz):
    """Local calendar day number (days since 1970-01-01 local) of each time [us UTC]."""
    time = np.asarray(time, dtype=np.int64)
    return (time + utc_offsets(time, tz)) // DAY_US


def median_interval(sensor, time):
    """Median spacing of each sensor's readings [us] (sensor codes -> interval).

    Returns
    -------
    codes : ndarray of int64
        Sensor codes, ascending in order of appearance.
    interval : ndarray of int64
        Their median spacing [us]; 0 for a sensor with a single reading.
    """
    new = sensor_block_starts(sensor)
    starts = np.flatnonzero(new)
    codes = np.asarray(sensor)[starts]
    if len(time) == 0:
        return codes, np.empty(0, dtype=np.int64)
    d = np.diff(time)
    same = ~new[1:]
    seg = (np.cumsum(new) - 1)[1:][same]
    d = d[same]
    interval = np.zeros(len(starts), dtype=np.int64)
    if len(d):
        order = np.lexsort((d, seg))
        d, seg = d[order], seg[order]
        cnt = np.bincount(seg, minlength=len(starts))
        off = np.zeros(len(starts), dtype=np.int64)
        np.cumsum(cnt[:-1], out=off[1:])
        has = cnt > 0
        lo = off + (cnt - 1) // 2
        hi = off + cnt // 2
        interval[has] = (d[lo[has]] + d[hi[has]]) // 2
    return codes, interval
