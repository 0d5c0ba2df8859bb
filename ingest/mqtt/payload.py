"""The MQTT wire format (DESIGN.md, "Interfaces the project promises") and its parser.

Topic ``sewerwatch/<site>/<sensor>``; one reading ``{"t": T, "v": 7.21, "u": "pH"}`` or a
batch ``{"u": "gpm", "t": [T, ...], "v": [101.2, ...]}`` with arrays of equal length. ``T``
is an ISO-8601 time with offset or integer epoch milliseconds.

The parsing entry point is :func:`parse_message` (the collector's hot path; :func:`parse`
is the same with a single reading normalised too). A later payload format (Telegraf,
Sparkplug B) is another module with the same contract: bytes in, readings or
:class:`Unusable` out, within the same :class:`Bounds`.

Whatever bytes arrive, the parser ends in readings or in :class:`Unusable` with a one-line
reason ("No message can stop ingest"):

* the size and the nesting depth are checked before anything is parsed
  (:class:`Bounds`, the config's ``[ingest]`` table): a payload nested a thousand deep
  never reaches the JSON parser's recursion;
* a number that does not fit a float64 (a 400-digit value) and a time that does not fit a
  64-bit count of microseconds (a 30-digit time) are unusable, never an exception;
* a time more than ``max_future`` ahead of the collector's clock or older than
  ``max_past`` is unusable with the reason "time out of range", in epoch and ISO forms
  alike, so it never reaches the evaluator (whose watermark it would move).

In a batch whose readings are partly unusable, the usable ones are kept and the payload
also goes to the dead letters naming the bad positions and the first reason.

Speed (``benchmarks/README.md``, "Where the time goes"): payloads are decoded by orjson;
whatever orjson refuses, and any document whose times it read as floats (an integer too
large for 64 bits), is decoded again by the standard library's ``json``, which decides as
before, so every reason stays the same. A batch whose times are all integers and whose
values all numbers is converted to arrays in one numpy call each, with no Python object per
reading; anything else takes the reading-by-reading path that names the bad positions.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
import orjson

from foundation.units import CONVERSIONS
from ingest.normalise import normalise

US = 1_000_000
DAY_US = 86_400 * US
#: epoch milliseconds whose microseconds fit a signed 64-bit integer
INT64_MS_MIN, INT64_MS_MAX = -(2**63) // 1000 + 1, (2**63 - 1) // 1000
#: the largest finite float64
FLOAT64_MAX = sys.float_info.max
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)
#: a JSON string (skipped whole) or a bracket, for the nesting check
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class Unusable(ValueError):
    """The payload cannot be used; ``str(exc)`` is the reason."""


@dataclass(frozen=True)
class Bounds:
    """What a payload may be before and after parsing (the ``[ingest]`` table).

    Attributes
    ----------
    max_bytes : int
        Longest payload [bytes].
    max_nesting : int
        Deepest nesting of JSON arrays and objects.
    max_future_us : int
        How far ahead of the collector's clock a reading may be stamped [us].
    max_past_us : int
        How far behind the collector's clock a reading may be stamped [us].
    """

    max_bytes: int = 1 << 20
    max_nesting: int = 16
    max_future_us: int = 300 * US
    max_past_us: int = 400 * DAY_US

    @classmethod
    def from_options(cls, opts) -> "Bounds":
        """From :class:`foundation.config.IngestOptions`."""
        return cls(opts.max_payload_bytes, opts.max_nesting, int(round(opts.max_future_s * US)),
                   int(round(opts.max_past_days * DAY_US)))

    def window(self, now_us: int | None = None) -> tuple[int, int]:
        """The accepted times ``(earliest, latest)`` [us UTC] around ``now_us`` (default: now)."""
        now = time.time_ns() // 1000 if now_us is None else int(now_us)
        return now - self.max_past_us, now + self.max_future_us


DEFAULT_BOUNDS = Bounds()


@dataclass
class Parsed:
    """Readings from one payload, in canonical units."""

    time_us: np.ndarray
    value: np.ndarray
    quality: np.ndarray
    bad: str | None = None  # reason when part of a batch was unusable


def iso_of_us(us: int) -> str:
    """ISO-8601 UTC text of a time [us], or ``epoch us N`` beyond the calendar's years 1-9999."""
    try:
        return (_EPOCH + timedelta(microseconds=int(us))).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return f"epoch us {us}"


def check_size_and_nesting(payload: bytes, bounds: Bounds) -> None:
    """Raise :class:`Unusable` for a payload longer or deeper than ``bounds`` allow.

    Cheap for the wire format: a payload with no more brackets than the nesting limit
    cannot be nested deeper, and is not scanned.
    """
    n = len(payload)
    if n > bounds.max_bytes:
        raise Unusable(f"payload of {n:,} bytes is over the limit of {bounds.max_bytes:,} bytes "
                       "([ingest] max_payload_bytes)")
    limit = bounds.max_nesting
    if payload.count(b"[") + payload.count(b"{") <= limit:
        return
    depth = 0
    for m in _TOKENS.finditer(payload):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise Unusable(f"JSON nested more than {limit} deep ([ingest] max_nesting)")
        elif c in (b"]", b"}"):
            depth -= 1


def _fits_float(v) -> bool:
    """A JSON number usable as a float64 value (not a boolean, finite, not too large)."""
    if type(v) is float:
        return v - v == 0.0          # finite
    return type(v) is int and -FLOAT64_MAX <= v <= FLOAT64_MAX


def _bad_value(v) -> str:
    if isinstance(v, str):
        return f"value {v[:20]!r} is text, not a number"
    if type(v) is int:
        return f"value with {len(str(abs(v)))} digits does not fit a float64"
    return f"value {str(v)[:40]} is not a finite number"


def _out_of_range(us: int, text: str, lo: int, hi: int) -> Unusable:
    if us > hi:
        return Unusable(f"time out of range: {text} is ahead of the collector's clock by more than "
                        "[ingest] max_future_s")
    return Unusable(f"time out of range: {text} is older than [ingest] max_past_days")


def _time_us(t, where: str, lo: int, hi: int) -> int:
    """A wire time -> [us UTC] within ``[lo, hi]``, or :class:`Unusable`."""
    if type(t) is int:
        us = t * 1000
        if lo <= us <= hi:
            return us
        if not INT64_MS_MIN <= t <= INT64_MS_MAX:
            raise Unusable(f"{where}: epoch milliseconds with {len(str(abs(t)))} digits do not fit a 64-bit time")
        raise _out_of_range(us, f"{where} = {t} ms ({iso_of_us(us)})", lo, hi)
    if isinstance(t, str):
        try:
            dt = datetime.fromisoformat(t)
        except ValueError:
            raise Unusable(f"{where}: time {t[:40]!r} is not ISO-8601") from None
        if dt.tzinfo is None:
            raise Unusable(f"{where}: time {t[:40]!r} has no UTC offset")
        try:
            us = (dt - _EPOCH) // _ONE_US
        except OverflowError:
            raise Unusable(f"{where}: time {t[:40]!r} does not fit a 64-bit time") from None
        if lo <= us <= hi:
            return us
        raise _out_of_range(us, f"{where} = {t[:40]}", lo, hi)
    if isinstance(t, bool):
        raise Unusable(f"{where}: time is a boolean")
    raise Unusable(f"{where}: time must be ISO-8601 text or epoch milliseconds, got {type(t).__name__}")


def parse(payload: bytes, parameter: str, bounds: Bounds = DEFAULT_BOUNDS, now_us: int | None = None,
          full_scale: float | None = None) -> Parsed:
    """Parse one message for a sensor of ``parameter`` into canonical readings.

    Parameters
    ----------
    bounds : Bounds
        Size, nesting and time window.
    now_us : int, optional
        The collector's clock [us UTC] (default: now).
    full_scale : float, optional
        The sensor's full scale [canonical unit]: above it a reading is out of range.

    Raises
    ------
    Unusable
        When nothing in the payload can be used.
    """
    doc = parse_message(payload, parameter, bounds, now_us, full_scale)
    if isinstance(doc, Parsed):
        return doc
    tus, value, unit = doc
    canon, quality = normalise(parameter, unit, np.array([value]), full_scale)
    return Parsed(np.array([tus], dtype=np.int64), canon, quality)


def parse_message(payload: bytes, parameter: str, bounds: Bounds = DEFAULT_BOUNDS, now_us: int | None = None,
                  full_scale: float | None = None) -> Parsed | tuple[int, float, str]:
    """Like :func:`parse`, but a single reading comes back raw as ``(time_us, value, unit)``.

    The collector gathers single readings in plain lists and converts and flags them a
    batch at a time, so a message costs no numpy call of its own.
    """
    check_size_and_nesting(payload, bounds)
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        doc = _stdlib_json(payload)      # the standard library decides, and gives the reason
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
    t_types = set(map(type, t)) if type(t) is list else None
    if type(t) is float or (t_types is not None and float in t_types):
        # orjson reads an integer beyond 64 bits as a float: the standard library keeps it an
        # integer, so the reason names its digits as before
        doc = _stdlib_json(payload)
        t, v = doc["t"], doc["v"]
        t_types = set(map(type, t)) if type(t) is list else None
    lo, hi = bounds.window(now_us)
    if isinstance(t, list) or isinstance(v, list):
        return _batch(t, v, unit, parameter, lo, hi, full_scale, t_types)
    if not _fits_float(v):
        raise Unusable(_bad_value(v))
    return _time_us(t, "t", lo, hi), float(v), unit


def _stdlib_json(payload: bytes):
    """``payload`` decoded by the standard library's ``json`` (what orjson refused), or
    :class:`Unusable` with its reason."""
    try:
        return json.loads(payload)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unusable(f"not JSON: {str(exc)[:200]}") from None


def _int_times(t: list, types) -> np.ndarray | None:
    """Epoch milliseconds all integers that fit -> int64 array (one numpy call), else None."""
    if types != {int}:
        return None
    try:
        ms = np.array(t, dtype=np.int64)
    except OverflowError:
        return None
    if ms.min() < INT64_MS_MIN or ms.max() > INT64_MS_MAX:
        return None
    return ms


def _number_values(v: list) -> np.ndarray | None:
    """Values all finite JSON numbers within float64 (no booleans, no text) -> float64 array in
    one numpy call, else None (the reading-by-reading path decides)."""
    types = set(map(type, v))
    if not types <= {float, int}:
        return None
    try:
        values = np.array(v, dtype=np.float64)
    except OverflowError:
        return None
    if not np.isfinite(values).all():
        return None
    if int in types and (np.abs(values) >= FLOAT64_MAX).any():
        return None              # an integer at the edge of float64: _fits_float decides
    return values


def _batch(t, v, unit: str, parameter: str, lo: int, hi: int, full_scale, t_types=None) -> Parsed:
    if not isinstance(t, list) or not isinstance(v, list):
        raise Unusable("a batch needs both 't' and 'v' as arrays")
    if len(t) != len(v):
        raise Unusable(f"batch arrays differ in length: {len(t)} times, {len(v)} values")
    if not t:
        raise Unusable("empty batch")
    n = len(t)
    first_reason = None
    # Fast path: epoch milliseconds that fit, converted in one go.
    ms = _int_times(t, set(map(type, t)) if t_types is None else t_types)
    if ms is not None:
        times = ms * 1000
        bad_t = (times < lo) | (times > hi)
        if bad_t.any():
            i = int(np.flatnonzero(bad_t)[0])
            first_reason = str(_out_of_range(int(times[i]), f"t[{i}] = {t[i]} ms ({iso_of_us(int(times[i]))})",
                                             lo, hi))
    else:
        times = np.zeros(n, dtype=np.int64)
        bad_t = np.zeros(n, dtype=bool)
        for i, x in enumerate(t):
            try:
                times[i] = _time_us(x, f"t[{i}]", lo, hi)
            except Unusable as exc:
                bad_t[i] = True
                first_reason = first_reason or str(exc)
    values = _number_values(v)
    if values is not None:
        good_v = np.ones(n, dtype=bool)
    else:
        good_v = np.fromiter((_fits_float(x) for x in v), dtype=bool, count=n)
        values = np.array([float(x) if ok else np.nan for x, ok in zip(v, good_v)], dtype=np.float64)
    if first_reason is None and not good_v.all():
        i = int(np.flatnonzero(~good_v)[0])
        first_reason = f"v[{i}]: {_bad_value(v[i])}"
    bad = bad_t | ~good_v
    if bad.all():
        raise Unusable(f"no usable reading in the batch of {n} ({_where(bad)}; {first_reason})")
    canon, quality = normalise(parameter, unit, values[~bad], full_scale)
    reason = (f"{int(bad.sum())} of {n} readings unusable ({_where(bad)}; {first_reason}); the rest were stored"
              if bad.any() else None)
    return Parsed(times[~bad], canon, quality, reason)


def _where(bad: np.ndarray) -> str:
    idx = np.flatnonzero(bad)
    shown = ", ".join(str(i) for i in idx[:5])
    return f"positions {shown}{', ...' if len(idx) > 5 else ''}"
