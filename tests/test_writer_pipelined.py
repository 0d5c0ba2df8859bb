"""The writer's pipelined writes against the real TimescaleDB (ingest/pipelined.py): two
chunks are in the database at once on two connections, each commits when it is written, and
what the rest relies on stays in order: a chunk's callbacks (the broker's acknowledgements)
and ``stored_seq`` wait for every chunk taken before it; a chunk that failed is written
again first, with the callbacks of those after it; a chunk after it that did commit is not
written twice.

A chunk is held in the database on purpose by a second session that has inserted one of its
readings and not committed: the writer's COPY waits for that session, as it would for any
lock, while the other chunk goes on."""

from __future__ import annotations

import numpy as np
import psycopg

from ingest.batch import Readings
from ingest.sink import Chunk, DeadLetter, Sink
from ingest.writer import Writer
from support import add_site_and_sensors, wait_until

T0_US = 1_772_366_400 * 1_000_000  # 2026-03-01T12:00:00Z


def _readings(sensor_id: int, n: int, start_us: int) -> Readings:
    t = start_us + np.arange(n, dtype=np.int64) * 1_000_000
    return Readings(t, np.full(n, sensor_id, np.int32), np.full(n, 7.0), np.zeros(n, np.int16))


def _stored(db, sensor_id: int) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) FROM readings WHERE sensor_id = %s", (sensor_id,)).fetchone()[0]


def _hold(db, sensor_id: int, at_us: int) -> psycopg.Connection:
    """A session that has inserted the reading of ``sensor_id`` at ``at_us`` and not committed:
    a COPY of the same reading waits for it. The day's chunk of the hypertable is made first,
    by a reading of another sensor (a chunk being made would hold every writer back)."""
    other = add_site_and_sensors(db.url, f"hold{sensor_id}", {"ph": ("ph", "pH")})["ph"]
    with db.connect() as conn:
        conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (to_timestamp(%s / 1e6), %s, 7.0)",
                     (at_us, other))
    conn = psycopg.connect(db.url)
    conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (to_timestamp(%s / 1e6), %s, 7.0)",
                 (at_us, sensor_id))
    return conn


def _at_commit(db, name: str, body: str, definer: bool = False) -> None:
    """A check the database runs at COMMIT on each dead letter written: ``body``, PL/pgSQL
    statements that see the letter as ``NEW``."""
    with db.connect() as conn:
        conn.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql"
                     f"{' SECURITY DEFINER' if definer else ''} AS $$ BEGIN {body} RETURN NEW; END $$")
        conn.execute(f"CREATE CONSTRAINT TRIGGER {name} AFTER INSERT ON dead_letters DEFERRABLE INITIALLY DEFERRED "
                     f"FOR EACH ROW EXECUTE FUNCTION {name}()")


def _waiting_on_a_lock(db) -> bool:
    with psycopg.connect(db.urls["admin"]) as conn:        # another role's query is seen by the admin
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                            "AND query LIKE 'COPY readings%%'").fetchone()[0] > 0


def test_two_chunks_at_once_and_the_acknowledgements_in_order(db, tmp_path, monkeypatch):
    """Chunk 1 (100 readings) waits in the database for another session; chunk 2 (200) is
    written beside it and committed meanwhile, yet its callback waits: nothing acknowledged,
    ``stored_seq`` still 0. Once the other session rolls back, chunk 1 commits and the
    callbacks run 1 then 2; a third chunk follows; 600 readings, ``stored_seq`` 3, three
    chunks counted, each connection carried one. While chunk 1 waits the writer's health
    says so, naming its 100 readings."""
    import ingest.writer
    monkeypatch.setattr(ingest.writer, "SLOW_AFTER_S", 0.2)
    sid = add_site_and_sensors(db.url, "p1", {"ph": ("ph", "pH")})["ph"]
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[int] = []
    w._connection()
    other = _hold(db, sid, T0_US + 50 * 1_000_000)
    try:
        assert w.write_next(Chunk(_readings(sid, 100, T0_US), [], [], [lambda: acked.append(1)], seq=1))
        assert wait_until(lambda: _waiting_on_a_lock(db), 10)
        assert w.write_next(Chunk(_readings(sid, 200, T0_US + 10**9), [], [], [lambda: acked.append(2)], seq=2))
        assert wait_until(lambda: _stored(db, sid) == 200, 10), _stored(db, sid)
        assert acked == [] and w.stats.stored_seq == 0
        assert wait_until(lambda: (w.problem() or "").startswith("database slow ("), 5), w.problem()
        assert "a write of 100 readings has waited" in w.problem(), w.problem()
    finally:
        other.rollback()
        other.close()
    assert wait_until(lambda: acked == [1, 2], 10), acked
    assert w.stats.stored_seq == 2 and _stored(db, sid) == 300
    assert w.write_next(Chunk(_readings(sid, 300, T0_US + 2 * 10**9), [], [], [lambda: acked.append(3)], seq=3))
    w.handle(Chunk(Readings.empty(), [], [], []))         # waits for the chunk in flight
    assert _stored(db, sid) == 600 and acked == [1, 2, 3] and w.stats.stored_seq == 3
    assert w._conn2 is not None and w.stats.chunks == 3 and w.stats.readings_inserted == 600
    assert w.behind_s() is None and w.problem() is None
    w.stop()


def test_a_failed_chunk_goes_first_and_the_one_after_it_is_not_written_twice(db, tmp_path):
    """Chunk A (10 readings and a dead letter that a deferred check refuses at COMMIT) waits in
    the database while chunk B (20 readings) commits beside it. A then fails: it goes the
    ordinary way, here to the spool (the database is taken as down), carrying B's callback
    after its own. B's 20 readings are stored once and are not in the spool; A's 10 are only
    in the spool; the callbacks ran A then B, and only once A was spooled."""
    ids = add_site_and_sensors(db.url, "p2", {"ph": ("ph", "pH"), "temp": ("temperature", "degF")})
    _at_commit(db, "refuse_at_commit", "IF NEW.reason = 'refuse me' THEN RAISE EXCEPTION 'refused at commit'; END IF;")
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[str] = []
    w._connection()
    letter = DeadLetter("mqtt", "sewerwatch/p2/ph", b"x", "refuse me", received_at_us=T0_US)
    other = _hold(db, ids["ph"], T0_US + 5 * 1_000_000)
    try:
        assert w.write_next(Chunk(_readings(ids["ph"], 10, T0_US), [letter], [], [lambda: acked.append("A")], seq=1))
        assert wait_until(lambda: _waiting_on_a_lock(db), 10)
        assert w.write_next(Chunk(_readings(ids["temp"], 20, T0_US), [], [], [lambda: acked.append("B")], seq=2))
        assert wait_until(lambda: _stored(db, ids["temp"]) == 20, 10)
        assert acked == []
    finally:
        other.rollback()
        other.close()
    w.handle(Chunk(Readings.empty(), [], [], []))         # settles: A failed, spooled first
    assert _stored(db, ids["temp"]) == 20 and _stored(db, ids["ph"]) == 0
    spooled = [c for c, _ in w.spool.replay(10**6)]
    assert sum(len(c.readings) for c in spooled) == 10
    assert set(np.concatenate([c.readings.sensor_id for c in spooled]).tolist()) == {ids["ph"]}
    assert w.stats.spooled_seq == 2 and w.stats.stored_seq == 0
    assert acked == ["A", "B"]
    w.stop()


def test_two_chunks_with_the_same_readings_store_them_once(db, tmp_path):
    """A redelivery in the next chunk: chunk 1 holds readings 0-999 of a sensor, chunk 2
    readings 500-1,499, written at once. Whichever meets the other's rows first waits for
    it and then keeps only what is new: 1,500 stored, no conflict, no outage, callbacks in
    order."""
    sid = add_site_and_sensors(db.url, "p3", {"ph": ("ph", "pH")})["ph"]
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[int] = []
    w._connection()
    assert w.write_next(Chunk(_readings(sid, 1000, T0_US), [], [], [lambda: acked.append(1)], seq=1))
    assert w.write_next(Chunk(_readings(sid, 1000, T0_US + 500 * 1_000_000), [], [],
                              [lambda: acked.append(2)], seq=2))
    w.handle(Chunk(Readings.empty(), [], [], []))
    assert _stored(db, sid) == 1500 and acked == [1, 2] and w.stats.stored_seq == 2
    assert w.stats.conflicts == 0 and w.stats.outages == 0 and w.spool.empty()
    w.stop()


def test_a_deadlock_between_the_two_is_written_again_alone_not_an_outage(db, tmp_path):
    """A chunk whose transaction the database ends as a deadlock victim (here a deferred
    check that says so once) is written again by the ordinary path: stored once, no outage
    counted, the database still up, nothing spooled, its callback run."""
    sid = add_site_and_sensors(db.url, "p4", {"ph": ("ph", "pH")})["ph"]
    with db.connect() as conn:
        conn.execute("CREATE SEQUENCE once")
    _at_commit(db, "deadlock_once", "IF NEW.reason = 'victim' AND nextval('once') = 1 THEN "
               "RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END IF;", definer=True)
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool", pipeline=True)
    acked: list[str] = []
    w._connection()
    letter = DeadLetter("mqtt", "sewerwatch/p4/ph", b"x", "victim", received_at_us=T0_US)
    assert w.write_next(Chunk(_readings(sid, 10, T0_US), [letter], [], [lambda: acked.append("A")], seq=1))
    w.handle(Chunk(Readings.empty(), [], [], []))
    assert _stored(db, sid) == 10 and acked == ["A"]
    assert w.stats.outages == 0 and w.stats.db_up and w.spool.empty() and w.stats.stored_seq == 1
    w.stop()
