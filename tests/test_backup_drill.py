"""Restore drills: real pgBackRest, a real embedded cluster of the test's own (its own state
folder and port, the repository on another folder), restored to a time and to the latest WAL."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo
from pathlib import Path

import numpy as np
import psycopg
import pytest

from enforcement import findings, notices
from enforcement.guide import load_guide
from enforcement.settings import DEFAULT_GUIDE
from ereport import record as copies_of_record
from foundation import config as sw_config
from limits.packs import load_pack
from foundation.actor import Actor
from identity import accounts
from ingest.batch import Readings
from ingest.sink import Chunk
from ingest.spool import Spool
from lab.documents.pdf import Letterhead
from foundation.errors import InputError, ServiceError
from sewerwatch import backup, services
from sewerwatch.cli import main as cli_main
from sewerwatch.backup import record
from sewerwatch.db import migrate, sync
from sewerwatch.services.postgres import PG_BIN
from sewerwatch.services.scratch import free_port, state_dir
from tests.support import mqtt_client, publish_all, sensors_toml, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

TABLES = ("sites", "sensors", "readings", "lab_samples", "lab_results", "audit_log", "findings", "notices",
          "notice_events", "bills", "portal_submissions", "violations")
ROOT = Path(__file__).resolve().parent.parent
WRITE_AFTER_BACKUP_S = 60.0     # "writes more for a minute, notes a time T"
GUIDE = load_guide(DEFAULT_GUIDE)
HEAD = Letterhead("Village of Palmyra (drill)", ("123 Main Street",), "Pat Example", "Superintendent")
#: The state folder's parts that live outside the database (the spool is a real one, below).
STATE_FILES = {"web-sessions/drill-session": b'{"a": 1, "e": 0}', "portal-imports/acme-lab.csv": b"analyte,value\n"}


@pytest.fixture
def program(monkeypatch):
    """A migrated program with ``[backup]``: its config, owner URL and site's sensor ids."""
    for k in ("SEWERWATCH_PG_PORT", "SEWERWATCH_MQTT_PORT", "SEWERWATCH_STATE_DIR", "SEWERWATCH_DB_URL"):
        monkeypatch.delenv(k, raising=False)
    d = state_dir("sewerwatch-drill-")
    toml = d / "sewerwatch.toml"
    toml.write_text(f'[services]\nstate_dir = "{d / "state"}"\npg_port = {free_port()}\nmqtt_port = {free_port()}\n'
                    f'mqtt_sites_port = {free_port()}\n[backup]\nrepo = "{d / "repo"}"\n'
                    '[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\n'
                    '[[sites]]\nid = "acme"\nname = "Acme Plating"\n'
                    + sensors_toml("acme", {"ph": ("ph", "pH"), "flow": ("flow", "gpm")}))
    cfg = sw_config.load(toml)
    try:
        ep = services.up(cfg, mqtt=False)
        migrate.migrate(ep.db("owner"))
        with psycopg.connect(ep.db("owner")) as conn:
            sync.sync(conn, cfg)
            conn.commit()
            sensors = dict(conn.execute("SELECT name, id FROM sensors").fetchall())
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


def sw(cfg, *args, timeout: float = 600):
    """``sewerwatch --config CFG ARGS`` as the administrator types it (a subprocess)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg.path), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def fill_the_record(url: str, today: date) -> dict:
    """A signed self-monitoring report (its bytes, copy of record and their SHA-256), a notice
    of violation issued, a quarter's bill; returns their ids."""
    me = Actor.os_user()
    with psycopg.connect(url) as conn:
        fid = findings.record(conn, "acme", "interference", today, "upset at the plant", by="drill")
        conn.commit()
        n = notices.draft(conn, GUIDE, HEAD, today, finding_id=fid, by="supt")
        n = notices.issue(conn, n["id"], today, by="supt", pdf=b"%PDF-1.7 the notice as issued")
        signer = accounts.add(conn, "clerk1", "A Clerk", "clerk", "a long enough passphrase 1", actor=me)
        signed, pdf = b'{"report": "self-monitoring", "period": "the last month"}', b"%PDF-1.7 the copy of record"
        sub = conn.execute(
            "INSERT INTO portal_submissions (number, site_id, kind, title, document, sha256, certification, "
            "signer_id, signer_username, signer_name, signer_email, signed_at, totp_step, pdf, pdf_sha256) "
            "SELECT 'SMR-DRILL-001', id, 'self-monitoring', 'Last month', %s, %s, 'I certify', %s, 'clerk1', "
            "'A Clerk', 'c@example.org', now(), 1, %s, %s FROM sites WHERE key = 'acme' RETURNING id",
            (signed, hashlib.sha256(signed).hexdigest(), signer.id, pdf, hashlib.sha256(pdf).hexdigest())).fetchone()[0]
        bill = conn.execute(
            "INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail) SELECT id, "
            "'2026Q2', '2026-04-01T05:00Z', '2026-07-01T05:00Z', 1234.56, '{}' FROM sites WHERE key = 'acme' "
            "RETURNING id").fetchone()[0]
        conn.commit()
    return {"notice": n["number"], "submission": sub, "sha256": hashlib.sha256(signed).hexdigest(), "bill": bill}


def spool_readings(folder: Path, sensor: int, t_us: int, n: int = 3) -> None:
    """Readings the writer took but the database never got: a real spool, fsynced."""
    r = Readings(np.array([t_us + k * 1_000_000 for k in range(n)], dtype=np.int64), np.full(n, sensor, np.int32),
                 np.full(n, 123.0), np.zeros(n, np.int16))
    Spool(folder).append(Chunk(readings=r, dead_letters=[], health=[], callbacks=[]))


def state_hashes(state: Path) -> dict:
    return {str(p.relative_to(state)): hashlib.sha256(p.read_bytes()).hexdigest()
            for part in ("spool", "web-sessions", "portal-imports") for p in sorted((state / part).rglob("*"))
            if p.is_file()}


def test_restore_to_a_time_brings_back_exactly_the_record_then_and_run_judges_on_it(program, capsys):
    cfg, url, sensors = program
    state = cfg.services.state_dir
    write(url, sensors, 500, "s-1")
    # the village's day, not the machine's (after midnight UTC it is still yesterday in Chicago,
    # and a response dated the machine's day would be refused as dated in the future)
    today = datetime.now(ZoneInfo(cfg.utility.timezone or load_pack(cfg.utility.pack).timezone)).date()
    ids = fill_the_record(url, today)
    spool_at = int((time.time() - 600) * 1e6)          # ten minutes ago: the spool's readings
    spool_readings(state / "spool", sensors["flow"], spool_at)
    for rel, blob in STATE_FILES.items():
        (state / rel).parent.mkdir(parents=True, exist_ok=True)
        (state / rel).write_bytes(blob)
    kept_state = state_hashes(state)
    assert len(kept_state) >= 3

    took = sw(cfg, "backup", "now")
    assert took.returncode == 0 and ": full," in took.stdout, took.stderr
    # a minute of writing after the backup (a transaction every 2 s): only the WAL has these
    ends, i = time.monotonic() + WRITE_AFTER_BACKUP_S, 0
    while time.monotonic() < ends:
        write(url, sensors, 50, f"s-after-{i}")
        i += 1
        time.sleep(2.0)
    assert i >= 20, f"only {i} transactions in the minute"
    at_t = counts(url)
    with psycopg.connect(url) as conn:
        t = conn.execute("SELECT now()").fetchone()[0]
    time.sleep(0.5)
    for i in range(3):                      # after T: must not come back
        write(url, sensors, 200, f"s-late-{i}")
    with psycopg.connect(url) as conn:      # the notice answered and a bill issued after T
        notices.respond(conn, ids["notice"], today, by="supt", note="the user answered")
        conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail) SELECT "
                     "id, '2026Q3', '2026-07-01T05:00Z', '2026-10-01T05:00Z', 99.0, '{}' FROM sites")
        conn.commit()
    assert counts(url)["readings"] > at_t["readings"]
    assert any("archiving works" in line for line in backup.check(cfg))   # the last WAL reaches the repository
    (state / "secrets.json").rename(state / "secrets.json.lost")

    pg = services.embedded(cfg)[0]
    with pytest.raises(InputError, match="services down"):
        backup.restore(cfg, to=t)
    with pytest.raises(InputError, match="before the oldest backup ended"):
        backup.restore(cfg, to=t - timedelta(days=1))
    with pytest.raises(InputError, match="is in the future"):
        backup.restore(cfg, to=t + timedelta(days=1))
    services.down(cfg)
    shutil.rmtree(pg.data_dir)              # the disk's data folder is gone, and the state folder's record
    for part in ("spool", "web-sessions", "portal-imports"):
        shutil.rmtree(state / part)
    started = time.monotonic()
    restored = sw(cfg, "backup", "restore", "--to", t.isoformat())
    seconds = time.monotonic() - started
    assert restored.returncode == 0, restored.stderr
    with capsys.disabled():
        print(f"\nrestore drill (to T, the command): {seconds:.1f} s for {at_t['readings']:,} readings")
    assert counts(url) == at_t
    assert (state / "secrets.json").is_file()
    assert state_hashes(state) == kept_state           # the spool, the sessions and the uploads are back
    assert record.read_manifest(pg.data_dir)["config_sha256"] == record.hashes(cfg)["config"]
    with psycopg.connect(url) as conn:
        assert copies_of_record.verify(conn, ids["submission"])["all"]          # the signed bytes hash as signed
        assert conn.execute("SELECT sha256 FROM portal_submissions WHERE id = %s",
                            (ids["submission"],)).fetchone()[0] == ids["sha256"]
        assert notices.notice(conn, ids["notice"])["state"] == "issued"          # as at T: not yet answered
        assert conn.execute("SELECT period, total_dollars::float8 FROM bills").fetchall() == [("2026Q2", 1234.56)]
    # the program runs on it: new rows are written, and archiving goes on
    write(url, sensors, 10, "s-restored")
    assert counts(url)["readings"] == at_t["readings"] + 20
    assert backup.take(cfg)["type"] == "diff"          # backups go on from the restored database
    assert cli_main(["--config", str(cfg.path), "backup", "check"]) == 0
    assert cli_main(["--config", str(cfg.path), "backup", "list"]) == 0
    assert "full" in capsys.readouterr().out

    # `run` on the restored database: the spool's readings are stored, a pH of 2 is a violation
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    err = open(state.parent / "run.err", "w")
    run = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg.path), "run"], env=env,
                           stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
    pub = None
    try:
        def spooled():
            with psycopg.connect(url) as conn:
                return conn.execute("SELECT count(*) FROM readings WHERE sensor_id = %s AND value = 123.0",
                                    (sensors["flow"],)).fetchone()[0] == 3
        assert wait_until(spooled, 90), (state.parent / "run.err").read_text()[-3000:]
        assert wait_until(lambda: "subscribed" in (state.parent / "run.err").read_text(), 60)
        pub = mqtt_client(services.up(cfg).site_urls["acme"], "drill-acme")
        now_ms = int(time.time() * 1000)
        values = [7.2] * 5 + [2.0] * 10 + [7.2] * 5
        publish_all(pub, [("sewerwatch/acme/ph", json.dumps({"u": "pH", "t": [now_ms - (20 - k) * 1000
                                                                            for k in range(20)], "v": values}))])

        first_acid = datetime.fromtimestamp((now_ms - 15 * 1000) / 1000, timezone.utc)

        # a pH violation covering the first acid reading (the drill's random readings of pH 0-10
        # written just before may join it into one episode, whose peak is then theirs)
        def judged():
            with psycopg.connect(url) as conn:
                return conn.execute("SELECT count(*) FROM violations WHERE sensor_id = %s AND rule LIKE 'ph%%' "
                                    "AND start_time <= %s AND coalesce(end_time, 'infinity') >= %s",
                                    (sensors["ph"], first_acid, first_acid)).fetchone()[0] >= 1
        assert wait_until(judged, 90), (state.parent / "run.err").read_text()[-3000:]
    finally:
        if pub is not None:
            pub.loop_stop()
            pub.disconnect()
        run.terminate()
        run.wait(60)
        err.close()


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
