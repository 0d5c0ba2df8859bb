"""``sewerwatch check --from/--to``: re-evaluating history in the real TimescaleDB."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from limits import core
from limits.evaluator import SensorMeta, evaluate, violations
from limits.history import PG_EPOCH_US, check_history, parse_window, read_readings
from limits.packs import load_pack
from limits.streaming import StreamingEvaluator
from foundation.errors import DatabaseError
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


def _array(oid: int, fmt: str, values) -> bytes:
    """A one-dimensional PostgreSQL binary array (array_send) of fixed-size elements."""
    el = np.empty(len(values), dtype=[("len", ">i4"), ("v", fmt)])
    el["len"], el["v"] = np.dtype(fmt).itemsize, values
    dims = np.array([1, 0, oid, len(values), 1], dtype=">i4") if len(values) else np.array([0, 0, oid], dtype=">i4")
    return dims.tobytes() + el.tobytes()


def _row(sensor: int, times, values, quals) -> bytes:
    fields = [np.array([sensor], dtype=">i4").tobytes(), _array(1184, ">i8", times),
              _array(701, ">f8", values), _array(21, ">i2", quals)]
    return b"\x00\x04" + b"".join(len(f).to_bytes(4, "big") + f for f in fields)


def test_window_parser_reads_arrays_in_any_chunking():
    """The binary COPY of one window: a row per sensor with its readings as arrays; the
    stream may arrive in pieces of any size (read_readings joins them first)."""
    blob = (b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 4 + b"\x00\x00\x00\x00"
            + _row(1, [0, 1_000_000], [1.5, np.nan], [0, 0])
            + _row(2, [2_000_000, 3_000_000], [3.0, -1.0], [2, 0])
            + _row(3, [], [], []) + _row(4, [4_000_000], [7.25], [-1]) + b"\xff\xff")
    for step in (1, 7, 40, len(blob)):
        buf = bytearray()
        for i in range(0, len(blob), step):
            buf += blob[i:i + step]
        s, t, v, q = parse_window(buf)
        assert s.tolist() == [1, 1, 2, 2, 4] and q.tolist() == [0, 0, 2, 0, -1]
        assert t.tolist() == (np.arange(5) * 1_000_000 - [0, 0, 0, 0, 0] + PG_EPOCH_US).tolist()
        assert np.array_equal(v, [1.5, np.nan, 3.0, -1.0, 7.25], equal_nan=True)
    # arrays out of time order (PostgreSQL only "usually" keeps a subquery's order): sorted
    s, t, _, _ = parse_window(blob[:19] + _row(1, [5, 3, 4], [1.0, 2.0, 3.0], [0, 0, 0]) + b"\xff\xff")
    assert t.tolist() == [3 + PG_EPOCH_US, 4 + PG_EPOCH_US, 5 + PG_EPOCH_US]
    with pytest.raises(DatabaseError, match="trailer"):
        parse_window(blob[:-2])
    with pytest.raises(DatabaseError, match="signature"):
        parse_window(b"COPY" + blob[4:])


# --- windows carry the streaming evaluator's state: equal to one batch evaluation ----------


def seed_crossing(conn):
    """Three days at one reading a minute, with episodes that cross the windows' boundaries:
    a pH dip of 5 h, a slug of 25 min, a hot discharge across --from, and a hole in the flow
    readings one slug window before --from (older readings exist: the slug is judged)."""
    site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('acme', 'Acme', 'palmyra-wi') "
                        "RETURNING id").fetchone()[0]
    ids = {}
    for name, param, unit, interval in [("ph", "ph", "pH", 60), ("flow", "flow", "gpm", 60),
                                        ("temperature", "temperature", "degF", None)]:
        ids[name] = conn.execute(
            "INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
            "VALUES (%s, %s, %s, %s, 'mqtt', 'x', %s) RETURNING id", (site, name, param, unit, interval)).fetchone()[0]
    n = 3 * 24 * 60
    i = np.arange(n)
    rng = np.random.default_rng(5)
    ph = 7.0 + 0.1 * rng.standard_normal(n)
    ph[(i >= 50 * 60) & (i < 55 * 60)] = 5.2                     # day 3, 02:00-07:00
    ph[(i >= 61 * 60) & (i < 61 * 60 + 4)] = 9.5                 # a short high
    flow = 100.0 + 5 * rng.standard_normal(n)
    flow[(i >= 60 * 60) & (i < 60 * 60 + 25)] = 650.0            # a slug, day 3 12:00
    flow[(i >= 45 * 60) & (i < 45 * 60 + 20)] = 620.0            # one before --from + 12 h... day 2 21:00
    temp = 80.0 + rng.standard_normal(n)
    temp[(i >= 47 * 60) & (i < 49 * 60)] = 160.0                 # across --from (day 2 24:00)
    hole = (i >= 23 * 60) & (i < 26 * 60)                        # no flow readings here
    rows = []
    for k in range(n):
        t = minute(k)
        rows.append((t, ids["ph"], float(ph[k]), 0))
        rows.append((t, ids["temperature"], float(temp[k]), 0))
        if not hole[k]:
            rows.append((t, ids["flow"], float(flow[k]), 0))
    rows.append((minute(51 * 60 + 7), ids["ph"], None, 0))       # a NULL inside the dip (replaced below)
    rows = [r for r in rows if not (r[1] == ids["ph"] and r[0] == minute(51 * 60 + 7) and r[2] is not None)]
    with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)
    conn.commit()
    return ids


def whole_range(conn, start: datetime, end: datetime):
    """What ``check --from --to`` gave before windows: every reading of the range and the
    slug lead read at once and judged by one batch evaluation."""
    pack = load_pack("palmyra-wi")
    meta = {sid: SensorMeta(p, iv, site=k, name=nm) for sid, nm, p, iv, k in conn.execute(
        "SELECT se.id, se.name, se.parameter, se.interval_s, si.key FROM sensors se JOIN sites si ON si.id = se.site_id")}
    first = {sid: int(t.timestamp() * 1e6) for sid, t in conn.execute(
        "SELECT sensor_id, min(time) FROM readings GROUP BY sensor_id")}
    lead = timedelta(hours=24) + 3 * timedelta(seconds=60)
    rows = conn.execute("SELECT sensor_id, time, coalesce(value, 'NaN'), quality FROM readings "
                        "WHERE time >= %s AND time < %s ORDER BY sensor_id, time", (start - lead, end)).fetchall()
    s = np.array([r[0] for r in rows])
    t = np.array([int(r[1].timestamp() * 1e6) for r in rows])
    v = np.array([r[2] for r in rows], dtype=float)
    q = np.array([r[3] for r in rows])
    eps = evaluate(pack, s, t, v, q, meta=meta, history_start=first)
    eps = eps[eps["last"] >= int(start.timestamp() * 1e6)]
    site_id = conn.execute("SELECT id FROM sites").fetchone()[0]
    recs = violations(eps, pack, pack, meta)
    for r, code in zip(recs, eps["sensor"].tolist()):
        r["sensor_id"], r["site_id"] = code, site_id
    return sorted(recs, key=lambda r: (r["site"], r["sensor"], r["start"], r["rule"]))


def test_windows_equal_one_batch_evaluation(db):
    with db.connect() as conn:
        seed_crossing(conn)
        start, end = minute(48 * 60), minute(72 * 60)
        want = whole_range(conn, start, end)
        assert {r["rule"] for r in want} == {"ph-min", "ph-max", "slug", "temperature-max"}
        slug = next(r for r in want if r["rule"] == "slug")
        assert slug["start"] == "2026-03-03T12:00:00Z"     # judged: the hole is not the history's start
        for per_read, window_readings, readers in [(64, 1_000_000, 2), (1, 200, 1), (2, 700, 3)]:
            stats = {}
            got = check_history(start.isoformat(), end.isoformat(), conn, progress=False,
                                sensors_per_read=per_read, window_readings=window_readings,
                                readers=readers, stats=stats)
            assert got == want, (per_read, window_readings)
            # two slug windows and the gap limit before --from (the readings of the
            # window before --from are themselves judged above the slug line or not)
            assert stats["readings"] == conn.execute(
                "SELECT count(*) FROM readings WHERE time >= %s AND time < %s",
                (start - timedelta(hours=48, minutes=3), end)).fetchone()[0]
        # windows of 200 readings: 10 min (the shortest window) at 3 sensors a minute
        assert stats["windows"] > 100
        # --store writes the same episodes
        check_history(start.isoformat(), end.isoformat(), conn, progress=False, store=True, window_readings=500)
        stored = conn.execute("SELECT rule, start_time, end_time, peak FROM violations ORDER BY sensor_id, start_time").fetchall()
        assert len(stored) == len(want)


def test_history_start_reaches_the_streaming_evaluator():
    """history.py tells the streaming evaluator each sensor's first reading ever
    (``history_start``, as the batch evaluator is told)."""
    day = 24 * 3600 * core.US
    ev = StreamingEvaluator(load_pack("palmyra-wi"), {1: SensorMeta("flow", 60)}, history_start={1: 0})
    t = day + np.arange(0, 6 * 3600, 60) * core.US        # readings from hour 24 only
    slug = (t >= day + 4 * core.HOUR_US) & (t < day + 4 * core.HOUR_US + 20 * core.MINUTE_US)
    eps = ev.push(np.ones(len(t)), t, np.where(slug, 900.0, 100.0))
    assert len(eps) == 1 and eps["start"][0] == day + 4 * core.HOUR_US
    # without it, the first reading seen would be the history's start: no slug before hour 48
    fresh = StreamingEvaluator(load_pack("palmyra-wi"), {1: SensorMeta("flow", 60)})
    assert len(fresh.push(np.ones(len(t)), t, np.where(slug, 900.0, 100.0))) == 0


def test_cli_database_mode(db, capsys):
    with db.connect() as conn:
        seed(conn)
    code = main(["check", "--from", minute(25 * 60).isoformat(), "--to", minute(28 * 60).isoformat(),
                 "--db-url", db.url, "--json", "--site", "acme"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [(r["site"], r["rule"]) for r in json.loads(out)] == [("acme", "slug"), ("acme", "ph-min")]
    assert "reading palmyra-wi: sensors 1-2 of 2: " in err and "judged 3,360 readings" in err   # from --from - 48 h
    code = main(["check", "--from", "2026-03-02", "--to", "2026-03-01", "--db-url", db.url])
    assert code == 2 and "must be after" in capsys.readouterr().err


def test_history_says_where_the_slug_had_no_baseline_yet(db, capsys):
    """The flow meter's readings begin at T0 and it has no permitted average flow,
    so its first 24 hours are not judged for slug; check --from/--to says so (stderr with
    --json, under the table without), and not for a range that begins after that day."""
    with db.connect() as conn:
        seed(conn)
    code = main(["check", "--from", minute(20 * 60).isoformat(), "--to", minute(28 * 60).isoformat(),
                 "--db-url", db.url, "--json", "--site", "acme", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = [ln for ln in err.splitlines() if "no baseline" in ln]
    # the first full 24-h window ends at T0 + 24 h: readings from 20:00 until 23:59 were not judged
    assert lines == [f"acme/flow: slug not judged: no baseline yet (slug, readings from "
                     f"{minute(20 * 60).strftime('%Y-%m-%dT%H:%M:%SZ')} until "
                     f"{minute(24 * 60 - 1).strftime('%Y-%m-%dT%H:%M:%SZ')})"], err
    code = main(["check", "--from", minute(20 * 60).isoformat(), "--to", minute(28 * 60).isoformat(),
                 "--db-url", db.url, "--site", "acme", "--quiet"])
    assert code == 0 and lines[0] in capsys.readouterr().out
    code = main(["check", "--from", minute(25 * 60).isoformat(), "--to", minute(28 * 60).isoformat(),
                 "--db-url", db.url, "--json", "--site", "acme", "--quiet"])
    assert code == 0 and "no baseline" not in capsys.readouterr().err
