"""The vectorised core: units, episodes, gaps, skipped readings, slugs, days of violation."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from foundation import units
from limits import core, twa
from limits.days import days_touched
from limits.evaluator import SensorMeta, evaluate, prepare
from limits.packs import load_pack
from foundation.errors import InputError

MIN = core.MINUTE_US
T0 = int(datetime(2026, 3, 1, 6, 0, tzinfo=timezone.utc).timestamp()) * core.US  # midnight CST
PAL = load_pack("palmyra-wi")
RULES = PAL.continuous_rules()


def rule_ids(eps, pack=PAL):
    rules = pack.continuous_rules()
    return [rules[r].id for r in eps["rule"]]


# --- units ---------------------------------------------------------------------------

@pytest.mark.parametrize("parameter,unit,value,expected", [
    ("temperature", "degC", 40.0, 104.0),
    ("temperature", "degC", -40.0, -40.0),
    ("temperature", "degF", 104.0, 104.0),
    ("flow", "mgd", 1.44, 1000.0),
    ("flow", "gpd", 1440.0, 1.0),
    ("flow", "m3/d", 1.0, 1000 / 3.785411784 / 1440),
    ("flow", "l/s", 1.0, 60 / 3.785411784),
    ("flow", "cfs", 1.0, 7.480519480519481 * 60),
    ("concentration", "ug/l", 500.0, 0.5),
    ("concentration", "ppm", 100.0, 100.0),
    ("ph", "pH", 7.2, 7.2),
])
def test_conversions_to_canonical_and_back(parameter, unit, value, expected):
    got = units.to_canonical(parameter, unit, np.array([value]))
    assert got[0] == pytest.approx(expected, rel=1e-12)
    assert units.from_canonical(parameter, unit, got)[0] == pytest.approx(value, rel=1e-12)


def test_unknown_units_and_parameters_are_errors_never_guesses():
    with pytest.raises(InputError, match="unknown unit 'degK' for temperature"):
        units.to_canonical("temperature", "degK", [1.0])
    with pytest.raises(InputError, match="unknown unit 'GPM' for flow"):
        units.to_canonical("flow", "GPM", [1.0])
    with pytest.raises(InputError, match="unknown parameter 'turbidity'"):
        units.check_unit("turbidity", "NTU")


# --- range episodes, gaps, skipped readings ------------------------------------------

def run(values, times=None, *, parameter="ph", quality=None, interval=60.0, gap_multiple=3.0,
        pack=PAL, sensor=None):
    values = np.asarray(values, dtype=float)
    n = len(values)
    times = T0 + np.arange(n) * MIN if times is None else np.asarray(times, dtype=np.int64)
    sensor = np.zeros(n, dtype=np.int64) if sensor is None else np.asarray(sensor)
    meta = {int(c): SensorMeta(parameter, interval) for c in np.unique(sensor)}
    s, t, v, q = prepare(sensor, times, values, quality)
    return evaluate(pack, s, t, v, q, meta=meta, gap_multiple=gap_multiple)


def test_episode_start_end_peak_and_count():
    eps = run([7, 5.5, 5.2, 5.9, 7, 7, 9.5, 9.8, 7])
    assert rule_ids(eps) == ["ph-min", "ph-max"]
    low, high = eps
    assert low["start"] == T0 + 1 * MIN and low["last"] == T0 + 3 * MIN
    assert low["end"] == T0 + 4 * MIN          # seen to be over at the next reading
    assert low["peak"] == 5.2 and low["peak_time"] == T0 + 2 * MIN and low["n"] == 3
    assert low["limit"] == 6.0
    assert high["peak"] == 9.8 and high["n"] == 2 and high["limit"] == 9.0


def test_gap_longer_than_k_intervals_ends_an_episode():
    low = [5.0] * 3
    t_a = T0 + np.arange(3) * MIN
    # gap of exactly 3 intervals: still continuous; one second more: a new episode
    same = run(low + low, np.concatenate([t_a, t_a[-1] + 3 * MIN + np.arange(3) * MIN]))
    assert len(same) == 1 and same[0]["n"] == 6
    split = run(low + low, np.concatenate([t_a, t_a[-1] + 3 * MIN + core.US + np.arange(3) * MIN]))
    assert len(split) == 2 and list(split["n"]) == [3, 3]
    assert split[0]["end"] == split[0]["last"]   # nothing seen after it before the gap
    # K is configurable
    assert len(run(low + low, np.concatenate([t_a, t_a[-1] + 10 * MIN + np.arange(3) * MIN]),
                   gap_multiple=20)) == 1


def test_nan_and_bad_quality_are_skipped_not_normal():
    # a NaN inside a low run neither ends it nor counts in it
    eps = run([7, 5, np.nan, 5, 7])
    assert len(eps) == 1 and eps[0]["n"] == 2 and eps[0]["start"] == T0 + MIN and eps[0]["last"] == T0 + 3 * MIN
    # a bad-quality reading is skipped too, whatever its value
    q = np.array([0, 0, 2, 0, 0])
    eps = run([7, 5, 7.0, 5, 7], quality=q)
    assert len(eps) == 1 and eps[0]["n"] == 2
    eps = run([7, 7, 3.0, 7, 7], quality=np.array([0, 0, 1, 0, 0]))
    assert len(eps) == 0
    # a long run of NaN is a gap: it ends the episode
    eps = run([5, 5] + [np.nan] * 10 + [5, 5])
    assert len(eps) == 2


def test_many_sensors_interleaved_equal_each_alone():
    rng = np.random.default_rng(7)
    n = 400
    vals = rng.normal(7.5, 1.5, size=(3, n))
    times = T0 + np.cumsum(rng.integers(30, 200, size=(3, n)), axis=1) * core.US
    sensor = np.repeat(np.arange(3), n)
    order = rng.permutation(3 * n)                      # arrives in any order
    together = run(vals.ravel()[order], times.ravel()[order], sensor=sensor[order])
    alone = [run(vals[i], times[i]) for i in range(3)]
    for i in range(3):
        mine = together[together["sensor"] == i]
        assert len(mine) == len(alone[i]) > 5
        for f in ("start", "end", "last", "peak", "n", "rule"):
            assert (mine[f] == alone[i][f]).all()


def test_duplicate_time_keeps_first_reading():
    eps = run([7, 5, 7], np.array([T0, T0 + MIN, T0 + MIN]))
    assert len(eps) == 1 and eps[0]["peak"] == 5


# --- slug ----------------------------------------------------------------------------

def flow_series(event_value=None, event_minutes=0, base=100.0, history_h=26.0, after=60):
    """Flow every minute: ``history_h`` hours at ``base``, an event, then ``after`` minutes of base."""
    n_hist = int(history_h * 60)
    vals = [base] * n_hist + [event_value] * event_minutes + [base] * after
    return np.array(vals, dtype=float), n_hist


@pytest.mark.parametrize("multiple,minutes,expected", [
    (6, 20, 1),     # more than 5x for 20 minutes: a slug
    (6, 10, 0),     # 6x but only 10 minutes
    (4, 60, 0),     # an hour, but only 4x
    (6, 15, 0),     # exactly 15 minutes is not "longer than 15 minutes"
    (6, 16, 1),
    (5, 60, 0),     # exactly 5x is not "more than 5 times"
])
@pytest.mark.parametrize("pack_name", ["palmyra-wi", "westfield-wi"])
def test_slug_rule_words(pack_name, multiple, minutes, expected):
    pack = load_pack(pack_name)
    vals, n_hist = flow_series(100.0 * multiple, minutes)
    eps = run(vals, parameter="flow", pack=pack)
    slugs = eps[np.array(rule_ids(eps, pack)) == "slug"] if len(eps) else eps
    assert len(slugs) == expected
    if expected:
        e = slugs[0]
        assert e["start"] == T0 + n_hist * MIN
        assert e["end"] - e["start"] == minutes * MIN
        assert e["peak"] == 100.0 * multiple
        # limit = 5 x the trailing 24-hour average at the peak (all history at 100 gpm)
        assert e["limit"] == pytest.approx(500.0)


def test_slug_limit_uses_time_weighted_average_on_irregular_times():
    rng = np.random.default_rng(3)
    n = 3000
    times = T0 + np.cumsum(rng.integers(20, 100, n)) * core.US
    vals = rng.uniform(50, 150, n)
    k = 2500
    vals[k:k + 20] = 5000.0
    times = times.astype(np.int64)
    eps = run(vals, times, parameter="flow", interval=60.0)
    slug = eps[np.array(rule_ids(eps)) == "slug"]
    assert len(slug) == 1 and slug[0]["start"] == times[k]
    # brute force: integrate the step function over [t - 24h, t) reading by reading
    avg = twa.trailing_time_weighted_average(np.zeros(n, np.int64), times, vals, 24 * core.HOUR_US, 180 * core.US)
    for i in (k, k - 1, 2000):
        ws = times[i] - 24 * core.HOUR_US
        num = den = 0.0
        for j in range(i):
            a, b = max(times[j], ws), min(times[j + 1], times[j] + 180 * core.US)
            if b > a:
                num += vals[j] * (b - a)
                den += b - a
        assert avg[i] == pytest.approx(num / den, rel=1e-9)  # integrand rounded to value x us
    assert slug[0]["limit"] == pytest.approx(5 * avg[k], rel=1e-15)


def test_no_slug_before_24_hours_of_history():
    vals, n_hist = flow_series(1000.0, 30, history_h=20.0)
    eps = run(vals, parameter="flow")
    assert "slug" not in rule_ids(eps)
    avg = twa.trailing_time_weighted_average(np.zeros(len(vals), np.int64), T0 + np.arange(len(vals)) * MIN,
                                              vals, 24 * core.HOUR_US, 180 * core.US)
    assert np.isnan(avg[:24 * 60]).all() and np.isfinite(avg[24 * 60:]).all()


def test_slug_applies_to_flow_not_ph_and_only_in_packs_that_define_it():
    vals, _ = flow_series(700.0, 30)
    assert "slug" not in rule_ids(run(vals / 100, parameter="ph", pack=PAL))  # slug judges flow, not pH
    west = load_pack("westfield-wi")
    assert rule_ids(run(vals, parameter="flow", pack=west), west) == ["slug"]
    assert len(run(vals, parameter="flow", pack=load_pack("webster-wi"))) == 0   # narrative only


# --- days of violation ---------------------------------------------------------------

def episode_days(start, last, tz):
    """An episode's days: its first to its last exceeding reading, inclusive (limits.days)."""
    return days_touched(start, [x + 1 for x in last], tz)


def test_days_of_violation_are_local_calendar_days():
    chicago = ZoneInfo("America/Chicago")
    # 23:50 to 00:10 local (05:50Z-06:10Z): two local days
    assert episode_days([T0 - 10 * MIN], [T0 + 10 * MIN], chicago)[0] == 2
    # 17:50 to 18:10 local crosses midnight UTC, not local: one day
    t = T0 + 18 * core.HOUR_US
    assert episode_days([t - 10 * MIN], [t + 10 * MIN], chicago)[0] == 1
    # three days: Saturday 23:00 to Monday 01:00 local
    assert episode_days([T0 - core.HOUR_US], [T0 + 25 * core.HOUR_US], chicago)[0] == 3
    # New York is an hour ahead: 05:50Z is 00:50 there, one day
    assert episode_days([T0 - 10 * MIN], [T0 + 10 * MIN], ZoneInfo("America/New_York"))[0] == 1


def test_days_of_violation_across_dst_change():
    chicago = ZoneInfo("America/Chicago")
    # 2026-03-08 is the spring-forward day: local midnight is 06:00Z before, 05:00Z after
    day_start_mar9 = int(datetime(2026, 3, 9, 5, 0, tzinfo=timezone.utc).timestamp()) * core.US
    assert episode_days([day_start_mar9 - MIN], [day_start_mar9], chicago)[0] == 2
    assert episode_days([day_start_mar9 - 2 * MIN], [day_start_mar9 - MIN], chicago)[0] == 1


def test_median_interval_per_sensor():
    s = np.array([0, 0, 0, 0, 5, 5, 9])
    t = np.array([0, 10, 20, 50, 0, 7, 3]) * core.US
    codes, iv = core.median_interval(s, t)
    assert list(codes) == [0, 5, 9] and list(iv) == [10 * core.US, 7 * core.US, 0]


@pytest.mark.parametrize("offset", [0.0, -150.0])
def test_screened_average_is_exact_wherever_the_slug_test_could_pass(offset):
    rng = np.random.default_rng(5)
    n = 6000
    sensor = np.repeat([0, 1, 2], n // 3)
    times = (T0 + np.cumsum(rng.integers(20, 100, n)) * core.US).astype(np.int64)
    vals = rng.gamma(3.0, 30.0, n) + offset
    vals[rng.choice(n, 60, replace=False)] = 900.0
    full = twa.trailing_time_weighted_average(sensor, times, vals, 24 * core.HOUR_US, 300 * core.US)
    screened = twa.trailing_time_weighted_average(sensor, times, vals, 24 * core.HOUR_US, 300 * core.US,
                                                   screen_multiple=5.0)
    both = np.isfinite(screened)
    assert np.array_equal(screened[both], full[both])
    skipped = np.isfinite(full) & ~both
    assert not (vals[skipped] > 5.0 * full[skipped]).any()
    assert np.array_equal(vals > 5.0 * full, vals > 5.0 * screened)
    if offset < 0:          # negative values: no screen
        assert np.array_equal(np.isfinite(full), both)
    else:
        assert skipped.sum() > 0.4 * np.isfinite(full).sum()   # the screen does spare work


def test_running_sums_give_the_batch_average_bit_for_bit():
    rng = np.random.default_rng(9)
    n = 3000
    sensor = np.repeat([3, 8], n // 2)
    times = np.concatenate([T0 + np.cumsum(rng.integers(10, 400, n // 2)) * core.US for _ in range(2)])
    vals = rng.gamma(2.0, 40.0, n)
    cap = np.full(n, 300 * core.US)
    want = twa.trailing_time_weighted_average(sensor, times, vals, 6 * core.HOUR_US, 300 * core.US)
    P = np.zeros(n, dtype=np.int64)
    H = np.zeros(n, dtype=np.int64)
    # fill the sums in pieces, as batches arrive (each piece the next readings of each sensor)
    order = np.argsort(times, kind="stable")
    for piece in np.array_split(order, 17):
        twa.extend_running_sums(sensor, times, vals, cap, P, H, np.sort(piece))
    first = np.where(sensor == 3, 0, n // 2)
    hist = times[first]
    got = twa.window_average_at(times, vals, P, H, np.arange(n), first, 6 * core.HOUR_US, cap, hist)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isfinite(got).sum() > n // 2
