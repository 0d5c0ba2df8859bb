"""The narrow sink collectors hand their batches to; only the writer drains it.

Collectors never touch the database (DESIGN.md, Telegraf's rule). They :meth:`Sink.put`
numpy batches of readings, :meth:`Sink.dead_letter` payloads they cannot use and
:meth:`Sink.health` device health records. Each may carry an ``on_durable`` callback,
which the writer calls once what it carried is committed to the database or fsynced to
the spool: an MQTT collector acknowledges its QoS 1 messages only then, so a crash at any
moment loses nothing.

Memory is bounded: :meth:`put` blocks while more than ``max_readings`` wait (the writer
spools to disk when the database is down, so the sink drains whatever the backlog; when
the spool cannot be written either, the sink stays full, the collectors stop taking
messages and the broker keeps them).

The sink also remembers, for ``sewerwatch status``, when readings were last put and the
dead letters of the last hour with their reasons (:meth:`recent_dead_letters`), in
memory, so status is truthful while the database is down.

Maintenance windows: a sink given a :class:`foundation.windows.WindowBook` marks
every batch put with :data:`foundation.quality.MAINTENANCE` where a window covers it, before
the writer and the taps see it, so a reading in a window is stored with its code and never
judged. A device's own window (an MQTT maintenance message, a Modbus status bit) is handed
over with :meth:`Sink.window`: it takes effect in the book at once (the readings after it are
marked) and rides to the writer with the health records (spooled alike while the database
is down), which records it (``device_window()``, migration 0160).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ingest.batch import Readings

#: How long the sink remembers dead letters for ``sewerwatch status`` [s].
DEAD_LOG_S = 3600.0
#: The raw bytes of a dead letter are kept up to this length; the rest is cut and said so.
DEAD_PAYLOAD_MAX = 64 * 1024


@dataclass
class DeadLetter:
    """A payload or row that could not be used, with the reason (table ``dead_letters``)."""

    source: str
    topic: str | None
    payload: bytes | None
    reason: str
    detail: dict = field(default_factory=dict)
    received_at_us: int = 0

    def __post_init__(self):
        if self.payload is not None and len(self.payload) > DEAD_PAYLOAD_MAX:
            self.detail = {**self.detail, "size": len(self.payload), "kept_bytes": DEAD_PAYLOAD_MAX}
            self.payload = bytes(self.payload[:DEAD_PAYLOAD_MAX])


@dataclass(frozen=True)
class WindowEvent:
    """A maintenance window a device opened or ended (an MQTT message, a Modbus status bit).

    Attributes
    ----------
    site : str
        The site's key.
    sensor_ids : tuple of int
        The sensors it covers (empty: every sensor of the site).
    state : str
        ``start`` or ``end``.
    at_us : int
        When [us UTC].
    reason, by : str
        Why, and who (a device sends what its technician entered, or its own name).
    source : str
        ``mqtt`` or ``modbus``.
    device : str
        The device (its broker client or Modbus device id).
    """

    site: str
    sensor_ids: tuple
    state: str
    at_us: int
    reason: str
    by: str
    source: str
    device: str
    mark_ids: tuple = ()          # a whole site's window: the sensors marked until the database has it

    @property
    def prefix(self) -> str:
        """What identifies the window of this device and these sensors (``mqtt:candy:3,4``)."""
        scope = ",".join(str(i) for i in sorted(self.sensor_ids)) or "*"
        return f"{self.source}:{self.site}:{scope}"

    def key(self, start_us: int | None = None) -> str:
        return f"{self.prefix}@{self.at_us if start_us is None else start_us}"

    def record(self, key: str) -> dict:
        """As a health record for the writer (and the spool): ``kind`` ``window``."""
        return {"kind": "window", "site": self.site, "sensor_ids": list(self.sensor_ids), "state": self.state,
                "at_us": self.at_us, "reason": self.reason, "by": self.by, "source": self.source,
                "device": self.device, "key": key}


@dataclass
class Chunk:
    """What the writer takes from the sink in one go."""

    readings: Readings
    dead_letters: list[DeadLetter]
    health: list[dict]
    callbacks: list[Callable[[], None]]
    seq: int = 0        # the newest sequence number of the batches taken (0: none)

    def __len__(self) -> int:
        return len(self.readings) + len(self.dead_letters) + len(self.health)


class Sink:
    """A thread-safe, bounded hand-over point between collectors and the writer.

    Parameters
    ----------
    max_readings : int
        Readings that may wait in memory before :meth:`put` blocks.
    """

    def __init__(self, max_readings: int = 1_000_000, windows=None):
        self.max_readings = max_readings
        #: the live maintenance windows (foundation.windows.WindowBook) readings are marked by
        self.windows = windows
        self._items: deque = deque()
        self._waiting = 0
        self._cond = threading.Condition()
        self._closed = False
        self._listeners: list[Callable[[Readings, int], None]] = []
        self.accepted = 0  # readings accepted so far
        self.seq = 0       # sequence number of the last batch put
        self.last_put_at: float | None = None       # [epoch s] when readings were last put
        self._dead_log: deque = deque()             # (epoch s, reason) of the last hour

    def subscribe(self, listener: Callable[[Readings, int], None]) -> None:
        """Call ``listener`` with every batch as it is put and its sequence number (the
        streaming evaluator's tap). Sequence numbers rise by one a batch, in the order the
        writer takes them: the writer's ``stored_seq`` says which are in the database."""
        self._listeners.append(listener)

    def put(self, readings: Readings, on_durable: Callable[[], None] | None = None,
            timeout: float | None = None) -> bool:
        """Hand over a batch; blocks while the sink is full.

        Returns
        -------
        bool
            False when ``timeout`` passed with the sink still full (nothing was taken).
        """
        n = len(readings)
        if self.windows is not None and n:
            q = self.windows.mark(readings.sensor_id, readings.time_us, readings.quality)
            if q is not readings.quality:
                readings = Readings(readings.time_us, readings.sensor_id, readings.value, q)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._waiting > 0 and self._waiting + n > self.max_readings and not self._closed:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            self.seq += 1
            seq = self.seq
            self._items.append(("r", readings, on_durable, seq))
            self._waiting += n
            self.accepted += n
            self.last_put_at = time.time()
            self._cond.notify_all()
        for listener in self._listeners:
            listener(readings, seq)
        return True

    def dead_letter(self, letter: DeadLetter, on_durable: Callable[[], None] | None = None) -> None:
        """Hand over a payload that could not be used."""
        if not letter.received_at_us:
            letter.received_at_us = time.time_ns() // 1000
        now = time.time()
        with self._cond:
            self._items.append(("d", letter, on_durable, 0))
            self._dead_log.append((now, letter.reason))
            while self._dead_log and (now - self._dead_log[0][0] > DEAD_LOG_S or len(self._dead_log) > 100_000):
                self._dead_log.popleft()
            self._cond.notify_all()

    def note_dead(self, reasons: list[str]) -> None:
        """Dead letters the writer made itself (conflicting readings), for ``status``."""
        now = time.time()
        with self._cond:
            self._dead_log.extend((now, r) for r in reasons)

    def recent_dead_letters(self, window_s: float = DEAD_LOG_S, latest: int = 5) -> dict:
        """Dead letters handed over in the last ``window_s`` seconds: ``{"count", "latest":
        [{"at", "reason"}, ...]}`` (the newest first)."""
        now = time.time()
        with self._cond:
            items = [x for x in self._dead_log if now - x[0] <= window_s]
        return {"count": len(items), "window_s": window_s,
                "latest": [{"at": at, "reason": reason[:300]} for at, reason in reversed(items[-latest:])]}

    def health(self, record: dict, on_durable: Callable[[], None] | None = None) -> None:
        """Hand over a device health record (see ``ingest/writer.py`` for its keys)."""
        with self._cond:
            self._items.append(("h", record, on_durable, 0))
            self._cond.notify_all()

    def window(self, event: WindowEvent, on_durable: Callable[[], None] | None = None) -> str | None:
        """A device opened or ended a maintenance window: it takes effect now (the readings
        put after it are marked), and goes to the writer to be recorded. Returns the
        window's key, or None for an end of no window known open (still recorded: the
        database may know it, else the writer makes the dead letter)."""
        key = None
        if self.windows is not None:
            if event.state == "start":
                key = event.key()
                self.windows.open_local(key, event.sensor_ids or event.mark_ids, event.at_us, event.reason, event.by)
            else:
                key = self.windows.open_key(event.prefix + "@")
                if key is not None:
                    self.windows.close_local(key, event.at_us)
        self.health(event.record(key or event.key()), on_durable)
        return key

    def take(self, max_readings: int = 50_000, max_delay: float = 0.2) -> Chunk | None:
        """Wait up to ``max_delay`` seconds for work and take up to ``max_readings`` readings.

        Returns None once the sink is closed and empty.
        """
        deadline = time.monotonic() + max_delay
        with self._cond:
            while not self._items:
                if self._closed:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return Chunk(Readings.empty(), [], [], [])
                self._cond.wait(left)
            # Give a trickle a moment to grow into a batch, up to the delay.
            while self._waiting < max_readings and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.02))
            parts, letters, health, callbacks, n, seq = [], [], [], [], 0, 0
            while self._items and n < max_readings:
                kind, item, cb, s = self._items.popleft()
                if kind == "r":
                    parts.append(item)
                    n += len(item)
                    seq = s
                elif kind == "d":
                    letters.append(item)
                else:
                    health.append(item)
                if cb is not None:
                    callbacks.append(cb)
            self._waiting -= n
            self._cond.notify_all()
        return Chunk(Readings.concat(parts), letters, health, callbacks, seq)

    def pending(self) -> int:
        with self._cond:
            return self._waiting

    def close(self) -> None:
        """No more puts; :meth:`take` returns None once drained."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
