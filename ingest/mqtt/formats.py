"""Payload formats other than the sewerwatch JSON, and one decoding entry point for all.

Selected per topic pattern (``[[mqtt.inputs]]``, :class:`foundation.config.MqttInput`):

``sewerwatch``
    The documented JSON (:mod:`ingest.mqtt.payload`).
``number``
    A bare number as text (``7.21``), stamped on receipt [the collector's clock], in the
    unit the sensor is configured with (``[[sensors]] unit``). What Node-RED's and many
    PLCs' "publish a value" nodes send.
``telegraf``
    Telegraf's JSON output serializer: one metric ``{"fields": {...}, "name": ...,
    "tags": {...}, "timestamp": ...}`` or the batch form ``{"metrics": [...]}``. The
    timestamp is in the input's ``timestamp_units`` (Telegraf's ``json_timestamp_units``;
    ``1s`` by default, fractions allowed). Site and sensor come from the topic or from a tag,
    the field name or the metric name (``site_from``, ``sensor_from``); the unit from the
    tag ``unit`` when present, else the sensor's configured unit.

:func:`decode` turns one message into a :class:`~ingest.batch.Readings` batch (numpy arrays:
a metric batch of many fields is one batch, one numpy conversion per unit) or raises
:class:`~ingest.mqtt.payload.Unusable` whose reason names the format expected and shows an
example of it. It is what the collector uses for these formats and what ``sewerwatch
deadletters replay`` uses for every format.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import numpy as np

from foundation.config import TELEGRAF_TIME_UNITS
from foundation.units import CONVERSIONS
from ingest.batch import Readings
from ingest.mqtt.payload import DEFAULT_BOUNDS, Bounds, Parsed, Unusable, check_size_and_nesting, iso_of_us, parse
from ingest.mqtt.topics import PASSED_OVER, Match, SensorRef, TopicMap
from ingest.normalise import normalise

#: An example of each format, shown in the reason of a payload that is not in it.
EXAMPLES = {
    "sewerwatch": '{"t": "2026-03-01T12:00:00Z", "v": 7.21, "u": "pH"}',
    "number": "7.21",
    "telegraf": '{"fields": {"ph": 7.21}, "name": "probe", "tags": {"site": "acme"}, "timestamp": 1772366400}',
}
#: Longest text a bare number may be [bytes].
NUMBER_MAX_BYTES = 64


def expected(fmt: str) -> str:
    """``expected <format>, e.g. <example>``: the tail of a wrong-format reason."""
    return f"expected {fmt} format, e.g. {EXAMPLES[fmt]}"


@dataclass
class Decoded:
    """Readings from one message, and the reason when part of it was unusable."""

    readings: Readings
    bad: str | None = None


def decode(topics: TopicMap, topic: str, payload: bytes, bounds: Bounds = DEFAULT_BOUNDS,
           now_us: int | None = None) -> Decoded:
    """One message on ``topic`` -> readings, by the format its topic pattern names.

    Raises
    ------
    Unusable
        When the topic resolves to no sensor, or nothing in the payload can be used.
    """
    m = topics.match(topic)
    if not isinstance(m, Match):
        raise Unusable(m)
    return decode_match(m, topics, payload, bounds, now_us)


def decode_match(m: Match, topics: TopicMap, payload: bytes, bounds: Bounds = DEFAULT_BOUNDS,
                 now_us: int | None = None) -> Decoded:
    """As :func:`decode`, for a topic already resolved to ``m``."""
    fmt = m.input.format
    if fmt in PASSED_OVER:        # a device's birth or will, a Sparkplug STATE, another group: no reading
        return Decoded(Readings.empty())
    if fmt == "sewerwatch":
        try:
            p = parse(payload, m.ref.parameter, bounds, now_us, m.ref.full_scale)
        except Unusable as exc:
            raise Unusable(with_example(str(exc), "sewerwatch")) from None
        return Decoded(_readings(p, m.ref), p.bad)
    if fmt == "number":
        p = parse_number(payload, m.ref, now_us)
        return Decoded(_readings(p, m.ref))
    if fmt == "telegraf":
        return parse_telegraf(payload, m, topics, bounds, now_us)
    if fmt == "sparkplug":
        raise Unusable("a Sparkplug B message depends on the births and sequence before it and is not decoded "
                       "alone; the edge node sends its current values again on a rebirth request")
    raise Unusable(f"format {fmt!r} is not known")


def with_example(reason: str, fmt: str) -> str:
    """``reason`` and, when it is about the payload's shape, the format expected."""
    shape = reason.startswith(("not JSON", "not a JSON object", "missing field", "a batch needs"))
    return f"{reason} ({expected(fmt)})" if shape else reason


def _readings(p: Parsed, ref: SensorRef) -> Readings:
    return Readings(p.time_us, np.full(len(p.time_us), ref.id, dtype=np.int32), p.value, p.quality)


def _now_us(now_us: int | None) -> int:
    return time.time_ns() // 1000 if now_us is None else int(now_us)


def parse_number(payload: bytes, ref: SensorRef, now_us: int | None = None) -> Parsed:
    """A bare number in ``ref``'s configured unit, stamped ``now_us`` (default: now)."""
    text = bytes(payload[:NUMBER_MAX_BYTES + 1])
    try:
        if len(payload) > NUMBER_MAX_BYTES:
            raise ValueError
        value = float(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise Unusable(f"not a bare number: {text[:40]!r} ({expected('number')}, in the sensor's unit "
                       f"{ref.unit or '?'})") from None
    if not math.isfinite(value):
        raise Unusable(f"value {value} is not a finite number")
    if ref.unit is None or ref.unit not in CONVERSIONS[ref.parameter]:
        raise Unusable(f"sensor {ref.key} has no configured {ref.parameter} unit for a bare number")
    canon, quality = normalise(ref.parameter, ref.unit, np.array([value]), ref.full_scale)
    return Parsed(np.array([_now_us(now_us)], dtype=np.int64), canon, quality)


def _metric_time(ts, units_us: float, lo: int, hi: int, i: int) -> int:
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise Unusable(f"metrics[{i}]: timestamp {str(ts)[:40]} is not a number ({expected('telegraf')})")
    us = ts * units_us
    if not -(2**62) < us < 2**62:
        raise Unusable(f"metrics[{i}]: timestamp {str(ts)[:40]} does not fit a 64-bit time")
    us = int(round(us))
    if us > hi:
        raise Unusable(f"time out of range: metrics[{i}].timestamp = {ts} ({iso_of_us(us)}) is ahead of the "
                       "collector's clock by more than [ingest] max_future_s (are timestamp_units right?)")
    if us < lo:
        raise Unusable(f"time out of range: metrics[{i}].timestamp = {ts} ({iso_of_us(us)}) is older than "
                       "[ingest] max_past_days (are timestamp_units right?)")
    return us


def parse_telegraf(payload: bytes, m: Match, topics: TopicMap, bounds: Bounds = DEFAULT_BOUNDS,
                   now_us: int | None = None) -> Decoded:
    """Telegraf's JSON (one metric or ``{"metrics": [...]}``) -> readings of the sensors its
    fields name (see the module's docstring for the mapping)."""
    check_size_and_nesting(payload, bounds)
    try:
        doc = json.loads(payload)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unusable(f"not JSON: {str(exc)[:200]} ({expected('telegraf')})") from None
    metrics = doc.get("metrics") if isinstance(doc, dict) and "metrics" in doc else [doc]
    if not isinstance(metrics, list) or not metrics or not all(
            isinstance(x, dict) and isinstance(x.get("fields"), dict) and "timestamp" in x for x in metrics):
        raise Unusable(f"not a Telegraf metric: needs 'fields' (an object) and 'timestamp' ({expected('telegraf')})")
    inp = m.input
    units_us = TELEGRAF_TIME_UNITS[inp.timestamp_units]
    lo, hi = bounds.window(now_us)
    times, ids, values, units, bad = [], [], [], [], []
    ignored = 0
    for i, metric in enumerate(metrics):
        try:
            t = _metric_time(metric["timestamp"], units_us, lo, hi, i)
        except Unusable as exc:
            bad.append(str(exc))
            continue
        tags = metric.get("tags") if isinstance(metric.get("tags"), dict) else {}
        site = m.site if inp.site_from == "topic" else tags.get(inp.site_from[4:])
        fields = {k: v for k, v in metric["fields"].items()
                  if not isinstance(v, bool) and isinstance(v, (int, float))}
        if inp.sensor_from == "field":
            named = list(fields.items())
        else:
            if inp.sensor_from == "topic":
                sensor = m.sensor
            elif inp.sensor_from == "name":
                sensor = metric.get("name")
            else:
                sensor = tags.get(inp.sensor_from[4:])
            if "value" in fields:
                named = [(sensor, fields["value"])]
            elif len(fields) == 1:
                named = [(sensor, next(iter(fields.values())))]
            else:
                bad.append(f"metrics[{i}]: {len(fields)} numeric fields ({', '.join(sorted(fields)) or 'none'}) "
                           "and none named 'value': which one is the reading? (set sensor_from = 'field')")
                continue
        for sensor, v in named:
            ref = topics.by_key.get(f"{site}/{sensor}")
            if ref is None and inp.ignore_unmapped_fields and site in topics.sites:
                ignored += 1          # a field of a known site that no sensor is: passed over, as asked
                continue
            if ref is None:
                bad.append(f"metrics[{i}]: unknown sensor {site}/{sensor} (site from {inp.site_from}, "
                           f"sensor from {inp.sensor_from})")
                continue
            unit = tags.get("unit") if isinstance(tags.get("unit"), str) else ref.unit
            if unit not in CONVERSIONS[ref.parameter]:
                bad.append(f"metrics[{i}]: unit {str(unit)[:20]!r} is not a {ref.parameter} unit "
                           f"(known: {', '.join(CONVERSIONS[ref.parameter])})")
                continue
            if not -1.7e308 < v < 1.7e308:
                bad.append(f"metrics[{i}]: value of {sensor} does not fit a float64")
                continue
            times.append(t)
            ids.append(ref.id)
            values.append(float(v))
            units.append(unit)
    if not times:
        if not bad and ignored:      # nothing but fields the input ignores
            return Decoded(Readings.empty())
        if len(bad) == 1:
            raise Unusable(bad[0])
        raise Unusable(f"no usable reading in {len(metrics)} Telegraf metrics ({len(bad)} unusable: "
                       f"{bad[0] if bad else 'no numeric fields'})")
    readings = to_readings(topics, np.array(times, dtype=np.int64), np.array(ids, dtype=np.int32),
                           np.array(values), units)
    return Decoded(readings, f"{len(bad)} unusable ({bad[0]}); the rest were stored" if bad else None)


def to_readings(topics: TopicMap, times: np.ndarray, ids: np.ndarray, raw: np.ndarray, units=None) -> Readings:
    """Raw values of the sensors ``ids`` -> canonical, flagged readings, one numpy pass per
    (sensor, unit); ``units`` one per value (default: each sensor's configured unit)."""
    values = np.empty(len(raw))
    quality = np.empty(len(raw), dtype=np.int16)
    unit_arr = None if units is None else np.asarray(units, dtype=object)
    for sid in np.unique(ids):
        ref = topics.by_id[int(sid)]
        of_sensor = ids == sid
        for unit in ([ref.unit] if unit_arr is None else set(unit_arr[of_sensor])):
            sel = of_sensor if unit_arr is None else of_sensor & (unit_arr == unit)
            values[sel], quality[sel] = normalise(ref.parameter, unit, raw[sel], ref.full_scale)
    return Readings(times, ids, values, quality)
