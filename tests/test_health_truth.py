"""Health tells the truth.

* A database held by a lock for 20 s (``readings`` and ``violations``, ACCESS EXCLUSIVE) is
  "database slow (N s behind)" in ``run``'s status and in the "sewerwatch degraded" alert, in
  the same words, never "down" or "unreachable"; an acid dump during it is alerted from
  memory; when the lock goes every reading is stored, each once.
* A full state folder (a real 2 MiB tmpfs holding the spool, the status file, the alerts'
  memory) with the database down is "spool cannot be written: No space left on device (free
  N bytes)" in ``sewerwatch status`` (exit 1, degraded), not "not responding" (exit 2); when
  the database returns every published reading is stored.
* ``collect`` before its first write says the database is up (or connecting), never "DOWN"
  with a database that is up, and no degraded writer with a spool error of None.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg

from alerts.channels import ConsoleChannel, Route
from foundation import config as sw_config
from sewerwatch.db import sync
from sewerwatch.pipeline import Background, Pipeline
from support import close_all, count, mqtt_client, own_postgres, publish_all, tiny_filesystem, wait_until

ROOT = Path(__file__).resolve().parent.parent


def _shape(text: str) -> str:
    """A problem's words without its numbers (which grow while it lasts)."""
    return re.sub(r"\d[\d,.]*", "N", text)


def test_a_locked_database_is_slow_not_down_in_status_and_in_the_degraded_alert(db, services, tmp_path):
    site = "slow-" + uuid.uuid4().hex[:6]
    cfg = sw_config.from_dict({
        "utility": {"name": "Slow village", "pack": "palmyra-wi", "timezone": "America/Chicago"},
        "sites": [{"id": site, "name": "Acme"}],
        "sensors": [{"site": site, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt", "interval_s": 1.0}],
        "alerts": {"console": False, "mqtt": False, "digest_at": False, "hold_off_s": 600.0}}, "<test>")
    with psycopg.connect(db.url) as conn:
        sync.sync(conn, cfg)
    out = io.StringIO()
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp_path / "spool", client_id=f"test-{site}", tick_s=0.05,
                 routes=[Route(ConsoleChannel(out))], degraded_after_s=1.0)
    bg = Background(p)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    sent: list[int] = []
    value = {"v": 7.0}
    done = threading.Event()

    def stream():
        while not done.is_set():
            t = int(time.time() * 1000)
            pub.publish(f"sewerwatch/{site}/ph", json.dumps({"t": t, "v": value["v"], "u": "pH"}), qos=1)
            sent.append(t)
            done.wait(0.5)
    streamer = threading.Thread(target=stream, daemon=True)
    locker = psycopg.connect(db.url)
    seen: dict[str, set] = {}
    databases = set()
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        streamer.start()
        time.sleep(2)
        locker.execute("LOCK TABLE readings, violations IN ACCESS EXCLUSIVE MODE")     # held until rollback
        locked = time.monotonic()
        while time.monotonic() - locked < 20:
            if 3 < time.monotonic() - locked < 9:
                value["v"] = 3.0                                   # an acid dump while it is locked
            else:
                value["v"] = 7.0
            st = p.status()
            databases.add(st["database"])
            for comp, problem in st["problems"].items():
                seen.setdefault(comp, set()).add(problem)
            time.sleep(0.25)
        locker.rollback()
        done.set()
        streamer.join(5)
        assert wait_until(lambda: count(db.url, "SELECT count(*) FROM readings") == len(set(sent)), 30)
        assert wait_until(lambda: "writer" not in p.problems() and "alerts" not in p.problems(), 30), p.problems()
    finally:
        done.set()
        locker.close()
        close_all(pub, bg)
    texts = [t for ts in seen.values() for t in ts]
    assert any(t.startswith("database slow (") and " s behind)" in t for t in seen["writer"]), seen
    assert any(t.startswith("database slow (") for t in seen.get("alerts", ())), seen
    assert not any("unreachable" in t or " down" in t for t in texts), texts
    assert any(d.startswith("slow (") for d in databases) and not any("down" in d for d in databases), databases
    console = out.getvalue()
    assert "VIOLATION" in console                                   # alerted from memory meanwhile
    mailed = re.findall(r"Problem:\s+(database slow \(.*)", console)
    assert mailed and _shape(mailed[0]) in {_shape(t) for t in seen["writer"] | seen.get("alerts", set())}
    assert count(db.url, "SELECT count(*) FROM violations") == 1


def test_a_full_state_folder_is_said_in_status_not_not_responding(services, tmp_path):
    site = "full-" + uuid.uuid4().hex[:6]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    with own_postgres() as pg, tiny_filesystem(tmp_path / "state", kib=2048) as state:
        path = tmp_path / "village.toml"
        path.write_text(f'[utility]\nname = "Full village"\npack = "palmyra-wi"\ntimezone = "America/Chicago"\n'
                        f'[services]\ndb_url = "{pg.url("owner")}"\nmqtt_url = "{services.mqtt_urls["collector"]}"\n'
                        f'state_dir = "{state}"\n[ingest]\nmax_past_days = 36500.0\n[[sites]]\nid = "{site}"\n'
                        f'name = "Acme"\n[[sensors]]\nsite = "{site}"\nname = "flow"\nparameter = "flow"\n'
                        f'unit = "gpm"\nsource = "mqtt"\ninterval_s = 1.0\n[alerts]\nconsole = false\nmqtt = false\n'
                        f'digest_at = false\nno_data_after_s = 3600\n')

        def sw(*argv):
            return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(path), *argv], cwd=ROOT,
                                  env=env, capture_output=True, text=True, timeout=120)
        assert sw("db", "migrate").returncode == 0
        err = open(tmp_path / "run.err", "w")
        run = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(path), "run", "--quiet",
                                "--client-id", f"run-{site}"], stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                               env=env)
        pub = None
        try:
            assert wait_until(lambda: sw("status", "--json").returncode == 0, 60), open(err.name).read()
            pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
            pg.stop()
            t0 = int(time.time() * 1000) - 2 * 86_400_000        # 150,000 s: up to six hours ago
            msgs = [(f"sewerwatch/{site}/flow", json.dumps({"u": "gpm", "t": [t0 + 1000 * (1000 * b + k)
                                                                            for k in range(1000)],
                                                          "v": [100.0 + k % 7 for k in range(1000)]}))
                    for b in range(150)]                           # 150,000 readings: more than 2 MiB spooled
            sender = threading.Thread(target=publish_all, args=(pub, msgs), kwargs={"timeout": 300}, daemon=True)
            sender.start()

            def full():
                r = sw("status", "--json")
                st = json.loads(r.stdout)
                writer = (st["run"].get("problems") or {}).get("writer", "")
                return (r.returncode, writer) if "spool cannot be written" in writer else None
            assert wait_until(lambda: full() is not None, 90, step=0.5)
            code, writer = full()
            text = sw("status")
            assert code == 1 and text.returncode == 1, (code, text.stdout)
            assert writer.startswith("spool cannot be written: No space left on device (free "), writer
            assert "NOT RESPONDING" not in text.stdout and "DEGRADED" in text.stdout, text.stdout
            assert "spool cannot be written: No space left on device (free" in text.stdout
            pg.start()
            sender.join(300)
            assert wait_until(lambda: count(pg.url("owner"), "SELECT count(*) FROM readings") == 150_000, 120)
        finally:
            close_all(pub)
            if run.poll() is None:
                run.send_signal(signal.SIGTERM)
                try:
                    run.wait(60)
                except subprocess.TimeoutExpired:
                    run.kill()
            err.close()


def test_collect_says_the_database_is_up_before_its_first_write(db, services, tmp_path):
    """The writer's health: no 'DOWN (spooling)' and no degraded writer with
    'the spool cannot be written (None)' while the database is up and nothing was written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    path = tmp_path / "collect.toml"
    path.write_text(f'[utility]\nname = "Collect village"\n[services]\ndb_url = "{db.url}"\n'
                    f'mqtt_url = "{services.mqtt_urls["collector"]}"\nstate_dir = "{tmp_path / "state"}"\n')
    proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(path), "collect", "--report-every",
                             "0.5", "--client-id", f"collect-{uuid.uuid4().hex[:6]}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        assert wait_until(lambda: sum(x.startswith("collect: accepted") for x in lines) >= 3, 60), lines
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        reader.join(10)
    reports = [line.strip() for line in lines if line.startswith("collect: accepted")]
    assert all("database up" in line for line in reports[1:]), reports
    assert not any("DOWN" in line or "DEGRADED" in line or "(None)" in line for line in reports), reports
