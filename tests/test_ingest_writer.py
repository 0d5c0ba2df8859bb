"""The writer against the real TimescaleDB: binary COPY, idempotence, dead letters, health, spool."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from ingest.batch import DEVICE_FAULT, GOOD, OUT_OF_RANGE, Readings
from ingest.normalise import flag_out_of_range, normalise
from ingest.sink import Chunk, DeadLetter, Sink
from ingest.spool import Spool, SpoolUnwritable
from ingest.writer import Writer
from support import add_site_and_sensors, tiny_filesystem

T0_US = 1_772_366_400 * 1_000_000  # 2026-03-01T12:00:00Z


def _readings(sensor_ids, n, start_us=T0_US, step_us=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.asarray(sensor_ids, dtype=np.int32)
    t = start_us + np.arange(n, dtype=np.int64) * step_us
    time_us = np.repeat(t, len(ids))
    sensor = np.tile(ids, n)
    return Readings(time_us, sensor, rng.normal(7, 0.5, len(time_us)), np.zeros(len(time_us), np.int16))


def _write(db, chunk, tmp_path):
    w = Writer(db.urls["ingest"], Sink(), tmp_path / "spool")
    w.handle(chunk)
    return w


def test_binary_copy_stores_every_value_exactly(db, tmp_path):
    ids = add_site_and_sensors(db.url, "w1", {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    r = _readings(list(ids.values()), 500)
    r.value[3] = np.nan
    r.quality[3] = DEVICE_FAULT
    r.quality[4] = OUT_OF_RANGE
    w = _write(db, Chunk(r, [], [], []), tmp_path)
    assert w.stats.readings_inserted == 1000
    with db.connect() as conn:
        rows = conn.execute("SELECT (extract(epoch FROM time) * 1000000)::bigint, sensor_id, value, quality "
                            "FROM readings ORDER BY time, sensor_id").fetchall()
    got = np.array(rows, dtype=object)
    order = np.lexsort((r.sensor_id, r.time_us))
    assert np.array_equal(got[:, 0].astype(np.int64), r.time_us[order])
    assert np.array_equal(got[:, 1].astype(np.int32), r.sensor_id[order])
    np.testing.assert_array_equal(got[:, 2].astype(float), r.value[order])  # NaN equals NaN here
    assert np.array_equal(got[:, 3].astype(np.int16), r.quality[order])


def test_replayed_readings_are_dropped_not_doubled(db, tmp_path):
    ids = add_site_and_sensors(db.url, "w2", {"ph": ("ph", "pH")})
    r = _readings([ids["ph"]], 300)
    w = _write(db, Chunk(r, [], [], []), tmp_path)
    w.handle(Chunk(r, [], [], []))                       # the same again
    w.handle(Chunk(_readings([ids["ph"]], 600), [], [], []))  # overlapping: 300 old + 300 new
    assert w.stats.readings_offered == 1200 and w.stats.readings_inserted == 600
    assert w.stats.staged_chunks == 2  # the first chunk took the direct COPY, the other two held duplicates
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 600


def test_dead_letters_and_device_health_are_stored(db, tmp_path):
    letters = [DeadLetter("mqtt", "sewerwatch/x/ph", b"\xff\xfe garbage", "not JSON", {"qos": 1}),
               DeadLetter("modbus", "dev-1", None, "exception reply 6 (device busy)")]
    health = [
        {"kind": "snapshot", "device": "dev-1", "site": "x", "state": "up", "transport_errors": 2},  # older
        {"kind": "snapshot", "device": "dev-1", "site": "x", "state": "down", "last_good_us": T0_US,
         "last_error_us": T0_US + 5_000_000, "last_error": "connection refused", "polls": 10, "missed_polls": 1,
         "transport_errors": 3, "exception_replies": 1, "reconnects": 0},
        {"kind": "outage", "device": "dev-1", "started_us": T0_US + 5_000_000, "ended_us": None, "reason": "refused"},
        {"kind": "outage", "device": "dev-1", "started_us": T0_US + 5_000_000, "ended_us": T0_US + 65_000_000,
         "reason": None},
    ]
    _write(db, Chunk(Readings.empty(), letters, health, []), tmp_path)
    with db.connect() as conn:
        rows = conn.execute("SELECT source, topic, payload, reason FROM dead_letters ORDER BY id").fetchall()
        assert rows == [("mqtt", "sewerwatch/x/ph", b"\xff\xfe garbage", "not JSON"),
                        ("modbus", "dev-1", None, "exception reply 6 (device busy)")]
        h = conn.execute("SELECT state, transport_errors, exception_replies, last_error FROM device_health").fetchall()
        assert h == [("down", 3, 1, "connection refused")]
        gap = conn.execute("SELECT extract(epoch FROM ended_at - started_at), reason FROM device_outages").fetchall()
        assert gap == [(60, "refused")]


def test_writer_spools_when_the_database_is_unreachable_and_replays_in_order(db, tmp_path):
    ids = add_site_and_sensors(db.url, "w3", {"ph": ("ph", "pH")})
    bad_url = db.urls["ingest"].replace(db.name, "no_such_database")
    sink = Sink()
    w = Writer(bad_url, sink, tmp_path / "spool")
    acked = []
    for k in range(3):
        w.handle(Chunk(_readings([ids["ph"]], 100, start_us=T0_US + k * 100_000_000), [], [], [lambda k=k: acked.append(k)]))
    assert acked == [0, 1, 2]  # durable in the spool, so acknowledged
    assert w.stats.readings_spooled == 300 and not w.stats.db_up
    assert not w.spool.empty()
    w.db_url = db.urls["ingest"]  # the database is back
    w._next_try = 0
    w.handle(Chunk(Readings.empty(), [], [], []))
    assert w.spool.empty()
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 300


def test_spool_survives_a_torn_tail(tmp_path):
    sp = Spool(tmp_path)
    a = _readings([1, 2], 10)
    sp.append(Chunk(a, [DeadLetter("mqtt", "t", b"\x00raw", "why")], [{"kind": "snapshot", "device": "d"}], []))
    with open(sp.path, "ab") as f:
        f.write(b"SWSPR\x10\x00\x00\x00")  # a crash in the middle of the next append
    assert sp.recover() > 0
    sp.append(Chunk(_readings([3], 5, seed=1), [], [], []))
    chunks = [c for c, _ in sp.replay()]
    got = Readings.concat([c.readings for c in chunks])
    assert len(got) == 25
    assert np.array_equal(got.time_us[:20], a.time_us) and np.array_equal(got.value[:20], a.value)
    assert [d.payload for c in chunks for d in c.dead_letters] == [b"\x00raw"]
    assert [h["device"] for c in chunks for h in c.health] == ["d"]


def test_a_spool_over_its_cap_refuses_the_chunk_and_keeps_its_file_whole(tmp_path):
    sp = Spool(tmp_path, max_bytes=6000)
    sp.append(Chunk(_readings([1], 100), [], [], []))         # 2,213 bytes
    size = sp.size()
    with pytest.raises(SpoolUnwritable) as err:
        sp.append(Chunk(_readings([1], 200, seed=1), [], [], []))
    assert err.value.reason == "cap" and "cap of 6,000 bytes" in str(err.value)
    assert sp.size() == size and sp.error == str(err.value) and not sp.status()["writable"]
    assert len(Readings.concat([c.readings for c, _ in sp.replay()])) == 100
    sp.append(Chunk(_readings([1], 50, seed=2), [], [], []))   # room for a small one: writable again
    assert sp.error is None and sp.status()["free_bytes"] > 0


def test_the_spool_bookkeeping_cannot_wedge_it(tmp_path):
    """spool.offset that cannot be written (here: a folder in its place): the offset is kept
    in memory, the spool goes on, and a restart replays from the last offset written (the
    database drops what it already has)."""
    sp = Spool(tmp_path)
    sp.offset_path.mkdir()
    sp.append(Chunk(_readings([1], 10), [], [], []))
    chunks = list(sp.replay(max_readings=5))
    sp.commit(chunks[0][1])
    assert len(sp) == sp.size() - chunks[0][1]                # remembered in memory
    sp.commit(chunks[-1][1])
    sp.clear()                                                 # cannot reset the offset: keeps the records
    assert sp.empty() and sp.size() > 0
    sp.append(Chunk(_readings([2], 3), [], [], []))            # appends go on after them
    assert len(Readings.concat([c.readings for c, _ in sp.replay()])) == 3
    again = Spool(tmp_path)                                    # a restart: replays everything (duplicates)
    assert len(Readings.concat([c.readings for c, _ in again.replay()])) == 13


def test_a_full_disk_leaves_the_spool_whole_and_space_coming_back_resumes_it(tmp_path):
    with tiny_filesystem(tmp_path / "tiny", kib=64) as fs:
        sp = Spool(fs)
        filler = fs / "filler"
        filler.write_bytes(b"x" * (60 << 10))
        sp.append(Chunk(_readings([1], 10), [], [], []))       # fits
        size = sp.size()
        with pytest.raises(SpoolUnwritable) as err:
            sp.append(Chunk(_readings([1], 400, seed=1), [], [], []))
        assert err.value.reason == "full" and "No space left on device" in str(err.value)
        assert sp.size() == size and sp.status()["free_bytes"] < 8192
        filler.unlink()                                        # space returns
        sp.append(Chunk(_readings([1], 400, seed=1), [], [], []))
        assert sp.error is None
        assert len(Readings.concat([c.readings for c, _ in sp.replay()])) == 410


def test_writer_holds_what_neither_database_nor_spool_takes_and_resumes_by_itself(db, tmp_path):
    ids = add_site_and_sensors(db.url, "w4", {"ph": ("ph", "pH")})
    bad_url = db.urls["ingest"].replace(db.name, "no_such_database")
    w = Writer(bad_url, Sink(), tmp_path / "spool", spool_max_bytes=4000)
    acked = []
    assert w.handle(Chunk(_readings([ids["ph"]], 100), [], [], [lambda: acked.append(1)]))     # spooled
    assert not w.handle(Chunk(_readings([ids["ph"]], 100, start_us=T0_US + 10**9), [], [], [lambda: acked.append(2)]))
    assert acked == [1] and w.stats.held_readings == 100
    assert "cannot store 100 readings" in w.problem() and "cap" in w.problem()
    assert w.status()["spool"]["writable"] is False
    w.db_url = db.urls["ingest"]                               # the database returns
    w._next_try = 0
    assert w.handle(w._held)
    assert acked == [1, 2] and w.problem() is None and w.spool.empty()
    with db.connect() as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT time) FROM readings").fetchone() == (200, 200)


def test_normalise_converts_units_and_flags_the_physically_impossible():
    canon, q = normalise("temperature", "degC", [40.0, 100.0, -60.0, np.nan])
    np.testing.assert_allclose(canon[:3], [104.0, 212.0, -76.0])
    assert list(q) == [GOOD, GOOD, OUT_OF_RANGE, DEVICE_FAULT]
    assert list(flag_out_of_range("ph", np.array([0.0, 14.0, -0.1, 14.2, 7.0]))) == [0, 0, 1, 1, 0]
    assert list(flag_out_of_range("flow", np.array([-1.0, 0.0, 1e6]))) == [1, 0, 0]
    assert list(flag_out_of_range("temperature", np.array([-41.0, -40.0, 250.0, 251.0]))) == [1, 0, 0, 1]
    # a sensor's full scale bounds it from above; NaN: none configured
    assert list(flag_out_of_range("flow", np.array([900.0, 1100.0, 1100.0]), np.array([1000.0, 1000.0, np.nan]))) \
        == [0, 1, 0]


def test_ingest_role_cannot_bypass_to_other_tables(db):
    with db.connect("ingest") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM readings")


def test_sink_is_bounded_and_hands_over_in_order():
    sink = Sink(max_readings=1000)
    a, b, c = (_readings([1], 600, seed=k) for k in range(3))
    assert sink.put(a, timeout=0.1)
    assert not sink.put(b, timeout=0.1)       # 600 + 600 > 1000: the collector waits
    assert sink.pending() == 600
    chunk = sink.take(max_readings=10_000, max_delay=0.01)
    assert np.array_equal(chunk.readings.value, a.value)
    assert sink.put(b, timeout=0.1) and sink.put(c, timeout=0) is False
    sink.close()
    rest = sink.take(max_readings=10_000, max_delay=0.01)
    assert np.array_equal(rest.readings.value, b.value)
    assert sink.take() is None                 # closed and drained
