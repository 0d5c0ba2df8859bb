"""Alerts never wait for the database: with the database stopped, an acid dump
reaches the superintendent's mail within 5 s; ``sewerwatch run`` is restarted while the
database is still down (it starts from its copy of the sensors, remembers the alert, and
takes the redelivered readings for the episode they are); once the database returns there
is exactly one alert row, one episode, and no second e-mail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from alerts.catchers import MailCatcher
from support import close_all, count, mqtt_client, own_postgres, publish_all, village_toml, wait_until

pytest.importorskip("aiosmtpd")

ROOT = Path(__file__).resolve().parent.parent


def _start_run(cfg, tmp_path, env, n: int):
    err = open(tmp_path / f"run{n}.err", "w")
    proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "run", "--quiet",
                             "--client-id", "test-db-down"], stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
    assert wait_until(lambda: "subscribed" in open(tmp_path / f"run{n}.err").read() or proc.poll() is not None, 40)
    assert proc.poll() is None, open(tmp_path / f"run{n}.err").read()
    return proc, err


def test_an_acid_dump_is_mailed_while_the_database_is_down_and_recorded_once_when_it_returns(services, tmp_path):
    site = "dbdown-" + uuid.uuid4().hex[:6]
    mail = MailCatcher().start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    procs = []
    with own_postgres() as pg:
        cfg = village_toml(tmp_path / "village.toml", site, db_url=pg.url("owner"),
                           mqtt_url=services.mqtt_urls["collector"], state=tmp_path / "state", name="Outage village",
                           site_name="Acme Plating", alerts="hold_off_s = 600\nescalate_after_min = 600",
                           contacts=[("Superintendent", mail.url("super@village.example"))])
        assert subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "db", "migrate"], cwd=ROOT,
                              env=env, capture_output=True, timeout=60).returncode == 0
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        topic = f"sewerwatch/{site}/ph"
        t0 = int(time.time() * 1000) - 120_000
        dump = [(topic, json.dumps({"u": "pH", "t": [t0 + 1000 * k for k in range(20)],
                                    "v": [7.0] * 5 + [3.0] * 15}))]
        more = [(topic, json.dumps({"u": "pH", "t": [t0 + 1000 * k for k in range(20, 40)],
                                    "v": [3.1] * 10 + [7.0] * 10}))]

        def violation_mails():
            return [m for m in mail.to("super@village.example") if m["subject"].startswith("[sewerwatch] VIOLATION")]

        try:
            proc, err = _start_run(cfg, tmp_path, env, 1)
            procs.append((proc, err))
            pg.stop()
            sent = time.monotonic()
            publish_all(pub, dump)
            assert wait_until(lambda: len(violation_mails()) == 1, 5), [m["subject"] for m in mail.messages]
            took = time.monotonic() - sent
            assert "#pending" in violation_mails()[0]["subject"] and "Acme Plating" in violation_mails()[0]["subject"]
            time.sleep(1.0)
            proc.terminate()                                       # a restart while the database is down
            assert proc.wait(60) == 0
            proc, err = _start_run(cfg, tmp_path, env, 2)
            procs.append((proc, err))
            assert "using the sensors kept in" in open(tmp_path / "run2.err").read()
            publish_all(pub, dump + more)                         # redelivered, then the rest of the episode
            time.sleep(2.0)
            assert len(violation_mails()) == 1
            pg.start()
            assert wait_until(lambda: count(pg.url("owner"), "SELECT count(*) FROM readings") == 40, 30)
            state = tmp_path / "state" / "run-status.json"
            assert wait_until(lambda: json.loads(state.read_text())["queues"]["alert_writes"] == 0
                              and json.loads(state.read_text())["updated"] > time.time() - 1, 30)
            time.sleep(1.0)
            proc.terminate()
            assert proc.wait(60) == 0
        finally:
            close_all(pub, *[x for pe in procs for x in pe], mail)
        with psycopg.connect(pg.url("owner")) as conn:
            alerts = conn.execute("SELECT kind, rule, state, episodes, notified_at IS NOT NULL FROM alerts "
                                  "WHERE kind = 'violation'").fetchall()
            viol = conn.execute("SELECT rule, start_time, end_time FROM violations").fetchall()
            sent_rows = conn.execute("SELECT count(*) FROM alert_notifications n JOIN alerts a ON a.id = n.alert_id "
                                     "WHERE a.kind = 'violation' AND n.status = 'sent'").fetchone()[0]
    assert took < 5
    assert alerts == [("violation", "ph-min", "notified", 1, True)]
    assert len(viol) == 1 and int(viol[0][1].timestamp() * 1000) == t0 + 5000 and viol[0][2] is not None
    assert sent_rows == 1 and len(violation_mails()) == 1
