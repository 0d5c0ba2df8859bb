"""Flow: the volume of a time window, daily volumes, flow-weighted averages and loadings.

A 24-hour flow-proportional composite sample (palmyra-wi, 003_44f871d49a02d8f5.txt
§13.53(3)) represents the flow-weighted average concentration of its window; its loading
is concentration × the window's volume × 8.34. Flow readings are in gpm (the canonical
flow unit of :mod:`foundation.units`) at irregular times; volumes are the trapezoid integral
of the readings, never bridging a gap longer than ``max_gap_s``.
"""

from __future__ import annotations

import numpy as np

from lab.formulas.surcharge import LB_PER_MG_MGL


def _seconds(t) -> np.ndarray:
    t = np.asarray(t)
    if np.issubdtype(t.dtype, np.datetime64):
        return t.astype("datetime64[us]").astype(np.int64) / 1e6
    return t.astype(np.float64)


def _segments(t_s, q, max_gap_s):
    """Trapezoid segments between consecutive readings no further apart than ``max_gap_s``."""
    dt = np.diff(t_s)
    if dt.size and dt.min() < 0:  # the database returns them sorted; sort anything else
        order = np.argsort(t_s, kind="stable")
        t_s, q = t_s[order], q[order]
        dt = np.diff(t_s)
    ok = (dt > 0) & (dt <= max_gap_s) & np.isfinite(q[:-1]) & np.isfinite(q[1:])
    return t_s[:-1][ok], t_s[1:][ok], q[:-1][ok], q[1:][ok]


def window_volume_gal(t, flow_gpm, start, end, max_gap_s: float = 900.0) -> tuple[float, float]:
    """Volume that flowed in ``[start, end)`` and how much of the window the readings cover.

    Parameters
    ----------
    t : array_like of datetime64 or float
        Reading times (datetime64, or seconds).
    flow_gpm : array_like
        Flow [gal/min].
    start, end : datetime64 or float
        The window.
    max_gap_s : float
        Readings further apart than this are not joined [s].

    Returns
    -------
    volume_gal : float
        Trapezoid integral of the flow over the covered part of the window [gal].
    coverage : float
        Covered fraction of the window [0-1].
    """
    t_s = _seconds(t)
    q = np.asarray(flow_gpm, dtype=np.float64)
    a, b = float(_seconds(np.asarray([start]))[0]), float(_seconds(np.asarray([end]))[0])
    if b <= a or t_s.size < 2:
        return 0.0, 0.0
    t0, t1, q0, q1 = _segments(t_s, q, max_gap_s)
    lo, hi = np.maximum(t0, a), np.minimum(t1, b)
    keep = hi > lo
    t0, t1, q0, q1, lo, hi = t0[keep], t1[keep], q0[keep], q1[keep], lo[keep], hi[keep]
    slope = (q1 - q0) / (t1 - t0)
    qlo = q0 + slope * (lo - t0)
    qhi = q0 + slope * (hi - t0)
    volume = float(np.sum((qlo + qhi) / 2.0 * (hi - lo)) / 60.0)
    return volume, float(np.sum(hi - lo) / (b - a))


def bucket_volumes_gal(t, flow_gpm, edges, max_gap_s: float = 900.0):
    """Volume in each interval between consecutive ``edges`` (e.g. local midnights) [gal].

    Parameters
    ----------
    t : array_like of datetime64 or float
        Reading times.
    flow_gpm : array_like
        Flow [gal/min].
    edges : array_like of datetime64 or float
        Increasing interval boundaries; bucket ``k`` is ``[edges[k], edges[k+1])``.

    Returns
    -------
    volumes : numpy.ndarray
        Volume of each bucket [gal].
    coverage : numpy.ndarray
        Covered fraction of each bucket [0-1].
    """
    e = _seconds(edges)
    nb = max(e.size - 1, 0)
    vol, cov = np.zeros(nb), np.zeros(nb)
    t_s = _seconds(t)
    if nb == 0 or t_s.size < 2:
        return vol, cov
    t0, t1, q0, q1 = _segments(t_s, np.asarray(flow_gpm, dtype=np.float64), max_gap_s)
    if t0.size == 0:
        return vol, cov
    k0 = np.searchsorted(e, t0, side="right") - 1          # bucket of each segment's start
    k1 = np.searchsorted(e, t1, side="left") - 1           # bucket of its end
    # segments inside one bucket (nearly all): one weighted bincount
    inside = (k0 == k1) & (k0 >= 0) & (k0 < nb)
    ki = k0[inside]
    dt = t1[inside] - t0[inside]
    vol += np.bincount(ki, weights=(q0[inside] + q1[inside]) * dt / 120.0, minlength=nb)
    cov += np.bincount(ki, weights=dt, minlength=nb)
    # the few segments across an edge (or outside the buckets): clipped bucket by bucket
    x = np.flatnonzero(~inside)
    if x.size:
        t0x, t1x, q0x, q1x = t0[x], t1[x], q0[x], q1[x]
        slope = (q1x - q0x) / (t1x - t0x)
        lo, hi = np.clip(k0[x], 0, nb - 1), np.clip(k1[x], 0, nb - 1)
        for j in range(int((hi - lo).max()) + 1):
            k = lo + j
            a = np.maximum(t0x, e[np.minimum(k, nb - 1)])
            b = np.minimum(t1x, e[np.minimum(k, nb - 1) + 1])
            m = (k <= hi) & (b > a)
            qa = q0x[m] + slope[m] * (a[m] - t0x[m])
            qb = q0x[m] + slope[m] * (b[m] - t0x[m])
            vol += np.bincount(k[m], weights=(qa + qb) * (b[m] - a[m]) / 120.0, minlength=nb)
            cov += np.bincount(k[m], weights=b[m] - a[m], minlength=nb)
    cov /= np.diff(e)
    return vol, cov


def daily_volumes_gal(t, flow_gpm, max_gap_s: float = 900.0):
    """Volume of each UTC calendar day the readings touch [gal/day].

    Returns
    -------
    days : numpy.ndarray of datetime64[D]
    volumes : numpy.ndarray
        Its volume [gal].
    coverage : numpy.ndarray
        Its covered fraction [0-1].
    """
    t_s = _seconds(t)
    if t_s.size < 2:
        return np.array([], dtype="datetime64[D]"), np.array([]), np.array([])
    first, last = np.floor(t_s.min() / 86400), np.floor(t_s.max() / 86400)
    days = np.arange(first, last + 1)
    vol, cov = bucket_volumes_gal(t_s, flow_gpm, np.append(days, last + 1) * 86400.0, max_gap_s)
    return days.astype(np.int64).astype("datetime64[D]"), vol, cov


def flow_weighted_mean(sample_t, conc_mg_l, t, flow_gpm) -> float:
    """Flow-weighted mean of grab concentrations, each weighted by the flow at its time.

    Σ cᵢ·Q(tᵢ) / Σ Q(tᵢ), Q linearly interpolated from the flow readings [mg/l].
    """
    st, ft = _seconds(sample_t), _seconds(t)
    order = np.argsort(ft)
    q = np.interp(st, ft[order], np.asarray(flow_gpm, dtype=np.float64)[order])
    c = np.asarray(conc_mg_l, dtype=np.float64)
    return float(np.sum(c * q) / np.sum(q))


def loading_lb(conc_mg_l, volume_gal):
    """Loading of a concentration over a volume: mg/l × MG × 8.34 [lb]."""
    return np.asarray(conc_mg_l, dtype=np.float64) * np.asarray(volume_gal, dtype=np.float64) / 1e6 * LB_PER_MG_MGL
