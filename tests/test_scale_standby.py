"""A standby for ``run``.

Two ``sewerwatch run --standby`` subprocesses against one database (real TimescaleDB, real
Mosquitto, the project's MailCatcher for e-mail), each with its own state folder and the
same MQTT client id. The first leads, the second stands by and says so in ``sewerwatch
status``. A pH sensor streams one reading a second; during an acid dump the leader is
killed with SIGKILL after it mailed the alert: the standby takes over within 10 s, the
episode stays one alert with one e-mail, one episode and one violations row, and the alert
resolves after the dump. The killed instance comes back as the standby (as a service
manager would restart it); the new leader is killed and a second dump starts during the
takeover (readings the old leader never saw, queued by the broker in the leaders' MQTT
session): it is alerted by the next leader, exactly once. The takeover times are printed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from alerts.catchers import MailCatcher
from support import close_all, mqtt_client, village_toml, wait_until

pytest.importorskip("aiosmtpd")

ROOT = Path(__file__).resolve().parent.parent


class Stream(threading.Thread):
    """One pH reading a second, stamped now, its value from ``value`` (changed by the test)."""

    def __init__(self, client, topic: str):
        super().__init__(daemon=True)
        self.client, self.topic, self.value = client, topic, 7.0
        self.sent: list[tuple[int, float]] = []
        self.done = threading.Event()
        self.start()

    def run(self):
        next_at = time.monotonic()
        while not self.done.is_set():
            t = int(time.time() * 1000)
            v = self.value
            self.client.publish(self.topic, json.dumps({"t": t, "v": v, "u": "pH"}), qos=1)
            self.sent.append((t, v))
            next_at += 1.0
            self.done.wait(max(0.0, next_at - time.monotonic()))

    def first_at(self, value: float, after_ms: int = 0) -> int:
        return next(t for t, v in self.sent if v == value and t > after_ms)


def _status(cfg) -> dict:
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "status", "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["run"]


def _role(state: Path) -> str | None:
    try:
        st = json.loads((state / "run-status.json").read_text())
    except (OSError, ValueError):
        return None
    if not st.get("running") or st.get("updated", 0) < time.time() - 3:
        return None
    return (st.get("leadership") or {}).get("role")


def test_the_standby_takes_over_an_acid_dump_in_10_s_and_it_is_alerted_once(db, services, tmp_path):
    u = uuid.uuid4().hex[:6]
    site = f"ha-{u}"
    mail = MailCatcher().start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    cfgs, states = {}, {}
    for name in ("a", "b"):
        states[name] = tmp_path / f"state-{name}"
        cfgs[name] = village_toml(tmp_path / f"{name}.toml", site, db_url=db.url,
                                  mqtt_url=services.mqtt_urls["collector"], state=states[name], name="Standby village",
                                  site_name="Acme Plating", alerts="hold_off_s = 4\nescalate_after_min = 600",
                                  contacts=[("Superintendent", mail.url("super@village.example"))])
    assert subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfgs["a"]), "db", "migrate"], cwd=ROOT,
                          env=env, capture_output=True, timeout=120).returncode == 0
    procs: dict[str, subprocess.Popen] = {}
    logs = []

    def start(name: str) -> None:
        err = open(tmp_path / f"run-{name}-{len(logs)}.err", "w")
        logs.append(err)
        procs[name] = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfgs[name]), "run",
                                        "--standby", "--quiet", "--client-id", f"run-{u}"],
                                       stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)

    def violation_mails() -> list[str]:
        return [m["subject"] for m in mail.to("super@village.example")
                if m["subject"].startswith("[sewerwatch] VIOLATION")]

    def kill_and_time(leader: str, standby: str, then=lambda: None) -> float:
        os.kill(procs[leader].pid, signal.SIGKILL)
        killed = time.monotonic()
        then()
        procs[leader].wait()
        assert wait_until(lambda: _role(states[standby]) == "leader"
                          and json.loads((states[standby] / "run-status.json").read_text())["collectors"]
                          ["mqtt_connected"], 15), _role(states[standby])
        return time.monotonic() - killed

    pub = stream = None
    try:
        start("a")
        assert wait_until(lambda: _role(states["a"]) == "leader", 40)
        start("b")
        assert wait_until(lambda: _role(states["b"]) == "standby", 40)
        st = _status(cfgs["b"])
        assert st["state"] == "standby" and st["running"]
        assert st["leadership"]["leader"]["name"].startswith("sewerwatch-run")
        assert st["leadership"]["leader"]["name"].endswith(f"pid {procs['a'].pid}")
        text = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfgs["b"]), "status"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60).stdout
        assert f"run: STANDBY (pid {procs['b'].pid}): collects, judges and alerts nothing" in text, text

        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{u}")
        stream = Stream(pub, f"sewerwatch/{site}/ph")
        time.sleep(4)
        stream.value = 3.0                                        # the acid dump
        assert wait_until(lambda: len(violation_mails()) == 1, 15), violation_mails()
        time.sleep(2)
        first_takeover = kill_and_time("a", "b")                  # during the dump
        time.sleep(4)
        stream.value = 7.0                                        # the dump ends
        start("a")                                                # restarted, as a service manager would
        assert wait_until(lambda: _role(states["a"]) == "standby", 40)
        resolved = ("SELECT count(*) FROM alerts WHERE kind = 'violation' AND state = 'resolved'")
        assert wait_until(lambda: psycopg.connect(db.url).execute(resolved).fetchone()[0] == 1, 30)
        first_mails = violation_mails()

        time.sleep(2)
        # the leader killed, and a second dump starts during the takeover: the old leader never
        # saw it, the broker queues its readings for the leaders' session, the new one alerts it
        second_takeover = kill_and_time("b", "a", then=lambda: setattr(stream, "value", 3.5))
        time.sleep(4)
        stream.value = 7.0
        assert wait_until(lambda: len(violation_mails()) == 2, 20), violation_mails()
        assert wait_until(lambda: psycopg.connect(db.url).execute(resolved).fetchone()[0] == 2, 30)
        time.sleep(2)                                             # a second e-mail would come now
        stream.done.set()
        stream.join(5)
        procs["a"].send_signal(signal.SIGTERM)
        assert procs["a"].wait(60) == 0
    finally:
        if stream is not None:
            stream.done.set()
        close_all(pub, *procs.values(), *logs, mail)

    dump1, dump2 = stream.first_at(3.0), stream.first_at(3.5)
    with psycopg.connect(db.url) as conn:
        alerts = conn.execute("SELECT state, episodes, notified_at IS NOT NULL FROM alerts WHERE kind = 'violation' "
                              "ORDER BY id").fetchall()
        viol = conn.execute("SELECT (extract(epoch FROM start_time) * 1000)::int8, end_time IS NOT NULL "
                            "FROM violations WHERE source = 'stream' ORDER BY start_time").fetchall()
        sent = conn.execute("SELECT count(*) FROM alert_notifications n JOIN alerts a ON a.id = n.alert_id "
                            "WHERE a.kind = 'violation' AND n.status = 'sent' AND n.event = 'open'").fetchone()[0]
        stored = conn.execute("SELECT count(*) FROM readings").fetchone()[0]
    print(f"\nstandby takeover after SIGKILL of the leader: {first_takeover:.1f} s (during a dump, after its alert), "
          f"{second_takeover:.1f} s (a dump starting during the takeover); readings published {len(stream.sent)}, "
          f"stored {stored}")
    assert first_takeover <= 10 and second_takeover <= 10
    assert len(first_mails) == 1 and len(violation_mails()) == 2
    assert alerts == [("resolved", 1, True), ("resolved", 1, True)]
    assert viol == [(dump1, True), (dump2, True)]
    assert sent == 2
    assert stored == len(stream.sent)


def test_database_down_under_a_leader_and_a_standby_the_leader_alerts_alone_and_keeps_its_lease(services, tmp_path):
    """The database stops while both run: neither can renew or take the lease. The leader goes on judging and
    mails an acid dump from memory; the standby neither leads nor alerts. When the database
    returns the standby waits out its grace, the leader renews its lease first: one leader,
    one alert row, one e-mail."""
    from support import own_postgres

    u = uuid.uuid4().hex[:6]
    site = f"hadb-{u}"
    mail = MailCatcher().start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    procs, logs = {}, []
    with own_postgres() as pg:
        cfgs, states = {}, {}
        for name in ("a", "b"):
            states[name] = tmp_path / f"state-{name}"
            cfgs[name] = village_toml(tmp_path / f"{name}.toml", site, db_url=pg.url("owner"),
                                      mqtt_url=services.mqtt_urls["collector"], state=states[name],
                                      site_name="Acme Plating", alerts="hold_off_s = 600\nescalate_after_min = 600",
                                      contacts=[("Superintendent", mail.url("super@village.example"))])
        assert subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfgs["a"]), "db", "migrate"],
                              cwd=ROOT, env=env, capture_output=True, timeout=120).returncode == 0
        pub = stream = None
        try:
            for name in ("a", "b"):
                err = open(tmp_path / f"run-{name}.err", "w")
                logs.append(err)
                procs[name] = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfgs[name]), "run",
                                                "--standby", "--quiet", "--client-id", f"run-{u}"],
                                               stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
                assert wait_until(lambda: _role(states[name]) == ("leader" if name == "a" else "standby"), 40)
            pub = mqtt_client(services.mqtt_urls["device"], f"pub-{u}")
            stream = Stream(pub, f"sewerwatch/{site}/ph")
            time.sleep(2)
            pg.stop()
            stream.value = 3.0                                       # an acid dump with the database down
            assert wait_until(lambda: any(m["subject"].startswith("[sewerwatch] VIOLATION")
                                          for m in mail.to("super@village.example")), 10)
            time.sleep(3)
            assert _role(states["a"]) == "leader" and _role(states["b"]) == "standby"
            pg.start()
            stream.value = 7.0
            back = time.monotonic()
            roles = set()
            while time.monotonic() - back < 12:                      # past the standby's grace
                roles.add((_role(states["a"]), _role(states["b"])))
                time.sleep(0.2)
            rows = "SELECT count(*) FROM alerts WHERE kind = 'violation'"
            assert wait_until(lambda: psycopg.connect(pg.url("owner")).execute(rows).fetchone()[0] == 1, 30)
            time.sleep(2)
            stream.done.set()
            stream.join(5)
            leader_log = open(tmp_path / "run-a.err").read()
        finally:
            if stream is not None:
                stream.done.set()
            close_all(pub, *procs.values(), *logs, mail)
    violations = [m for m in mail.to("super@village.example") if m["subject"].startswith("[sewerwatch] VIOLATION")]
    assert roles == {("leader", "standby")}, roles                 # never two leaders, never none
    assert "lease renewed after" in leader_log
    assert len(violations) == 1
