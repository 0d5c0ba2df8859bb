"""Streaming evaluation gives exactly the batch evaluator's episodes, whatever the batches."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limits import core
from limits.evaluator import SensorMeta, evaluate, prepare
from limits.packs import load_pack
from limits.streaming import StreamingEvaluator

PAL = load_pack("palmyra-wi")
T0 = 1_772_344_800 * core.US
# The pack's rules, plus the slug rule with a one-hour window and five minutes, so that a
# few hundred random readings hold many slugs (the 24-hour rule is checked below too).
SHORT_SLUG = dataclasses.replace(PAL.rule("slug"), id="slug-1h", window_h=1.0, longer_than_min=5.0)
RULES = PAL.continuous_rules() + (SHORT_SLUG,)
PARAMS = ("ph", "flow", "temperature", "flow")


def make_readings(seed, n_sensors, length, nan_rate, step_choices, spike_every=60, normal=None):
    rng = np.random.default_rng(seed)
    S, T, V, Q = [], [], [], []
    meta = {}
    for c in range(n_sensors):
        p = PARAMS[c % len(PARAMS)]
        # a configured normal flow (the permit's average daily flow) on every other flow meter
        meta[c] = SensorMeta(p, 60.0, normal=normal if p == "flow" and c % 2 else None)
        steps = rng.choice(step_choices, size=length)
        t = T0 + np.cumsum(steps) * core.US + c * 7 * core.US
        if p == "ph":
            v = rng.choice([4.0, 5.9, 6.0, 7.0, 7.5, 9.0, 9.2], size=length)
        elif p == "temperature":
            v = rng.choice([60.0, 149.0, 150.0, 151.0], size=length, p=[0.6, 0.2, 0.1, 0.1])
        else:
            v = rng.uniform(80, 120, size=length)
            for _ in range(max(1, length // spike_every)):
                a = rng.integers(0, length)
                # spikes of one level each, some just above 5 x normal (the slug's own
                # readings then decide for several rounds what normal operation is)
                v[a:a + rng.integers(1, 30)] = rng.choice([rng.uniform(300, 900), rng.uniform(505, 530)])
        v[rng.random(length) < nan_rate] = np.nan
        q = np.where(rng.random(length) < nan_rate / 2, rng.integers(1, 3, length), 0)
        S.append(np.full(length, c)); T.append(t); V.append(v); Q.append(q)
    return (np.concatenate(S), np.concatenate(T), np.concatenate(V),
            np.concatenate(Q).astype(np.int16), meta)


def stream(rules, meta, S, T, V, Q, cuts, shuffle_seed=None, use_now=False):
    order = np.argsort(T, kind="stable")            # arrival order: by time, sensors interleaved
    ev = StreamingEvaluator(rules, meta)
    out = []
    bounds = [0, *sorted(set(cuts)), len(order)]
    rng = np.random.default_rng(shuffle_seed)
    for a, b in zip(bounds[:-1], bounds[1:]):
        idx = order[a:b]
        if shuffle_seed is not None:
            idx = rng.permutation(idx)              # order inside a batch does not matter
        now = int(T[idx].max()) if use_now and len(idx) else None   # a clock at the newest reading
        out.append(ev.push(S[idx], T[idx], V[idx], Q[idx], now=now))
    out.append(ev.flush())
    got = np.concatenate(out)
    return got[np.lexsort((got["rule"], got["start"], got["sensor"]))], ev


def batch(rules, meta, S, T, V, Q):
    s, t, v, q = prepare(S, T, V, Q)
    return evaluate(rules, s, t, v, q, meta=meta)


def assert_same(got, want):
    assert got.dtype == want.dtype
    assert len(got) == len(want), (len(got), len(want))
    for f in want.dtype.names:
        assert np.array_equal(got[f], want[f]), f      # bit for bit, limits included


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_sensors=st.integers(1, 4), length=st.integers(1, 400),
       nan_rate=st.sampled_from([0.0, 0.05, 0.3]),
       steps=st.sampled_from([(60,), (30, 60, 90), (59, 60, 61, 400), (1, 60, 300, 3600)]),
       cut_fracs=st.lists(st.floats(0, 1), max_size=12), shuffle=st.booleans(), repeats=st.booleans(),
       use_now=st.booleans(), normal=st.sampled_from([None, 100.0, 20.0]))
def test_streaming_equals_batch_for_random_data_and_splits(seed, n_sensors, length, nan_rate, steps,
                                                           cut_fracs, shuffle, repeats, use_now, normal):
    S, T, V, Q, meta = make_readings(seed, n_sensors, length, nan_rate, steps, normal=normal)
    if repeats:
        # the same (sensor, time) again, later, with another value: the first one counts
        rng = np.random.default_rng(seed + 1)
        d = rng.choice(len(T), size=max(1, len(T) // 20), replace=False)
        S, T = np.concatenate([S, S[d]]), np.concatenate([T, T[d]])
        V = np.concatenate([V, rng.choice([np.nan, 3.0, 1000.0], size=len(d))])
        Q = np.concatenate([Q, np.zeros(len(d), dtype=Q.dtype)])
    cuts = [int(f * len(T)) for f in cut_fracs]
    want = batch(RULES, meta, S, T, V, Q)
    # (a batch in any order, except with repeats: there arrival order says which came first)
    got, _ = stream(RULES, meta, S, T, V, Q, cuts, seed if shuffle and not repeats else None, use_now)
    assert_same(got, want)


def test_streaming_equals_batch_with_the_24_hour_slug_and_keeps_bounded_state():
    rng = np.random.default_rng(11)
    S, T, V, Q, meta = make_readings(5, 4, 4 * 1440, 0.02, (55, 60, 65), spike_every=500, normal=100.0)
    want = batch(PAL, meta, S, T, V, Q)
    assert want["basis"].any() and not want["basis"].all()   # first-day slugs and later ones
    assert (np.array([PAL.continuous_rules()[r].id for r in want["rule"]]) == "slug").sum() >= 3
    cuts = rng.integers(0, len(T), 40).tolist()
    got, ev = stream(PAL, meta, S, T, V, Q, cuts)
    assert_same(got, want)
    # state is about a day per sensor, not the whole history
    assert ev.kept_readings < 4 * (1440 + 200) + 4


def test_one_reading_at_a_time_and_late_readings_dropped():
    S, T, V, Q, meta = make_readings(3, 2, 300, 0.05, (60,))
    want = batch(RULES, meta, S, T, V, Q)
    got, _ = stream(RULES, meta, S, T, V, Q, list(range(len(T))))
    assert_same(got, want)
    ev = StreamingEvaluator(RULES, meta)
    ev.push([0, 0], [T0 + 120 * core.US, T0 + 180 * core.US], [7.0, 7.0])
    ev.push([0], [T0 + 60 * core.US], [3.0])          # older than what was seen: dropped
    assert ev.dropped_late == 1
    assert len(ev.flush()) == 0


def test_open_episode_is_reported_once_closed():
    meta = {0: SensorMeta("ph", 60.0)}
    ev = StreamingEvaluator(PAL, meta)
    t = T0 + np.arange(5) * 60 * core.US
    assert len(ev.push(np.zeros(3), t[:3], [7.0, 4.0, 4.5])) == 0
    assert len(ev.open_episodes()) == 1 and ev.open_episodes()[0]["start"] == t[1]
    closed = ev.push(np.zeros(2), t[3:], [7.0, 7.0])
    assert len(closed) == 1 and closed[0]["end"] == t[3] and closed[0]["peak"] == 4.0
    assert len(ev.open_episodes()) == 0 and len(ev.flush()) == 0


def test_silent_sensor_closes_its_episode_at_now():
    meta = {0: SensorMeta("ph", 60.0), 1: SensorMeta("ph", 60.0)}
    ev = StreamingEvaluator(PAL, meta)
    t = T0 + np.arange(4) * 60 * core.US
    assert len(ev.push([0, 0, 1, 1], [t[0], t[1], t[0], t[1]], [7.0, 4.0, 7.0, 7.0])) == 0
    # three intervals later the sensor may still continue; a moment after, it cannot
    assert len(ev.push([1], [t[2]], [7.0], now=t[1] + 180 * core.US)) == 0
    closed = ev.push([1], [t[3]], [7.0], now=t[1] + 181 * core.US)
    assert len(closed) == 1 and closed[0]["end"] == closed[0]["last"] == t[1]
    # the sensor comes back after the gap: nothing is reported twice, and all equals batch
    later = ev.push([0, 0], [t[3] + 600 * core.US, t[3] + 660 * core.US], [4.5, 7.0])
    assert len(later) == 1 and later[0]["start"] == t[3] + 600 * core.US
    assert len(ev.flush()) == 0
    S = np.array([0, 0, 1, 1, 1, 1, 0, 0])
    T = np.array([t[0], t[1], t[0], t[1], t[2], t[3], t[3] + 600 * core.US, t[3] + 660 * core.US])
    V = np.array([7.0, 4.0, 7.0, 7.0, 7.0, 7.0, 4.5, 7.0])
    want = batch(PAL, meta, S, T, V, np.zeros(8, dtype=np.int16))
    assert_same(np.concatenate([closed, later]), want)


def test_a_sensor_without_a_nominal_interval_learns_it_from_two_readings_not_one():
    # readings one at a time (as MQTT batches of one reading each may come): the first batch
    # says nothing about the spacing; learning 0 from it used to end an episode at every
    # reading. Now the spacing is learnt once two readings are in, and equals the batch's.
    meta = {0: SensorMeta("ph", None, "candy", "ph")}
    vals = [7.0, 7.0, 4.0, 4.0, 4.0, 7.0, 7.0]
    t = T0 + np.arange(len(vals)) * 60 * core.US
    got, _ = stream(PAL, meta, np.zeros(len(vals), np.int64), t, np.array(vals),
                    np.zeros(len(vals), np.int16), list(range(len(vals))))
    want = batch(PAL, meta, np.zeros(len(vals), np.int64), t, np.array(vals), np.zeros(len(vals), np.int16))
    assert_same(got, want)
    assert len(got) == 1 and got[0]["n"] == 3 and got[0]["end"] - got[0]["start"] == 3 * 60 * core.US
