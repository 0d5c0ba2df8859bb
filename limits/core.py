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
