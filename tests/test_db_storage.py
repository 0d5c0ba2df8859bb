"""Storage: the narrow readings table, bytes per reading in ``db status``, the
one-minute aggregates, evidence kept around violations, retention and the ``[retention]``
config, all against the real TimescaleDB (Apache build: no compression, which ``db status``
says)."""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from psycopg import sql

from foundation import config as sw_config
from foundation.errors import ConfigError
from sewerwatch.cli import main
from sewerwatch.db import bootstrap, maintain, migrate

pytestmark = pytest.mark.services

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _sensors(conn, names=("ph", "flow")) -> dict:
    site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('acme', 'Acme', 'palmyra-wi') "
                        "RETURNING id").fetchone()[0]
    units = {"ph": ("ph", "pH"), "flow": ("flow", "gpm")}
    return {n: conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
                            "VALUES (%s, %s, %s, %s, 'mqtt', 'x', 10) RETURNING id",
                            (site, n, *units[n])).fetchone()[0] for n in names}


def _copy(conn, rows) -> None:
    with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)
    conn.commit()


# --- 0070: the narrow table, carried over with what depends on it ----------------------------


def test_0070_rebuilds_readings_narrow_keeping_rows_views_indexes_and_grants(services, tmp_path):
    """A database at 0050 with readings, a view of someone else's and an index of theirs is
    migrated: same rows, (time, value, sensor_id, quality), only the unique index plus
    theirs, the views still answer, the ingest role still inserts idempotently."""
    name = "sw_storage_0070"
    admin = services.db_urls["admin"].rsplit("/", 1)[0] + "/" + name
    url = services.db_urls["owner"].rsplit("/", 1)[0] + "/" + name
    before = tmp_path / "before"
    before.mkdir()
    for m in migrate.discover():
        if m.version < 70:
            shutil.copy(m.path, before / m.path.name)
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)
    try:
        bootstrap.ensure_timescaledb(admin)
        migrate.migrate(url, directory=before)
        with psycopg.connect(url) as conn:
            ids = _sensors(conn)
            rows = [(T0 + timedelta(seconds=10 * k), ids[n], (None if k == 7 else 7.0 + k / 1000), k % 3)
                    for k in range(3000) for n in ("ph", "flow")]
            _copy(conn, rows)
            conn.execute("CREATE VIEW their_view AS SELECT sensor_id, count(*) AS n FROM readings GROUP BY 1")
            conn.execute("CREATE INDEX their_index ON readings (value) WHERE quality <> 0")
            conn.commit()
            want = conn.execute("SELECT time, sensor_id, value, quality FROM readings ORDER BY 2, 1").fetchall()
        assert 70 in migrate.migrate(url)
        with psycopg.connect(url) as conn:
            cols = [c for (c,) in conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'readings'::regclass AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attnum")]
            assert cols == ["time", "value", "sensor_id", "quality"]
            assert conn.execute("SELECT time, sensor_id, value, quality FROM readings ORDER BY 2, 1").fetchall() == want
            indexes = {i for (i,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'readings'")}
            assert indexes == {"readings_sensor_id_time_key", "their_index"}
            assert conn.execute("SELECT sum(n) FROM their_view").fetchone()[0] == 6000
            assert conn.execute("SELECT count(*) FROM dash_readings").fetchone()[0] == 6000
            assert conn.execute("SELECT sensors FROM dash_site_status").fetchone()[0] == 2
            assert conn.execute("SELECT hypertable_name FROM timescaledb_information.hypertables "
                                "WHERE hypertable_name = 'readings'").fetchone() == ("readings",)
            assert conn.execute("SELECT to_regclass('readings_wide')").fetchone()[0] is None
        ingest = services.db_urls["ingest"].rsplit("/", 1)[0] + "/" + name
        with psycopg.connect(ingest) as conn:
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 1) ON CONFLICT DO NOTHING",
                         (T0, ids["ph"]))
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 1)",
                         (T0 - timedelta(days=1), ids["ph"]))
            conn.commit()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM readings")
        grafana = services.db_urls["grafana"].rsplit("/", 1)[0] + "/" + name
        with psycopg.connect(grafana) as conn:
            assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 6001
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_db_status_reports_bytes_per_reading_and_compression(db, capsys):
    with db.connect() as conn:
        ids = _sensors(conn)
        _copy(conn, [(T0 + timedelta(seconds=k), ids["ph"], 7.0, 0) for k in range(20_000)])
        lic = conn.execute("SELECT current_setting('timescaledb.license', true)").fetchone()[0]
        report = maintain.storage_report(conn)
    assert report["readings"] == 20_000 and report["exact"]
    assert 40 < report["bytes_per_reading"] < 200
    assert main(["db", "status", "--db-url", db.url]) == 0
    out = capsys.readouterr().out
    assert f"readings: 20,000 readings, " in out and f"{report['bytes_per_reading']:.1f} bytes per reading" in out
    if lic == "apache":
        assert "compression: not available: this TimescaleDB build is the Apache-licensed one" in out
    assert "kept 3 years (40 CFR 403.12(o)(2))" in out


# --- the maintenance job ------------------------------------------------------------------------


def _village(conn, days: int = 3):
    """pH and flow every 10 s for ``days`` days, with a pH violation on day 1 stored."""
    ids = _sensors(conn)
    n = days * 8640
    t = [T0 + timedelta(seconds=10 * k) for k in range(n)]
    ph = 7.0 + 0.01 * (np.arange(n) % 7)
    flow = 100.0 + (np.arange(n) % 13)
    rows = [(t[k], ids["ph"], float(ph[k]), 0) for k in range(n)]
    rows += [(t[k], ids["flow"], float(flow[k]), 0 if k % 100 else 2) for k in range(n)]
    _copy(conn, rows)
    site = conn.execute("SELECT id FROM sites").fetchone()[0]
    conn.execute("INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, end_time) "
                 "VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', 'x', %s, %s)",
                 (site, ids["ph"], T0 + timedelta(hours=30), T0 + timedelta(hours=30, minutes=20)))
    conn.commit()
    return ids, t, ph, flow


def test_maintain_builds_minute_aggregates_then_keeps_evidence_and_drops_old_raw(db):
    with db.connect() as conn:
        ids, t, ph, flow = _village(conn)
        policy = sw_config.Retention(raw_days=1, maintain_every_s=60)
        now = T0 + timedelta(days=3, minutes=5)
        out = maintain.maintain(conn, policy, now=now)
        # every minute of both sensors, complete to the last whole minute before now - 60 s
        assert out["aggregates_to"] == T0 + timedelta(days=3, minutes=4)
        rows = conn.execute("SELECT minute, n, min, max, mean, twa FROM readings_1m WHERE sensor_id = %s "
                            "ORDER BY minute", (ids["flow"],)).fetchall()
        assert len(rows) == 3 * 1440
        k = 6 * 37                               # minute 37: readings 222..227, quality 2 at none
        m = flow[k:k + 6]
        assert rows[37][0] == T0 + timedelta(minutes=37)
        assert rows[37][1:5] == (6, m.min(), m.max(), pytest.approx(m.mean()))
        assert rows[37][5] == pytest.approx(m.mean())        # equal holds of 10 s
        k100 = conn.execute("SELECT n FROM readings_1m WHERE sensor_id = %s AND minute = %s",
                            (ids["flow"], T0 + timedelta(minutes=16))).fetchone()[0]
        assert k100 == 5                         # reading 100 has quality 2: not aggregated
        # raw readings older than one day are gone by whole chunks (1-day chunks: days 0 and 1)
        assert out["raw_before"] == now - timedelta(days=1)
        left = conn.execute("SELECT min(time) FROM readings").fetchone()[0]
        assert left == T0 + timedelta(days=2)
        # ... but the pH episode of day 1 kept its readings, an hour either side
        ev = conn.execute("SELECT min(time), max(time), count(*), count(DISTINCT sensor_id) "
                          "FROM readings_evidence").fetchone()
        assert ev == (T0 + timedelta(hours=29), T0 + timedelta(hours=31, minutes=20), 6 * 140 + 1, 1)
        # the aggregates of the dropped days are still there
        assert conn.execute("SELECT count(*) FROM readings_1m WHERE minute < %s",
                            (T0 + timedelta(days=2),)).fetchone()[0] == 2 * 2 * 1440

        # a late reading within the lookback is folded in by the next run
        conn.execute("DELETE FROM readings WHERE sensor_id = %s AND time = %s",
                     (ids["ph"], T0 + timedelta(days=2, hours=12, seconds=10)))
        conn.commit()
        n_before = conn.execute("SELECT n FROM readings_1m WHERE sensor_id = %s AND minute = %s",
                                (ids["ph"], T0 + timedelta(days=2, hours=12))).fetchone()[0]
        maintain.maintain(conn, policy, now=now + timedelta(minutes=10))
        n_after = conn.execute("SELECT n FROM readings_1m WHERE sensor_id = %s AND minute = %s",
                               (ids["ph"], T0 + timedelta(days=2, hours=12))).fetchone()[0]
        assert (n_before, n_after) == (6, 5)

        # past the records period, aggregates go too, but not the episode's: its raw readings and
        # their minutes stay as long as the violation does
        later = T0 + timedelta(days=3 * 366 + 3)
        out = maintain.maintain(conn, policy, now=later)
        assert conn.execute("SELECT count(*) FROM readings_evidence").fetchone()[0] == 6 * 140 + 1
        old = conn.execute("SELECT count(*), count(DISTINCT sensor_id), min(minute), max(minute) FROM readings_1m "
                           "WHERE minute < %s", (later - timedelta(days=3 * 366),)).fetchone()
        assert old == (141, 1, T0 + timedelta(hours=29), T0 + timedelta(hours=31, minutes=20))


def test_db_maintain_command_and_run_hook(db, capsys):
    with db.connect() as conn:
        _village(conn, days=1)
    assert main(["db", "maintain", "--db-url", db.url]) == 0
    err = capsys.readouterr().err
    assert "aggregates: 2,880 sensor-minutes written" in err
    assert "compression:" in err
    assert main(["db", "maintain", "--db-url", db.url, "--refresh", "2026-03-01T00:00Z", "2026-03-01T01:00Z"]) == 0
    assert "aggregates recomputed: 120 sensor-minutes" in capsys.readouterr().err

    async def hook():
        with db.connect() as conn:
            conn.execute("DELETE FROM maintenance_state")
            conn.commit()
        task = asyncio.create_task(maintain.run_periodically(db.url, sw_config.Retention(maintain_every_s=3600),
                                                               first_delay_s=0))
        for _ in range(200):
            await asyncio.sleep(0.05)
            with db.connect() as conn:
                if conn.execute("SELECT count(*) FROM maintenance_state").fetchone()[0] == 3:
                    break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(hook())
    with db.connect() as conn:
        jobs = {j for (j,) in conn.execute("SELECT job FROM maintenance_state")}
    assert jobs == {"aggregates", "raw-retention", "records-retention"}


def test_retention_config_errors_name_file_and_key():
    cfg = sw_config.from_dict({"retention": {"raw_days": 90, "records_years": 5}}, "v.toml")
    assert cfg.retention.raw_keep_days == 90 and cfg.retention.records_days == 5 * 366
    assert sw_config.from_dict({}, "v.toml").retention.raw_keep_days == 3 * 366
    for bad, where in [({"records_years": 2}, "retention.records_years"), ({"raw_days": 0}, "retention.raw_days"),
                       ({"raw_dayz": 1}, "retention.raw_dayz"), ({"evidence_margin_min": -1}, "retention.evidence_margin_min")]:
        with pytest.raises(ConfigError, match=f"v.toml: {where}"):
            sw_config.from_dict({"retention": bad}, "v.toml")
    with pytest.raises(ConfigError, match="40 CFR 403.12"):
        sw_config.from_dict({"retention": {"records_years": 1}}, "v.toml")


def test_maintain_and_status_on_plain_postgresql(services):
    """Without the timescaledb extension: rows older than raw_days are deleted (not whole
    chunks), the rest as on TimescaleDB; db status says there is no compression."""
    name = "sw_storage_plain"
    url = services.db_urls["owner"].rsplit("/", 1)[0] + "/" + name
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)      # no CREATE EXTENSION: plain PostgreSQL
    try:
        migrate.migrate(url)
        with psycopg.connect(url) as conn:
            _village(conn, days=3)
            now = T0 + timedelta(days=3, minutes=5)
            out = maintain.maintain(conn, sw_config.Retention(raw_days=1), now=now)
            assert out["raw_removed"] > 0
            assert conn.execute("SELECT min(time) FROM readings").fetchone()[0] == now - timedelta(days=1)
            assert conn.execute("SELECT count(*) FROM readings_evidence").fetchone()[0] == 6 * 140 + 1
            assert conn.execute("SELECT count(*) FROM readings_1m").fetchone()[0] == 2 * 3 * 1440
            report = maintain.storage_report(conn)
            assert report["compression"].startswith("not available: no TimescaleDB extension")
            assert report["readings"] == conn.execute("SELECT count(*) FROM readings").fetchone()[0]
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
