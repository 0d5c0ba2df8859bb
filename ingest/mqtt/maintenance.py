"""A device's maintenance window over MQTT.

A device or gateway at a control manhole says that its instruments are being calibrated or
cleaned by publishing, on its site's own topic tree (its broker account may publish there
already: ``sewerwatch/<site>/#``), QoS 1, not retained::

    sewerwatch/<site>/maintenance
    {"state": "start", "reason": "calibration", "by": "J. Smith", "sensors": ["ph"], "t": "2026-06-01T09:00:00-05:00"}
    {"state": "end", "sensors": ["ph"], "t": "2026-06-01T09:06:10-05:00"}

``state`` is ``start`` or ``end``; ``reason`` (required at the start) says why; ``by`` who is
doing the work (default: the device's broker account); ``sensors`` the sensor names of the
site it covers (default: every sensor of the site; the end names the same sensors as the
start); ``t`` when, an ISO-8601 time with its offset or epoch milliseconds (default: when it
arrived). The collector marks the readings after a start with the maintenance code at once,
and the writer records the window (``maintenance_windows``, ``source`` ``mqtt``). A message
that cannot be used is a dead letter saying why, with an example.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from ingest.mqtt.payload import DEFAULT_BOUNDS, Unusable, _time_us, check_size_and_nesting

#: The topic: ``sewerwatch/<site>/maintenance`` (a sensor cannot be named ``maintenance``).
LEVEL = "maintenance"
EXAMPLE = ('{"state": "start", "reason": "calibration", "by": "J. Smith", "sensors": ["ph"], '
           '"t": "2026-06-01T09:00:00-05:00"}')
STATES = ("start", "end")


@dataclass(frozen=True)
class Maintenance:
    state: str
    reason: str
    by: str | None
    sensors: tuple[str, ...]
    at_us: int


def parse(payload: bytes, bounds=None, now_us: int | None = None) -> Maintenance:
    """A maintenance message (see the module docstring), or :class:`Unusable` saying why."""
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    bounds = bounds or DEFAULT_BOUNDS
    check_size_and_nesting(payload, bounds)
    try:
        d = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unusable(f"maintenance message not JSON: {exc} (expected e.g. {EXAMPLE})") from None
    if not isinstance(d, dict):
        raise Unusable(f"maintenance message is not a JSON object (expected e.g. {EXAMPLE})")
    unknown = sorted(set(d) - {"state", "reason", "by", "sensors", "t"})
    if unknown:
        raise Unusable(f"maintenance message: unknown key(s) {', '.join(unknown)} (known: state, reason, by, sensors, t)")
    state = d.get("state")
    if state not in STATES:
        raise Unusable(f"maintenance message: state must be start or end, got {state!r} (e.g. {EXAMPLE})")
    reason = d.get("reason")
    if state == "start" and (not isinstance(reason, str) or not reason.strip()):
        raise Unusable(f"maintenance message: a start needs a reason (e.g. {EXAMPLE})")
    by = d.get("by")
    if by is not None and (not isinstance(by, str) or not by.strip()):
        raise Unusable("maintenance message: by must be a name")
    sensors = d.get("sensors", [])
    if not isinstance(sensors, list) or not all(isinstance(x, str) and x for x in sensors):
        raise Unusable('maintenance message: sensors must be a list of sensor names (e.g. ["ph"])')
    at_us = now_us
    if "t" in d:
        lo, hi = bounds.window(now_us)
        at_us = _time_us(d["t"], "maintenance message: t", lo, hi)
    return Maintenance(state, (reason or "").strip()[:200], by.strip()[:200] if by else None,
                       tuple(dict.fromkeys(sensors)), at_us)
