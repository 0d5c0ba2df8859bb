"""Upgrades keep every row and every answer.

A database built with the migrations of an earlier commit and filled with data, migrated by
this version: every table's rows as they were. The earlier version itself (its tree from
git, its own ``sewerwatch`` as a subprocess) migrates a database, imports the demo's lab
results, judges them and bills two quarters; its answers (the violations, the year's SNC
list, the bills) are this version's answers after ``db migrate``, computed by the functions
``sewerwatch findings list``, ``report snc`` and ``bills list`` call. And ``db migrate`` with
a migration pending is refused, in one line saying why, while a real ``sewerwatch run``
writes to the database, and nothing is migrated; once run is stopped it migrates.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from sewerwatch.db import bootstrap, migrate

pytestmark = pytest.mark.services

#: The commit before the portal, field work, bills issued once and rate versions (migrations
#: up to 0152): the schema an installation of that time has.
EARLIER = "6da19bbf2f826136cf75a8726d92a4c4eca25fa3"    # tag v0.1.0 (CHANGELOG.md)
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


# --- the earlier version's answers -------------------------------------------------------

def earlier_tree(folder: Path) -> Path:
    """The earlier version's files (``git archive``) in ``folder``: a program of its own."""
    try:
        blob = subprocess.run(["git", "archive", EARLIER], cwd=ROOT, capture_output=True, check=True).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("the checkout has no history of the earlier version (a shallow clone)")
    folder.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=blob, check=True)
    return folder


def sewerwatch(tree: Path, config: Path, url: str, state: Path, *args) -> subprocess.CompletedProcess:
    """``sewerwatch --config CONFIG ARGS`` of the program in ``tree`` (the earlier one, or this
    checkout), on the database ``url``, as a subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env.update(SEWERWATCH_DB_URL=url, SEWERWATCH_STATE_DIR=str(state), PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(config), *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)


def violations_of(rows) -> list[tuple]:
    """(site, rule, start) of each violation, in order: what ``findings list`` names."""
    return sorted((v["site"], v["rule"], datetime.fromisoformat(v["start"]) if isinstance(v["start"], str)
                   else v["start"]) for v in rows)


def snc_of(lst: dict) -> list[tuple]:
    """(site, period, criteria) of each user on the year's list."""
    return [(u["site"], p["period"], tuple(c["criterion"] for c in p["criteria"])) for u in lst["users"]
            for p in u["periods"]]


def test_an_earlier_versions_answers_are_this_versions_after_migrating(empty_db, tmp_path):
    from enforcement import findings
    from enforcement.annual import snc_list
    from enforcement.settings import settings
    from foundation import config as sw_config
    from foundation import moments
    from lab import bill_runs

    old = earlier_tree(tmp_path / "earlier")
    config, state = old / "examples" / "demo-village.toml", tmp_path / "state"

    def earlier(*args, codes=(0,)):
        r = sewerwatch(old, config, empty_db, state, *args)
        assert r.returncode in codes, (args, r.returncode, r.stderr[-2000:])
        return r.stdout

    earlier("db", "migrate")
    earlier("lab", "import", "examples/demo/lab-results.csv", "--actor", "lab")
    earlier("lab", "check", "--since", "2026-01-01", "--until", "2026-07-01", "--store", codes=(0, 4))
    billed = {}
    for quarter in ("2026Q1", "2026Q2"):
        for b in json.loads(earlier("bill", "--quarter", quarter, "--rates", "examples/demo/rates.toml",
                                    "--out", str(tmp_path / "bills"), "--json")):
            billed[(quarter, b["site"])] = round(b["total_dollars"], 2)
    found = json.loads(earlier("findings", "list", "--since", "2026-01-01", "--until", "2027-01-01", "--json"))
    listed = json.loads(earlier("report", "snc", "--year", "2026", "--json"))
    with psycopg.connect(empty_db) as conn:
        before_bills = sorted((i, q, s, round(float(t), 2)) for i, q, s, t in conn.execute(
            "SELECT b.id, b.period, s.key, b.total_dollars FROM bills b JOIN sites s ON s.id = b.site_id"))
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] < \
            migrate.discover()[-1].version
    before = {"violations": violations_of(found["violations"]), "snc": snc_of(listed),
              "bills": before_bills}
    assert len(before["violations"]) >= 2 and before["snc"], before          # the demo's copper and pH
    assert len(before_bills) == len(billed) >= 4
    assert {(q, s): t for _, q, s, t in before_bills} == billed              # the rows are the bills it printed

    r = sewerwatch(ROOT, config, empty_db, state, "db", "migrate")          # this version's migrate
    assert r.returncode == 0 and "applied" in r.stderr, r.stderr[-2000:]

    cfg = sw_config.load(config)
    tz = moments.village_zone(cfg)
    st = settings(cfg)
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == migrate.discover()[-1].version
        vs = findings.violations_between(conn, moments.midnight(datetime(2026, 1, 1).date(), tz),
                                         moments.midnight(datetime(2027, 1, 1).date(), tz))
        lst = snc_list(conn, 2026, st.snc_periods, st)
        bills = sorted((b["id"], b["quarter"], b["site"], round(b["total_dollars"], 2))
                       for b in bill_runs.issued_bills(conn))
    after = {"violations": violations_of(vs), "snc": snc_of(lst), "bills": bills}
    assert after == before


# --- db migrate while run writes -----------------------------------------------------------

@pytest.fixture
def program(monkeypatch):
    """A migrated program of the test's own (its embedded cluster, state folder and ports)."""
    from foundation import config as sw_config
    from sewerwatch import services
    from sewerwatch.db import sync
    from sewerwatch.services.scratch import free_port, state_dir
    from tests.support import sensors_toml

    for k in ("SEWERWATCH_PG_PORT", "SEWERWATCH_MQTT_PORT", "SEWERWATCH_STATE_DIR", "SEWERWATCH_DB_URL"):
        monkeypatch.delenv(k, raising=False)
    d = state_dir("sewerwatch-upgrade-")
    toml = d / "sewerwatch.toml"
    toml.write_text(f'[services]\nstate_dir = "{d / "state"}"\npg_port = {free_port()}\nmqtt_port = {free_port()}\n'
                    f'mqtt_sites_port = {free_port()}\n'
                    '[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\n'
                    '[[sites]]\nid = "acme"\nname = "Acme Plating"\n' + sensors_toml("acme", {"ph": ("ph", "pH")}))
    cfg = sw_config.load(toml)
    try:
        ep = services.up(cfg, mqtt=False)
        migrate.migrate(ep.db("owner"))
        with psycopg.connect(ep.db("owner")) as conn:
            sync.sync(conn, cfg)
            conn.commit()
        yield cfg, ep.db("owner")
    finally:
        services.down(cfg)
        shutil.rmtree(d, ignore_errors=True)


def test_db_migrate_is_refused_while_run_writes_and_migrates_once_it_is_stopped(program):
    from tests.support import wait_until

    cfg, url = program
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    command = [sys.executable, "-m", "sewerwatch", "--config", str(cfg.path)]
    err = open(cfg.services.state_dir.parent / "run.err", "w")
    run = subprocess.Popen(command + ["run"], env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
    status = cfg.services.state_dir / "run-status.json"
    pending = next(m for m in migrate.discover() if m.path.name.endswith("_legal_holds.sql"))

    def held() -> tuple[bool, bool]:
        """(the legal holds' table exists, its migration is recorded)."""
        with psycopg.connect(url) as conn:
            return (conn.execute("SELECT to_regclass('public.legal_holds') IS NOT NULL").fetchone()[0],
                    conn.execute("SELECT count(*) = 1 FROM schema_migrations WHERE version = %s",
                                 (pending.version,)).fetchone()[0])
    try:
        def running() -> bool:
            try:
                st = json.loads(status.read_text())
            except (OSError, ValueError):
                return False
            return bool(st.get("running")) and st.get("pid") == run.pid
        assert wait_until(running, 90), (cfg.services.state_dir.parent / "run.err").read_text()[-3000:]
        with psycopg.connect(url) as conn:          # the database of a version without the legal holds
            conn.execute("DROP TABLE legal_holds")
            conn.execute("DELETE FROM schema_migrations WHERE version = %s", (pending.version,))
            conn.commit()
        r = subprocess.run(command + ["db", "migrate"], env=env, capture_output=True, text=True, timeout=300,
                           cwd=ROOT)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0] == (f"sewerwatch: error: 'sewerwatch run' (pid {run.pid}) is writing to the database: stop "
                            "it before migrating (1 migrations pending), then start it again")
        assert held() == (False, False)             # nothing was migrated
        assert run.poll() is None                   # and run goes on
    finally:
        run.terminate()
        run.wait(60)
        err.close()
    r = subprocess.run(command + ["db", "migrate"], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0 and f"applied {pending.path.name}" in r.stderr, r.stderr
    assert held() == (True, True)
