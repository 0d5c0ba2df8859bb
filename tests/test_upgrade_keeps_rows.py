"""Upgrades keep every row: a database built with the migrations of an earlier commit and
filled with data, migrated by this version; every table's rows as they were."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from sewerwatch.db import bootstrap, migrate

pytestmark = pytest.mark.services

#: The commit before the portal, field work, bills issued once and rate versions (migrations
#: up to 0152): the schema an installation of that time has.
EARLIER = "6da19bbf2f826136cf75a8726d92a4c4eca25fa3"
ROOT = Path(__file__).resolve().parent.parent


def earlier_migrations(folder: Path) -> list[str]:
    """The migration files as of :data:`EARLIER`, written into ``folder``."""
    try:
        names = subprocess.run(["git", "ls-tree", "--name-only", f"{EARLIER}:sewerwatch/db/migrations/"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("the checkout has no history of the earlier version (a shallow clone)")
    for name in names:
        blob = subprocess.run(["git", "show", f"{EARLIER}:sewerwatch/db/migrations/{name}"], cwd=ROOT,
                              capture_output=True, check=True).stdout
        (folder / name).write_bytes(blob)
    return names


@pytest.fixture
def empty_db(services):
    name = "swt_upgrade"
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)
    bootstrap.ensure_timescaledb(services.db_urls["admin"].rsplit("/", 1)[0] + "/" + name)
    yield services.db_urls["owner"].rsplit("/", 1)[0] + "/" + name
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def fingerprint(conn) -> dict[str, tuple[int, str]]:
    """table -> (rows, md5 of its rows in order) over the columns the table has now."""
    tables = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
        "AND table_type = 'BASE TABLE' ORDER BY 1")]
    out = {}
    for t in tables:
        q = sql.SQL("SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM {} x"
                    ).format(sql.Identifier(t))
        out[t] = tuple(conn.execute(q).fetchone())
    return out


def old_columns(conn) -> dict[str, list[str]]:
    cols: dict[str, list[str]] = {}
    for t, c in conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                             "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"):
        cols.setdefault(t, []).append(c)
    return cols


def test_migrating_an_earlier_versions_database_keeps_every_row(empty_db, tmp_path):
    names = earlier_migrations(tmp_path)
    assert names and len(names) < len(migrate.discover())
    migrate.migrate(empty_db, directory=tmp_path)
    with psycopg.connect(empty_db) as conn:
        site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('acme', 'Acme Plating', 'palmyra-wi') "
                            "RETURNING id").fetchone()[0]
        sensor = conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, address) VALUES "
                              "(%s, 'ph', 'ph', 'pH', 'mqtt', 'mqtt:sewerwatch/acme/ph') RETURNING id",
                              (site,)).fetchone()[0]
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT timestamptz '2026-07-01 00:00Z' "
                     "+ g * interval '1 s', %s, 7 + (g %% 10) / 10.0 FROM generate_series(1, 20000) g", (sensor,))
        sample = conn.execute("INSERT INTO lab_samples (sample_key, site_id, collected) VALUES ('S-1', %s, "
                              "'2026-07-01 08:00Z') RETURNING id", (site,)).fetchone()[0]
        conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l) VALUES (%s, 'bod5', 412), "
                     "(%s, 'tss', 388)", (sample, sample))
        conn.execute("INSERT INTO violations (sensor_id, site_id, parameter, rule, pack, citation, start_time, "
                     "end_time, peak, limit_value, unit) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', "
                     "'palmyra-wi.md section 3', '2026-07-01 01:00Z', '2026-07-01 01:05Z', 4.5, 6.0, 'pH')",
                     (sensor, site))
        conn.execute("INSERT INTO audit_log (action, object) VALUES ('lab.import', 'S-1')")
        conn.commit()
        cols = old_columns(conn)
        before = fingerprint(conn)
    applied = migrate.migrate(empty_db)
    assert applied and min(applied) > max(int(n[:4]) for n in names)
    with psycopg.connect(empty_db) as conn:
        after = {}
        for t, columns in cols.items():
            if t not in before:
                continue
            q = sql.SQL("SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) "
                        "FROM (SELECT {} FROM {}) x").format(sql.SQL(", ").join(map(sql.Identifier, columns)),
                                                            sql.Identifier(t))
            after[t] = tuple(conn.execute(q).fetchone())
    old_record, new_record = before.pop("schema_migrations"), after.pop("schema_migrations")
    assert new_record[0] == old_record[0] + len(applied)        # the earlier ones kept, the new ones added
    assert after == before
    assert before["readings"][0] == 20000 and before["violations"][0] == 1
