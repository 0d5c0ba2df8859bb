"""Plain PostgreSQL as a first-class target, or saying what it lacks.

A cluster of this test's own (no sewerwatch roles: what a managed or shared server looks
like) shows ``db migrate`` by an owner without CREATEROLE explaining what it needs, and
``db roles --sql`` giving a database administrator the statements that make it work, run
here as the administrator would: with psql. A database without the timescaledb extension
in the shared cluster shows ``db status``/``services status`` naming the server and what it
lacks, and the dashboards exported for it (``timescaledb: false``, ``date_bin``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml
from psycopg import sql

from foundation import secrets
from sewerwatch.db import bootstrap, migrate
from sewerwatch.services.postgres import PG_BIN, EmbeddedPostgres
from sewerwatch.services.process import find_binary
from support import free_port, state_dir

pytestmark = pytest.mark.services
ROOT = Path(__file__).resolve().parent.parent


def sw(*args, env_extra=None, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=180)


@pytest.fixture(scope="module")
def bare_cluster():
    """A fresh cluster with its superuser only: no sewerwatch roles."""
    import shutil

    d = state_dir("sewerwatch-plain-")
    pg = EmbeddedPostgres(d, free_port(), secrets.load_or_create(d)["db"])
    pg.init()
    pg.start()
    try:
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_migrate_without_createrole_explains_and_roles_sql_makes_it_work(bare_cluster):
    pg = bare_cluster
    with psycopg.connect(pg.url("admin", "postgres"), autocommit=True) as conn:
        conn.execute("CREATE ROLE app LOGIN NOCREATEROLE NOCREATEDB PASSWORD 'app-pw'")
        conn.execute("CREATE DATABASE appdb OWNER app")
    url = f"postgresql://app:app-pw@127.0.0.1:{pg.port}/appdb"
    r = sw("db", "migrate", "--db-url", url)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert "sewerwatch_ingest and sewerwatch_grafana do not exist" in line and "no CREATEROLE" in line
    assert "'sewerwatch db roles --sql --owner app --database appdb'" in line

    r = sw("db", "roles", "--sql", "--owner", "app", "--database", "appdb")
    assert r.returncode == 0, r.stderr
    assert "CREATE DATABASE" not in r.stdout      # the database is there already
    # the administrator runs them, connected to the database
    with psycopg.connect(pg.url("admin", "appdb"), autocommit=True) as conn:
        conn.execute(r.stdout)
    r = sw("db", "migrate", "--db-url", url)
    assert r.returncode == 0, r.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(migrate.discover())
        # the read-only role may log in with the password the statements gave it
    grafana_url = re.search(r"SEWERWATCH_GRAFANA_DB_URL=(\S+)", sw("db", "roles", "--sql").stdout)
    assert grafana_url      # (printed for the administrator; a new password each time)


def test_roles_sql_for_a_new_database_runs_in_psql_and_migrate_works_as_its_owner(bare_cluster):
    pg = bare_cluster
    r = sw("db", "roles", "--sql", "--database", "village")
    assert r.returncode == 0, r.stderr
    script = r.stdout
    psql = find_binary("psql", PG_BIN)
    env = {**os.environ, "PGPASSWORD": pg.passwords["admin"]}
    run = subprocess.run([psql, "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(pg.port), "-U",
                          "sewerwatch_admin", "-d", "postgres", "-q"], input=script, capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    owner_url = re.search(r'db_url = "([^"]+)"', script).group(1).replace("HOST:5432", f"127.0.0.1:{pg.port}")
    grafana_url = re.search(r"SEWERWATCH_GRAFANA_DB_URL=(\S+)", script).group(1).replace(
        "HOST:5432", f"127.0.0.1:{pg.port}")
    r = sw("db", "migrate", "--db-url", owner_url)
    assert r.returncode == 0, r.stderr
    r = sw("db", "status", "--db-url", owner_url)
    assert r.returncode == 0 and "pending" not in r.stdout
    assert "server: PostgreSQL 15" in r.stdout and "readings: a hypertable" in r.stdout
    with psycopg.connect(grafana_url) as conn:     # the read-only role logs in and reads
        assert conn.execute("SELECT count(*) FROM sites").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO sites (key, name, pack) VALUES ('x', 'x', 'palmyra-wi')")


@pytest.fixture
def plain_db(services):
    """A migrated database without the timescaledb extension, in the shared cluster."""
    name = f"swt_plainpg_{os.getpid()}"
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)
    urls = {r: u.rsplit("/", 1)[0] + "/" + name for r, u in services.db_urls.items()}
    migrate.migrate(urls["owner"])
    yield urls
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_status_names_plain_postgresql_and_what_it_lacks(plain_db, tmp_path):
    r = sw("db", "status", "--db-url", plain_db["owner"])
    assert r.returncode == 0, r.stderr
    assert "server: PostgreSQL 15" in r.stdout and "(no TimescaleDB)" in r.stdout
    assert "readings: an ordinary table" in r.stdout
    assert "without: hypertable chunking" in r.stdout and "without: compression" in r.stdout
    assert "the server offers TimescaleDB" in r.stdout     # this cluster has it: a superuser could add it
    r = sw("services", "status", env_extra={"SEWERWATCH_DB_URL": plain_db["owner"],
                                            "SEWERWATCH_STATE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "database     configured" in r.stdout and "(no TimescaleDB)" in r.stdout
    assert "without: hypertable chunking" in r.stdout


def test_export_for_plain_postgresql_buckets_with_date_bin(plain_db, tmp_path):
    out = tmp_path / "grafana"
    r = sw("dashboards", "export", str(out), "--db-url", plain_db["grafana"])
    assert r.returncode == 0, r.stderr
    [ds] = yaml.safe_load((out / "provisioning" / "datasources" / "sewerwatch.yaml").read_text())["datasources"]
    assert ds["jsonData"]["timescaledb"] is False and ds["user"] == "sewerwatch_grafana"
    site = (out / "dashboards" / "sewerwatch-site.json").read_text()
    assert "$__timeGroup" not in site and "date_bin(" in site
    # the owner's account is refused for Grafana
    r = sw("dashboards", "export", str(tmp_path / "x"), "--db-url", plain_db["owner"])
    assert r.returncode == 2 and "can write" in r.stderr and "sewerwatch_grafana" in r.stderr
    # a configured (external) db_url is the owner's: export asks for the read-only role
    r = sw("dashboards", "export", str(tmp_path / "y"), env_extra={"SEWERWATCH_DB_URL": plain_db["owner"]})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "read-only role sewerwatch_grafana" in r.stderr and "db roles --sql" in r.stderr
    r = sw("dashboards", "export", str(tmp_path / "z"), env_extra={"SEWERWATCH_DB_URL": plain_db["owner"],
                                                                   "SEWERWATCH_GRAFANA_DB_URL": plain_db["grafana"]})
    assert r.returncode == 0, r.stderr
