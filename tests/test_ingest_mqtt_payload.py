"""The MQTT wire format parser: every usable form, and a one-line reason for every unusable one,
whatever the bytes (size and nesting bounded before parsing, numbers that fit no float64 or
no 64-bit time, times out of range in both forms)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.batch import GOOD, OUT_OF_RANGE
from ingest.mqtt import payload as payload_mod
from ingest.mqtt.payload import Bounds, Unusable
from ingest.mqtt.topics import SensorRef, TopicMap
from foundation.errors import InputError

MS = 1_772_366_400_000  # 2026-03-01T12:00:00Z
#: the collector's clock in these tests: the readings above are 'now'
NOW_US = MS * 1000 + 60_000_000
parse = functools.partial(payload_mod.parse, now_us=NOW_US)


def test_single_reading_with_iso_time_and_offset():
    p = parse(b'{"t": "2026-03-01T06:00:00-06:00", "v": 7.21, "u": "pH"}', "ph")
    assert list(p.time_us) == [MS * 1000] and list(p.value) == [7.21] and list(p.quality) == [GOOD]


def test_single_reading_with_epoch_ms_and_unit_conversion():
    p = parse(b'{"t": %d, "v": 40.0, "u": "degC"}' % MS, "temperature")
    assert list(p.time_us) == [MS * 1000] and p.value[0] == pytest.approx(104.0)


def test_batch_with_arrays_of_equal_length():
    p = parse(b'{"u": "mgd", "t": [%d, %d, %d], "v": [0.144, 0.1440, 1.44]}' % (MS, MS + 1000, MS + 2000), "flow")
    assert list(p.time_us) == [MS * 1000, MS * 1000 + 1_000_000, MS * 1000 + 2_000_000]
    np.testing.assert_allclose(p.value, [100.0, 100.0, 1000.0])
    assert p.bad is None


def test_batch_keeps_usable_readings_and_names_the_bad_positions():
    p = parse(b'{"u": "pH", "t": [%d, %d, "noon", %d], "v": [7.0, NaN, 7.2, "x"]}' % (MS, MS + 1, MS + 3), "ph")
    assert list(p.value) == [7.0]
    assert p.bad == ("3 of 4 readings unusable (positions 1, 2, 3; t[2]: time 'noon' is not ISO-8601); "
                     "the rest were stored")


def test_impossible_values_are_kept_and_flagged():
    p = parse(b'{"t": %d, "v": 15.2, "u": "pH"}' % MS, "ph")
    assert list(p.value) == [15.2] and list(p.quality) == [OUT_OF_RANGE]


@pytest.mark.parametrize("payload, reason", [
    (b"\xff\xfe\x00garbage", "not JSON"),
    (b"[1, 2]", "not a JSON object but list"),
    (b'{"t": 1, "v": 7}', "missing field 'u'"),
    (b'{"v": 7, "u": "pH"}', "missing field 't'"),
    (b'{"t": %d, "v": NaN, "u": "pH"}' % MS, "value nan is not a finite number"),
    (b'{"t": %d, "v": "7.1", "u": "pH"}' % MS, "value '7.1' is text, not a number"),
    (b'{"t": %d, "v": true, "u": "pH"}' % MS, "value True is not a finite number"),
    (b'{"t": %d, "v": 7.1, "u": "gpm"}' % MS, "unit 'gpm' is not a ph unit (known: pH, SU, s.u.)"),
    (b'{"t": "2026-03-01T12:00:00", "v": 7.1, "u": "pH"}', "has no UTC offset"),
    (b'{"t": "yesterday", "v": 7.1, "u": "pH"}', "is not ISO-8601"),
    (b'{"t": 5, "v": 7.1, "u": "pH"}', "time out of range: t = 5 ms (1970-01-01T00:00:00.005000Z) is older"),
    (b'{"t": [1, 2], "v": [7], "u": "pH"}', "batch arrays differ in length: 2 times, 1 values"),
    (b'{"t": [], "v": [], "u": "pH"}', "empty batch"),
    (b'{"t": [%d], "v": [null], "u": "pH"}' % MS, "no usable reading in the batch of 1"),
])
def test_unusable_payloads_say_why(payload, reason):
    with pytest.raises(Unusable) as err:
        parse(payload, "ph")
    assert reason in str(err.value)
    assert "\n" not in str(err.value)


def test_topic_map_patterns_and_explicit_topics():
    refs = [SensorRef(1, "candy/ph", "ph"), SensorRef(2, "plating/flow", "flow")]
    tm = TopicMap(refs, {"legacy/meter7": "plating/flow"}, ("sewerwatch/{site}/{sensor}", "plant/{site}/x/{sensor}"))
    # whole trees: a topic of the wrong shape still reaches the collector
    assert tm.subscriptions() == ["sewerwatch/#", "plant/#", "legacy/meter7"]
    assert tm.resolve("sewerwatch/candy/ph").id == 1
    assert tm.resolve("plant/plating/x/flow").id == 2
    assert tm.resolve("legacy/meter7").id == 2
    assert tm.resolve("sewerwatch/candy/flow") is None
    assert tm.resolve("sewerwatch/candy/ph/status") is None
    # the reasons a dead letter gets: the expected form, or what is known
    one = TopicMap(refs)
    assert one.match("sewerwatch/candy/mh1/ph") == ("topic does not match sewerwatch/{site}/{sensor} "
                                                    "(expected sewerwatch/<site>/<sensor>)")
    assert tm.match("sewerwatch/candy/mh1/ph") == (
        "topic does not match any of: sewerwatch/{site}/{sensor} (expected sewerwatch/<site>/<sensor>); "
        "plant/{site}/x/{sensor} (expected plant/<site>/x/<sensor>)")
    assert one.match("sewerwatch/candy/flow") == "unknown sensor 'flow' at site 'candy' (its MQTT sensors: ph)"
    assert one.match("sewerwatch/cnady/ph") == "unknown site 'cnady' (sites with MQTT sensors: candy, plating)"
    # a device's retained birth and will (the simulators') is neither a reading nor a dead letter
    assert one.match("sewerwatch/candy/mh1/status").input.format == "status"
    with pytest.raises(InputError, match="exactly one"):
        TopicMap(refs, {}, ("sewerwatch/+/{sensor}",))


# --- whatever bytes arrive, a reason, never an exception ----------------------

@pytest.mark.parametrize("payload, reason", [
    (b"[" * 1100 + b"]" * 1100, "JSON nested more than 16 deep"),
    (b'{"t": %d, "v": [' % MS + b"[" * 1100 + b"]" * 1100 + b'], "u": "pH"}', "JSON nested more than 16 deep"),
    (b'{"t": %d, "v": 1%s, "u": "pH"}' % (MS, b"0" * 399), "value with 400 digits does not fit a float64"),
    (b'{"t": %d, "v": -1%s, "u": "pH"}' % (MS, b"0" * 4400), "not JSON"),
    (b'{"t": %d, "v": 1e999, "u": "pH"}' % MS, "value inf is not a finite number"),
    (b'{"t": 123456789012345678901234567890, "v": 7.0, "u": "pH"}', "do not fit a 64-bit time"),
    (b'{"t": [123456789012345678901234567890], "v": [7.0], "u": "pH"}', "do not fit a 64-bit time"),
    (b'{"t": [%d], "v": [1%s], "u": "pH"}' % (MS, b"0" * 399), "does not fit a float64"),
    (b'{"t": "' + b"9" * 30 + b'", "v": 7.0, "u": "pH"}', "is not ISO-8601"),
    (b'{"t": %d, "v": 7.0, "u": "pH", "x": "%s"}' % (MS, b"a" * (5 << 20)), "over the limit of 1,048,576 bytes"),
])
def test_hostile_payloads_are_unusable_with_a_reason(payload, reason):
    with pytest.raises(Unusable) as err:
        parse(payload, "ph")
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_nesting_is_counted_outside_strings_only():
    # brackets inside a string are text, not nesting
    p = parse(b'{"t": %d, "v": 7.0, "u": "pH", "note": "%s"}' % (MS, b"[{" * 50), "ph")
    assert list(p.value) == [7.0]
    assert "nested more than 3" in str(pytest.raises(Unusable, parse, b'{"a": [[[1]]], "t": 1, "v": 1, "u": "pH"}',
                                                     "ph", bounds=Bounds(max_nesting=3)).value)


@pytest.mark.parametrize("year", ["0001", "1900", "2099", "9999"])
def test_years_far_from_now_are_time_out_of_range_in_both_forms(year):
    iso = f"{year}-06-01T00:00:00+00:00"
    us = payload_mod._time_us(iso, "t", -(2**62), 2**62)
    for t in (json.dumps(iso), str(us // 1000)):
        with pytest.raises(Unusable, match="^time out of range: t = "):
            parse(b'{"t": %s, "v": 7.0, "u": "pH"}' % t.encode(), "ph")
    bad = parse(b'{"t": [%d, %s], "v": [7.0, 7.1], "u": "pH"}' % (MS, str(us // 1000).encode()), "ph")
    assert list(bad.time_us) == [MS * 1000] and "time out of range" in bad.bad


def test_the_time_window_follows_the_collector_clock_and_the_bounds():
    b = Bounds(max_future_us=300_000_000, max_past_us=400 * 86_400_000_000)
    ok = b'{"t": %d, "v": 7.0, "u": "pH"}'
    assert list(payload_mod.parse(ok % (MS + 299_000), "ph", b, MS * 1000).time_us) == [(MS + 299_000) * 1000]
    with pytest.raises(Unusable, match="ahead of the collector's clock by more than"):
        payload_mod.parse(ok % (MS + 301_000), "ph", b, MS * 1000)
    with pytest.raises(Unusable, match="older than"):
        payload_mod.parse(ok % (MS - 401 * 86_400_000), "ph", b, MS * 1000)
    # a backlog of 399 days is still a reading
    assert len(payload_mod.parse(ok % (MS - 399 * 86_400_000), "ph", b, MS * 1000).value) == 1


def test_full_scale_flags_flow_above_it():
    p = parse(b'{"u": "gpm", "t": [%d, %d], "v": [500.0, 1500.0]}' % (MS, MS + 1000), "flow", full_scale=1000.0)
    assert list(p.quality) == [GOOD, OUT_OF_RANGE]


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=300) | st.builds(lambda d: json.dumps(d).encode(), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["t", "v", "u", "x"]), kids, max_size=4),
    max_leaves=20)))
def test_any_bytes_give_readings_or_unusable(raw):
    try:
        p = parse(raw, "ph")
    except Unusable as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert len(p.time_us) == len(p.value) == len(p.quality) >= 1


def _slow(raw: bytes, parameter: str = "ph"):
    """``raw`` parsed with the standard library's json and reading by reading (the fast paths
    off): the reference the fast paths must agree with."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(payload_mod.orjson, "loads", lambda b: (_ for _ in ()).throw(payload_mod.orjson.JSONDecodeError(
            "off", "", 0)))
        m.setattr(payload_mod, "_number_values", lambda v: None)
        m.setattr(payload_mod, "_int_times", lambda t, types: None)
        return _outcome(raw, parameter)


def _outcome(raw: bytes, parameter: str = "ph"):
    try:
        p = parse(raw, parameter)
    except Unusable as exc:
        return str(exc)
    return (p.time_us.tolist(), [repr(x) for x in p.value.tolist()], p.quality.tolist(), p.bad)


_VALUE = (st.floats() | st.integers() | st.integers(min_value=10**300, max_value=10**400) | st.booleans()
          | st.none() | st.text(max_size=3))
_TIME = (st.integers(min_value=MS - 10**6, max_value=MS + 10**6) | st.integers() | st.floats() | st.booleans()
         | st.just("2026-03-01T06:00:00-06:00"))


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.tuples(_TIME, _VALUE), min_size=1, max_size=6))
def test_fast_paths_agree_with_reading_by_reading(pairs):
    """orjson and the one-call numpy conversions give what the standard library and the
    reading-by-reading path give: the same readings and flags, or the same reason, for
    times and values of every kind (floats that are NaN or infinite, integers beyond 64
    bits or beyond float64, booleans, text)."""
    doc = {"u": "pH", "t": [t for t, _ in pairs], "v": [v for _, v in pairs]}
    raw = json.dumps(doc).encode()
    assert _outcome(raw) == _slow(raw)
    single = json.dumps({"u": "pH", "t": pairs[0][0], "v": pairs[0][1]}).encode()
    assert _outcome(single) == _slow(single)


def test_fast_path_batch_of_numbers():
    """1,000 readings a message, integer times and number values (the batched benchmark's
    form): t = MS + 1000 k ms, v = 7 + k/1000 pH (k = 0..999), all GOOD; stored as sent."""
    t = [MS - 999_000 + 1000 * k for k in range(1000)]
    v = [7 + k / 1000 for k in range(1000)]
    p = parse(json.dumps({"u": "pH", "t": t, "v": v}).encode(), "ph")
    assert p.time_us.tolist() == [x * 1000 for x in t] and p.value.tolist() == v and p.bad is None
    assert set(p.quality.tolist()) == {GOOD}
