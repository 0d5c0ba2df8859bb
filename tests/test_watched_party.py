"""The watched party cannot blind the monitor.

Industrial users play against ``sewerwatch run`` (subprocesses, a broker of the test's own
whose site accounts and listeners come from the config, the real TimescaleDB), each with
its site's own broker account, each followed by an acid dump (pH 3.0 for 8 s):

* ``ahead``: one reading stamped 290 s ahead of the clock;
* ``stepped``: the device's clock stepped back an hour (every later reading is late);
* ``reordered``: batches of four readings, each pair published the wrong way round;
* ``burst``: a start-up burst of 40 readings 5 ms apart, its interval not configured;
* ``dup``: readings sent again under the same stamps with other values;
* ``impostor``: the site's account connected throughout with ``run``'s client id (and a
  collector's), on the sites' listener (given its own id) and on sewerwatch's own (refused).

Every dump is alerted once, within 5 s of its first reading, as one episode and one
violations row; the readings counted in are those stored (the conflicting ones are dead
letters "conflict: stored 7, received 4"); the stepped clock is a clock-skew alert; the
burst does not set the interval.

Then the leader is frozen (SIGSTOP) for 60 s with a standby beside it: an acid dump sent
during the freeze is alerted by the standby within 15 s; while the leader is frozen the
impostor connects with run's client id again and the readings published meanwhile are all
stored; mid-way through a second dump the new leader is killed (SIGKILL) and started again:
its episode stays one row, closed when the dump ends, as ``check --from --to`` finds it.
The thawed leader steps down without sending: no episode is alerted twice.
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
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import paho.mqtt.client as mqtt
import psycopg
import pytest

from alerts.catchers import WebhookCatcher
from foundation import config as sw_config
from sewerwatch import services as sw_services
from support import close_all, free_port, sensors_toml, state_dir, wait_until

ROOT = Path(__file__).resolve().parent.parent
CASES = ("ahead", "stepped", "reordered", "burst", "dup", "impostor")
DUMP_S = 8


def _client(url: str, client_id: str, clean: bool = True, version=mqtt.MQTTv311) -> mqtt.Client:
    from urllib.parse import unquote, urlsplit

    u = urlsplit(url)
    kw = {} if version == mqtt.MQTTv5 else {"clean_session": clean}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=version, **kw)
    c.username_pw_set(unquote(u.username), unquote(u.password or ""))
    c.max_queued_messages_set(0)
    c.connected_rc = None

    def on_connect(client, userdata, flags, rc, props):
        client.connected_rc = rc
    c.on_connect = on_connect
    c.connect(u.hostname, u.port)
    c.loop_start()
    return c


class Device(threading.Thread):
    """One site's device: pH once a second from ``start`` [epoch s] for ``seconds``, the dump
    from ``dump_at`` [s after start]; ``stamp(t)`` makes its stamps; ``extra(k, now)`` may
    publish more (the case's trick). Every publish is QoS 1 and waited for."""

    def __init__(self, url: str, site: str, start: float, seconds: float, dump_at: float,
                 stamp=lambda now: now, batch: int = 1, swap: bool = False, extra=None, client_id=None,
                 dump_s: int = DUMP_S):
        super().__init__(daemon=True)
        self.site, self.start_at, self.seconds, self.dump_at = site, start, seconds, dump_at
        self.dump_s = dump_s
        self.stamp, self.batch, self.swap, self.extra = stamp, batch, swap, extra
        self.client = _client(url, client_id or f"dev-{site}")
        self.sent: dict[int, float] = {}        # stamp [ms] -> value (the first sent)
        self.dump_first_sent: float | None = None
        self.error: BaseException | None = None
        self.start()

    def publish(self, stamps_ms, values) -> None:
        payload = (json.dumps({"t": stamps_ms[0], "v": values[0], "u": "pH"}) if len(stamps_ms) == 1
                   else json.dumps({"u": "pH", "t": stamps_ms, "v": values}))
        if self.dump_first_sent is None and 3.0 in values:
            self.dump_first_sent = time.time()
        info = self.client.publish(f"sewerwatch/{self.site}/ph", payload, qos=1)
        info.wait_for_publish(10)
        for t, v in zip(stamps_ms, values):
            self.sent.setdefault(t, v)

    def run(self):
        try:
            held = None
            k = 0
            while True:
                at = self.start_at + k
                if at - self.start_at >= self.seconds:
                    break
                time.sleep(max(0.0, at - time.time()))
                now = time.time()
                if self.extra:
                    self.extra(self, k, now)
                if k % self.batch == self.batch - 1:
                    ks = range(k - self.batch + 1, k + 1)
                    # stamped at its ticks, as a logger does, whenever the machine let it send
                    stamps = [int(self.stamp(at - (k - j)) * 1000) for j in ks]
                    values = [3.0 if self.dump_at <= j < self.dump_at + self.dump_s else 7.0 for j in ks]
                    part = (stamps, values)
                    if self.swap and (k // self.batch) % 2 == 0:
                        held = part                     # the first of a pair waits for the second
                    else:
                        self.publish(*part)
                        if held is not None:
                            time.sleep(0.6)             # the first of the pair comes 0.6 s after the second
                            self.publish(*held)
                            held = None
                k += 1
            self.client.loop_stop()
            self.client.disconnect()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc


def _violation_posts(hook: WebhookCatcher, site: str) -> list[dict]:
    return [p for p in hook.received() if p["status"] == 200
            and str(p["body"].get("title", "")).startswith("[sewerwatch] VIOLATION #")
            and f": {site} " in str(p["body"].get("title", ""))]


def _count(url, sql, params=()):
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()[0]


@pytest.fixture
def village(db, tmp_path, monkeypatch):
    """A village of the cases' sites on a broker of the test's own and the test's database;
    a webhook receives the alerts."""
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    u = uuid.uuid4().hex[:6]
    hook = WebhookCatcher().start()
    pings: list[float] = []

    class Deadman(BaseHTTPRequestHandler):          # a healthchecks-style service: counts the GETs
        def do_GET(self):
            pings.append(time.monotonic())
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass
    deadman = ThreadingHTTPServer(("127.0.0.1", 0), Deadman)
    threading.Thread(target=deadman.serve_forever, daemon=True).start()
    sites = [f"{c}-{u}" for c in CASES] + [f"frozen-{u}", f"killed-{u}"]
    text = (f'[utility]\nname = "Watched village"\npack = "palmyra-wi"\ntimezone = "America/Chicago"\n'
            f'[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\nhold_off_s = 20\n'
            f'escalate_after_min = 600\nno_data_after_s = 3600\n[[alerts.contacts]]\nname = "Hook"\n'
            f'urls = ["{hook.url("/hook")}"]\n[run]\nlease_s = 3\n'
            f'deadman_url = "http://127.0.0.1:{deadman.server_address[1]}/ping"\ndeadman_every_s = 2\n')
    for s in sites:
        text += f'[[sites]]\nid = "{s}"\nname = "{s}"\n'
        if s.startswith("impostor"):       # its meter publishes; its own account and "spare" play the impostor
            text += 'mqtt_devices = ["meter", "spare"]\n'
        interval = "" if s.startswith("burst") else "interval_s = 1.0\n"
        text += sensors_toml(s, {"ph": ("ph", "pH")}) + interval
    # the broker: embedded, its accounts and listeners from the config; the two run instances
    # use it as a broker of their own ([services] mqtt_url), each with its own state folder
    broker_state = state_dir("sewerwatch-watched-broker-")
    (tmp_path / "broker.toml").write_text(text.replace(
        "[alerts]", f'[services]\ndb_url = "{db.url}"\nstate_dir = "{broker_state}"\nmqtt_port = {free_port()}\n'
        f'mqtt_sites_port = {free_port()}\n[alerts]', 1))
    cfg = sw_config.load(tmp_path / "broker.toml")
    ep = sw_services.up(cfg, db=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    states, paths = {}, {}
    for name in ("a", "b"):
        states[name] = state_dir(f"sewerwatch-watched-{name}-")
        paths[name] = tmp_path / f"{name}.toml"
        paths[name].write_text(text.replace(
            "[alerts]", f'[services]\ndb_url = "{db.url}"\nmqtt_url = "{ep.mqtt_urls["collector"]}"\n'
            f'state_dir = "{states[name]}"\n[alerts]', 1))
    mig = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(paths["a"]), "db", "migrate"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert mig.returncode == 0, mig.stderr
    yield {"u": u, "cfg": cfg, "paths": paths, "states": states, "env": env, "hook": hook, "ep": ep,
           "sites": sites, "db_url": db.url, "pings": pings}
    sw_services.down(cfg)
    hook.stop()
    deadman.shutdown()


def _run(v, name: str, tmp_path, standby: bool = False) -> subprocess.Popen:
    err = open(tmp_path / f"run-{name}-{time.monotonic_ns()}.err", "w")
    args = [sys.executable, "-m", "sewerwatch", "--config", str(v["paths"][name]), "run", "--quiet",
            "--client-id", f"run-{v['u']}"] + (["--standby"] if standby else [])
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=v["env"])
    p.err_file = err
    return p


def _leader(v) -> str:
    return "a" if _role(v["states"]["a"]) == "leader" else "b"


def _role(state: Path) -> str | None:
    try:
        st = json.loads((state / "run-status.json").read_text())
    except (OSError, ValueError):
        return None
    if not st.get("running") or st.get("updated", 0) < time.time() - 3:
        return None
    lead = st.get("leadership") or {}
    return lead.get("role") if st.get("state") != "standby" or lead.get("role") == "standby" else "standby"


def test_the_watched_party_cannot_blind_the_monitor(village, tmp_path):
    v = village
    u, ep, hook = v["u"], v["ep"], v["hook"]
    site = {c: f"{c}-{u}" for c in CASES}
    procs, devices, attackers = {}, [], []
    try:
        procs["a"] = _run(v, "a", tmp_path, standby=True)
        assert wait_until(lambda: _role(v["states"]["a"]) == "leader", 60), open(procs["a"].err_file.name).read()
        procs["b"] = _run(v, "b", tmp_path, standby=True)
        assert wait_until(lambda: _role(v["states"]["b"]) == "standby", 60)
        assert wait_until(lambda: json.loads((v["states"]["a"] / "run-status.json").read_text())
                          ["collectors"]["mqtt_connected"], 20)

        # the impostor: its own account with run's client id and a collector's, throughout
        run_id = f"run-{u}"
        inside = ep.mqtt_urls["collector"].split("@")[1]
        own_listener = ep.site_urls[site["impostor"]].rsplit("@", 1)[0] + "@" + inside
        refused = _client(own_listener, run_id)
        assert wait_until(lambda: refused.connected_rc is not None, 5)
        assert refused.connected_rc.is_failure                      # not an account of that listener
        close_all(refused)
        for account, cid in ((site["impostor"], run_id), (f"{site['impostor']}.spare", "sewerwatch-collector")):
            attackers.append(_client(ep.site_urls[account], cid, clean=True))
        assert wait_until(lambda: all(a.connected_rc is not None and not a.connected_rc.is_failure
                                      for a in attackers), 5)

        t0 = time.time() + 1.0
        step_back = lambda now, k0=t0: now if now < k0 + 6 else now - 3600 + 0.5   # noqa: E731

        def burst(dev, k, now):
            if k == 0:
                dev.publish([int((now - 1 + j * 0.005) * 1000) for j in range(40)], [7.0] * 40)

        def ahead(dev, k, now):
            if k == 3:
                dev.publish([int((now + 290) * 1000)], [7.0])

        def resend(dev, k, now):
            if 5 <= k < 9:                     # a reading sent 4 s ago again under its stamp, another value
                t = sorted(dev.sent)[k - 4]
                dev.publish([t], [4.0])
                dev.conflicts = getattr(dev, "conflicts", 0) + 1

        plan = {"ahead": dict(dump_at=10, extra=ahead), "stepped": dict(dump_at=14, stamp=step_back),
                "reordered": dict(dump_at=10, batch=4, swap=True), "burst": dict(dump_at=12, extra=burst),
                "dup": dict(dump_at=12, extra=resend), "impostor": dict(dump_at=14)}
        for c in CASES:
            url = ep.site_urls[f"{site[c]}.meter" if c == "impostor" else site[c]]
            devices.append(Device(url, site[c], t0, 28, **plan[c]))
        by = {d.site: d for d in devices}
        for c in CASES:
            s = site[c]
            assert wait_until(lambda: len(_violation_posts(hook, s)) >= 1 and by[s].dump_first_sent, 25), \
                (c, hook.received())
        for c in CASES:
            s = site[c]
            latency = _violation_posts(hook, s)[0]["at"] - by[s].dump_first_sent
            print(f"{c}: alerted {latency:.1f} s after the dump's first reading was sent")
            assert latency <= 5.0, (c, latency)

        # status shows each sensor's late, reordered and skewed readings, and exits 0 (leading, healthy)
        def status():
            return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(v["paths"][_leader(v)]),
                                   "status"], capture_output=True, text=True, cwd=ROOT, env=v["env"], timeout=60)
        assert wait_until(lambda: "CLOCK SKEW: stamps 3600 s behind" in status().stdout, 20, step=0.5)
        shown = status()
        assert f"{site['stepped']}/ph: " in shown.stdout, shown.stdout
        assert "reordered" in shown.stdout.split(f"{site['reordered']}/ph: ")[1].splitlines()[0]
        assert f"{site['ahead']}/ph: 1 stamped ahead of the clock, held until it (1 now)" in shown.stdout
        assert "4 reordered" in shown.stdout.split(f"{site['dup']}/ph: ")[1].splitlines()[0]
        assert shown.returncode == 0, shown.stdout
        # (their devices go on streaming into the freeze; one alert each is checked at the end)

        # -- the leader frozen for 60 s; a dump meanwhile; the new leader killed mid-dump -----------
        frozen, killed = f"frozen-{u}", f"killed-{u}"
        leader, other = ("a", "b") if _role(v["states"]["a"]) == "leader" else ("b", "a")
        t1 = time.time() + 1.0
        dev_frozen = Device(ep.site_urls[frozen], frozen, t1, 40, dump_at=6)
        dev_killed = Device(ep.site_urls[killed], killed, t1 + 14, 44, dump_at=10, dump_s=22)
        time.sleep(max(0.0, t1 - time.time()))
        os.kill(procs[leader].pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        # run is down: the impostor tries run's id again (a clean session would wipe run's queue)
        close_all(*attackers)
        attackers = [_client(ep.site_urls[site["impostor"]], run_id, clean=True)]
        assert wait_until(lambda: _role(v["states"][other]) == "leader", 20)
        took_over = time.monotonic() - frozen_at
        assert wait_until(lambda: len(_violation_posts(hook, frozen)) >= 1, 25)
        frozen_latency = _violation_posts(hook, frozen)[0]["at"] - dev_frozen.dump_first_sent
        # the new leader killed six seconds into the second dump, and started again at once
        assert wait_until(lambda: dev_killed.dump_first_sent is not None
                          and time.time() - dev_killed.dump_first_sent >= 6, 40)
        assert len(_violation_posts(hook, killed)) == 1
        procs[other].send_signal(signal.SIGKILL)
        procs[other].wait(10)
        procs[other] = _run(v, other, tmp_path, standby=True)
        assert wait_until(lambda: _role(v["states"][other]) == "leader", 30)
        wait = 60 - (time.monotonic() - frozen_at)
        time.sleep(max(0.0, wait))
        os.kill(procs[leader].pid, signal.SIGCONT)                 # the thaw: it must step down, send nothing
        assert wait_until(lambda: _role(v["states"][leader]) == "standby", 20)
        for d in devices + [dev_frozen, dev_killed]:
            d.join(60)
            assert d.error is None, (d.site, d.error)
        time.sleep(3)                                              # a second alert would come now
        all_posts = {x: len(_violation_posts(hook, x)) for x in v["sites"]}
        print(f"frozen leader: the standby led {took_over:.1f} s after the SIGSTOP and alerted the dump sent "
              f"during the freeze {frozen_latency:.1f} s after its first reading")
        assert frozen_latency <= 15.0, frozen_latency
        assert all_posts == {x: 1 for x in v["sites"]}, all_posts         # no episode alerted twice
        gaps = [b - a for a, b in zip(v["pings"], v["pings"][1:])]
        assert len(v["pings"]) >= 30 and max(gaps) < 15, gaps      # the dead man's switch never went quiet
        thawed_log = open(procs[leader].err_file.name).read()
        assert "stepping down without sending" in thawed_log, thawed_log[-3000:]
        by[frozen], by[killed] = dev_frozen, dev_killed
    finally:
        close_all(*attackers, *procs.values())
        for p in procs.values():
            p.err_file.close()

    with psycopg.connect(v["db_url"]) as conn:
        for s in [site[c] for c in CASES] + [frozen, killed]:
            c = s
            sid = conn.execute("SELECT s.id FROM sensors s JOIN sites t ON t.id = s.site_id WHERE t.key = %s",
                               (s,)).fetchone()[0]
            rows = conn.execute("SELECT rule, start_time, end_time FROM violations WHERE sensor_id = %s",
                                (sid,)).fetchall()
            alerts = conn.execute("SELECT episodes FROM alerts WHERE kind = 'violation' AND sensor_id = %s",
                                  (sid,)).fetchall()
            stored = conn.execute("SELECT count(*) FROM readings WHERE sensor_id = %s", (sid,)).fetchone()[0]
            assert len(rows) == 1 and rows[0][0] == "ph-min", (c, rows)
            assert alerts == [(1,)], (c, alerts)
            assert stored == len(by[s].sent), (c, stored, len(by[s].sent))
        conflicts = conn.execute("SELECT reason FROM dead_letters WHERE source = 'readings' AND topic = %s",
                                 (f"{site['dup']}/ph",)).fetchall()
        assert len(conflicts) == by[site["dup"]].conflicts == 4
        assert all(r[0].startswith("conflict: stored 7, received 4 (") for r in conflicts), conflicts
        learned = conn.execute("SELECT interval_s FROM sensors WHERE id = (SELECT s.id FROM sensors s JOIN sites t "
                               "ON t.id = s.site_id WHERE t.key = %s)", (site["burst"],)).fetchone()[0]
        assert abs(learned - 1.0) <= 0.01, learned          # the device's second, not the burst's 5 ms
        skew = conn.execute("SELECT details->>'detail' FROM alerts WHERE kind = 'sensor-health' AND rule = 'clock-skew' "
                            "AND sensor_id = (SELECT s.id FROM sensors s JOIN sites t ON t.id = s.site_id "
                            "WHERE t.key = %s)", (site["stepped"],)).fetchall()
        assert len(skew) == 1 and "3600 s behind the collector's clock" in skew[0][0], skew
        killed_row = conn.execute(
            "SELECT v.start_time, v.end_time FROM violations v JOIN sites t ON t.id = v.site_id WHERE t.key = %s",
            (killed,)).fetchone()
    frm = datetime.fromtimestamp(t1 - 60, timezone.utc).isoformat()
    to = datetime.fromtimestamp(time.time() + 60, timezone.utc).isoformat()
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(v["paths"]["a"]), "check", "--from",
                          frm, "--to", to, "--site", killed, "--json", "--quiet"], capture_output=True, text=True,
                         cwd=ROOT, env=v["env"], timeout=120)
    assert out.returncode == 0, out.stderr
    batch = json.loads(out.stdout)
    assert len(batch) == 1 and killed_row[1] is not None                # one row, closed when the dump ended
    assert datetime.fromisoformat(batch[0]["start"].replace("Z", "+00:00")) == killed_row[0]
    assert abs((datetime.fromisoformat(batch[0]["end"].replace("Z", "+00:00")) - killed_row[1]).total_seconds()) <= 1.0
