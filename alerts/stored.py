"""The stored readings and episodes a late reading is judged again against.

:class:`StoredReadings` is what :class:`alerts.episodes.LiveEpisodes` reads when it judges
a sensor again: the sensor's readings of a window (the binary ``COPY`` of
:func:`limits.history.read_readings`, the same reading ``check --from --to`` does), its
first reading ever, the episodes stored for it (``violations``: rows of this or an earlier
run, and of ``check --store``), and how far the writer has stored the sink's batches
(``stored_seq``: a late reading is judged only once it is in the database, with every
reading received before it). One synchronous connection, used from the evaluator's thread
only, opened again when it drops.
"""

from __future__ import annotations

from datetime import datetime, timezone

import psycopg

from foundation.windows import load as load_windows
from limits import core
from limits.history import read_readings


def _ts(us: int) -> datetime:
    return datetime.fromtimestamp(us / core.US, timezone.utc)


def _us(t: datetime) -> int:
    return int(round(t.timestamp() * core.US))


class StoredReadings:
    """Readings and episodes of the database at ``url``.

    Parameters
    ----------
    url : str
        Database URL (a role that reads ``readings`` and ``violations``: the owner).
    stored_seq : callable
        The writer's progress: the newest sink sequence number stored with everything
        before it (:attr:`ingest.writer.WriterStats.stored_seq`).
    """

    def __init__(self, url: str, stored_seq):
        self.url = url
        self._stored_seq = stored_seq
        self._conn: psycopg.Connection | None = None

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=3,
                                         options="-c statement_timeout=30000 -c jit=off")
        return self._conn

    def _run(self, work):
        try:
            return work(self._connection())
        except psycopg.Error:
            self.close()
            raise

    def stored_seq(self) -> int:
        return int(self._stored_seq())

    def read(self, sensor_id: int, start_us: int, end_us: int):
        """Readings of one sensor in ``[start_us, end_us)``: sensor, time [us UTC], value,
        quality arrays, in time order; a reading in a maintenance window in effect has the
        maintenance code whatever is stored (a window recorded after its readings)."""
        def work(conn):
            s, t, v, q = read_readings(conn, [sensor_id], start_us, end_us)
            return s, t, v, load_windows(conn, [sensor_id], start_us, end_us).mark(s, t, q)
        return self._run(work)

    def first_reading(self, sensor_id: int) -> int | None:
        """The sensor's first reading ever [us UTC] (by the (sensor_id, time) index)."""
        row = self._run(lambda conn: conn.execute(
            "SELECT time FROM readings WHERE sensor_id = %s ORDER BY time LIMIT 1", (sensor_id,)).fetchone())
        return None if row is None else _us(row[0])

    def episodes(self, sensor_id: int, since_us: int) -> list[tuple[str, int, int]]:
        """``(rule, start [us], last [us])`` of the sensor's stored episodes whose last
        reading is at or after ``since_us`` (an open one: last = now)."""
        rows = self._run(lambda conn: conn.execute(
            "SELECT rule, start_time, coalesce((evidence->>'last')::timestamptz, end_time, now()) FROM violations "
            "WHERE sensor_id = %s AND source <> 'lab' AND coalesce(end_time, 'infinity') >= %s",
            (sensor_id, _ts(since_us))).fetchall())
        return [(rule, _us(a), _us(b)) for rule, a, b in rows]

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
            self._conn = None
