"""``sewerwatch check --from/--to``: re-evaluating history in the real TimescaleDB."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from limits.history import PG_EPOCH_US, ROW_DTYPE, BinaryCopyParser, check_history, read_readings
from sewerwatch.cli import main

pytestmark = pytest.mark.services

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def minute(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def seed(conn):
    """Two sites under different packs; pH and flow with known violations at day two."""
    acme = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('acme', 'Acme Dairy', 'palmyra-wi') "
                        "RETURNING id").fetchone()[0]
    bolt = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('bolt', 'Bolt Plating', 'webster-wi') "
                        "RETURNING id").fetchone()[0]
    ids = {}
    for site, name, param, unit in [(acme, "ph", "ph", "pH"), (acme, "flow", "flow", "gpm"),
                                    (bolt, "ph", "ph", "pH")]:
        ids[(site, name)] = conn.execute(
            "INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
            "VALUES (%s, %s, %s, %s, 'mqtt', 'x', 60) RETURNING id", (site, name, param, unit)).fetchone()[0]
    n = 28 * 60
    rows = []
    ev = 26 * 60  # the events start 26 h in
    for i in range(n):
        ph = 5.5 if ev <= i < ev + 10 else 7.0
        flow = 600.0 if ev <= i < ev + 20 else 100.0
        bolt_ph = 4.5 if ev + 30 <= i < ev + 35 else (5.5 if ev <= i < ev + 10 else 7.0)
        rows += [(minute(i), ids[(acme, "ph")], ph, 0), (minute(i), ids[(acme, "flow")], flow, 0),
                 (minute(i), ids[(bolt, "ph")], bolt_ph, 0)]
    # a missing value and a faulty reading inside the pH dip: skipped, not normal
    rows = [r for r in rows if not (r[1] == ids[(acme, "ph")] and r[0] in (minute(ev + 3), minute(ev + 4)))]
    rows += [(minute(ev + 3), ids[(acme, "ph")], None, 0), (minute(ev + 4), ids[(acme, "ph")], 7.0, 2)]
    with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)
    conn.commit()
    return acme, bolt, ids, ev


def test_history_by_each_sites_pack_and_store(db):
    with db.connect() as conn:
        acme, bolt, ids, ev = seed(conn)
        recs = check_history(minute(25 * 60).isoformat(), minute(28 * 60).isoformat(), conn=conn,
                             progress=False, store=True)
        got = [(r["site"], r["sensor"], r["rule"], r["start"], r["end"], r["peak"], r["limit"]) for r in recs]
        iso = lambda i: minute(i).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
        assert got == [
            ("acme", "flow", "slug", iso(ev), iso(ev + 20), 600.0, pytest.approx(500.0)),
            # palmyra-wi: pH lower than 6.0; NULL and quality 2 inside neither end nor count
            ("acme", "ph", "ph-min", iso(ev), iso(ev + 10), 5.5, 6.0),
            # webster-wi: "less than 5.0", so 5.5 is lawful there and only 4.5 counts
            ("bolt", "ph", "ph-min", iso(ev + 30), iso(ev + 35), 4.5, 5.0),
        ]
        assert recs[1]["readings"] == 8
        assert recs[0]["citation"].endswith("§13.43 SLUG") and recs[2]["citation"].endswith("§240-5")
        assert {r["site_id"] for r in recs} == {acme, bolt}
        stored = conn.execute("SELECT rule, pack, start_time, end_time, peak, limit_value, unit, "
                              "days_of_violation, source, evidence->>'readings' FROM violations "
                              "ORDER BY sensor_id, start_time").fetchall()
        assert [(s[0], s[1], s[8]) for s in stored] == [("ph-min", "palmyra-wi", "batch"),
                                                         ("slug", "palmyra-wi", "batch"),
                                                         ("ph-min", "webster-wi", "batch")]
        assert stored[0][2] == minute(ev) and stored[0][3] == minute(ev + 10) and stored[0][9] == "8"
        # one sensor a read: the same result
        one = check_history(minute(25 * 60).isoformat(), minute(28 * 60).isoformat(), conn=conn,
                            progress=False, sensors_per_read=1)
        assert one == recs
        # re-evaluating again updates, never duplicates
        check_history(minute(25 * 60).isoformat(), minute(28 * 60).isoformat(), conn=conn,
                      progress=False, store=True)
        assert conn.execute("SELECT count(*) FROM violations").fetchone()[0] == 3


def test_history_range_and_pack_override(db):
    with db.connect() as conn:
        _, _, ids, ev = seed(conn)
        # episodes over before --from are not reported; the slug still sees 24 h before --from
        later = check_history(minute(ev + 12).isoformat(), minute(28 * 60).isoformat(), conn=conn,
                              progress=False)
        assert [(r["site"], r["rule"]) for r in later] == [("acme", "slug"), ("bolt", "ph-min")]
        # all sites judged by one pack, one site only
        recs = check_history(minute(0).isoformat(), minute(28 * 60).isoformat(), conn=conn,
                             pack="palmyra-wi", sites=["bolt"], progress=False)
        assert [(r["site"], r["rule"], r["peak"]) for r in recs] == [("bolt", "ph-min", 5.5), ("bolt", "ph-min", 4.5)]


def test_binary_copy_matches_a_plain_select(db):
    with db.connect() as conn:
        _, _, ids, _ = seed(conn)
        sid = sorted(ids.values())
        start = int(minute(100).timestamp() * 1e6)
        end = int(minute(200).timestamp() * 1e6)
        s, t, v, q = read_readings(conn, sid, start, end)
        rows = conn.execute("SELECT sensor_id, time, value, quality FROM readings WHERE time >= %s AND time < %s "
                            "ORDER BY sensor_id, time", (minute(100), minute(200))).fetchall()
        assert len(s) == len(rows) == 300
        assert s.tolist() == [r[0] for r in rows]
        assert t.tolist() == [int(r[1].timestamp()) * 1_000_000 for r in rows]
        assert np.array_equal(v, np.array([r[2] for r in rows], dtype=float))


def test_copy_parser_handles_any_chunking():
    rows = np.zeros(5, dtype=ROW_DTYPE)
    for f, n in [("nfields", 4), ("len_sensor", 4), ("len_time", 8), ("len_value", 8), ("len_quality", 2)]:
        rows[f] = n
    rows["sensor"] = [1, 1, 2, 2, 3]
    rows["time"] = np.arange(5) * 1_000_000
    rows["value"] = [1.5, np.nan, 3.0, -1.0, 7.25]
    rows["quality"] = [0, 0, 2, 0, -1]
    blob = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 4 + b"\x00\x00\x00\x00" + rows.tobytes() + b"\xff\xff"
    for step, flush in [(1, 1), (7, 30), (40, 1), (41, 100), (1000, 8 << 20), (3, 8 << 20)]:
        p = BinaryCopyParser(flush_bytes=flush)
        for i in range(0, len(blob), step):
            p.feed(blob[i:i + step])
        s, t, v, q = p.result()
        assert s.tolist() == [1, 1, 2, 2, 3] and q.tolist() == [0, 0, 2, 0, -1]
        assert t.tolist() == (np.arange(5) * 1_000_000 + PG_EPOCH_US).tolist()
        assert np.array_equal(v, rows["value"].astype(float), equal_nan=True)


def test_cli_database_mode(db, capsys):
    with db.connect() as conn:
        seed(conn)
    code = main(["check", "--from", minute(25 * 60).isoformat(), "--to", minute(28 * 60).isoformat(),
                 "--db-url", db.url, "--json", "--site", "acme"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [(r["site"], r["rule"]) for r in json.loads(out)] == [("acme", "slug"), ("acme", "ph-min")]
    assert "reading palmyra-wi: sensors 1-2 of 2: " in err
    code = main(["check", "--from", "2026-03-02", "--to", "2026-03-01", "--db-url", db.url])
    assert code == 2 and "must be after" in capsys.readouterr().err
