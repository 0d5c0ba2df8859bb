"""Restore drills: real pgBackRest, a real embedded cluster of the test's own (its own state
folder and port, the repository on another folder), restored to a time and to the latest WAL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import date, timedelta

import psycopg
import pytest

from enforcement import findings
from foundation import config as sw_config
from foundation.errors import InputError, ServiceError
from sewerwatch import backup, services
from sewerwatch.cli import main as cli_main
from sewerwatch.db import migrate
from sewerwatch.services.postgres import PG_BIN
from sewerwatch.services.scratch import free_port, state_dir
from tests.support import add_site_and_sensors, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

TABLES = ("sites", "sensors", "readings", "lab_samples", "lab_results", "audit_log", "findings")


@pytest.fixture
def program(monkeypatch):
    """A migrated program with ``[backup]``: its config, owner URL and site's sensor ids."""
    for k in ("SEWERWATCH_PG_PORT", "SEWERWATCH_MQTT_PORT", "SEWERWATCH_STATE_DIR", "SEWERWATCH_DB_URL"):
        monkeypatch.delenv(k, raising=False)
    d = state_dir("sewerwatch-drill-")
    toml = d / "sewerwatch.toml"
    toml.write_text(f'[services]\nstate_dir = "{d / "state"}"\npg_port = {free_port()}\nmqtt_port = {free_port()}\n'
                    f'[backup]\nrepo = "{d / "repo"}"\n')
    cfg = sw_config.load(toml)
    try:
        ep = services.up(cfg, mqtt=False)
        migrate.migrate(ep.db("owner"))
        sensors = add_site_and_sensors(ep.db("owner"), "acme", {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
        yield cfg, ep.db("owner"), sensors
    finally:
        services.down(cfg)
        shutil.rmtree(d, ignore_errors=True)


def write(url: str, sensors: dict, n: int, tag: str) -> None:
    """``n`` readings per sensor, a lab sample with two results, an audit row: one transaction."""
    with psycopg.connect(url) as conn:
        for sid in sensors.values():
            conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '1 ms', %s, "
                         "random() * 10 FROM generate_series(1, %s) g", (sid, n))
        site = conn.execute("SELECT id FROM sites WHERE key = 'acme'").fetchone()[0]
        sample = conn.execute("INSERT INTO lab_samples (sample_key, site_id, collected) VALUES (%s, %s, now()) "
                              "RETURNING id", (tag, site)).fetchone()[0]
        for analyte, v in (("bod5", 310.0), ("tss", 275.0)):
            conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l) VALUES (%s, %s, %s)",
                         (sample, analyte, v))
        conn.execute("INSERT INTO audit_log (action, object) VALUES ('drill.write', %s)", (tag,))


def counts(url: str) -> dict:
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def test_restore_to_a_time_brings_back_exactly_the_rows_then(program, capsys):
    cfg, url, sensors = program
    write(url, sensors, 500, "s-1")
    with psycopg.connect(url) as conn:
        findings.record(conn, "acme", "interference", date(2026, 7, 1), "upset at the plant", by="drill")
        conn.commit()
    first = backup.take(cfg)
    assert first["type"] == "full" and first["record_files"] >= 1
    for i in range(5):                      # written after the backup: only the WAL has them
        write(url, sensors, 300, f"s-after-{i}")
        time.sleep(0.3)
    at_t = counts(url)
    with psycopg.connect(url) as conn:
        t = conn.execute("SELECT now()").fetchone()[0]
    time.sleep(0.5)
    for i in range(3):                      # after T: must not come back
        write(url, sensors, 200, f"s-late-{i}")
    assert counts(url)["readings"] > at_t["readings"]
    assert any("archiving works" in line for line in backup.check(cfg))   # the last WAL reaches the repository
    (cfg.services.state_dir / "secrets.json").rename(cfg.services.state_dir / "secrets.json.lost")

    pg = services.embedded(cfg)[0]
    with pytest.raises(InputError, match="services down"):
        backup.restore(cfg, to=t)
    with pytest.raises(InputError, match="before the oldest backup ended"):
        backup.restore(cfg, to=t - timedelta(days=1))
    with pytest.raises(InputError, match="is in the future"):
        backup.restore(cfg, to=t + timedelta(days=1))
    services.down(cfg)
    shutil.rmtree(pg.data_dir)              # the disk's data folder is gone
    out = backup.restore(cfg, to=t)
    assert out["kept"] is None and "secrets.json" in out["record"]
    print(f"\nrestore to a time: {out['seconds']:.1f} s")
    with capsys.disabled():
        print(f"restore drill (to T): {out['seconds']:.1f} s for {at_t['readings']:,} readings")
    assert counts(url) == at_t
    assert out["manifest"]["config_sha256"] == first["config_sha256"]
    # the program runs on it: new rows are written, and archiving goes on
    write(url, sensors, 10, "s-restored")
    assert counts(url)["readings"] == at_t["readings"] + 20
    assert backup.take(cfg)["type"] == "diff"          # backups go on from the restored database
    assert cli_main(["--config", str(cfg.path), "backup", "check"]) == 0
    assert cli_main(["--config", str(cfg.path), "backup", "list"]) == 0
    assert "full" in capsys.readouterr().out


def test_restore_latest_after_the_database_is_killed_mid_write(program):
    cfg, url, sensors = program
    write(url, sensors, 200, "k-0")
    backup.take(cfg, full=True)
    committed, stop = [0], threading.Event()

    def writer():
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                while not stop.is_set():
                    conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '1 us', "
                                 "%s, 1.0 FROM generate_series(1, 100) g", (sensors["ph"],))
                    committed[0] += 100
        except psycopg.Error:
            pass

    before = counts(url)["readings"]
    th = threading.Thread(target=writer)
    th.start()
    time.sleep(2.0)
    pg = services.embedded(cfg)[0]
    os.kill(pg.pid(), signal.SIGKILL)       # the postmaster, mid-write
    th.join(10)
    stop.set()
    assert committed[0] > 0
    time.sleep(1.0)
    with pytest.raises(InputError, match="give --to TIME or --latest"):
        backup.restore(cfg)
    out = backup.restore(cfg, latest=True)
    assert out["kept"] and os.path.isdir(out["kept"])
    got = counts(url)["readings"] - before
    # every committed row is back (its WAL was on the disk: pushed before the restore); at most
    # the one insert whose answer the kill cut off is there too
    assert committed[0] <= got <= committed[0] + 100
    write(url, sensors, 5, "k-restored")
    shutil.rmtree(out["kept"], ignore_errors=True)

    # a copy apart, while the database runs: it starts on a port of its own and does not archive
    with pytest.raises(InputError, match="not empty"):
        backup.restore(cfg, latest=True, into=cfg.services.state_dir)
    into = cfg.services.state_dir.parent / "copy"
    backup.check(cfg)                       # the last rows' WAL in the repository (a segment switched)
    backup.restore(cfg, latest=True, into=into)
    assert "archive_mode = 'off'" in (into / "postgresql.auto.conf").read_text()
    port, pg = free_port(), services.embedded(cfg)[0]
    ctl = [f"{PG_BIN}/pg_ctl", "-D", str(into), "-o", f"-p {port}", "-w", "-l", str(into / "postgres.log")]
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(as_pg + ctl + ["start"], check=True, capture_output=True)
    try:
        copy_url = url.rsplit(":", 1)[0] + f":{port}/sewerwatch"
        assert wait_until(lambda: _answers(copy_url), 60)
        with psycopg.connect(copy_url) as conn:
            assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == counts(url)["readings"]
            assert conn.execute("SHOW archive_mode").fetchone()[0] == "off"
    finally:
        subprocess.run(as_pg + ctl + ["-m", "fast", "stop"], capture_output=True)
    assert pg.running()


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return not conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
    except psycopg.Error:
        return False


def test_run_reports_a_missing_backup_and_restore_is_refused_while_it_writes(program):
    cfg, url, sensors = program
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    run = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg.path), "run"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    status = cfg.services.state_dir / "run-status.json"
    try:
        def degraded():
            try:
                st = json.loads(status.read_text())
            except (OSError, ValueError):
                return None
            return st if st.get("running") and "backup" in (st.get("problems") or {}) else None
        assert wait_until(degraded, 90), run.stderr.read() if run.poll() is not None else "no status"
        assert degraded()["problems"]["backup"] == "no backup has been taken yet"
        backup.take(cfg, full=True)
        assert wait_until(lambda: "backup" not in (json.loads(status.read_text()).get("problems") or {}), 30)
        with pytest.raises(InputError, match=f"pid {run.pid}.* is writing to the database: stop it first"):
            backup.restore(cfg, latest=True)
    finally:
        run.terminate()
        run.wait(60)
    assert backup.health(cfg)["ok"] and "full" in backup.health(cfg)["summary"]


def test_status_shows_the_last_backup_and_a_failed_one_degrades(program, capsys):
    cfg, url, sensors = program
    assert cli_main(["--config", str(cfg.path), "status", "--json"]) == 2      # run is not running
    st = json.loads(capsys.readouterr().out)
    assert st["backup"]["configured"] and not st["backup"]["ok"] and "no backup" in st["backup"]["problem"]
    backup.take(cfg)
    cli_main(["--config", str(cfg.path), "status"])
    assert "backup: last full " in capsys.readouterr().out
    repo = cfg.backup.repo
    repo.chmod(0o000)                       # the repository's disk refuses writes
    try:
        with pytest.raises(ServiceError, match="pgbackrest backup failed"):
            backup.take(cfg)
    finally:
        repo.chmod(0o750)
    h = backup.health(cfg)
    assert not h["ok"] and h["problem"].startswith("the last backup failed")
    cli_main(["--config", str(cfg.path), "status"])
    assert "! backup: the last backup failed" in capsys.readouterr().out


def test_db_migrate_takes_a_backup_first_when_migrations_are_pending(program, capsys):
    cfg, url, sensors = program
    # the database of a version without the legal holds' migration (a later one's tables may be there)
    newest = next(m for m in migrate.discover() if m.path.name.endswith("_legal_holds.sql"))
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE legal_holds")
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (newest.version,))
        conn.commit()
    write(url, sensors, 50, "m-0")
    assert backup.backups(cfg)["backups"] == []
    assert cli_main(["--config", str(cfg.path), "db", "migrate"]) == 0
    err = capsys.readouterr().err
    assert "1 migrations pending: taking a backup first" in err and f"applied {newest.path.name}" in err
    listed = backup.backups(cfg)["backups"]
    assert len(listed) == 1 and listed[0]["type"] == "full"          # the database as it was before
    assert backup.before_migrating(cfg, url) is None                  # nothing pending: no backup
