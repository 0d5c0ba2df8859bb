"""Sparkplug B as a host application reads it: births, aliases, sequence numbers, rebirth requests.

Topics ``spBv1.0/<group>/<type>/<edge node>[/<device>]`` (Eclipse Sparkplug 3.0, "Topic
Namespace"); payloads are protobuf (:mod:`ingest.mqtt.sparkplug_schema`). An input
``[[mqtt.inputs]] format = "sparkplug"``, ``topic = "spBv1.0/<group>"`` maps metrics to
sensors (``[[mqtt.inputs.metrics]]``: ``node``, optional ``device``, ``metric`` (its name)
and ``sensor`` (``<site>/<name>``)); a metric's value is in the unit of its sensor's config.

What the specification asks of a host application, and what this does:

* **Births.** An NBIRTH starts an edge node's session: its ``seq`` is where counting starts,
  its metrics' names and aliases are remembered; a DBIRTH does the same for a device. A
  DDATA/NDATA metric sent by alias alone is resolved through them. The values a birth
  carries are readings too.
* **Sequence numbers.** Every NDATA, DBIRTH, DDATA and DDEATH after the NBIRTH carries the
  next ``seq`` (0-255, wrapping to 0 after 255). A gap means a message was lost: the node's
  session is taken as stale, the message is a dead letter "sequence gap: ..." (logged), and
  a rebirth is requested.
* **Data before birth.** NDATA, DBIRTH or DDATA of a node with no (valid) NBIRTH, and DDATA
  of a device with no DBIRTH, cannot be resolved (aliases unknown): a dead letter "data
  before birth: ..." (logged) and a rebirth request.
* **Rebirth request.** An NCMD on ``spBv1.0/<group>/NCMD/<edge node>`` with the boolean
  metric ``Node Control/Rebirth`` = true (specification, "Rebirth Request"), at most once
  every :data:`REBIRTH_EVERY_S` seconds per node; the edge node answers with a new NBIRTH
  and DBIRTHs.
* **Deaths.** NDEATH ends the node's session (its devices with it), DDEATH a device's; the
  data that follows needs a new birth.
* NCMD, DCMD and STATE are not readings and are passed over. Metrics not mapped to a sensor
  (control metrics, other tags of the node) are passed over; each is logged once.

One message is one batch: the metrics' values, times and sensors gathered into numpy arrays
and normalised one unit at a time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.message import DecodeError

from ingest.batch import Readings
from ingest.mqtt.formats import to_readings
from ingest.mqtt.payload import DEFAULT_BOUNDS, Bounds, Unusable, iso_of_us
from ingest.mqtt.sparkplug_schema import Payload
from ingest.mqtt.topics import Match, TopicMap

log = logging.getLogger("sewerwatch.sparkplug")

NAMESPACE = "spBv1.0"
#: Message types that carry metrics of a node or a device.
DATA_TYPES = ("NBIRTH", "NDATA", "DBIRTH", "DDATA")
#: Not readings: passed over.
COMMAND_TYPES = ("NCMD", "DCMD", "STATE")
#: The boolean metric of a rebirth request (specification, "Rebirth Request").
REBIRTH_METRIC = "Node Control/Rebirth"
#: Rebirth requests to one edge node at most this often [s].
REBIRTH_EVERY_S = 5.0
EXAMPLE = ("a Sparkplug B protobuf Payload: {timestamp: 1772366400000, seq: 1, metrics: [{name: \"pH\" (or alias: 1 "
           "after the birth), datatype: 10 (Double), double_value: 7.21}]}")
_NUMERIC = ("int_value", "long_value", "float_value", "double_value", "boolean_value")


def expected_topic(group: str) -> str:
    return f"{NAMESPACE}/{group}/<message type>/<edge node>[/<device>]"


@dataclass
class _Node:
    """An edge node's session: the last seq, and per device ('' for the node) the aliases."""

    seq: int
    aliases: dict = field(default_factory=dict)       # (device, alias) -> metric name
    devices: set = field(default_factory=set)         # devices born


def rebirth_payload(now_ms: int | None = None) -> bytes:
    """An NCMD payload requesting a rebirth."""
    p = Payload(timestamp=int(time.time() * 1000) if now_ms is None else now_ms)
    p.metrics.add(name=REBIRTH_METRIC, timestamp=p.timestamp, datatype=11, boolean_value=True)
    return p.SerializeToString()


class SparkplugHost:
    """The sessions of the edge nodes a collector hears, and the decoding of their messages.

    Parameters
    ----------
    topics : TopicMap
        The sensors, and the sparkplug inputs with their metric maps.
    request_rebirth : callable
        ``request_rebirth(topic, payload)`` publishes an NCMD (the collector's client);
        None: no rebirth requests (replay, tests of the decoding alone).
    """

    def __init__(self, topics: TopicMap, request_rebirth=None):
        self.topics = topics
        self.request_rebirth = request_rebirth
        self.nodes: dict[tuple[str, str], _Node] = {}
        self.rebirths_requested = 0
        self._last_rebirth: dict[tuple[str, str], float] = {}
        self._unmapped_logged: set = set()
        self.sensors = {}     # (group, node, device, metric name) -> SensorRef
        for inp in topics.inputs:
            if inp.format == "sparkplug":
                group = inp.topic.split("/")[1]
                for node, device, metric, key in inp.metrics:
                    ref = topics.by_key.get(key)
                    if ref is not None:
                        self.sensors[(group, node, device, metric)] = ref

    def decode(self, m: Match, topic: str, payload: bytes, bounds: Bounds = DEFAULT_BOUNDS,
               now_us: int | None = None) -> Readings:
        """One message on ``topic`` (matched by a sparkplug input) -> its readings.

        Raises
        ------
        Unusable
            Not Sparkplug B, a gap in the sequence, data before birth (the reason says which).
        """
        parts = topic.split("/")
        group, mtype, node = parts[1], parts[2], parts[3]
        device = parts[4] if len(parts) == 5 else ""
        if mtype in COMMAND_TYPES:
            return Readings.empty()
        if len(payload) > bounds.max_bytes:
            raise Unusable(f"payload of {len(payload):,} bytes is over the limit of {bounds.max_bytes:,} bytes "
                           "([ingest] max_payload_bytes)")
        try:
            p = Payload.FromString(payload)
        except DecodeError as exc:
            raise Unusable(f"not a Sparkplug B payload ({exc}); expected sparkplug format, e.g. {EXAMPLE}") from None
        key = (group, node)
        who = f"{group}/{node}" + (f"/{device}" if device else "")
        if mtype == "NDEATH":
            if self.nodes.pop(key, None) is not None:
                log.info("Sparkplug edge node %s died (NDEATH); its data needs a new birth", who)
            return Readings.empty()
        if mtype == "NBIRTH":
            if not p.HasField("seq") or p.seq > 255:
                raise Unusable(f"NBIRTH of {who} without a seq of 0-255")
            self.nodes[key] = state = _Node(seq=p.seq)
            return self._readings(p, state, group, node, "", bounds, now_us, birth=True)
        state = self.nodes.get(key)
        if state is None:
            self._rebirth(group, node)
            raise self._logged(f"data before birth: {mtype} of {who} before its edge node's NBIRTH "
                               "(aliases unknown); rebirth requested")
        if not p.HasField("seq"):
            raise Unusable(f"{mtype} of {who} without a seq")
        want = (state.seq + 1) % 256
        if p.seq != want:
            self.nodes.pop(key, None)
            self._rebirth(group, node)
            raise self._logged(f"sequence gap: {mtype} of {who} has seq {p.seq}, expected {want} (a message from "
                               "the edge node was lost); rebirth requested")
        state.seq = p.seq
        if mtype == "DDEATH":
            state.devices.discard(device)
            return Readings.empty()
        if mtype == "DBIRTH":
            state.devices.add(device)
            state.aliases = {k: v for k, v in state.aliases.items() if k[0] != device}
            return self._readings(p, state, group, node, device, bounds, now_us, birth=True)
        if mtype == "DDATA" and device not in state.devices:
            self._rebirth(group, node)
            raise self._logged(f"data before birth: DDATA of {who} before the device's DBIRTH; rebirth requested")
        if mtype not in DATA_TYPES:
            raise Unusable(f"Sparkplug message type {mtype!r} is not known (topic expected "
                           f"{expected_topic(group)})")
        return self._readings(p, state, group, node, device, bounds, now_us, birth=False)

    def _readings(self, p, state: _Node, group: str, node: str, device: str, bounds: Bounds, now_us, birth: bool):
        """The metrics of ``p`` mapped to sensors, as one batch."""
        now = time.time_ns() // 1000 if now_us is None else int(now_us)
        default_ms = p.timestamp if p.HasField("timestamp") else now // 1000
        n = len(p.metrics)
        times = np.empty(n, dtype=np.int64)
        values = np.empty(n)
        refs = []
        for i, metric in enumerate(p.metrics):
            name = metric.name if metric.HasField("name") else None
            if birth and name is not None and metric.HasField("alias"):
                state.aliases[(device, metric.alias)] = name
            elif name is None and metric.HasField("alias"):
                name = state.aliases.get((device, metric.alias))
                if name is None:
                    raise Unusable(f"alias {metric.alias} of {group}/{node}/{device} is not in its birth certificate")
            ref = self.sensors.get((group, node, device, name))
            kind = metric.WhichOneof("value")
            if ref is None or kind not in _NUMERIC or metric.is_null:
                if ref is None and (group, node, device, name) not in self._unmapped_logged:
                    self._unmapped_logged.add((group, node, device, name))
                    log.info("Sparkplug metric %r of %s/%s/%s is mapped to no sensor; passed over", name, group,
                             node, device)
                continue
            times[len(refs)] = (metric.timestamp if metric.HasField("timestamp") else default_ms) * 1000
            values[len(refs)] = float(getattr(metric, kind))
            refs.append(ref)
        k = len(refs)
        times, values = times[:k], values[:k]
        lo, hi = bounds.window(now)
        bad = (times < lo) | (times > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise Unusable(f"time out of range: metric timestamp {times[i] // 1000} ms ({iso_of_us(int(times[i]))}) of "
                           f"{group}/{node}/{device} is outside [ingest] max_future_s / max_past_days")
        return to_readings(self.topics, times, np.fromiter((r.id for r in refs), dtype=np.int32, count=k), values)

    def _rebirth(self, group: str, node: str) -> None:
        if self.request_rebirth is None:
            return
        now = time.monotonic()
        if now - self._last_rebirth.get((group, node), -1e9) < REBIRTH_EVERY_S:
            return
        self._last_rebirth[(group, node)] = now
        self.rebirths_requested += 1
        topic = f"{NAMESPACE}/{group}/NCMD/{node}"
        log.warning("requesting a rebirth of Sparkplug edge node %s/%s (NCMD %s)", group, node, REBIRTH_METRIC)
        self.request_rebirth(topic, rebirth_payload())

    @staticmethod
    def _logged(reason: str) -> Unusable:
        log.warning("Sparkplug: %s", reason)
        return Unusable(reason)
