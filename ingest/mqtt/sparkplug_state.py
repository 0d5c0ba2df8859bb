"""sewerwatch as a Sparkplug 3.0 Primary Host Application: its STATE birth and death.

Eclipse Sparkplug 3.0, "Host Application Session Establishment": the host's death
certificate is the MQTT will of its CONNECT, on ``spBv1.0/STATE/<host id>``, QoS 1,
retained, payload JSON ``{"online": false, "timestamp": T}``; once connected and
subscribed to the Sparkplug namespace and its STATE topic, it publishes its birth on the
same topic, QoS 1, retained, ``{"online": true, "timestamp": T}`` with the same ``T`` (ms
since the epoch) as the will. Should it ever be delivered an offline STATE of its own host
id, it publishes its birth again at once (another session's late death, for instance).

Edge nodes configured with this primary host publish their births only once its STATE
says online, stop publishing (and store what they measure) when it says offline, and send
what they stored as historical metrics when it is back (:mod:`ingest.mqtt.sparkplug`
stores and judges those in time order). sewerwatch stopping on purpose publishes its
offline STATE before it stops reading, so edge nodes buffer from then on; a sewerwatch that
dies gets the same from the broker's will.

Deviation, on purpose: the specification asks a host for a clean session; sewerwatch's
collector keeps its persistent session (``clean_session=False``) because that same session
carries the QoS 1 readings of every other format, and it keeps the QoS 1 Sparkplug messages
of edge nodes that do not buffer while sewerwatch is away.
"""

from __future__ import annotations

import json

from foundation.config import SPARKPLUG_NAMESPACE

#: The topic level of host STATE messages: ``spBv1.0/STATE/<host id>``.
STATE_LEVEL = "STATE"


def state_topic(host_id: str) -> str:
    """``spBv1.0/STATE/<host id>``."""
    return f"{SPARKPLUG_NAMESPACE}/{STATE_LEVEL}/{host_id}"


def state_payload(online: bool, timestamp_ms: int) -> bytes:
    """The STATE birth (``online`` true) or death certificate, as JSON UTF-8."""
    return json.dumps({"online": bool(online), "timestamp": int(timestamp_ms)}, separators=(",", ":")).encode()


def parse_state(payload: bytes) -> tuple[bool, int] | None:
    """``(online, timestamp_ms)`` of a STATE payload, or None when it is not one."""
    try:
        doc = json.loads(bytes(payload[:1024]))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("online"), bool):
        return None
    ts = doc.get("timestamp")
    return doc["online"], ts if isinstance(ts, int) and not isinstance(ts, bool) else 0
