"""Judging a sensor again from its stored readings, and what that changes.

A reading older than the newest one already judged for its sensor (a reordered batch, a
device whose clock stepped back, a spool replayed late) cannot go through the streaming
evaluator in time order. The live path (:class:`alerts.episodes.LiveEpisodes`) judges such
a sensor again over a window of its stored readings with a fresh
:class:`limits.streaming.StreamingEvaluator` (:func:`judge`), exactly as ``sewerwatch check
--from --to`` does (:mod:`limits.history` pushes its windows into the same evaluator), and
compares the episodes found with those reported before (:func:`reconcile`), so that one
episode stays one ``violations`` row and one alert:

* an old episode that overlaps a new one *continues as it*: same row, its start moved when
  late readings began it earlier, its end and peak brought up to date;
* an old episode overlapping a new one that an earlier old episode already continues was
  *merged* into it (late readings filled the gap between them): its row is withdrawn;
* an old episode that no new one overlaps *vanished* (a slug whose baseline the late
  readings changed): withdrawn;
* a new episode that overlaps no old one is *new* (the late readings held a violation).

Everything here is numpy over one sensor's readings and episodes; the database and the
alerts are the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from limits import core
from limits.evaluator import DEFAULT_GAP_MULTIPLE, SensorMeta
from limits.packs import Rule
from limits.streaming import StreamingEvaluator

#: Readings pushed into the fresh evaluator at a time (memory, as ``check``'s windows).
PUSH_READINGS = 250_000
#: The shortest look back before a late reading [us]: the run it may continue starts there
#: or earlier (a look back that finds the run still going is doubled, :func:`needs_earlier`).
MIN_LEAD_US = 15 * core.MINUTE_US

#: An old episode known to the caller: rule index, first and last exceeding reading [us UTC].
OLD_DTYPE = np.dtype([("rule", np.int32), ("start", np.int64), ("last", np.int64)])


def slug_window_us(rules: Sequence[Rule], parameter: str) -> int:
    """The longest trailing window of the slug rules judging ``parameter`` [us] (0: none)."""
    return max((int(round(r.window_h * core.HOUR_US)) for r in rules
                if r.kind == "slug" and r.applies_to(parameter)), default=0)


def lead_us(rules: Sequence[Rule], parameter: str, gap_us: int) -> int:
    """How far before a late reading its sensor is judged again [us]: a slug's baseline needs
    two windows of history (as ``check --from`` reads), a range rule the run it may join."""
    win = slug_window_us(rules, parameter)
    return max(2 * win + gap_us, MIN_LEAD_US, 10 * gap_us)


def judge(rules: Sequence[Rule], meta: Mapping[int, SensorMeta], sensor, time, value, quality, *,
          gap_multiple: float = DEFAULT_GAP_MULTIPLE, history_start: Mapping[int, int] | None = None
          ) -> tuple[StreamingEvaluator, np.ndarray, np.ndarray]:
    """Judge stored readings (sorted by sensor then time) with a fresh streaming evaluator.

    Parameters
    ----------
    rules, meta, gap_multiple, history_start
        As for :class:`limits.streaming.StreamingEvaluator` (``history_start``: each
        sensor's first reading ever, as ``check`` takes it from the database).
    sensor, time, value, quality : ndarray
        The readings [sensor code, us UTC, canonical unit, quality].

    Returns
    -------
    evaluator : StreamingEvaluator
        Its state after the last reading (what a live evaluator would hold).
    closed : ndarray of EPISODE_DTYPE
        The episodes closed within the readings.
    still_open : ndarray of EPISODE_DTYPE
        Those still open after the last reading.
    """
    ev = StreamingEvaluator(tuple(rules), meta, gap_multiple, history_start=history_start)
    parts = [np.empty(0, dtype=core.EPISODE_DTYPE)]
    n = len(time)
    if n:
        # cut at time boundaries (never inside one instant) so each push is in time order per sensor
        order = np.argsort(time, kind="stable")
        s, t, v, q = (np.asarray(a)[order] for a in (sensor, time, value, quality))
        for a in range(0, n, PUSH_READINGS):
            b = min(a + PUSH_READINGS, n)
            parts.append(ev.push(s[a:b], t[a:b], v[a:b], q[a:b]))
    closed = np.concatenate(parts)
    return ev, closed, ev.open_episodes()


def needs_earlier(episodes: np.ndarray, first_usable_us: int | None, window_start_us: int,
                  history_start_us: int | None) -> bool:
    """Whether the window judged began inside a run: an episode starts at its first usable
    reading, and the sensor has readings before the window."""
    if first_usable_us is None or not len(episodes):
        return False
    if history_start_us is not None and history_start_us >= window_start_us:
        return False
    return bool((episodes["start"] <= first_usable_us).any())


@dataclass
class Plan:
    """What a judgement again changes, for one sensor (see the module's description).

    ``rows[i]`` is the start of the old episode whose row new episode ``i`` continues (None:
    a new episode); ``withdrawn`` lists ``(rule, old start, start of the new episode it was
    merged into or None)``.
    """

    rows: list = field(default_factory=list)
    withdrawn: list = field(default_factory=list)


def reconcile(old: np.ndarray, new: np.ndarray) -> Plan:
    """Match the episodes of one sensor known before (:data:`OLD_DTYPE`) with those judged
    again (:data:`limits.core.EPISODE_DTYPE`), rule by rule, by overlap of
    ``[start, last]``.

    Each old episode continues the first new episode (by start) it overlaps, unless an
    earlier old episode continues that one already (then it was merged into it); an old
    episode overlapping none is withdrawn. New episodes overlapping no old one are new.
    """
    plan = Plan(rows=[None] * len(new))
    for ri in np.union1d(old["rule"], new["rule"]).tolist():
        o_idx = np.flatnonzero(old["rule"] == ri)
        o_idx = o_idx[np.argsort(old["start"][o_idx], kind="stable")]
        n_idx = np.flatnonzero(new["rule"] == ri)
        n_idx = n_idx[np.argsort(new["start"][n_idx], kind="stable")]
        ns, nl = new["start"][n_idx], new["last"][n_idx]
        for j in o_idx.tolist():
            os_, ol = int(old["start"][j]), int(old["last"][j])
            hit = np.flatnonzero((ns <= ol) & (nl >= os_))
            if not len(hit):
                plan.withdrawn.append((int(ri), os_, None))
                continue
            k = int(n_idx[hit[0]])
            if plan.rows[k] is None:
                plan.rows[k] = os_
            else:
                plan.withdrawn.append((int(ri), os_, int(new["start"][k])))
    return plan
