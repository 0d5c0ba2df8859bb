"""The schema against the real TimescaleDB: migrations, hypertable, roles, append-only lab results."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from psycopg import sql

from sewerwatch.db import bootstrap, migrate, roles
from foundation.errors import DatabaseError

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def _seed_site_and_sensor(conn) -> int:
    site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('s1', 'Site 1', 'palmyra-wi') RETURNING id").fetchone()[0]
    return conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source) "
                        "VALUES (%s, 'ph', 'ph', 'pH', 'mqtt') RETURNING id", (site,)).fetchone()[0]


def test_migrate_twice_applies_nothing_the_second_time(db):
    # The template already holds every migration: a migrate on it is a no-op, twice.
    assert migrate.migrate(db.url) == []
    assert migrate.migrate(db.url) == []
    with db.connect() as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == [m.version for m in migrate.discover()]


def test_migrations_apply_from_empty_then_again(services):
    name = "sw_empty_migrate"
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)
    url = services.db_urls["owner"].rsplit("/", 1)[0] + "/" + name
    try:
        bootstrap.ensure_timescaledb(services.db_urls["admin"].rsplit("/", 1)[0] + "/" + name)
        first = migrate.migrate(url)
        assert first == [m.version for m in migrate.discover()]
        assert migrate.migrate(url) == []
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_readings_is_a_hypertable(db):
    with db.connect() as conn:
        row = conn.execute("SELECT hypertable_name FROM timescaledb_information.hypertables "
                           "WHERE hypertable_name = 'readings'").fetchone()
    assert row == ("readings",)


def test_readings_unique_on_sensor_and_time_makes_writes_idempotent(db):
    with db.connect() as conn:
        sid = _seed_site_and_sensor(conn)
        conn.commit()
    with db.connect("ingest") as conn:
        for _ in range(2):
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 7.1) "
                         "ON CONFLICT DO NOTHING", (T0, sid))
        conn.commit()
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 1
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 7.2)", (T0, sid))


def test_ingest_role_inserts_readings_and_dead_letters_only(db):
    with db.connect() as conn:
        sid = _seed_site_and_sensor(conn)
        conn.commit()
    with db.connect("ingest", autocommit=True) as conn:
        conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 7.0)", (T0, sid))
        conn.execute("INSERT INTO dead_letters (source, topic, payload, reason) VALUES ('mqtt', 't', %s, 'not JSON')",
                     (b"\xff\x00",))
        assert conn.execute("SELECT count(*) FROM sensors").fetchone()[0] == 1  # the sensor map
        forbidden = [
            "SELECT * FROM lab_results",
            "SELECT * FROM lab_samples",
            "SELECT * FROM readings",
            "DELETE FROM readings",
            "UPDATE readings SET value = 0",
            "TRUNCATE readings",
            "ALTER TABLE readings ADD COLUMN x int",
            "CREATE TABLE intruder (x int)",
            "DROP TABLE dead_letters",
            "INSERT INTO violations (parameter, rule, pack, citation, start_time) VALUES ('ph','ph-min','p','c', now())",
        ]
        for stmt in forbidden:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(stmt)
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 1


def test_grafana_role_reads_everything_and_writes_nothing(db):
    with db.connect() as conn:
        sid = _seed_site_and_sensor(conn)
        conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, %s, 7.0)", (T0, sid))
        conn.commit()
    with db.connect("grafana", autocommit=True) as conn:
        for table in ("readings", "sites", "sensors", "violations", "alerts", "lab_results",
                      "lab_results_current", "dead_letters", "audit_log"):
            conn.execute(sql.SQL("SELECT * FROM {} LIMIT 1").format(sql.Identifier(table)))
        for stmt in ("INSERT INTO readings (time, sensor_id, value) VALUES (now(), 1, 1)",
                     "DELETE FROM readings", "UPDATE sites SET name = 'x'",
                     "INSERT INTO audit_log (action) VALUES ('x')", "CREATE TABLE t (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(stmt)


def test_no_service_role_is_a_superuser(services):
    with services.admin() as conn:
        rows = conn.execute("SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles "
                            "WHERE rolname = ANY(%s)", (list(roles.ROLE_NAMES.values()),)).fetchall()
    assert len(rows) == 3
    assert all(not sup and not cr and not cd for _, sup, cr, cd in rows)


def test_lab_results_are_append_only_and_versioned(db):
    with db.connect() as conn:
        site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('s', 'S', 'palmyra-wi') RETURNING id").fetchone()[0]
        sample = conn.execute("INSERT INTO lab_samples (sample_key, site_id, collected) VALUES ('L1', %s, %s) "
                              "RETURNING id", (site, T0)).fetchone()[0]
        conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l) VALUES (%s, 'bod5', 310)", (sample,))
        conn.execute("INSERT INTO lab_results (sample_id, analyte, version, value_mg_l, reason) "
                     "VALUES (%s, 'bod5', 2, 301, 'transcription error')", (sample,))
        conn.commit()
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE lab_results SET value_mg_l = 1")
        conn.rollback()
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("DELETE FROM lab_results")
        conn.rollback()
        current = conn.execute("SELECT version, value_mg_l FROM lab_results_current").fetchall()
        assert current == [(2, 301.0)]
        assert conn.execute("SELECT count(*) FROM lab_results").fetchone()[0] == 2


def test_schema_works_on_plain_postgresql_without_timescaledb(services):
    name = "sw_plain_pg"
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)  # no CREATE EXTENSION: plain PostgreSQL
    url = services.db_urls["owner"].rsplit("/", 1)[0] + "/" + name
    try:
        migrate.migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'timescaledb'").fetchone()[0] == 0
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, 1, 7)", (T0,))
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, 1, 7) ON CONFLICT DO NOTHING", (T0,))
            conn.execute("INSERT INTO readings (time, sensor_id, value) VALUES (%s, 1, 7)", (T0 + timedelta(seconds=1),))
            assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == 2
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_editing_an_applied_migration_is_refused(db, tmp_path):
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS_DIR, copy)
    first = sorted(copy.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after it was applied\n")
    with pytest.raises(DatabaseError, match="changed after it was applied"):
        migrate.migrate(db.url, directory=copy)


def test_a_failing_migration_names_its_file_and_leaves_nothing_half_done(db, tmp_path):
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS_DIR, copy)
    (copy / "9998_ok.sql").write_text("CREATE TABLE half_done (x int);")
    (copy / "9999_broken.sql").write_text("CREATE TABLE broken_a (x int);\nSELEC 1;")
    with pytest.raises(DatabaseError, match="9999_broken.sql failed"):
        migrate.migrate(db.url, directory=copy)
    with db.connect() as conn:
        assert conn.execute("SELECT to_regclass('half_done') IS NOT NULL, to_regclass('broken_a') IS NULL").fetchone() == (True, True)
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == 9998
