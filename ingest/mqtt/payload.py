"""The MQTT wire format (DESIGN.md, "Interfaces the project promises") and its parser.

Topic ``sewerwatch/<site>/<sensor>``; one reading ``{"t": T, "v": 7.21, "u": "pH"}`` or a
batch ``{"u": "gpm", "t": [T, ...], "v": [101.2, ...]}`` with arrays of equal length. ``T``
is an ISO-8601 time with offset or integer epoch milliseconds.

A payload that cannot be used raises :class:`Unusable` with a one-line reason; the
collector turns it into a dead letter with the raw bytes and topic. In a batch whose
values are partly unusable (NaN, not a number), the usable readings are kept and the
payload also goes to the dead letters, naming the bad positions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from foundation.errors import InputError
from foundation.units import CONVERSIONS
from ingest.normalise import normalise

#: accepted epoch-millisecond range: 2000-01-01 to 2100-01-01
MS_MIN, MS_MAX = 946_684_800_000, 4_102_444_800_000


class Unusable(ValueError):
    """The payload cannot be used; ``str(exc)`` is the reason."""


@dataclass
class Parsed:
    """Readings from one payload, in canonical units."""

    time_us: np.ndarray
    value: np.ndarray
    quality: np.ndarray
    bad: str | None = None  # reason when part of a batch was unusable


def _time_us(t, where: str) -> int:
    if isinstance(t, bool):
        raise Unusable(f"{where}: time is a boolean")
    if isinstance(t, int):
        if not MS_MIN <= t <= MS_MAX:
            raise Unusable(f"{where}: epoch milliseconds {t} out of range (years 2000-2100)")
        return t * 1000
    if isinstance(t, str):
        try:
            dt = datetime.fromisoformat(t)
        except ValueError:
            raise Unusable(f"{where}: time {t[:40]!r} is not ISO-8601") from None
        if dt.tzinfo is None:
            raise Unusable(f"{where}: time {t[:40]!r} has no UTC offset")
        return int(dt.timestamp() * 1_000_000) if dt.microsecond == 0 else (
            int(dt.replace(microsecond=0).timestamp()) * 1_000_000 + dt.microsecond)
    raise Unusable(f"{where}: time must be ISO-8601 text or epoch milliseconds, got {type(t).__name__}")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse(payload: bytes, parameter: str) -> Parsed:
    """Parse one message for a sensor of ``parameter`` into canonical readings.

    Raises
    ------
    Unusable
        When nothing in the payload can be used.
    """
    doc = parse_message(payload, parameter)
    if isinstance(doc, Parsed):
        return doc
    tus, value, unit = doc
    canon, quality = normalise(parameter, unit, np.array([value]))
    return Parsed(np.array([tus], dtype=np.int64), canon, quality)


def parse_message(payload: bytes, parameter: str) -> Parsed | tuple[int, float, str]:
    """Like :func:`parse`, but a single reading comes back raw as ``(time_us, value, unit)``.

    The collector gathers single readings in plain lists and converts and flags them a
    batch at a time, so a message costs no numpy call of its own.
    """
    try:
        doc = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Unusable(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise Unusable(f"not a JSON object but {type(doc).__name__}")
    for key in ("t", "v", "u"):
        if key not in doc:
            raise Unusable(f"missing field '{key}'")
    unit = doc["u"]
    if not isinstance(unit, str) or unit not in CONVERSIONS[parameter]:
        raise Unusable(f"unit {str(unit)[:20]!r} is not a {parameter} unit "
                       f"(known: {', '.join(CONVERSIONS[parameter])})")
    t, v = doc["t"], doc["v"]
    if isinstance(t, list) or isinstance(v, list):
        return _batch(t, v, unit, parameter)
    if not _number(v):
        raise Unusable(f"value {v!r} is not a finite number" if not isinstance(v, str) else
                       f"value {v[:20]!r} is text, not a number")
    return _time_us(t, "t"), float(v), unit


def _batch(t, v, unit: str, parameter: str) -> Parsed:
    if not isinstance(t, list) or not isinstance(v, list):
        raise Unusable("a batch needs both 't' and 'v' as arrays")
    if len(t) != len(v):
        raise Unusable(f"batch arrays differ in length: {len(t)} times, {len(v)} values")
    if not t:
        raise Unusable("empty batch")
    # Fast path: epoch milliseconds and plain numbers, converted in one go.
    ta = np.array(t, dtype=object)
    if all(type(x) is int for x in t):
        times = np.asarray(t, dtype=np.int64)
        bad_t = (times < MS_MIN) | (times > MS_MAX)
        times = times * 1000
    else:
        times = np.zeros(len(t), dtype=np.int64)
        bad_t = np.zeros(len(t), dtype=bool)
        for i, x in enumerate(ta):
            try:
                times[i] = _time_us(x, f"t[{i}]")
            except Unusable:
                bad_t[i] = True
    good_v = np.fromiter((_number(x) for x in v), dtype=bool, count=len(v))
    values = np.array([float(x) if ok else np.nan for x, ok in zip(v, good_v)], dtype=np.float64)
    bad = bad_t | ~good_v
    if bad.all():
        raise Unusable(f"no usable reading in the batch of {len(t)} ({_where(bad)})")
    canon, quality = normalise(parameter, unit, values[~bad])
    reason = f"{int(bad.sum())} of {len(t)} readings unusable ({_where(bad)}); the rest were stored" if bad.any() else None
    return Parsed(times[~bad], canon, quality, reason)


def _where(bad: np.ndarray) -> str:
    idx = np.flatnonzero(bad)
    shown = ", ".join(str(i) for i in idx[:5])
    return f"positions {shown}{', ...' if len(idx) > 5 else ''}"


def check_parameter(parameter: str) -> None:
    if parameter not in CONVERSIONS:
        raise InputError(f"unknown parameter {parameter!r}")
