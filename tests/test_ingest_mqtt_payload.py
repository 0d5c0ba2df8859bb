"""The MQTT wire format parser: every usable form, and a one-line reason for every unusable one."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.batch import GOOD, OUT_OF_RANGE
from ingest.mqtt.payload import Unusable, parse
from ingest.mqtt.topics import SensorRef, TopicMap
from foundation.errors import InputError

MS = 1_772_366_400_000  # 2026-03-01T12:00:00Z


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
    assert p.bad == "3 of 4 readings unusable (positions 1, 2, 3); the rest were stored"


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
    (b'{"t": %d, "v": 7.1, "u": "gpm"}' % MS, "unit 'gpm' is not a ph unit (known: pH)"),
    (b'{"t": "2026-03-01T12:00:00", "v": 7.1, "u": "pH"}', "has no UTC offset"),
    (b'{"t": "yesterday", "v": 7.1, "u": "pH"}', "is not ISO-8601"),
    (b'{"t": 5, "v": 7.1, "u": "pH"}', "out of range (years 2000-2100)"),
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
    assert tm.subscriptions() == ["sewerwatch/+/+", "plant/+/x/+", "legacy/meter7"]
    assert tm.resolve("sewerwatch/candy/ph").id == 1
    assert tm.resolve("plant/plating/x/flow").id == 2
    assert tm.resolve("legacy/meter7").id == 2
    assert tm.resolve("sewerwatch/candy/flow") is None
    assert tm.resolve("sewerwatch/candy/ph/status") is None
    with pytest.raises(InputError, match="exactly one"):
        TopicMap(refs, {}, ("sewerwatch/+/{sensor}",))
