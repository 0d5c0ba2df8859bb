"""The MQTT collector: a persistent QoS 1 session whose messages are acknowledged only when durable.

paho-mqtt 2.x with a fixed client id and ``clean_session=False``, so the broker keeps
every QoS 1 message while the collector is down; ``manual_ack=True``, so a message is
acknowledged only after the writer has committed its readings to the database or fsynced
them to the spool (the sink's ``on_durable``). A crash at any moment therefore loses
nothing: unacknowledged messages are delivered again and the writer drops the duplicates.

Readings of many messages are gathered and handed to the sink as one numpy batch every
``flush_interval`` seconds (or ``flush_rows`` readings). Payloads that cannot be used go
to the dead letters with their raw bytes, topic and reason, and the collector goes on.
"""

from __future__ import annotations

import logging
import threading
from urllib.parse import unquote, urlsplit

import numpy as np
import paho.mqtt.client as mqtt

from ingest.batch import Readings
from ingest.mqtt.payload import Parsed, Unusable, parse_message
from ingest.mqtt.topics import SensorRef, TopicMap
from ingest.normalise import normalise
from ingest.sink import DeadLetter, Sink

log = logging.getLogger("sewerwatch.mqtt")


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
    """

    def __init__(self, url: str, topics: TopicMap, sink: Sink, client_id: str = "sewerwatch-collector",
                 qos: int = 1, flush_interval: float = 0.02, flush_rows: int = 20_000):
        u = urlsplit(url)
        if u.scheme not in ("mqtt", "mqtts") or not u.hostname:
            raise ValueError(f"not an MQTT URL: {url!r}")
        self.host, self.port = u.hostname, u.port or (8883 if u.scheme == "mqtts" else 1883)
        self.topics, self.sink, self.qos = topics, sink, qos
        self.flush_interval, self.flush_rows = flush_interval, flush_rows
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False,
                                  protocol=mqtt.MQTTv311, manual_ack=True)
        if u.username:
            self.client.username_pw_set(unquote(u.username), unquote(u.password or ""))
        if u.scheme == "mqtts":
            self.client.tls_set()
        self.client.max_queued_messages_set(0)
        self.client.reconnect_delay_set(min_delay=1, max_delay=30)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self._lock = threading.Lock()
        self._buf: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []  # batches, converted
        self._single: tuple[list, list, list, list] = ([], [], [], [])  # time_us, sensor, raw value, unit code
        self._units: dict[tuple[str, str], int] = {}  # (parameter, unit) -> code
        self._buf_rows = 0
        self._mids: list[int] = []
        self._generation = 0
        self._connected = threading.Event()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self.messages = 0
        self.readings = 0
        self.dead = 0
        self.connects = 0

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> "MqttCollector":
        self.client.connect_async(self.host, self.port, keepalive=30)
        self.client.loop_start()
        self._flusher = threading.Thread(target=self._flush_loop, name="sewerwatch-mqtt-flush", daemon=True)
        self._flusher.start()
        return self

    def wait_connected(self, timeout: float = 10.0) -> bool:
        return self._connected.wait(timeout)

    @property
    def connected(self) -> bool:
        """Whether the broker accepted the connection and has not dropped it since."""
        return self._connected.is_set()

    def stop(self) -> None:
        """Flush what was received, then disconnect (unflushed acks are simply not sent)."""
        self._stop.set()
        if self._flusher:
            self._flusher.join(5)
        self.flush()
        self.client.disconnect()
        self.client.loop_stop()

    # --- paho callbacks -------------------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            log.error("broker refused the connection: %s", reason_code)
            return
        with self._lock:
            self._generation += 1
        self.connects += 1
        subs = self.topics.subscriptions()
        client.subscribe([(s, self.qos) for s in subs])
        log.info("connected to %s:%d (session present: %s), subscribed to %s",
                 self.host, self.port, flags.session_present, ", ".join(subs))
        self._connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self._connected.clear()
        if not self._stop.is_set():
            log.warning("disconnected from the broker (%s); reconnecting", reason_code)

    def _on_message(self, client, userdata, msg):
        self.messages += 1
        ref = self.topics.resolve(msg.topic)
        if ref is None:
            self._dead(msg, "unknown sensor: no sensor is configured for this topic")
            return
        try:
            parsed = parse_message(msg.payload, ref.parameter)
        except Unusable as exc:
            self._dead(msg, str(exc))
            return
        if isinstance(parsed, Parsed):
            if parsed.bad:
                self._dead(msg, parsed.bad, ack=False)
            n = len(parsed.time_us)
        else:
            n = 1
            code = self._units.get((ref.parameter, parsed[2]))
            if code is None:
                code = self._units.setdefault((ref.parameter, parsed[2]), len(self._units))
        with self._lock:
            if n == 1 and not isinstance(parsed, Parsed):
                t, s, v, c = self._single
                t.append(parsed[0])
                s.append(ref.id)
                v.append(parsed[1])
                c.append(code)
            else:
                self._buf.append((parsed.time_us, ref.id, parsed.value, parsed.quality))
            self._buf_rows += n
            if msg.qos > 0:  # QoS 0 messages carry no packet id and are never acknowledged
                self._mids.append(msg.mid)
            full = self._buf_rows >= self.flush_rows
        self.readings += n
        if full:
            self.flush()

    def _dead(self, msg, reason: str, ack: bool = True) -> None:
        self.dead += 1
        gen = self._generation
        cb = (lambda: self._ack([msg.mid], gen)) if ack and msg.qos > 0 else None
        self.sink.dead_letter(DeadLetter("mqtt", msg.topic, bytes(msg.payload), reason,
                                         {"qos": msg.qos, "retain": bool(msg.retain)}), on_durable=cb)

    # --- batching and acknowledgement -----------------------------------------------

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_interval):
            self.flush()

    def flush(self) -> None:
        """Hand the gathered readings to the sink as one batch."""
        with self._lock:
            if not self._buf and not self._single[0]:
                return
            buf, single, mids, gen = self._buf, self._single, self._mids, self._generation
            self._buf, self._single, self._mids, self._buf_rows = [], ([], [], [], []), [], 0
        if single[0]:
            buf.append(self._convert_singles(*single))
        times = np.concatenate([b[0] for b in buf])
        sensors = np.concatenate([np.full(len(b[0]), b[1], dtype=np.int32) if np.isscalar(b[1]) else b[1]
                                  for b in buf])
        values = np.concatenate([b[2] for b in buf])
        quality = np.concatenate([b[3] for b in buf])
        self.sink.put(Readings(times, sensors, values, quality), on_durable=lambda: self._ack(mids, gen))

    def _convert_singles(self, times, sensors, raw, codes):
        """Single readings gathered as plain lists -> canonical arrays, one numpy pass per unit."""
        values = np.asarray(raw, dtype=np.float64)
        quality = np.zeros(len(values), dtype=np.int16)
        code_arr = np.asarray(codes, dtype=np.int32)
        for (parameter, unit), code in list(self._units.items()):
            sel = code_arr == code
            if sel.any():
                values[sel], quality[sel] = normalise(parameter, unit, values[sel])
        return (np.asarray(times, dtype=np.int64), np.asarray(sensors, dtype=np.int32), values, quality)

    def _ack(self, mids: list[int], generation: int) -> None:
        # An acknowledgement belongs to the connection that received the message; after a
        # reconnect the broker sends those messages again, and they are acknowledged then.
        if generation != self._generation or not self._connected.is_set():
            return
        for mid in mids:
            self.client.ack(mid, self.qos)


def sensor_refs_from_db(conn, source: str = "mqtt") -> list:
    """The sensors of ``source`` in the ``sensors`` table as :class:`~ingest.mqtt.topics.SensorRef`.

    The MQTT collector maps topics to MQTT sensors only: a Modbus sensor is read by the
    Modbus collector, and a message on its topic goes to the dead letters as an unknown
    sensor rather than being taken as one of its readings.
    """

    rows = conn.execute("SELECT se.id, si.key || '/' || se.name, se.parameter FROM sensors se "
                        "JOIN sites si ON si.id = se.site_id WHERE se.source = %s", (source,)).fetchall()
    return [SensorRef(i, k, p) for i, k, p in rows]

