"""The slug's baseline "during normal operation", and the first day.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.43 SLUG: "Any discharge of water or wastewater which
in concentration of any given constituent or in quantity of flow exceeds for any period
longer than 15 minutes more than 5 times the average 24-hour concentration or flows during
normal operation ...". The expectations below are worked out by hand from these words:
normal flow 100 gpm read every minute, so the slug line is 5 x 100 = 500 gpm as long as the
discharge itself is left out of the average.
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limits import core, twa
from limits.evaluator import SensorMeta, evaluate, prepare, slug_not_judged, violations
from limits.packs import load_pack
from limits.streaming import StreamingEvaluator

MIN = core.MINUTE_US
HOUR = core.HOUR_US
T0 = int(datetime(2026, 3, 1, 6, 0, tzinfo=timezone.utc).timestamp()) * core.US  # local midnight (CST)
PAL = load_pack("palmyra-wi")
SLUG = PAL.continuous_rules().index(PAL.rule("slug"))


def flow(values, start=T0):
    v = np.asarray(values, dtype=float)
    return np.zeros(len(v), dtype=np.int64), start + np.arange(len(v)) * MIN, v


def slugs(s, t, v, meta, pack=PAL):
    a, b, c, q = prepare(s, t, v, None)
    eps = evaluate(pack, a, b, c, q, meta=meta)
    return eps[eps["rule"] == SLUG], eps


def twenty_minutes_at_5_2(history_h=25):
    """``history_h`` hours at 100 gpm, 20 minutes at 520 gpm (5.2 x), an hour at 100 gpm."""
    return np.r_[np.full(history_h * 60, 100.0), np.full(20, 520.0), np.full(60, 100.0)]


def test_a_20_minute_discharge_at_5_2_times_normal_flow_is_one_slug_of_20_minutes():
    vals = twenty_minutes_at_5_2()
    s, t, v = flow(vals)
    meta = {0: SensorMeta("flow", 60.0, site="acme", name="flow")}
    got, _ = slugs(s, t, v, meta)
    k = 25 * 60                                  # index of the first reading at 520 gpm
    assert len(got) == 1
    e = got[0]
    assert e["start"] == t[k] and e["last"] == t[k + 19] and e["end"] == t[k + 20]
    assert e["end"] - e["start"] == 20 * MIN and e["n"] == 20
    # the discharge is no part of normal operation: the baseline stays 100 gpm throughout
    assert e["limit"] == 500.0 and e["peak"] == 520.0 and e["basis"] == 0
    rec = violations(got, PAL.continuous_rules(), PAL, meta)[0]
    assert rec["duration_s"] == 1200.0 and rec["average"] == 100.0
    assert rec["baseline"] == "24-hour average during normal operation"


def test_the_old_reading_with_the_discharge_in_its_own_average_loses_it_after_14_minutes():
    # What the baseline must not be: with the discharge inside the average, after k minutes
    # at 520 gpm the average is 100 + 420 k / 1440 gpm, and 520 is no longer more than 5
    # times it once k > 13.7: the 15th reading (k = 14) sees 104.083 gpm x 5 = 520.42.
    vals = twenty_minutes_at_5_2()
    s, t, v = flow(vals)
    inclusive = twa.trailing_time_weighted_average(s, t, v, 24 * HOUR, 3 * MIN)
    k = 25 * 60
    assert inclusive[k + 13] == pytest.approx(100 + 420 * 13 / 1440, rel=1e-12)
    assert inclusive[k + 14] == pytest.approx(100 + 420 * 14 / 1440, rel=1e-12)
    assert 520 > 5 * inclusive[k + 13] and not 520 > 5 * inclusive[k + 14]
    # ... a 14-minute run, not longer than 15 minutes: no slug. The normal-operation
    # average leaves the discharge out:
    avg, above, configured = twa.normal_operation_average(s, t, v, 24 * HOUR, 3 * MIN, 5.0)
    assert (avg[k:k + 20] == 100.0).all() and above[k:k + 20].all() and not above[k + 20:].any()
    assert not configured.any()


def test_exactly_five_times_is_not_more_than_five_times():
    vals = np.r_[np.full(25 * 60, 100.0), np.full(20, 500.0), np.full(10, 100.0)]
    got, _ = slugs(*flow(vals), {0: SensorMeta("flow", 60.0)})
    assert len(got) == 0


def test_a_discharge_of_exactly_15_minutes_is_not_longer_than_15_minutes():
    # 15 readings at 520 gpm: start at the first, end at the next normal reading, 15 min
    vals = np.r_[np.full(25 * 60, 100.0), np.full(15, 520.0), np.full(10, 100.0)]
    got, _ = slugs(*flow(vals), {0: SensorMeta("flow", 60.0)})
    assert len(got) == 0
    vals = np.r_[np.full(25 * 60, 100.0), np.full(16, 520.0), np.full(10, 100.0)]
    got, _ = slugs(*flow(vals), {0: SensorMeta("flow", 60.0)})
    assert len(got) == 1 and got[0]["end"] - got[0]["start"] == 16 * MIN


def test_normal_flow_after_a_slug_is_judged_against_the_normal_average():
    # after the 20-minute slug the average is 100 gpm again (the slug left out), so a second
    # discharge 2 hours later at 520 gpm for 16 minutes is a slug of its own
    vals = np.r_[np.full(25 * 60, 100.0), np.full(20, 520.0), np.full(120, 100.0), np.full(16, 520.0),
                 np.full(10, 100.0)]
    got, _ = slugs(*flow(vals), {0: SensorMeta("flow", 60.0)})
    assert len(got) == 2 and (got["limit"] == 500.0).all()
    assert got[1]["end"] - got[1]["start"] == 16 * MIN


def test_a_lasting_sixfold_flow_is_a_slug_for_24_hours_then_the_new_normal():
    # From 600 gpm on, no reading of the last 24 hours is normal operation until the window
    # holds none of the old ones: at ts + 24 h the window has no normal reading left, so no
    # baseline and no judgement; that reading is normal and the next ones are measured
    # against it (600 gpm: not more than 5 x 600).
    vals = np.r_[np.full(25 * 60, 100.0), np.full(30 * 60, 600.0)]
    s, t, v = flow(vals)
    got, _ = slugs(s, t, v, {0: SensorMeta("flow", 60.0)})
    k = 25 * 60
    assert len(got) == 1
    assert got[0]["start"] == t[k] and got[0]["end"] == t[k + 24 * 60]
    assert got[0]["end"] - got[0]["start"] == 24 * HOUR and got[0]["limit"] == 500.0


# --- the first day: the permitted average flow as the baseline (item 2) --------------------

def test_first_day_uses_the_permitted_average_daily_flow_and_says_so():
    # permit application: average daily flow 144,000 gal/day = 100 gpm (144,000 / 1,440)
    vals = np.r_[np.full(120, 100.0), np.full(20, 520.0), np.full(30, 100.0)]
    s, t, v = flow(vals)
    meta = {0: SensorMeta("flow", 60.0, site="acme", name="flow", normal=144_000 / 1440)}
    got, _ = slugs(s, t, v, meta)
    assert len(got) == 1
    e = got[0]
    assert e["start"] == t[120] and e["end"] - e["start"] == 20 * MIN and e["limit"] == 500.0
    assert e["basis"] == 1
    rec = violations(got, PAL.continuous_rules(), PAL, meta)[0]
    assert rec["baseline"] == "permitted average flow" and rec["average"] == 100.0


def test_first_day_without_a_configured_normal_flow_is_not_judged_and_says_so():
    vals = np.r_[np.full(120, 100.0), np.full(20, 520.0), np.full(30, 100.0)]
    s, t, v = flow(vals)
    meta = {0: SensorMeta("flow", 60.0, site="acme", name="flow")}
    got, _ = slugs(s, t, v, meta)
    assert len(got) == 0
    notes = slug_not_judged(PAL, s, t, v, None, meta=meta)
    assert notes == [{"site": "acme", "sensor": "flow", "parameter": "flow", "rule": "slug",
                      "from": "2026-03-01T06:00:00Z", "until": "2026-03-01T08:49:00Z",
                      "note": "slug not judged: no baseline yet"}]
    # with the configured flow there is nothing to say; after 24 hours neither
    assert slug_not_judged(PAL, s, t, v, None, meta={0: SensorMeta("flow", 60.0, normal=100.0)}) == []
    s2, t2, v2 = flow(np.full(100, 100.0), start=T0 + 30 * HOUR)
    assert slug_not_judged(PAL, s2, t2, v2, None, meta=meta, history_start={0: T0}) == []
    # ... and the first day ends 24 hours after the first reading
    s3, t3, v3 = flow(np.full(30 * 60, 100.0))
    assert slug_not_judged(PAL, s3, t3, v3, None, meta=meta)[0]["until"] == "2026-03-02T05:59:00Z"


def test_the_permitted_flow_serves_until_24_hours_of_readings_exist():
    # 26 hours at 20 gpm against a permitted average of 100 gpm: in the first 24 hours the
    # line is 500 gpm, after them 5 x 20 = 100 gpm, so 120 gpm for 20 minutes is a slug
    # only after the first day
    vals = np.r_[np.full(60, 20.0), np.full(20, 120.0), np.full(25 * 60, 20.0), np.full(20, 120.0),
                 np.full(10, 20.0)]
    s, t, v = flow(vals)
    got, _ = slugs(s, t, v, {0: SensorMeta("flow", 60.0, normal=100.0)})
    assert len(got) == 1 and got[0]["limit"] == 100.0 and got[0]["basis"] == 0
    assert got[0]["start"] == t[60 + 20 + 25 * 60]


def test_streaming_says_which_sensors_have_no_baseline_yet():
    meta = {0: SensorMeta("flow", 60.0), 1: SensorMeta("flow", 60.0, normal=100.0), 2: SensorMeta("ph", 60.0)}
    ev = StreamingEvaluator(PAL, meta)
    ev.push([0, 1, 2], [T0, T0, T0], [100.0, 100.0, 7.0])
    assert ev.without_baseline() == [0]
    ev.push([0], [T0 + 24 * HOUR], [100.0])
    assert ev.without_baseline() == []


# --- exactness: the fixed point against the definition, reading by reading -------------------

def reference_baseline(time, value, window, max_hold, multiple, normal=np.nan):
    """The definition, one reading after the other (one sensor): the time-weighted average
    over [t - window, t) of the earlier readings that were not above their own line, with
    the integer arithmetic of limits.core; the configured normal value before a full window."""
    n = len(time)
    hold = np.zeros(n, dtype=np.int64)
    hold[:-1] = np.minimum(np.diff(time), max_hold)
    v = np.clip(value, -core.TWA_VALUE_MAX, core.TWA_VALUE_MAX)
    term = (v * hold).astype(np.int64)
    avg = np.full(n, np.nan)
    above = np.zeros(n, dtype=bool)
    for i in range(n):
        ws = time[i] - window
        if time[0] > ws:
            avg[i] = normal
        else:
            num = den = 0
            for j in range(i):
                if above[j]:
                    continue
                if time[j] >= ws:
                    num += int(term[j]); den += int(hold[j])
                else:
                    part = max(int(time[j] + hold[j] - ws), 0)
                    num += int(v[j] * part); den += part
            avg[i] = num / den if den > 0 else np.nan
        above[i] = value[i] > multiple * avg[i]
    return avg, above


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 250), normal=st.sampled_from([np.nan, 100.0, 30.0]),
       level=st.sampled_from([5.05, 5.2, 6.0, 9.0]))
def test_the_fixed_point_is_the_definition(seed, length, normal, level):
    rng = np.random.default_rng(seed)
    time = T0 + np.cumsum(rng.choice([30, 60, 60, 90, 400], size=length)) * core.US
    value = rng.uniform(80, 120, size=length)
    for _ in range(max(1, length // 40)):
        a = rng.integers(0, length)
        value[a:a + rng.integers(1, 60)] = 100.0 * level * rng.uniform(0.98, 1.02)
    window, max_hold = 2 * HOUR, 180 * core.US
    want_avg, want_above = reference_baseline(time, value, window, max_hold, 5.0, normal)
    avg, above, configured = twa.normal_operation_average(
        np.zeros(length, np.int64), time, value, window, max_hold, 5.0,
        normal=np.full(length, normal))
    assert np.array_equal(above, want_above)
    computed = np.isfinite(avg)          # elsewhere the screen showed the reading is not above
    assert np.array_equal(avg[computed], want_avg[computed])
    assert not (value[~computed] > 5.0 * want_avg[~computed]).any()
