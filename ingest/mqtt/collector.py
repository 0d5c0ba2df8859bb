"""The MQTT collector: a persistent QoS 1 session whose messages are acknowledged only when durable.

paho-mqtt 2.x with a fixed client id and ``clean_session=False``, so the broker keeps
every QoS 1 message while the collector is down; ``manual_ack=True``, so a message is
acknowledged only after the writer has committed its readings to the database or fsynced
them to the spool (the sink's ``on_durable``). A crash at any moment therefore loses
nothing: unacknowledged messages are delivered again and the writer drops the duplicates.

Readings of many messages are gathered and handed to the sink as one numpy batch: at once
when a message finds the collector's buffer empty, but never sooner than ``flush_gap``
seconds after the last batch (what comes meanwhile joins the next), and every
``flush_interval`` seconds (or ``flush_rows`` readings) whatever happens. A quiet line's
reading (an acid dump on an ordinary day) thus waits at most ``flush_gap`` for the judging,
and a busy one still goes in batches of what came in that gap. Payloads that cannot be used go
to the dead letters with their raw bytes, topic and reason, and the collector goes on.

No message can stop it: whatever happens while a message is handled, it ends
as readings or as a dead letter, an unexpected exception as "internal error: <type>:
<message>" (its traceback logged once per kind). The network loop and the flusher are two
supervised threads (:mod:`ingest.supervise`): a dead one is restarted, and a restarted
network loop reconnects, so whatever was in flight is delivered again. While the writer
cannot make readings durable (database down and spool full), the sink stays full, the
flusher waits, the collector stops reading from the broker once ``max_buffered_rows``
readings wait, and the broker keeps the rest.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from urllib.parse import unquote, urlsplit

import numpy as np
import paho.mqtt.client as mqtt

from ingest.batch import Readings
from ingest.mqtt import maintenance
from ingest.mqtt.formats import decode_match, with_example
from ingest.mqtt.readahead import ReadAheadClient
from ingest.mqtt.payload import DEFAULT_BOUNDS, Bounds, Parsed, Unusable, parse_message
from ingest.mqtt.sparkplug import SparkplugHost
from ingest.mqtt.sparkplug_state import parse_state, state_payload, state_topic
from ingest.mqtt.topics import (PASSED_OVER, SESSION_TREES, SPARKPLUG_OTHER, SPARKPLUG_STATE, Match,
                                SensorRef, TopicMap, shared)
from ingest.normalise import normalise
from ingest.sink import DeadLetter, Sink, WindowEvent
from ingest.supervise import Component, Supervisor

log = logging.getLogger("sewerwatch.mqtt")

#: Packets handled from what was read ahead before the network loop looks again [packets].
READ_HELD_MAX = 256
#: Reconnect backoff [s]: from the first to the last, doubling.
RECONNECT_MIN_S, RECONNECT_MAX_S = 1.0, 30.0
#: A Sparkplug host stopping on purpose reads on this long after publishing its offline
#: STATE, for what edge nodes sent before they heard it [s].
STATE_GRACE_S = 1.0
#: SUBACK return code of a refused subscription (MQTT 3.1.1 section 3.9.3; MQTT 5: >= 0x80).
SUBACK_FAILURE = 0x80


class MqttCollector:
    """Subscribe to reading topics and hand batches to ``sink``.

    Parameters
    ----------
    url : str
        ``mqtt://user:password@host:port`` (the broker's collector account).
    topics : ingest.mqtt.topics.TopicMap
        Topic to sensor resolution and the subscriptions.
    sink : ingest.sink.Sink
        Where batches and dead letters go.
    client_id : str
        Fixed, so the broker keeps the session across restarts.
    flush_interval : float
        Longest a reading waits in the collector before it goes to the sink [s].
    flush_gap : float
        Shortest time between two batches [s]: a message into an empty buffer is handed on
        this long after the last batch at the soonest (at once when that was longer ago).
    bounds : ingest.mqtt.payload.Bounds
        Payload size, nesting and the accepted time window.
    max_buffered_rows : int
        Readings gathered but not yet taken by the sink, beyond which the network loop
        waits (the broker keeps what is not read).
    share_group : str, optional
        Subscribe as a member of this shared-subscription group (``$share/<group>/...``):
        the collectors of one group each get a share of the messages. Each
        member needs its own ``client_id``.
    sparkplug_host_id : str, optional
        Be the Sparkplug primary host of this id (:mod:`ingest.mqtt.sparkplug_state`): the
        offline STATE as the will, the online STATE once subscribed (``run`` does this).
    """

    def __init__(self, url: str, topics: TopicMap, sink: Sink, client_id: str = "sewerwatch-collector",
                 qos: int = 1, flush_interval: float = 0.02, flush_rows: int = 20_000, flush_gap: float = 0.002,
                 bounds: Bounds = DEFAULT_BOUNDS, max_buffered_rows: int = 200_000,
                 share_group: str | None = None, sparkplug_host_id: str | None = None,
                 may_connect=None):
        u = urlsplit(url)
        if u.scheme not in ("mqtt", "mqtts") or not u.hostname:
            raise ValueError(f"not an MQTT URL: {url!r}")
        self.host, self.port = u.hostname, u.port or (8883 if u.scheme == "mqtts" else 1883)
        self.topics, self.sink, self.qos = topics, sink, qos
        self.flush_interval, self.flush_rows, self.flush_gap = flush_interval, flush_rows, flush_gap
        self._last_flush = 0.0          # [monotonic s] the last batch handed to the sink
        self.bounds, self.max_buffered_rows = bounds, max_buffered_rows
        self.share_group, self.client_id = share_group, client_id
        self.may_connect = may_connect           # asked before each (re)connect; None: always
        # the connection read in large pieces, not a few bytes a system call (readahead.py)
        self.client = ReadAheadClient(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False,
                                       protocol=mqtt.MQTTv311, manual_ack=True)
        if u.username:
            self.client.username_pw_set(unquote(u.username), unquote(u.password or ""))
        if u.scheme == "mqtts":
            self.client.tls_set()
        self.client.max_queued_messages_set(0)
        # our callbacks catch everything; should one ever raise, paho logs it and goes on
        self.client.suppress_exceptions = True
        # acknowledgements (from the writer's thread) are queued and written by the network
        # loop, many at a time, not one send each from the writer (paho's external-loop hook)
        self.client.on_socket_register_write = lambda client, userdata, sock: None
        self.client.on_socket_unregister_write = lambda client, userdata, sock: None
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.host_id = sparkplug_host_id
        self._stopping = False
        self._state_ts = 0                     # [ms] of this connection's STATE will and birth
        self._sub_mids: dict[int, list[str]] = {}
        self.subscriptions: dict[str, str] = {}    # filter -> "granted QoS n" or "refused ..."
        self.passed_over: dict[str, int] = {}      # Sparkplug groups not configured -> messages
        self.state_published = 0
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)     # signalled when the flusher takes the buffer
        self._buf: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []  # batches, converted
        self._single: tuple[list, list, list, list] = ([], [], [], [])  # time_us, sensor, raw value, unit code
        self._units: dict[tuple[str, str], int] = {}  # (parameter, unit) -> code
        self._buf_rows = 0
        self._mids: list[int] = []
        self._parked_mids: list[tuple[int, int]] = []   # (mid, generation) of held Sparkplug births
        self._generation = 0
        self._connected = threading.Event()
        self._subscribed = threading.Event()            # the broker answered this connection's subscriptions
        self._stop = threading.Event()
        self._flush_now = threading.Event()
        self._need_connect = True
        self._reconnect_backoff = RECONNECT_MIN_S
        self._logged_kinds: set = set()
        top = max((r.id for r in topics.by_key.values()), default=0) + 1
        self._full_scale = np.full(top, np.nan)          # sensor id -> full scale [canonical]
        for r in topics.by_key.values():
            if r.full_scale is not None:
                self._full_scale[r.id] = r.full_scale
        self.supervisor: Supervisor | None = None
        self.sparkplug = SparkplugHost(topics, request_rebirth=lambda topic, payload: self.client.publish(topic, payload))
        self._parked: dict[tuple, list[tuple[int, int]]] = {}   # (group, node) -> [(mid, generation)] held
        self._own_supervisor = False
        self.network: Component | None = None
        self.flusher: Component | None = None
        self.messages = 0
        self.readings = 0
        self.dead = 0
        self.maintenance_messages = 0      # maintenance windows opened or ended by devices
        self.internal_errors = 0
        self.connects = 0
        self.last_message_at: float | None = None       # [epoch s]
        self.last_reading_at: float | None = None
        self.disconnected_since: float | None = time.time()

    # --- lifecycle ------------------------------------------------------------------

    def start(self, supervisor: Supervisor | None = None) -> "MqttCollector":
        """Connect and run the network loop and the flusher as supervised threads (under
        ``supervisor``, else one of the collector's own)."""
        self.client.connect_async(self.host, self.port, keepalive=30)
        self._own_supervisor = supervisor is None
        self.supervisor = supervisor or Supervisor()
        self.network = self.supervisor.add("mqtt-network", self._network_loop, stall_after=60.0,
                                           check=self._network_problem)
        self.flusher = self.supervisor.add("mqtt-flusher", self._flush_loop, stall_after=120.0)
        if self._own_supervisor:
            self.supervisor.start()
        return self

    def wait_connected(self, timeout: float = 10.0) -> bool:
        """Wait until the broker accepted the connection [s]; its subscriptions may still be on
        their way (:meth:`wait_subscribed`)."""
        return self._connected.wait(timeout)

    def wait_subscribed(self, timeout: float = 10.0) -> bool:
        """Wait until connected and the broker has answered every subscription of this
        connection, granted or refused (``subscriptions`` says which) [s]: from then on a
        message published to a granted one arrives. True if so within ``timeout``."""
        end = time.monotonic() + timeout
        return self._connected.wait(timeout) and self._subscribed.wait(max(0.0, end - time.monotonic()))

    @property
    def connected(self) -> bool:
        """Whether the broker accepted the connection, has not dropped it since, and the
        network loop runs."""
        return self._connected.is_set() and (self.network is None or self.network.alive)

    def stop(self) -> None:
        """Flush what was received, then disconnect (unflushed acks are simply not sent):
        the network loop writes the DISCONNECT and ends once the broker has closed."""
        self._stopping = True
        if self.host_id and self._connected.is_set():
            self._publish_state(False)
        for comp in (self.network, self.flusher):
            if comp is not None:
                comp.finished = True       # returning now is no death
        self._stop.set()
        with self._room:
            self._room.notify_all()
        self._flush_now.set()
        if self.flusher is not None and self.flusher.thread is not None:
            self.flusher.thread.join(5)
        self.flush()
        self.client.disconnect()
        if self.network is not None and self.network.thread is not None and self.network.thread.is_alive():
            self.network.thread.join(5)
        else:
            self.client.loop_write()       # no loop runs: write the DISCONNECT here
        self.flush()                       # what came in until the DISCONNECT (QoS 0 is sent once)
        if self._own_supervisor and self.supervisor is not None:
            self.supervisor.stop()

    def _publish_state(self, online: bool) -> None:
        """Publish the primary host's STATE (QoS 1, retained); offline: wait for the broker
        to take it, then read on for :data:`STATE_GRACE_S` (edge nodes stop on hearing it)."""
        info = self.client.publish(state_topic(self.host_id), state_payload(online, self._state_ts), qos=1,
                                   retain=True)
        self.state_published += 1
        log.info("Sparkplug primary host %r: STATE %s published", self.host_id, "online" if online else "offline")
        if not online:
            try:
                info.wait_for_publish(2.0)
            except (RuntimeError, ValueError):
                return
            end = time.monotonic() + STATE_GRACE_S
            while time.monotonic() < end and self._connected.is_set():
                time.sleep(0.05)

    def _network_problem(self) -> str | None:
        refused = [f for f, st in self.subscriptions.items() if st.startswith("refused")]
        if refused and self._connected.is_set():
            return (f"the broker refused the subscription to {', '.join(refused)}: readings on those topics never "
                    "arrive (give the collector's account read access)")
        if self._connected.is_set():
            return None
        since = self.disconnected_since
        return "not connected to the broker" + (f" for {time.time() - since:.0f} s" if since else "")

    # --- the network loop (a supervised thread) ---------------------------------------

    def _network_loop(self, comp: Component) -> None:
        """paho's ``loop()`` with our own reconnects, so the supervisor sees it beat.

        A restarted loop (after a death) reconnects: whatever was in flight then is
        delivered again by the broker."""
        if comp.restarts:
            self._need_connect = True
        stop_by = None
        while True:
            comp.beat()
            if self._stop.is_set():
                # stopping: go on until the DISCONNECT is out and the connection closed
                stop_by = stop_by or time.monotonic() + 2.0
                if self._need_connect or time.monotonic() > stop_by:
                    return
            if self._need_connect:
                if self.may_connect is not None and not self.may_connect():
                    self._stop.wait(0.2)         # not (yet) allowed: a leader unsure it still leads
                    continue
                if not self._connect(comp):
                    continue
            rc = self.client.loop(timeout=0.2)
            if rc == mqtt.MQTT_ERR_SUCCESS:
                rc = self._read_held()
            if self.sparkplug.nodes:        # this thread alone touches the Sparkplug sessions
                self._release_due()
            if rc != mqtt.MQTT_ERR_SUCCESS:
                self._connected.clear()
                self._need_connect = True
                if not self._stop.is_set():
                    self._wait_backoff(comp)

    def _read_held(self, most: int = READ_HELD_MAX):
        """Handle the packets already read ahead (``ReadAhead.pending()``), up to ``most``,
        without a ``select`` and paho's housekeeping between each (``loop()`` does those
        next, and writes the acknowledgements queued meanwhile)."""
        sock = self.client.socket()
        pending = getattr(sock, "pending", None)
        rc = mqtt.MQTT_ERR_SUCCESS
        n = 0
        while pending is not None and n < most and pending() > 0 and not self._stop.is_set():
            rc = self.client.loop_read()
            if rc != mqtt.MQTT_ERR_SUCCESS:
                break
            n += 1
        return rc

    def _connect(self, comp: Component) -> bool:
        if self.host_id:        # this connection's death certificate (Sparkplug 3.0): a fresh timestamp
            self._state_ts = int(time.time() * 1000)
            self.client.will_set(state_topic(self.host_id), state_payload(False, self._state_ts), qos=1, retain=True)
        with self._lock:
            # from here on an acknowledgement belongs to the connection being made: one of a
            # message received before (in the buffer or in the writer) is never sent on it,
            # whatever packet identifier the broker gives there (it sends that message again)
            self._generation += 1
            self._mids = []
        try:
            self.client.reconnect()
            self._need_connect = False
            return True
        except (OSError, ValueError) as exc:
            if self._reconnect_backoff == RECONNECT_MIN_S:
                log.warning("cannot reach the broker at %s:%d (%s); retrying with backoff", self.host, self.port,
                            exc)
            self._wait_backoff(comp)
            return False

    def _wait_backoff(self, comp: Component) -> None:
        end = time.monotonic() + self._reconnect_backoff
        self._reconnect_backoff = min(self._reconnect_backoff * 2, RECONNECT_MAX_S)
        while not self._stop.is_set() and time.monotonic() < end:
            comp.beat()
            self._stop.wait(min(0.5, max(0.0, end - time.monotonic())))

    # --- paho callbacks -------------------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            log.error("broker refused the connection: %s", reason_code)
            return
        self.connects += 1
        self._reconnect_backoff = RECONNECT_MIN_S
        self.disconnected_since = None
        subs = [s if s in SESSION_TREES else shared(s, self.share_group) for s in self.topics.subscriptions()]
        self._subscribed.clear()
        _, mid = client.subscribe([(s, self.qos) for s in subs])
        self._sub_mids[mid] = subs
        self.subscriptions = {s: "requested" for s in subs}
        log.info("connected to %s:%d (session present: %s), subscribing to %s",
                 self.host, self.port, flags.session_present, ", ".join(subs))
        self._connected.set()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        """The broker's answer to the subscriptions: each granted or refused (a refusal is a
        problem in ``status``, never a log line alone); then, as a Sparkplug host, the
        online STATE (the specification: after the subscriptions)."""
        subs = self._sub_mids.pop(mid, None)
        if subs is None:
            return
        for f, rc in zip(subs, reason_codes):
            value = rc.value if hasattr(rc, "value") else int(rc)
            if value >= SUBACK_FAILURE:
                self.subscriptions[f] = f"refused ({rc})"
                log.error("the broker refused the subscription to %r (%s): nothing published there will arrive", f, rc)
            else:
                self.subscriptions[f] = f"granted QoS {value}"
        if "requested" not in self.subscriptions.values():
            # said only now: a message published before the broker granted the subscription
            # (a new client id, no session) is not delivered
            granted = [f for f in subs if self.subscriptions.get(f, "").startswith("granted")]
            if granted:
                log.info("subscribed to %s (granted by the broker)", ", ".join(granted))
            self._subscribed.set()
        if self.host_id:
            self._publish_state(True)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self._connected.clear()
        self._subscribed.clear()
        self.disconnected_since = self.disconnected_since or time.time()
        if not self._stop.is_set():
            log.warning("disconnected from the broker (%s); reconnecting", reason_code)

    def _on_message(self, client, userdata, msg):
        """Every message ends as readings or as a dead letter, whatever happens."""
        self.messages += 1
        self.last_message_at = time.time()
        try:
            self._handle(msg)
        except Exception as exc:  # noqa: BLE001 - no message may stop ingest
            self._internal_error(msg, exc)

    def _handle(self, msg) -> None:
        m = self.topics.match(msg.topic)
        if not isinstance(m, Match):
            self._dead(msg, m)     # the reason: the expected form, or the known sites and sensors
            return
        if m.input.format in PASSED_OVER:   # a device's birth or will, a Sparkplug STATE or other group
            self._passed_over(msg, m)
            self._keep_nothing(msg)
            return
        if m.input.format == "maintenance":
            self._maintenance(msg, m)
            return
        if m.input.format != "sewerwatch":
            self._handle_decoded(msg, m)
            return
        ref = m.ref
        try:
            parsed = parse_message(msg.payload, ref.parameter, self.bounds, None, ref.full_scale)
        except Unusable as exc:
            self._dead(msg, with_example(str(exc), "sewerwatch"))
            return
        if isinstance(parsed, Parsed):
            if parsed.bad:
                self._dead(msg, parsed.bad, ack=False)
            self._keep(msg, len(parsed.time_us), batch=(parsed.time_us, ref.id, parsed.value, parsed.quality))
            return
        code = self._units.get((ref.parameter, parsed[2]))
        if code is None:
            code = self._units.setdefault((ref.parameter, parsed[2]), len(self._units))
        self._keep(msg, 1, single=(parsed[0], ref.id, parsed[1], code))

    def _maintenance(self, msg, m: Match) -> None:
        """A device's maintenance window (:mod:`ingest.mqtt.maintenance`): in effect at once
        (the readings put after it are marked), recorded by the writer, acknowledged once durable."""
        try:
            mt = maintenance.parse(msg.payload, self.bounds)
        except Unusable as exc:
            self._dead(msg, str(exc))
            return
        names = self.topics.sites.get(m.site)
        if names is None:
            self._dead(msg, f"maintenance message: {self.topics._unknown_site(m.site)}")
            return
        ids = []
        for n in mt.sensors:
            ref = self.topics.by_key.get(f"{m.site}/{n}")
            if ref is None:
                self._dead(msg, f"maintenance message: unknown sensor {n!r} at site {m.site!r} "
                                f"(its MQTT sensors: {', '.join(sorted(names))})")
                return
            ids.append(ref.id)
        every = tuple(self.topics.by_key[f"{m.site}/{n}"].id for n in names)
        gen = self._generation
        cb = (lambda: self._ack([msg.mid], gen)) if msg.qos > 0 else None
        device = f"site-{m.site}"       # the one broker account that may publish on the site's topics
        self.sink.window(WindowEvent(m.site, tuple(ids), mt.state, mt.at_us, mt.reason or "", mt.by or device, "mqtt",
                                     device, mark_ids=every), on_durable=cb)
        self.maintenance_messages += 1

    def _passed_over(self, msg, m: Match) -> None:
        """Count a message that is no reading; as a Sparkplug host, answer an offline STATE
        of its own host id with its online STATE again (the specification)."""
        if m.input is SPARKPLUG_OTHER:
            if m.site not in self.passed_over:
                log.info("Sparkplug group %r is not in the config: its messages are passed over", m.site)
            if m.site in self.passed_over or len(self.passed_over) < 1000:
                self.passed_over[m.site] = self.passed_over.get(m.site, 0) + 1
        elif m.input is SPARKPLUG_STATE and self.host_id and m.sensor == self.host_id:
            state = parse_state(msg.payload)
            if state is not None and not state[0] and self._connected.is_set() and not self._stopping:
                log.warning("Sparkplug: an offline STATE of this host %r was delivered; publishing online again",
                            self.host_id)
                self._publish_state(True)

    def _handle_decoded(self, msg, m: Match) -> None:
        """A message in another format (:mod:`ingest.mqtt.formats`): one batch of readings."""
        try:
            if m.input.format == "sparkplug":
                res = self.sparkplug.decode(m, msg.topic, msg.payload, self.bounds)
                self._handle_sparkplug(msg, res)
                return
            d = decode_match(m, self.topics, msg.payload, self.bounds)
        except Unusable as exc:
            self._dead(msg, str(exc))
            return
        if d.bad:
            self._dead(msg, d.bad, ack=False)
        r = d.readings
        if not len(r):           # a death, a command, a birth of unmapped metrics: nothing to store
            self._keep_nothing(msg)
            return
        self._keep(msg, len(r), batch=(r.time_us, r.sensor_id, r.value, r.quality))

    def _handle_sparkplug(self, msg, res) -> None:
        """A Sparkplug message decoded (:class:`ingest.mqtt.sparkplug.Result`): birth values
        held back wait with their message's acknowledgement; released ones go with this one."""
        if res.bad:
            self._dead(msg, res.bad, ack=False)
        extra = self._parked.pop(res.released, []) if res.released else []
        if res.held is not None:
            if msg.qos > 0:
                self._parked.setdefault(res.held, []).append((msg.mid, self._generation))
            r = Readings.empty()
        else:
            r = res.readings
        if not len(r):
            if res.held is None:
                self._keep_nothing(msg)
            self._ack_parked(extra)
            return
        self._keep(msg, len(r), batch=(r.time_us, r.sensor_id, r.value, r.quality), extra_mids=extra)

    def _release_due(self) -> None:
        """Birth values held past their wait (no history followed): stored now."""
        for key, r in self.sparkplug.release_due():
            extra = self._parked.pop(key, [])
            with self._lock:
                self._buf.append((r.time_us, r.sensor_id, r.value, r.quality))
                self._buf_rows += len(r)
                self._parked_mids.extend(extra)
            self.readings += len(r)

    def _ack_parked(self, parked) -> None:
        for mid, gen in parked:
            self._ack([mid], gen)

    def _keep_nothing(self, msg) -> None:
        """A message that carried no reading: nothing to make durable, acknowledged now."""
        if msg.qos > 0:
            self._ack([msg.mid], self._generation)

    def _keep(self, msg, n: int, batch=None, single=None, extra_mids=()) -> None:
        """Gather a message's readings: ``batch`` (time, sensor id or ids, value, quality
        arrays) or ``single`` (time, sensor id, raw value, unit code), to be flushed."""
        with self._lock:
            first = not self._buf and not self._single[0]
            if single is not None:
                t, s, v, c = self._single
                t.append(single[0])
                s.append(single[1])
                v.append(single[2])
                c.append(single[3])
            else:
                self._buf.append(batch)
            self._buf_rows += n
            if msg.qos > 0:  # QoS 0 messages carry no packet id and are never acknowledged
                self._mids.append(msg.mid)
            self._parked_mids.extend(extra_mids)
            full = self._buf_rows >= self.flush_rows
            if self._buf_rows >= self.max_buffered_rows:
                self._wait_for_room()
        self.readings += n
        self.last_reading_at = self.last_message_at
        if full or first:
            self._flush_now.set()

    def _wait_for_room(self) -> None:
        """Called holding the lock: wait until the flusher takes the buffer (the sink is full,
        the writer cannot store). Reading from the broker pauses meanwhile."""
        self._flush_now.set()
        while self._buf_rows >= self.max_buffered_rows and not self._stop.is_set():
            if self.network is not None:
                self.network.last_beat = time.monotonic()   # paused on purpose, not stuck
            self._room.wait(0.5)

    def _internal_error(self, msg, exc: Exception) -> None:
        self.internal_errors += 1
        tb = traceback.extract_tb(exc.__traceback__)
        kind = (type(exc).__name__, tb[-1].filename if tb else "", tb[-1].lineno if tb else 0)
        if kind not in self._logged_kinds:
            self._logged_kinds.add(kind)
            log.error("internal error handling a message on %r (traceback logged once for this kind):\n%s",
                      _topic(msg), "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
        else:
            log.error("internal error handling a message on %r: %s: %s", _topic(msg), type(exc).__name__, exc)
        try:
            self._dead(msg, f"internal error: {type(exc).__name__}: {str(exc)[:300]}")
        except Exception:  # noqa: BLE001 - not even a dead letter: leave it unacknowledged
            log.exception("could not dead-letter a message on %r", _topic(msg))

    def _dead(self, msg, reason: str, ack: bool = True) -> None:
        self.dead += 1
        gen = self._generation
        cb = (lambda: self._ack([msg.mid], gen)) if ack and msg.qos > 0 else None
        self.sink.dead_letter(DeadLetter("mqtt", _topic(msg), bytes(msg.payload), reason,
                                         {"qos": msg.qos, "retain": bool(msg.retain)}), on_durable=cb)

    # --- batching and acknowledgement -----------------------------------------------

    def _flush_loop(self, comp: Component) -> None:
        while not self._stop.is_set():
            comp.beat()
            self._flush_now.wait(self.flush_interval)
            self._flush_now.clear()
            early = self.flush_gap - (time.monotonic() - self._last_flush)
            if early > 0 and self._buf_rows < self.flush_rows:
                self._stop.wait(early)          # what comes meanwhile joins this batch
            self.flush(comp)

    def flush(self, comp: Component | None = None) -> None:
        """Hand the gathered readings to the sink as one batch."""
        with self._lock:
            if not self._buf and not self._single[0]:
                return
            self._last_flush = time.monotonic()
            buf, single, mids, gen = self._buf, self._single, self._mids, self._generation
            parked = self._parked_mids
            self._buf, self._single, self._mids, self._buf_rows = [], ([], [], [], []), [], 0
            self._parked_mids = []
            self._room.notify_all()
        try:
            if single[0]:
                buf.append(self._convert_singles(*single))
            times = np.concatenate([b[0] for b in buf])
            sensors = np.concatenate([np.full(len(b[0]), b[1], dtype=np.int32) if np.isscalar(b[1]) else b[1]
                                      for b in buf])
            values = np.concatenate([b[2] for b in buf])
            quality = np.concatenate([b[3] for b in buf])
            batch = Readings(times, sensors, values, quality)
        except Exception:
            # the readings are lost here, never acknowledged: reconnect so the broker sends them again
            self._need_connect = True
            raise
        def on_durable():
            self._ack(mids, gen)
            self._ack_parked(parked)
        while not self.sink.put(batch, on_durable=on_durable, timeout=0.5):
            if comp is not None:
                comp.beat()                    # waiting for the writer on purpose, not stuck

    def _convert_singles(self, times, sensors, raw, codes):
        """Single readings gathered as plain lists -> canonical arrays, one numpy pass per unit."""
        values = np.asarray(raw, dtype=np.float64)
        quality = np.zeros(len(values), dtype=np.int16)
        code_arr = np.asarray(codes, dtype=np.int32)
        sensor_arr = np.asarray(sensors, dtype=np.int32)
        for (parameter, unit), code in list(self._units.items()):
            sel = code_arr == code
            if sel.any():
                values[sel], quality[sel] = normalise(parameter, unit, values[sel], self._full_scale[sensor_arr[sel]])
        return (np.asarray(times, dtype=np.int64), sensor_arr, values, quality)

    def _ack(self, mids: list[int], generation: int) -> None:
        # An acknowledgement belongs to the connection that received the message; after a
        # reconnect the broker sends those messages again, and they are acknowledged then.
        # Checked and queued under the lock the reconnect takes to change the generation, so
        # none slips onto the next connection between the two.
        with self._lock:
            if generation != self._generation or not self._connected.is_set():
                return
            for mid in mids:
                self.client.ack(mid, self.qos)

    def status(self) -> dict:
        """Counts and ages for ``sewerwatch status``."""
        now = time.time()
        with self._lock:
            buffered = self._buf_rows
        return {"connected": self.connected, "client_id": self.client_id, "share_group": self.share_group,
                "subscriptions": dict(self.subscriptions),
                "sparkplug": {"host_id": self.host_id, "state_published": self.state_published,
                              "edge_nodes": len(self.sparkplug.nodes),
                              "historical_metrics": self.sparkplug.historical,
                              "rebirths_requested": self.sparkplug.rebirths_requested,
                              "groups_passed_over": dict(self.passed_over)} if self.sparkplug.sensors or self.host_id
                else None,
                "messages": self.messages, "readings": self.readings,
                "dead_letters": self.dead, "maintenance_messages": self.maintenance_messages,
                "internal_errors": self.internal_errors, "connects": self.connects,
                "buffered_readings": buffered,
                "last_message_age_s": None if self.last_message_at is None else round(now - self.last_message_at, 3),
                "last_reading_age_s": None if self.last_reading_at is None else round(now - self.last_reading_at, 3),
                "disconnected_for_s": None if self.disconnected_since is None
                else round(now - self.disconnected_since, 1)}


def _topic(msg) -> str:
    """A message's topic as text, even when its bytes are not UTF-8."""
    try:
        return msg.topic
    except UnicodeDecodeError:
        return bytes(msg._topic).decode("utf-8", "replace")


def sensor_refs_from_db(conn, source: str = "mqtt") -> list:
    """The sensors of ``source`` in the ``sensors`` table as :class:`~ingest.mqtt.topics.SensorRef`.

    The MQTT collector maps topics to MQTT sensors only: a Modbus sensor is read by the
    Modbus collector, and a message on its topic goes to the dead letters as an unknown
    sensor rather than being taken as one of its readings.
    """
    rows = conn.execute("SELECT se.id, si.key || '/' || se.name, se.parameter, se.unit FROM sensors se "
                        "JOIN sites si ON si.id = se.site_id WHERE se.source = %s", (source,)).fetchall()
    return [SensorRef(i, k, p, unit=u) for i, k, p, u in rows]
