"""A sensor without a nominal interval learns it from its first readings' stamps
(``alerts.episodes.learned_interval_us``), whatever batches they arrive in.

A device that flushes a start-up burst (40 readings 5 ms apart) and then reads once a
second is a 1-s sensor. The burst may reach the evaluator alone, in a batch of its own,
before any regular reading (as happens when the collector's batch closes between the
burst and the first tick): it must not be learned as a 5-ms sensor (bounded up to
0.1 s: every later 1-s reading a new episode).
"""

from __future__ import annotations

import numpy as np

from alerts.episodes import LEARN_FALLBACK, LEARN_MIN_S, learned_interval_us

US = 1_000_000
T0 = 1_780_000_000 * US


def _burst() -> np.ndarray:
    return T0 - US + np.arange(40, dtype=np.int64) * 5_000


def test_a_start_up_burst_alone_teaches_nothing():
    assert learned_interval_us(_burst()) is None


def test_the_burst_with_the_first_ticks_waits_for_the_device_s_own_spacing():
    ticks = T0 + np.arange(2, dtype=np.int64) * US
    assert learned_interval_us(np.concatenate([_burst(), ticks])) is None


def test_the_device_s_second_is_learned_once_its_spacings_agree():
    ticks = T0 + np.arange(7, dtype=np.int64) * US
    assert learned_interval_us(np.concatenate([_burst(), ticks])) == US
    # the same readings in another order (batches arrive as they arrive)
    mixed = np.concatenate([ticks[::-1], _burst()[::-1]])
    assert learned_interval_us(mixed) == US


def test_a_sensor_faster_than_the_bound_is_learned_at_the_bound_after_the_fallback():
    fast = T0 + np.arange(LEARN_FALLBACK, dtype=np.int64) * 5_000
    assert learned_interval_us(fast[:LEARN_FALLBACK - 1]) is None
    assert learned_interval_us(fast) == int(LEARN_MIN_S * US)


def test_a_regular_sensor_is_learned_from_a_dozen_readings():
    assert learned_interval_us(T0 + np.arange(12, dtype=np.int64) * 60 * US) == 60 * US
    assert learned_interval_us(T0 + np.arange(11, dtype=np.int64) * 60 * US) is None
