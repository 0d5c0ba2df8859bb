"""Batch evaluation: a pack's continuous rules over readings of many sensors at once.

A thin layer over :mod:`limits.core`. :func:`prepare` sorts readings by sensor then time
and drops exact duplicates; :func:`evaluate` runs every ``range`` and ``slug`` rule of a
pack over them and returns episodes (:data:`limits.core.EPISODE_DTYPE`);
:func:`violations` turns episodes into plain records (site, sensor, parameter, rule,
start, end, peak, limit, unit, citation, words, days of violation).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Sequence

import numpy as np

from foundation.units import CANONICAL
from limits import core, twa
from limits.days import INSTANT_US, days_touched
from limits.packs import Pack, Rule

#: A gap longer than this many sample intervals ends an episode (and a reading never holds
#: its value longer than that in a time-weighted average).
DEFAULT_GAP_MULTIPLE = 3.0

#: Readings evaluated per chunk of whole sensors, to keep memory bounded.
CHUNK_READINGS = 500_000


@dataclass(frozen=True)
class SensorMeta:
    """What the evaluator needs to know about a sensor.

    Attributes
    ----------
    parameter : str
        ``ph``, ``temperature``, ``flow``, ...
    interval_s : float or None
        Nominal sample interval [s]; None: the median spacing of the readings evaluated.
    site, name : str
        For reports.
    normal : float or None
        The sensor's configured normal value [canonical unit]: the slug baseline until a
        full window (24 h) of history exists. For a flow meter, the average daily flow of
        the site's permit application (palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(2)(b)),
        in gpm. None: no slug is judged before 24 hours of history.
    normal_source : str
        What ``normal`` is, for the finding (``permitted average flow``).
    """

    parameter: str
    interval_s: float | None = None
    site: str = ""
    name: str = ""
    normal: float | None = None
    normal_source: str = "permitted average flow"


def prepare(sensor, time, value, quality=None):
    """Sort readings by sensor then time and drop repeated (sensor, time) pairs.

    The first occurrence of a repeated pair is kept (the database does the same with
    ``ON CONFLICT DO NOTHING``).

    Returns
    -------
    sensor, time, value, quality : ndarray
        ``quality`` is None if it was None.
    """
    sensor = np.asarray(sensor, dtype=np.int64)
    time = np.asarray(time, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    n = len(time)
    if n > 1 and not _is_sorted(sensor, time):
        order = np.lexsort((time, sensor))
        sensor, time, value = sensor[order], time[order], value[order]
        if quality is not None:
            quality = np.asarray(quality)[order]
    if n > 1:
        dup = np.zeros(n, dtype=bool)
        dup[1:] = (sensor[1:] == sensor[:-1]) & (time[1:] == time[:-1])
        if dup.any():
            keep = ~dup
            sensor, time, value = sensor[keep], time[keep], value[keep]
            if quality is not None:
                quality = np.asarray(quality)[keep]
    return sensor, time, value, quality


def _is_sorted(sensor, time) -> bool:
    ds = np.diff(sensor)
    if (ds < 0).any():
        return False
    return bool(((ds > 0) | (np.diff(time) > 0)).all())


def sensor_segments(sensor):
    """First index and code of each sensor's block in sorted readings, and the block id
    of each reading."""
    new = core.sensor_block_starts(sensor)
    starts = np.flatnonzero(new)
    return starts, np.asarray(sensor)[starts], np.cumsum(new) - 1


def sensor_normals(codes, meta: Mapping[int, SensorMeta]) -> np.ndarray:
    """The configured normal value of each sensor [canonical unit]; NaN where none."""
    return np.array([np.nan if meta[c].normal is None else float(meta[c].normal) for c in np.asarray(codes).tolist()],
                    dtype=np.float64)


def intervals_us(codes, meta: Mapping[int, SensorMeta], sensor, time) -> np.ndarray:
    """Sample interval of each sensor [us]: from ``meta``, else the data's median spacing."""
    out = np.zeros(len(codes), dtype=np.int64)
    missing = []
    for i, c in enumerate(codes.tolist()):
        m = meta[c]
        if m.interval_s:
            out[i] = int(round(m.interval_s * core.US))
        else:
            missing.append(i)
    if missing:
        mc, mi = core.median_interval(sensor, time)
        out[missing] = mi[np.searchsorted(mc, codes[missing])]
    return out


def rule_episodes(rule_index: int, rule: Rule, sensor, time, value, brk, max_gap,
                  history_start=None, avg=None, normal=None, configured=None):
    """Episodes of one continuous rule over usable readings of sensors it applies to.

    Parameters
    ----------
    rule_index : int
        Written into the episodes' ``rule`` field.
    rule : Rule
        A ``range`` or ``slug`` rule.
    sensor, time, value : ndarray
        Usable readings sorted by sensor then time.
    brk : ndarray of bool
        :func:`limits.core.segment_starts` with ``max_gap``.
    max_gap : int or ndarray
        Gap limit [us], scalar or per reading.
    history_start : ndarray of int64, optional
        Slug: per reading, its sensor's first usable reading ever [us UTC].
    avg : ndarray of float64, optional
        Slug: the baselines if already known (the streaming evaluator passes them), with
        ``configured`` (per reading: the baseline is the configured normal value).
    normal : ndarray of float64, optional
        Slug: per reading, its sensor's configured normal value (NaN: none), the baseline
        before a full window of history (:func:`limits.twa.normal_operation_average`).

    Returns
    -------
    episodes : ndarray of EPISODE_DTYPE
    avg : ndarray of float64 or None
        Slug: the baselines used (trailing averages during normal operation).
    flag : ndarray of bool
        The exceeding readings (before a slug's duration test).
    """
    if rule.kind == "range":
        # a duration qualifier ("for more than one hour"): shorter runs are no violation, a
        # longer one starts at its first reading over (the streaming evaluator keeps an open
        # run's readings from its first, so it gives the same episode once past the duration)
        flag = core.exceeds(value, rule.limit_canonical, rule.op)
        qualifier = None if rule.longer_than_min is None else int(round(rule.longer_than_min * core.MINUTE_US))
        return core.make_episodes(sensor, time, value, flag, brk, rule_index, rule.limit_canonical,
                                  lowest=rule.op in ("<", "<="), min_duration=qualifier), None, flag
    if rule.kind == "slug":
        if avg is None:
            avg, flag, configured = twa.normal_operation_average(
                sensor, time, value, int(round(rule.window_h * core.HOUR_US)), max_gap, rule.multiple, rule.op,
                history_start=history_start, normal=normal)
        else:
            flag = core.exceeds(value, rule.multiple * avg, rule.op)
        threshold = rule.multiple * avg
        eps = core.make_episodes(sensor, time, value, flag, brk, rule_index, threshold,
                                 min_duration=int(round(rule.longer_than_min * core.MINUTE_US)),
                                 basis=configured)
        return eps, avg, flag
    raise ValueError(f"rule {rule.id} is a {rule.kind} rule, not a continuous one")


def evaluate(rules: Pack | Sequence[Rule], sensor, time, value, quality=None, *,
             meta: Mapping[int, SensorMeta], gap_multiple: float = DEFAULT_GAP_MULTIPLE,
             history_start: Mapping[int, int] | None = None,
             chunk_readings: int = CHUNK_READINGS) -> np.ndarray:
    """Evaluate continuous rules over readings of many sensors.

    Parameters
    ----------
    rules : Pack or sequence of Rule
        A pack (its ``range`` and ``slug`` rules are used) or the rules themselves; the
        episodes' ``rule`` field indexes this sequence (``pack.continuous_rules()``).
    sensor, time, value, quality : array_like
        Readings sorted by sensor then time (see :func:`prepare`): sensor codes, [us UTC],
        [canonical unit], quality (0 good) or None.
    meta : mapping of sensor code to SensorMeta
        The parameter (and nominal interval) of every sensor present.
    gap_multiple : float
        A gap longer than ``gap_multiple`` sample intervals ends an episode.
    history_start : mapping of sensor code to int, optional
        First usable reading ever of a sensor [us UTC] when older than these readings.
    chunk_readings : int
        Evaluate whole sensors in chunks of about this many readings.

    Returns
    -------
    ndarray of :data:`limits.core.EPISODE_DTYPE`
        Sorted by sensor, start, rule.
    """
    rule_list = tuple(rules.continuous_rules()) if isinstance(rules, Pack) else tuple(rules)
    sensor = np.asarray(sensor, dtype=np.int64)
    time = np.asarray(time, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    if len(time) == 0 or not rule_list:
        return np.empty(0, dtype=core.EPISODE_DTYPE)
    new = core.sensor_block_starts(sensor)
    starts = np.flatnonzero(new)
    del new
    bounds = np.append(starts, len(time))
    # chunks of whole sensors, about chunk_readings each
    cuts = np.unique(np.searchsorted(bounds, np.arange(0, len(time), max(1, chunk_readings)), side="left"))
    cuts = np.append(cuts[cuts < len(starts)], len(starts))
    parts = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        lo, hi = bounds[a], bounds[b]
        s, t, v = sensor[lo:hi], time[lo:hi], value[lo:hi]
        ok = core.valid_mask(v, None if quality is None else np.asarray(quality)[lo:hi])
        if not ok.all():
            s, t, v = s[ok], t[ok], v[ok]
        if len(t):
            parts.append(_evaluate_block(rule_list, s, t, v, meta, gap_multiple, history_start))
    if not parts:
        return np.empty(0, dtype=core.EPISODE_DTYPE)
    eps = np.concatenate(parts) if len(parts) > 1 else parts[0]
    order = np.lexsort((eps["rule"], eps["start"], eps["sensor"]))
    return eps[order]


def _evaluate_block(rule_list, sensor, time, value, meta, gap_multiple, history_start):
    new = core.sensor_block_starts(sensor)
    starts = np.flatnonzero(new)
    codes = sensor[starts]
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(time))))
    gap_seg = np.rint(gap_multiple * intervals_us(codes, meta, sensor, time)).astype(np.int64)
    max_gap = int(gap_seg[0]) if (gap_seg == gap_seg[0]).all() else gap_seg[seg]
    brk = core.segment_starts(sensor, time, max_gap)
    params = [meta[c].parameter for c in codes.tolist()]
    hist = None
    if history_start is not None:
        hs = np.array([history_start.get(c, t) for c, t in zip(codes.tolist(), time[starts].tolist())],
                      dtype=np.int64)
        hist = hs[seg]
    normal = sensor_normals(codes, meta)
    normal = None if np.isnan(normal).all() else normal[seg]
    out = []
    subsets = {}
    for ri, rule in enumerate(rule_list):
        applies = tuple(rule.applies_to(p) for p in params)
        if not any(applies):
            continue
        if all(applies):
            sub = (sensor, time, value, brk, max_gap, hist, normal)
        elif applies in subsets:
            sub = subsets[applies]
        else:
            m = np.array(applies, dtype=bool)[seg]
            sub = (sensor[m], time[m], value[m], brk[m],
                   max_gap if np.isscalar(max_gap) else max_gap[m], None if hist is None else hist[m],
                   None if normal is None else normal[m])
            subsets[applies] = sub
        s, t, v, b, g, h, nm = sub
        eps, _, _ = rule_episodes(ri, rule, s, t, v, b, g, history_start=h, normal=nm)
        out.append(eps)
    return np.concatenate(out) if out else np.empty(0, dtype=core.EPISODE_DTYPE)


def iso_utc(us: int) -> str:
    """ISO-8601 UTC text of a time [us since the epoch], e.g. ``2026-03-01T06:00:00Z``."""
    dt = datetime.fromtimestamp(us // core.US, timezone.utc).replace(microsecond=us % core.US)
    return dt.isoformat().replace("+00:00", "Z")


def iso_utc_array(us) -> list[str]:
    """:func:`iso_utc` over an array, vectorised (seconds unless a fraction is present)."""
    us = np.asarray(us, dtype=np.int64)
    dt = us.astype("datetime64[us]")
    out = np.datetime_as_string(dt, unit="s").astype(object)
    frac = (us % core.US) != 0
    if frac.any():
        out[frac] = np.datetime_as_string(dt[frac], unit="us")
    return [x + "Z" for x in out.tolist()]


def violations(episodes: np.ndarray, rules: Pack | Sequence[Rule], pack: Pack,
               meta: Mapping[int, SensorMeta]) -> list[dict]:
    """Episodes as plain records, ready for JSON or the ``violations`` table.

    Each record: ``site``, ``sensor``, ``parameter``, ``rule``, ``kind``, ``start``, ``end``,
    ``last`` (ISO-8601 UTC), ``duration_s``, ``peak``, ``peak_time``, ``limit``, ``unit``
    (the canonical unit of peak and limit), ``comparison``, ``citation``, ``words``,
    ``pack``, ``days_of_violation`` and ``readings``. For a slug, ``limit`` is the
    ``multiple`` x trailing-average threshold at the peak reading and ``average`` that
    average.
    """
    rule_list = tuple(rules.continuous_rules()) if isinstance(rules, Pack) else tuple(rules)
    # an episode existed from its first exceeding reading to its last, inclusive (limits.days)
    days = days_touched(episodes["start"], episodes["last"] + INSTANT_US, pack.tz)
    iso = {f: iso_utc_array(episodes[f]) for f in ("start", "end", "last", "peak_time")}
    out = []
    for k, (e, d) in enumerate(zip(episodes.tolist(), days.tolist())):
        code, ri, start, end, last, peak, peak_time, limit, n, basis = e
        rule = rule_list[ri]
        m = meta[code]
        rec = {
            "site": m.site, "sensor": m.name, "parameter": m.parameter, "rule": rule.id,
            "kind": rule.kind, "start": iso["start"][k], "end": iso["end"][k], "last": iso["last"][k],
            "duration_s": (end - start) / core.US, "peak": peak + 0.0, "peak_time": iso["peak_time"][k],
            "limit": limit + 0.0, "unit": CANONICAL[m.parameter], "comparison": rule.comparison,
            "citation": rule.citation, "provenance": rule.provenance, "words": rule.words, "pack": pack.id,
            "days_of_violation": d, "readings": n, "applies": rule.origin,
        }
        if rule.stricter_of:
            rec["stricter_of"] = rule.stricter_of
        if rule.kind == "slug":
            rec["average"] = limit / rule.multiple
            rec["multiple"] = rule.multiple
            rec["baseline"] = m.normal_source if basis else NORMAL_OPERATION
        out.append(rec)
    return out


#: What a slug's baseline is once the sensor has 24 hours of history (palmyra-wi,
#: 003_44f871d49a02d8f5.txt §13.43 SLUG: "the average 24-hour concentration or flows during
#: normal operation").
NORMAL_OPERATION = "24-hour average during normal operation"
#: What ``check`` and ``status`` say of a sensor whose slug cannot be judged yet.
NO_BASELINE = "slug not judged: no baseline yet"


def slug_not_judged(rules: Pack | Sequence[Rule], sensor, time, value, quality=None, *,
                    meta: Mapping[int, SensorMeta], history_start: Mapping[int, int] | None = None) -> list[dict]:
    """Where a slug rule could not judge a sensor: no full window of history and no
    configured normal value (:attr:`SensorMeta.normal`).

    Parameters are those of :func:`evaluate` (readings sorted by sensor then time).

    Returns
    -------
    list of dict
        One per sensor and slug rule: ``site``, ``sensor``, ``parameter``, ``rule``,
        ``from`` and ``until`` (the first and last usable reading not judged, ISO-8601
        UTC) and ``note`` (:data:`NO_BASELINE`).
    """
    rule_list = tuple(rules.continuous_rules()) if isinstance(rules, Pack) else tuple(rules)
    slugs = [r for r in rule_list if r.kind == "slug"]
    sensor = np.asarray(sensor, dtype=np.int64)
    time = np.asarray(time, dtype=np.int64)
    if not slugs or len(time) == 0:
        return []
    ok = core.valid_mask(np.asarray(value, dtype=np.float64), quality)
    s, t = sensor[ok], time[ok]
    starts, codes, seg = sensor_segments(s)
    ends = np.append(starts[1:], len(t)) - 1
    out = []
    for k, c in enumerate(codes.tolist()):
        m = meta[c]
        if m.normal is not None:
            continue
        first = (history_start or {}).get(c, int(t[starts[k]]))
        for r in slugs:
            if not r.applies_to(m.parameter):
                continue
            limit = first + int(round(r.window_h * core.HOUR_US))      # the first full window
            block = t[starts[k]:ends[k] + 1]
            inside = block[block < limit]
            if len(inside):
                out.append({"site": m.site, "sensor": m.name, "parameter": m.parameter, "rule": r.id,
                            "from": iso_utc(int(inside[0])), "until": iso_utc(int(inside[-1])),
                            "note": NO_BASELINE})
    return out
