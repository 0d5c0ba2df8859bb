"""The writer's pipelined commits against the real TimescaleDB (ingest/writer.py): a chunk
is copied on a second connection while the one before commits; chunks commit in the order
taken, callbacks run once committed, and a failed commit never lets the chunk after it in
first."""

from __future__ import annotations

import numpy as np

from ingest.batch import Readings
from ingest.sink import Chunk, DeadLetter, Sink
from ingest.writer import Writer
from support import add_site_and_sensors

T0_US = 1_772_366_400 * 1_000_000  # 2026-03-01T12:00:00Z


def _readings(sensor_id: int, n: int, start_us: int) -> Readings:
    t = start_us + np.arange(n, dtype=np.int64) * 1_000_000
    return Readings(t, np.full(n, sensor_id, np.int32), np.full(n, 7.0), np.zeros(n, np.int16))


def _stored(db, sensor_id: int) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) FROM readings WHERE sensor_id = %s", (sensor_id,)).fetchone()[0]


def test_chunks_commit_in_order_while_the_next_is_copied(db, tmp_path):
    """Three chunks of 100, 200 and 300 readings through the writer's loop path: the first
    is committed (and acknowledged) by the time the second has been copied; in the end
    100 + 200 + 300 = 600 readings are stored, the callbacks ran in order 1, 2, 3, the sink's
    batches up to 3 are stored, and the second connection carried a chunk."""
    sid = add_site_and_sensors(db.url, "p1", {"ph": ("ph", "pH")})["ph"]
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[int] = []
    w._connection()
    assert w.write_next(Chunk(_readings(sid, 100, T0_US), [], [], [lambda: acked.append(1)], seq=1))
    assert w.write_next(Chunk(_readings(sid, 200, T0_US + 10**9), [], [], [lambda: acked.append(2)], seq=2))
    assert acked[:1] == [1] and _stored(db, sid) >= 100
    assert w.write_next(Chunk(_readings(sid, 300, T0_US + 2 * 10**9), [], [], [lambda: acked.append(3)], seq=3))
    w.handle(Chunk(Readings.empty(), [], [], []))         # waits for the commit in flight
    assert _stored(db, sid) == 600 and acked == [1, 2, 3] and w.stats.stored_seq == 3
    assert w._conn2 is not None and w.stats.chunks == 3
    w.stop()


def test_a_failed_commit_keeps_the_next_chunk_out_of_the_database(db, tmp_path):
    """Chunk A (10 readings and a dead letter that a deferred check refuses at COMMIT) and
    chunk B (20 readings, copied while A commits): A's commit fails, so B is rolled back
    and both go the ordinary way, here to the spool (the database is then taken as down):
    0 of B's 20 readings are stored before A, the spool holds both, and the callbacks ran
    in order A, B once they were spooled."""
    ids = add_site_and_sensors(db.url, "p2", {"ph": ("ph", "pH"), "temp": ("temperature", "degF")})
    with db.connect() as conn:
        conn.execute("""CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN IF NEW.reason = 'refuse me' THEN RAISE EXCEPTION 'refused at commit'; END IF;
                        RETURN NEW; END $$""")
        conn.execute("CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON dead_letters DEFERRABLE INITIALLY DEFERRED "
                     "FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()")
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[str] = []
    w._connection()
    letter = DeadLetter("mqtt", "sewerwatch/p2/ph", b"x", "refuse me", received_at_us=T0_US)
    assert w.write_next(Chunk(_readings(ids["ph"], 10, T0_US), [letter], [], [lambda: acked.append("A")], seq=1))
    w.write_next(Chunk(_readings(ids["temp"], 20, T0_US), [], [], [lambda: acked.append("B")], seq=2))
    assert _stored(db, ids["temp"]) == 0 and _stored(db, ids["ph"]) == 0
    assert not w.spool.empty() and w.stats.spooled_seq == 2 and w.stats.stored_seq == 0
    assert acked == ["A", "B"]
    w.stop()
