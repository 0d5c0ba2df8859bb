"""Sparkplug B as a host application reads it: births, aliases, names, sequence numbers, history.

Topics ``spBv1.0/<group>/<type>/<edge node>[/<device>]`` (Eclipse Sparkplug 3.0, "Topic
Namespace"); payloads are protobuf (:mod:`ingest.mqtt.sparkplug_schema`), values read by
their declared data type (:mod:`ingest.mqtt.sparkplug_values`). An input ``[[mqtt.inputs]]
format = "sparkplug"``, ``topic = "spBv1.0/<group>"`` maps metrics to sensors
(``[[mqtt.inputs.metrics]]``: ``node``, optional ``device``, ``metric`` and ``sensor``
(``<site>/<name>``)); a metric's value is in the unit of its sensor's config.

What the specification asks of a host application, and what this does:

* **Births.** An NBIRTH starts an edge node's session: its ``seq`` is where counting starts,
  its metrics' names, aliases and data types are remembered; a DBIRTH does the same for a
  device. The values a birth carries are readings too.
* **Names.** A DATA metric is found by its alias (through the birth), else by its name:
  the name in the birth certificate, or, where the edge node names a metric differently in
  its births and its data (mqtt-spb-wrapper: ``DATA/ph`` in the DBIRTH, ``ph`` in DDATA),
  the one birth metric whose last path level is that name. The config's ``metric`` may be
  either name. A DATA metric that is neither in the birth nor mapped is a dead letter naming
  it and the mapped names (the message's other metrics are kept); one in the birth that no
  sensor maps (a status, a setting) is passed over.
* **Data types.** Signed integers are read as signed, a type that is no number (String,
  DateTime, ...) of a mapped metric is a dead letter naming it.
* **Sequence numbers.** Every NDATA, DBIRTH, DDATA and DDEATH after the NBIRTH carries the
  next ``seq`` (0-255, wrapping to 0 after 255). A gap means a message was lost: the node's
  session is taken as stale, the message is a dead letter "sequence gap: ..." (logged), and
  a rebirth is requested.
* **Data before birth.** NDATA, DBIRTH or DDATA of a node with no (valid) NBIRTH, and DDATA
  of a device with no DBIRTH, cannot be resolved (aliases unknown): a dead letter "data
  before birth: ..." (logged) and a rebirth request.
* **Rebirth request.** An NCMD on ``spBv1.0/<group>/NCMD/<edge node>`` with the boolean
  metric ``Node Control/Rebirth`` = true, at most once every :data:`REBIRTH_EVERY_S` seconds
  per node.
* **Deaths.** NDEATH ends the node's session (its devices with it), DDEATH a device's.
* **History.** An edge node that buffered while sewerwatch was away (store and forward, the
  primary host's STATE: :mod:`ingest.mqtt.sparkplug_state`) sends, after its new births,
  its stored values as metrics flagged ``is_historical`` with their own timestamps. They
  are stored with their time; so that they are judged in time order, the values of a
  node's births (which are newer) are held back until the node's first DATA message that is
  not all history, or :data:`HISTORY_WAIT_S` after its last birth or historical message,
  and then come before that message's readings (the birth's message is acknowledged when
  they are durable).
* **Compression.** A payload compressed with DEFLATE or GZIP (``uuid`` ``SPBV1.0_COMPRESSED``)
  is opened, bounded by ``[ingest] max_payload_bytes``, and read as the payload inside.
* NCMD and DCMD are not readings and are passed over; STATE and the groups the config does
  not name are passed over by the topic map (:mod:`ingest.mqtt.topics`).

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
from ingest.mqtt.sparkplug_values import COMPRESSED_UUID, NotANumber, decompress, numeric_value
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
#: A node's birth values wait at most this long after its last birth or historical message
#: for the history that may follow [s] (see the module's docstring).
HISTORY_WAIT_S = 2.0
#: Mapped names shown in a reason at most.
SHOWN_NAMES = 12
EXAMPLE = ("a Sparkplug B protobuf Payload: {timestamp: 1772366400000, seq: 1, metrics: [{name: \"pH\" (or alias: 1 "
           "after the birth), datatype: 10 (Double), double_value: 7.21}]}")


def expected_topic(group: str) -> str:
    return f"{NAMESPACE}/{group}/<message type>/<edge node>[/<device>]"


@dataclass
class _Metric:
    """A metric of a birth certificate: its name, declared data type and sensor (or None)."""

    name: str
    datatype: int | None
    ref: object | None


@dataclass
class _Device:
    """The metrics of one birth certificate (a device's, or the node's own: device '')."""

    by_name: dict = field(default_factory=dict)     # name -> _Metric
    by_alias: dict = field(default_factory=dict)    # alias -> _Metric
    by_tail: dict = field(default_factory=dict)     # last path level -> _Metric, None when ambiguous


@dataclass
class _Node:
    """An edge node's session: the last seq, its births, and its birth values held back."""

    seq: int
    devices: dict = field(default_factory=dict)     # device ('' the node) -> _Device
    held: list = field(default_factory=list)        # Readings of births waiting for the history
    held_at: float = 0.0                            # monotonic time of the last birth or history


@dataclass
class Result:
    """One Sparkplug message decoded.

    Attributes
    ----------
    readings : Readings
        What to store now (held birth values of this node first, when released by it).
    bad : str or None
        Why part of the message is a dead letter (the rest is in ``readings``).
    held : tuple or None
        ``(group, node)`` when this message's readings were held back (its acknowledgement
        waits for them).
    released : tuple or None
        ``(group, node)`` whose held readings ``readings`` includes.
    """

    readings: Readings
    bad: str | None = None
    held: tuple | None = None
    released: tuple | None = None


def rebirth_payload(now_ms: int | None = None) -> bytes:
    """An NCMD payload requesting a rebirth."""
    p = Payload(timestamp=int(time.time() * 1000) if now_ms is None else now_ms)
    p.metrics.add(name=REBIRTH_METRIC, timestamp=p.timestamp, datatype=11, boolean_value=True)
    return p.SerializeToString()


def _shown(names) -> str:
    names = sorted(names)
    text = ", ".join(names[:SHOWN_NAMES])
    return (text + f", ... ({len(names)} in all)") if len(names) > SHOWN_NAMES else (text or "none")


class SparkplugHost:
    """The sessions of the edge nodes a collector hears, and the decoding of their messages.

    Parameters
    ----------
    topics : TopicMap
        The sensors, and the sparkplug inputs with their metric maps.
    request_rebirth : callable
        ``request_rebirth(topic, payload)`` publishes an NCMD (the collector's client);
        None: no rebirth requests (tests of the decoding alone).
    clock : callable
        Monotonic time [s] (the hold of birth values).
    """

    def __init__(self, topics: TopicMap, request_rebirth=None, clock=time.monotonic):
        self.topics = topics
        self.request_rebirth = request_rebirth
        self.clock = clock
        self.nodes: dict[tuple[str, str], _Node] = {}
        self.rebirths_requested = 0
        self.historical = 0          # historical metrics received
        self._last_rebirth: dict[tuple[str, str], float] = {}
        self._unmapped_logged: set = set()
        self.sensors = {}     # (group, node, device, metric name) -> SensorRef
        self.mapped: dict = {}  # (group, node, device) -> the mapped metric names
        for inp in topics.inputs:
            if inp.format == "sparkplug":
                group = inp.topic.split("/")[1]
                for node, device, metric, key in inp.metrics:
                    ref = topics.by_key.get(key)
                    if ref is not None:
                        self.sensors[(group, node, device, metric)] = ref
                        self.mapped.setdefault((group, node, device), []).append(metric)

    # -- decoding ----------------------------------------------------------------------

    def decode(self, m: Match, topic: str, payload: bytes, bounds: Bounds = DEFAULT_BOUNDS,
               now_us: int | None = None) -> Result:
        """One message on ``topic`` (matched by a sparkplug input) -> its readings.

        Raises
        ------
        Unusable
            Not Sparkplug B, a gap in the sequence, data before birth, nothing usable in it
            (the reason says which).
        """
        parts = topic.split("/")
        group, mtype, node = parts[1], parts[2], parts[3]
        device = parts[4] if len(parts) == 5 else ""
        if mtype in COMMAND_TYPES:
            return Result(Readings.empty())
        p = self._payload(payload, bounds)
        key = (group, node)
        who = f"{group}/{node}" + (f"/{device}" if device else "")
        if mtype == "NDEATH":
            state = self.nodes.pop(key, None)
            if state is not None:
                log.info("Sparkplug edge node %s died (NDEATH); its data needs a new birth", who)
                if state.held:
                    return Result(Readings.concat(state.held), released=key)
            return Result(Readings.empty())
        if mtype == "NBIRTH":
            if not p.HasField("seq") or p.seq > 255:
                raise Unusable(f"NBIRTH of {who} without a seq of 0-255")
            old = self.nodes.get(key)
            self.nodes[key] = state = _Node(seq=p.seq, held=old.held if old else [])
            state.devices[""] = self._birth(p, group, node, "")
            return self._held_birth(state, key, self._readings(p, state, group, node, "", bounds, now_us, birth=True))
        state = self.nodes.get(key)
        if state is None:
            self._rebirth(group, node)
            raise self._logged(f"data before birth: {mtype} of {who} before its edge node's NBIRTH "
                               "(aliases unknown); rebirth requested")
        if not p.HasField("seq"):
            if mtype == "DDEATH":       # a death carries no reading (mqtt-spb-wrapper's has no seq): taken as one
                state.devices.pop(device, None)
                return Result(Readings.empty())
            raise Unusable(f"{mtype} of {who} without a seq")
        want = (state.seq + 1) % 256
        if p.seq != want:
            self.nodes.pop(key, None)
            self._rebirth(group, node)
            reason = (f"sequence gap: {mtype} of {who} has seq {p.seq}, expected {want} (a message from the edge "
                      "node was lost); rebirth requested")
            if state.held:      # the births were fine: their values are kept
                log.warning("Sparkplug: %s", reason)
                return Result(Readings.concat(state.held), bad=reason, released=key)
            raise self._logged(reason)
        state.seq = p.seq
        if mtype == "DDEATH":
            state.devices.pop(device, None)
            return Result(Readings.empty())
        if mtype == "DBIRTH":
            state.devices[device] = self._birth(p, group, node, device)
            return self._held_birth(state, key, self._readings(p, state, group, node, device, bounds, now_us,
                                                               birth=True))
        if mtype == "DDATA" and device not in state.devices:
            self._rebirth(group, node)
            raise self._logged(f"data before birth: DDATA of {who} before the device's DBIRTH; rebirth requested")
        if mtype not in DATA_TYPES:
            raise Unusable(f"Sparkplug message type {mtype!r} is not known (topic expected "
                           f"{expected_topic(group)})")
        readings, bad, historical = self._readings(p, state, group, node, device, bounds, now_us, birth=False)
        if historical and historical == len(p.metrics):
            state.held_at = self.clock()        # all history: the births' values wait on
            return self._result(readings, bad)
        if state.held:
            held, state.held = state.held, []
            return self._result(Readings.concat([*held, readings]), bad, released=key)
        return self._result(readings, bad)

    def release_due(self, now: float | None = None) -> list[tuple[tuple, Readings]]:
        """Birth values held longer than :data:`HISTORY_WAIT_S`: ``[((group, node), readings)]``,
        taken from the hold (the collector stores them and acknowledges their messages)."""
        now = self.clock() if now is None else now
        out = []
        for key, state in self.nodes.items():
            if state.held and now - state.held_at >= HISTORY_WAIT_S:
                out.append((key, Readings.concat(state.held)))
                state.held = []
        return out

    def _payload(self, payload: bytes, bounds: Bounds):
        if len(payload) > bounds.max_bytes:
            raise Unusable(f"payload of {len(payload):,} bytes is over the limit of {bounds.max_bytes:,} bytes "
                           "([ingest] max_payload_bytes)")
        try:
            p = Payload.FromString(payload)
        except DecodeError as exc:
            raise Unusable(f"not a Sparkplug B payload ({exc}); expected sparkplug format, e.g. {EXAMPLE}") from None
        if p.HasField("uuid") and p.uuid == COMPRESSED_UUID:
            try:
                inner = decompress(p, bounds.max_bytes)
                p = Payload.FromString(inner)
            except ValueError as exc:
                raise Unusable(f"compressed Sparkplug B payload: {exc}") from None
            except DecodeError as exc:
                raise Unusable(f"compressed Sparkplug B payload: what it opens to is not a Sparkplug B payload "
                               f"({exc})") from None
        return p

    def _held_birth(self, state: _Node, key, decoded) -> Result:
        readings, bad, _ = decoded
        state.held_at = self.clock()
        reason = _joined(bad) if bad else None
        if len(readings):
            state.held.append(readings)
            return Result(Readings.empty(), bad=reason, held=key)
        return Result(Readings.empty(), bad=reason)

    @staticmethod
    def _result(readings: Readings, bad: list, released=None) -> Result:
        if bad and not len(readings) and released is None:
            raise Unusable(_joined(bad))
        return Result(readings, _joined(bad) if bad else None, released=released)

    def _birth(self, p, group: str, node: str, device: str) -> _Device:
        """The metrics of a birth certificate with their types and sensors."""
        dev = _Device()
        for metric in p.metrics:
            if not metric.HasField("name"):
                continue
            name = metric.name
            ref = self.sensors.get((group, node, device, name))
            tail = name.rsplit("/", 1)[-1]
            if ref is None and tail != name:
                ref = self.sensors.get((group, node, device, tail))
            entry = _Metric(name, metric.datatype if metric.HasField("datatype") else None, ref)
            dev.by_name[name] = entry
            if metric.HasField("alias"):
                dev.by_alias[metric.alias] = entry
            if tail != name:
                dev.by_tail[tail] = None if tail in dev.by_tail else entry
        return dev

    def _find(self, dev: _Device, metric, group: str, node: str, device: str) -> _Metric | str:
        """The birth metric (or the mapped name) a DATA metric is, or why it is none."""
        who = f"{group}/{node}" + (f"/{device}" if device else "")
        if metric.HasField("name"):
            name = metric.name
            found = dev.by_name.get(name) or dev.by_tail.get(name)
            if found is not None:
                return found
            ref = self.sensors.get((group, node, device, name))
            if ref is not None:
                return _Metric(name, None, ref)
            return (f"metric {name[:80]!r} of {who} is neither in its birth certificate nor mapped to a sensor "
                    f"(mapped: {_shown(self.mapped.get((group, node, device), []))})")
        if metric.HasField("alias"):
            found = dev.by_alias.get(metric.alias)
            if found is None:
                return f"alias {metric.alias} of {who} is not in its birth certificate"
            return found
        return f"a metric of {who} with neither a name nor an alias"

    def _readings(self, p, state: _Node, group: str, node: str, device: str, bounds: Bounds, now_us, birth: bool):
        """The metrics of ``p`` mapped to sensors, as one batch; the reasons of the unusable
        ones; how many were historical."""
        now = time.time_ns() // 1000 if now_us is None else int(now_us)
        default_ms = p.timestamp if p.HasField("timestamp") else now // 1000
        dev = state.devices.get(device, _Device())
        n = len(p.metrics)
        times = np.empty(n, dtype=np.int64)
        values = np.empty(n)
        refs, bad = [], []
        historical = 0
        lo, hi = bounds.window(now)
        for metric in p.metrics:
            if metric.is_historical:
                historical += 1
            found = (dev.by_name.get(metric.name) if birth else None) or self._find(dev, metric, group, node, device)
            if isinstance(found, str):
                bad.append(found)
                continue
            if found.ref is None:
                self._log_unmapped(group, node, device, found.name)
                continue
            if metric.is_null:
                continue
            dtype = metric.datatype if metric.HasField("datatype") and metric.datatype else found.datatype
            try:
                value = numeric_value(metric, dtype)
            except NotANumber as exc:
                bad.append(f"metric {found.name!r} of {group}/{node}/{device} (sensor {found.ref.key}): {exc}")
                continue
            t = (metric.timestamp if metric.HasField("timestamp") else default_ms) * 1000
            if not lo <= t <= hi:
                bad.append(f"time out of range: metric {found.name!r} timestamp {t // 1000} ms ({iso_of_us(int(t))}) "
                           f"of {group}/{node}/{device} is outside [ingest] max_future_s / max_past_days")
                continue
            times[len(refs)] = t
            values[len(refs)] = value
            refs.append(found.ref)
        self.historical += historical
        k = len(refs)
        readings = to_readings(self.topics, times[:k], np.fromiter((r.id for r in refs), dtype=np.int32, count=k),
                               values[:k]) if k else Readings.empty()
        return readings, bad, historical

    def _log_unmapped(self, group, node, device, name) -> None:
        if (group, node, device, name) not in self._unmapped_logged and len(self._unmapped_logged) < 10_000:
            self._unmapped_logged.add((group, node, device, name))
            log.info("Sparkplug metric %r of %s/%s/%s is mapped to no sensor; passed over", name, group, node, device)

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


def _joined(reasons: list) -> str:
    """Several reasons as one: the first, and how many more."""
    return reasons[0] if len(reasons) == 1 else f"{reasons[0]} (and {len(reasons) - 1} more unusable metrics)"
