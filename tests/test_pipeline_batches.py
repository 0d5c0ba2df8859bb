"""The evaluator's batches: stored readings and live ones are never judged in one push.

A new leader queues the readings stored in its warm-up window before it starts collecting;
the first live readings often wait in the same queue. Merged into one push, the live
readings of a sensor whose clock stands an hour behind were judged in order against nothing
(its stored history sorts after them), so its episode opened again at the first live reading
and its alert counted a second episode (``tests/test_watched_party.py``, about one run in
two). ``sewerwatch.pipeline._take_same_kind`` keeps the kinds apart, in queue order.
"""

from __future__ import annotations

import asyncio

import numpy as np

from ingest.batch import Readings
from sewerwatch.pipeline import _merge_parts, _take_same_kind


def _part(t0: int, n: int, received):
    r = Readings(np.arange(t0, t0 + n, dtype=np.int64), np.full(n, 2, dtype=np.int64), np.full(n, 7.0),
                 np.zeros(n, dtype=np.int16))
    return r, 0, received


def _queue(*parts) -> asyncio.Queue:
    q: asyncio.Queue = asyncio.Queue()
    for p in parts:
        q.put_nowait(p)
    return q


def test_stored_parts_are_taken_together_and_the_first_live_part_waits():
    stored_a, stored_b = _part(0, 3, None), _part(3, 2, None)
    live_a, live_b = _part(100, 2, 1.5), _part(102, 1, 1.6)
    q = _queue(stored_b, live_a, live_b, _part(5, 1, None))
    parts = [stored_a]
    carried = _take_same_kind(q, parts)
    assert parts == [stored_a, stored_b]
    assert carried is live_a
    merged = _merge_parts(parts)
    assert merged[2] is None and len(merged[0]) == 5          # stored: no arrival time given
    # the next batch: the carried live part and the live one behind it, not the stored one after
    parts = [carried]
    carried = _take_same_kind(q, parts)
    assert parts == [live_a, live_b] and carried[2] is None and len(carried[0]) == 1
    assert q.empty()


def test_the_stop_marker_goes_with_the_batch_it_follows():
    live = _part(0, 2, 1.0)
    q = _queue(_part(2, 1, 1.1), None)
    parts = [live]
    assert _take_same_kind(q, parts) is None
    assert len(parts) == 3 and parts[-1] is None
