"""Maintenance windows as intervals per sensor, and readings masked by them.

A maintenance window is an interval ``[start, end)`` of a sensor (a window of a whole site is
one per sensor of it) during which the instrument is being calibrated, cleaned or repaired.
Readings in a window are stored with :data:`foundation.quality.MAINTENANCE` and every path
that judges or sums readings leaves them out. This module is the one place that decides
which readings are in a window, for all of them: the collectors' sink (readings stored with
the code), the streaming evaluator of ``run`` and its judgements again, ``check --from
--to`` and ``check --readings``, the slug baseline, daily volumes, charts.

It is vectorised: :meth:`Windows.inside` ranks the windowed sensors, folds (rank, time) into
one int64 key and finds each reading's window with one :func:`numpy.searchsorted` over the
windows' merged starts, never a pass per reading (and none per window). An open window
ends at :data:`OPEN_END`.

:class:`WindowBook` is the live copy a running process keeps (thread-safe): the windows the
database holds (refreshed by a poller) and the ones a device has just opened or closed (an
MQTT message, a Modbus status bit) before the database has them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from foundation.quality import MAINTENANCE

#: The end of a window still open [us].
OPEN_END = np.iinfo(np.int64).max
US = 1_000_000

#: The windows in effect (not awaiting a second person's approval, not rejected) of some
#: sensors overlapping ``[a, b)``: a site's window once per sensor of the site.
IN_EFFECT_SQL = """
SELECT w.id, s.id, (extract(epoch FROM w.start_time) * 1000000)::int8,
       CASE WHEN w.end_time IS NULL THEN NULL ELSE (extract(epoch FROM w.end_time) * 1000000)::int8 END,
       w.key, w.reason, w.opened_by
FROM maintenance_windows w
JOIN sensors s ON s.id = w.sensor_id OR (w.sensor_id IS NULL AND s.site_id = w.site_id)
WHERE w.approval IN ('not-needed', 'approved')
  AND (%(ids)s::int[] IS NULL OR s.id = ANY(%(ids)s::int[]))
  AND (%(b)s::timestamptz IS NULL OR w.start_time < %(b)s::timestamptz)
  AND (%(a)s::timestamptz IS NULL OR w.end_time IS NULL OR w.end_time > %(a)s::timestamptz)
ORDER BY s.id, w.start_time"""


@dataclass(frozen=True)
class Window:
    """One window of one sensor (as :func:`load` returns them, for display)."""

    id: int | None
    sensor_id: int
    start_us: int
    end_us: int              # OPEN_END while open
    key: str | None = None
    reason: str = ""
    by: str = ""

    @property
    def open(self) -> bool:
        return self.end_us == OPEN_END


class Windows:
    """Maintenance windows of many sensors, merged per sensor (immutable).

    Parameters
    ----------
    sensor, start, end : array_like of int
        Per window: the sensor id, its start and end [us UTC]; ``end`` :data:`OPEN_END` (or
        NaN-free int64 max) while open. Overlapping windows of a sensor are merged.
    items : list of Window, optional
        The windows themselves (ids, reasons) for display; not needed for masking.
    """

    def __init__(self, sensor=(), start=(), end=(), items: list[Window] | None = None):
        s = np.asarray(sensor, dtype=np.int64)
        a = np.asarray(start, dtype=np.int64)
        b = np.asarray(end, dtype=np.int64)
        if not (len(s) == len(a) == len(b)):
            raise ValueError("window arrays differ in length")
        keep = b > a
        s, a, b = s[keep], a[keep], b[keep]
        order = np.lexsort((a, s))
        s, a, b = s[order], a[order], b[order]
        # merge overlapping (or touching) windows of a sensor: a window starts a new block
        # unless it begins before the running end of its sensor's earlier ones (windows are
        # few: this loop is over windows, never readings)
        ms, ma, mb = [], [], []
        for si, ai, bi in zip(s.tolist(), a.tolist(), b.tolist()):
            if ms and ms[-1] == si and ai <= mb[-1]:
                mb[-1] = max(mb[-1], bi)
            else:
                ms.append(si)
                ma.append(ai)
                mb.append(bi)
        self.sensor = np.asarray(ms, dtype=np.int64)
        self.start = np.asarray(ma, dtype=np.int64)
        self.end = np.asarray(mb, dtype=np.int64)
        self.items = list(items or [])
        self._sensors = np.unique(self.sensor)

    @classmethod
    def of(cls, items: list[Window]) -> "Windows":
        return cls([w.sensor_id for w in items], [w.start_us for w in items], [w.end_us for w in items], items)

    @classmethod
    def empty(cls) -> "Windows":
        return cls()

    def __len__(self) -> int:
        return len(self.sensor)

    def __bool__(self) -> bool:
        return len(self.sensor) > 0

    @property
    def sensors(self) -> np.ndarray:
        """The sensors that have a window."""
        return self._sensors

    def inside(self, sensor, time) -> np.ndarray:
        """Whether each reading lies in a window of its sensor.

        Parameters
        ----------
        sensor : array_like of int
            Sensor ids.
        time : array_like of int
            Reading times [us UTC]; any order.

        Returns
        -------
        numpy.ndarray of bool
        """
        sensor = np.asarray(sensor, dtype=np.int64)
        time = np.asarray(time, dtype=np.int64)
        out = np.zeros(len(time), dtype=bool)
        if not len(self.sensor) or not len(time):
            return out
        us = self._sensors
        rank = np.searchsorted(us, sensor)
        rank_c = np.minimum(rank, len(us) - 1)
        has = us[rank_c] == sensor
        if not has.any():
            return out
        t = time[has]
        r = rank_c[has]
        lo = int(t.min())
        hi = int(t.max()) + 1
        span = hi - lo + 1
        if span >= (1 << 62) // max(len(us), 1):      # keys would overflow int64: per sensor instead
            return self._inside_per_sensor(sensor, time)
        wr = np.searchsorted(us, self.sensor)
        ks = wr * span + (np.clip(self.start, lo, hi) - lo)
        ke = wr * span + (np.clip(self.end, lo, hi) - lo)
        key = r * span + (t - lo)
        j = np.searchsorted(ks, key, side="right") - 1
        ok = j >= 0
        jj = np.where(ok, j, 0)
        ok &= key < ke[jj]
        ok &= self.sensor[jj] == sensor[has]
        out[has] = ok
        return out

    def _inside_per_sensor(self, sensor, time) -> np.ndarray:
        out = np.zeros(len(time), dtype=bool)
        for c in self._sensors.tolist():
            m = sensor == c
            if not m.any():
                continue
            sel = self.sensor == c
            a, b = self.start[sel], self.end[sel]
            t = time[m]
            j = np.searchsorted(a, t, side="right") - 1
            ok = j >= 0
            ok &= t < b[np.where(ok, j, 0)]
            out[m] = ok
        return out

    def mark(self, sensor, time, quality) -> np.ndarray:
        """``quality`` with :data:`foundation.quality.MAINTENANCE` for the readings in a
        window (a new array where anything changed; the same one otherwise)."""
        quality = np.asarray(quality)
        if not len(self.sensor) or not len(quality):
            return quality
        m = self.inside(sensor, time)
        if not m.any():
            return quality
        q = quality.astype(np.int16, copy=True)
        q[m] = MAINTENANCE
        return q

    def of_sensor(self, sensor_id: int) -> list[tuple[int, int]]:
        """The merged windows of one sensor ``[(start, end), ...]`` [us UTC]."""
        sel = self.sensor == int(sensor_id)
        return list(zip(self.start[sel].tolist(), self.end[sel].tolist()))

    def seconds_inside(self, sensor_id: int, a_us: int, b_us: int) -> float:
        """How much of ``[a, b)`` a sensor's windows cover [s]."""
        total = 0
        for s, e in self.of_sensor(sensor_id):
            lo, hi = max(s, a_us), min(e, b_us)
            if hi > lo:
                total += hi - lo
        return total / US


def _ts(us: int | None):
    return None if us is None else datetime.fromtimestamp(us / US, timezone.utc)


def load(conn, sensor_ids=None, start_us: int | None = None, end_us: int | None = None) -> Windows:
    """The windows in effect from the database (table ``maintenance_windows``).

    Parameters
    ----------
    conn : psycopg.Connection
    sensor_ids : iterable of int, optional
        Only these sensors (default: all).
    start_us, end_us : int, optional
        Only windows overlapping ``[start, end)`` [us UTC] (default: every time).
    """
    ids = None if sensor_ids is None else [int(i) for i in sensor_ids]
    rows = conn.execute(IN_EFFECT_SQL, {"ids": ids, "a": _ts(start_us), "b": _ts(end_us)}).fetchall()
    return Windows.of([Window(wid, sid, a, OPEN_END if b is None else b, key, reason or "", by or "")
                       for wid, sid, a, b, key, reason, by in rows])


#: Every window on record (in effect or not) of some sensors overlapping ``[a, b)``, with the
#: readings it covers in that range: what ``check`` lists so no exclusion is hidden.
ON_RECORD_SQL = """
SELECT w.id, si.key, se.name, w.start_time, w.end_time, w.reason, w.person, w.source, w.approval,
       (SELECT count(*) FROM readings r JOIN sensors s2 ON s2.id = r.sensor_id
        WHERE s2.site_id = w.site_id AND (w.sensor_id IS NULL OR r.sensor_id = w.sensor_id)
          AND r.sensor_id = ANY(%(ids)s::int[])
          AND r.time >= greatest(w.start_time, %(a)s::timestamptz)
          AND r.time < least(coalesce(w.end_time, 'infinity'::timestamptz), %(b)s::timestamptz))
FROM maintenance_windows w JOIN sites si ON si.id = w.site_id LEFT JOIN sensors se ON se.id = w.sensor_id
WHERE w.start_time < %(b)s AND (w.end_time IS NULL OR w.end_time > %(a)s)
  AND EXISTS (SELECT 1 FROM sensors s3 WHERE s3.id = ANY(%(ids)s::int[])
              AND (s3.id = w.sensor_id OR (w.sensor_id IS NULL AND s3.site_id = w.site_id)))
ORDER BY w.start_time, w.id"""


def on_record(conn, sensor_ids, start_us: int, end_us: int) -> list[dict]:
    """Every window (approved, not needing approval, pending or rejected) of ``sensor_ids``
    overlapping ``[start, end)`` with the readings it covers there: ``id``, ``scope``,
    ``start``, ``end`` (ISO-8601 UTC, None while open), ``reason``, ``person``, ``source``,
    ``approval``, ``in_effect``, ``readings``."""
    rows = conn.execute(ON_RECORD_SQL, {"ids": [int(i) for i in sensor_ids], "a": _ts(start_us),
                                        "b": _ts(end_us)}).fetchall()
    out = []
    for wid, site, sensor, a, b, reason, person, source, approval, n in rows:
        out.append({"id": wid, "scope": f"{site}/{sensor}" if sensor else f"{site} (the whole site)",
                    "start": _iso(a), "end": _iso(b), "reason": reason, "person": person, "source": source,
                    "approval": approval, "in_effect": approval in ("not-needed", "approved"), "readings": int(n)})
    return out


def _iso(t) -> str | None:
    return None if t is None else t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def note_line(w: dict) -> str:
    """A window as ``check`` prints it (one line)."""
    span = f"{w['start']} to {w['end'] or 'still open'}"
    head = f"maintenance window {w['id']}" if w.get("id") is not None else "maintenance window"
    if w["in_effect"]:
        return (f"{head}: {w['scope']} {span} ({w['reason']}, {w['person']}, {w['source']}): "
                f"{w['readings']} reading{'s' if w['readings'] != 1 else ''} not judged")
    state = "awaiting a second person's approval" if w["approval"] == "pending" else w["approval"]
    return (f"{head}: {w['scope']} {span} ({w['reason']}, {w['person']}, {w['source']}) {state}: "
            f"its {w['readings']} reading{'s' if w['readings'] != 1 else ''} judged as any other")


class WindowBook:
    """The live windows of a running process (thread-safe).

    ``stored`` are the windows the database holds (:meth:`replace_stored`, from a poller);
    ``local`` the ones a device has just opened or closed (:meth:`open_local`,
    :meth:`close_local`), kept until the database holds them under the same key. Readings
    are marked with :meth:`mark` as the collectors hand them over.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._stored: dict[str, list[Window]] = {}
        self._local: dict[str, list[Window]] = {}
        self._snapshot = Windows.empty()
        self._changed: list[Window] = []
        self.version = 0

    def _rebuild(self) -> None:
        items = [w for ws in self._stored.values() for w in ws]
        items += [w for k, ws in self._local.items() if k not in self._stored for w in ws]
        self._snapshot = Windows.of(items)
        self.version += 1

    def replace_stored(self, items: list[Window]) -> None:
        """The database's windows in effect (all of them that can still matter)."""
        by_key: dict[str, list[Window]] = {}
        for w in items:
            by_key.setdefault(w.key or f"id:{w.id}", []).append(w)
        with self._lock:
            old = self._stored
            if {k: [(w.sensor_id, w.start_us, w.end_us) for w in v] for k, v in old.items()} == \
                    {k: [(w.sensor_id, w.start_us, w.end_us) for w in v] for k, v in by_key.items()}:
                return
            for k, ws in by_key.items():
                before = {(w.sensor_id, w.start_us, w.end_us) for w in old.get(k, [])} | \
                    {(w.sensor_id, w.start_us, w.end_us) for w in self._local.get(k, [])}
                self._changed += [w for w in ws if (w.sensor_id, w.start_us, w.end_us) not in before]
            for k, ws in old.items():
                if k not in by_key:              # withdrawn (rejected, deleted): readings judged again
                    self._changed += ws
            for k in list(self._local):
                local_open = any(w.open for w in self._local[k])
                mine = [x for x in by_key if x == k or x.startswith(k + "#")]
                if not mine:
                    continue
                if not local_open and any(w.open for x in mine for w in by_key[x]):
                    for x in mine:                 # ended here, not yet in the database: the end stands
                        del by_key[x]
                else:
                    del self._local[k]
            self._stored = by_key
            self._rebuild()

    def open_local(self, key: str, sensors, start_us: int, reason: str = "", by: str = "") -> None:
        """A window a device opened (before the database has it)."""
        with self._lock:
            self._local[key] = [Window(None, int(s), int(start_us), OPEN_END, key, reason, by) for s in sensors]
            self._rebuild()

    def close_local(self, key: str, end_us: int) -> bool:
        """Close a window a device opened; False when none is known under ``key``."""
        with self._lock:
            keys = [k for k in list(self._local) + list(self._stored) if k == key or k.startswith(key + "#")]
            ws = [w for k in dict.fromkeys(keys) for w in (self._local.get(k) or self._stored.get(k) or [])]
            if not ws:
                return False
            for k in keys:
                self._stored.pop(k, None)
                self._local.pop(k, None)
            self._local[key] = [Window(w.id, w.sensor_id, w.start_us, max(int(end_us), w.start_us), key, w.reason,
                                       w.by) for w in ws]
            self._rebuild()
            return True

    def open_key(self, prefix: str) -> str | None:
        """The key of an open window whose key starts with ``prefix`` (a device's), or None."""
        with self._lock:
            for k, ws in list(self._local.items()) + list(self._stored.items()):
                if k.startswith(prefix) and ws and ws[0].open:
                    return k
        return None

    def windows(self) -> Windows:
        with self._lock:
            return self._snapshot

    def changed_pending(self) -> bool:
        """Whether :meth:`take_changed` has something."""
        with self._lock:
            return bool(self._changed)

    def take_changed(self) -> list[Window]:
        """Windows of the database that appeared, changed or went since the last call (the
        live evaluator judges their sensors again over them)."""
        with self._lock:
            out, self._changed = self._changed, []
        return out

    def mark(self, sensor, time, quality) -> np.ndarray:
        return self.windows().mark(sensor, time, quality)


__all__ = ["OPEN_END", "Window", "Windows", "WindowBook", "load", "on_record", "note_line", "IN_EFFECT_SQL"]
