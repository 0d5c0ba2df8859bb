"""The MQTT simulator against the real embedded Mosquitto, received by mosquitto_sub.

``sewerwatch simulate`` runs as a subprocess with the broker's device account;
``mosquitto_sub`` (the collector account) receives what it publishes. Readings must be the
scenario's (``simulators.generate`` at the same times), in the DESIGN.md wire format.
Each test uses its own site ids and clears the retained status messages it leaves.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

import simulators
from simulators import scenarios

pytestmark = [pytest.mark.services,
              pytest.mark.skipif(not os.path.exists("/usr/bin/mosquitto_sub"), reason="mosquitto clients missing")]


def site_ids(n=1):
    tag = uuid.uuid4().hex[:8]
    return [f"t{tag}-{i}" for i in range(n)]


class Sub:
    """mosquitto_sub on ``sewerwatch/<site>/#`` for some sites, collecting (topic, retained, payload)."""

    def __init__(self, url: str, sites, device_url: str):
        self.messages: list[tuple[str, bool, bytes]] = []
        self.device_url = device_url
        topics = []
        for s in sites:
            topics += ["-t", f"sewerwatch/{s}/#"]
        self.proc = subprocess.Popen(["mosquitto_sub", "-L", url.rstrip("/") + f"/sewerwatch/{sites[0]}/#",
                                      *topics, "-q", "1", "-F", "%t %r %x"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        marker = f"sewerwatch/{sites[0]}/marker"
        deadline = time.monotonic() + 10
        while not any(m[0] == marker for m in self.messages):
            assert time.monotonic() < deadline, "mosquitto_sub did not subscribe"
            pub(device_url, marker, b"m")
            time.sleep(0.2)
        self.messages.clear()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.decode().rstrip("\n").split(" ")
            if len(parts) == 3:
                self.messages.append((parts[0], parts[1] == "1", bytes.fromhex(parts[2])))
            elif len(parts) == 2:   # empty payload
                self.messages.append((parts[0], parts[1] == "1", b""))

    def wait_for(self, pred, timeout=15.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(pred(m) for m in list(self.messages)):
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out; got {[m[0] for m in self.messages][-10:]}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.thread.join(5)

    def readings(self, site, sensor):
        return [json.loads(p) for t, _, p in self.messages if t == f"sewerwatch/{site}/{sensor}"]

    def statuses(self, site):
        return [json.loads(p)["state"] for t, _, p in self.messages if t == f"sewerwatch/{site}/manhole/status"]


def pub(url: str, topic: str, payload: bytes | None, retain=False):
    cmd = ["mosquitto_pub", "-L", url.rstrip("/") + "/" + topic, "-q", "1"]
    cmd += ["-r"] if retain else []
    cmd += ["-n"] if payload is None else ["-m", payload.decode()]
    subprocess.run(cmd, check=True, timeout=10, capture_output=True)


@pytest.fixture
def mqtt(services):
    subs, sites_used = [], []

    def subscribe(sites):
        s = Sub(services.mqtt_urls["collector"], sites, services.mqtt_urls["device"])
        subs.append(s)
        sites_used.extend(sites)
        return s

    yield subscribe
    for s in subs:
        s.stop()
    for site in sites_used:  # leave no retained status behind
        pub(services.mqtt_urls["device"], f"sewerwatch/{site}/manhole/status", None, retain=True)


def simulate(*args, wait=True, url=None):
    cmd = [sys.executable, "-m", "sewerwatch", "simulate", "--no-modbus", *args]
    if url:
        cmd += ["--mqtt-url", url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        return out
    return p


def expected(scenario, times, device, sensor):
    """The scenario's readings of one device at ``times`` [epoch s], as published (4 decimals)."""
    t = np.asarray(times)
    s = simulators.generate(scenario, start=t[0], duration_s=t[-1] - t[0] + 0.5, step_s=t[1] - t[0], devices=[device])
    np.testing.assert_array_equal(s.times, t)
    return np.round(s.values[sensor][0], 4)


def test_single_readings_birth_and_retained_death(services, mqtt):
    site, = site_ids(1)
    sub = mqtt([site])
    out = simulate("--start", "scenario", "--scenario", "acid-dump", "--offset", "10:44:00", "--speed", "30", "--duration", "3",
                   "--sites", site, url=services.mqtt_urls["device"])
    assert "mqtt: mqtt://device:***@127.0.0.1:" in out and f"sites {site}" in out
    assert services.mqtt_urls["device"].split("@")[0].split(":")[-1] not in out   # password not printed
    sub.wait_for(lambda m: m[0].endswith("/status") and b"offline" in m[2])
    assert sub.statuses(site) == ["online", "offline"]
    birth = json.loads(next(p for t, _, p in sub.messages if t.endswith("/status")))
    assert birth["sensors"] == ["flow", "ph", "temperature"] and birth["site"] == site
    for sensor, unit in (("flow", "gpm"), ("ph", "pH"), ("temperature", "degF")):
        msgs = sub.readings(site, sensor)
        assert len(msgs) >= 20
        assert all(set(m) == {"t", "v", "u"} and m["u"] == unit and isinstance(m["t"], int) for m in msgs)
        t = np.array([m["t"] for m in msgs]) / 1000.0
        assert (np.diff(t) == 3.0).all()                        # speed 30 -> every 3 s simulated
        np.testing.assert_allclose([m["v"] for m in msgs], expected("acid-dump", t, 0, sensor), atol=1e-9)
        if sensor == "ph":
            assert all(3.4 < m["v"] < 3.6 for m in msgs)
    # a collector connecting later gets the retained death message
    later = subprocess.run(["mosquitto_sub", "-L", services.mqtt_urls["collector"].rstrip("/")
                            + f"/sewerwatch/{site}/manhole/status", "-C", "1", "-W", "5", "-F", "%r %p"],
                           capture_output=True, text=True, timeout=10)
    assert later.stdout.strip() == '1 {"state": "offline"}'


def test_batches_qos1_iso_times(services, mqtt):
    sites = site_ids(2)
    sub = mqtt(sites)
    simulate("--start", "scenario", "--scenario", "slug", "--offset", "36:10:00", "--speed", "20", "--duration", "3", "--devices", "2",
             "--sites", ",".join(sites), "--mqtt-mode", "batch", "--qos", "1", "--time-format", "iso",
             "--mqtt-unit", "temperature=degC", url=services.mqtt_urls["device"])
    sub.wait_for(lambda m: m[0] == f"sewerwatch/{sites[1]}/manhole/status" and b"offline" in m[2])
    import datetime as dt
    for i, site in enumerate(sites):
        msgs = sub.readings(site, "flow")
        assert len(msgs) >= 2
        times, vals = [], []
        for m in msgs:
            assert list(m) == ["u", "t", "v"] and m["u"] == "gpm" and len(m["t"]) == len(m["v"]) >= 1
            times += [dt.datetime.fromisoformat(x).timestamp() for x in m["t"]]
            vals += m["v"]
            assert all(x.endswith("+00:00") for x in m["t"])
        t = np.array(times)
        assert (np.diff(t) == 1.0).all() and len(t) >= 40
        assert max(len(m["t"]) for m in msgs) >= 10              # one batch carries many readings
        np.testing.assert_allclose(vals, expected("slug", t, i, "flow"), atol=1e-9)
        # --mqtt-unit temperature=degC: published in degC
        temps = sub.readings(site, "temperature")
        assert {m["u"] for m in temps} == {"degC"}
        tt = np.array([dt.datetime.fromisoformat(x).timestamp() for m in temps for x in m["t"]])
        deg_f = simulators.generate("slug", start=tt[0], duration_s=tt[-1] - tt[0] + 0.5, step_s=1.0,
                                    devices=[i]).values["temperature"][0]
        np.testing.assert_allclose([v for m in temps for v in m["v"]], (deg_f - 32) * 5 / 9, atol=6e-5)


def test_comms_loss_drops_the_link_so_the_broker_sends_the_will(services, mqtt, tmp_path):
    site, = site_ids(1)
    scn = tmp_path / "loss.toml"
    scn.write_text('name = "loss"\nstart = 2026-06-01T00:00:00-05:00\nduration_s = 60\n'
                   '[[events]]\nkind = "comms_loss"\nat = 4\nseconds = 4\n')
    sub = mqtt([site])
    simulate("--start", "scenario", "--scenario", str(scn), "--speed", "1", "--duration", "11", "--sites", site,
             "--mqtt-mode", "batch", url=services.mqtt_urls["device"])
    sub.wait_for(lambda m: m[0].endswith("/status") and m[2] == b'{"state": "offline"}'
                 and sum(s == "offline" for s in sub.statuses(site)) >= 2)
    # online, will (link cut, no DISCONNECT), online again after the loss, graceful offline
    assert sub.statuses(site) == ["online", "offline", "online", "offline"]
    start = scenarios.load(str(scn)).start
    t = np.array([x for m in sub.readings(site, "ph") for x in m["t"]]) / 1000.0 - start
    assert len(t) >= 6 and t.min() < 4 and t.max() >= 8
    assert not ((t >= 4) & (t < 8)).any()          # nothing while silent


def test_killed_simulator_leaves_its_last_will(services, mqtt):
    site, = site_ids(1)
    sub = mqtt([site])
    p = simulate("--scenario", "normal-day", "--duration", "60", "--sites", site, wait=False,
                 url=services.mqtt_urls["device"])
    try:
        sub.wait_for(lambda m: m[0].endswith("/ph"))
        assert sub.statuses(site) == ["online"]
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        sub.wait_for(lambda m: m[0].endswith("/status") and b"offline" in m[2])
        assert sub.statuses(site) == ["online", "offline"]
    finally:
        if p.poll() is None:
            p.kill()


def test_bad_payloads(services, mqtt):
    site, = site_ids(1)
    sub = mqtt([site])
    simulate("--start", "scenario", "--scenario", "bad-payloads", "--offset", "07:58:00", "--speed", "1200", "--duration", "4",
             "--sites", site, url=services.mqtt_urls["device"])
    sub.wait_for(lambda m: m[0].endswith("/status") and b"offline" in m[2])
    start = scenarios.load("bad-payloads").start
    kinds = {"garbage": 0, "nan": 0, "wrong_units": 0, "missing_fields": 0, "good": 0}
    for topic, _, raw in sub.messages:
        if not topic.endswith("/ph"):
            continue
        try:
            m = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            kinds["garbage"] += 1
            continue
        h = (m["t"] / 1000.0 - start) / 3600.0
        if "v" not in m:
            kinds["missing_fields"] += 1
            assert 9.0 <= h < 9 + 10 / 60
        elif math.isnan(m["v"]):
            kinds["nan"] += 1
            assert 8 + 20 / 60 <= h < 8.5
        elif m["u"] != "pH":
            kinds["wrong_units"] += 1
            assert 8 + 40 / 60 <= h < 8 + 50 / 60 and m["u"] == "gpm"
        else:
            kinds["good"] += 1
            assert not (8.0 <= h < 8 + 10 / 60) and 6 < m["v"] < 9
    assert all(n >= 2 for n in kinds.values()), kinds


def test_default_broker_and_refused_credentials(services, mqtt):
    site, = site_ids(1)
    mqtt([site])
    out = simulate("--scenario", "normal-day", "--duration", "1", "--sites", site)
    assert "mqtt: mqtt://device:***@127.0.0.1:" in out            # the embedded broker's device account
    bad = services.mqtt_urls["device"].replace("@", "x@", 1)
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "simulate", "--no-modbus", "--duration", "1",
                        "--sites", site, "--mqtt-url", bad], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sewerwatch: error: MQTT broker mqtt://device:***@")
    assert "refused" in err[0]


def test_replay_publishes_the_csv_readings_as_recorded(services, mqtt, tmp_path):
    site, = site_ids(1)
    csv = tmp_path / "r.csv"
    csv.write_text("time,site,parameter,value,unit\n"
                   "2026-06-01T10:00:00+00:00,{s},ph,7.25,pH\n"
                   "2026-06-01T10:00:10+00:00,{s},ph,3.5,pH\n"
                   "2026-06-01T10:00:10+00:00,{s},temperature,21.5,degC\n"
                   "2026-06-01T10:00:20+00:00,{s},ph,7.0,pH\n".format(s=site))
    sub = mqtt([site])
    simulate("--replay", str(csv), "--speed", "10", "--duration", "4", "--time-format", "iso",
             url=services.mqtt_urls["device"])
    sub.wait_for(lambda m: m[0].endswith("/status") and b"offline" in m[2])
    ph = sub.readings(site, "ph")
    assert [(m["t"], m["v"], m["u"]) for m in ph] == [
        ("2026-06-01T10:00:00.000+00:00", 7.25, "pH"), ("2026-06-01T10:00:10.000+00:00", 3.5, "pH"),
        ("2026-06-01T10:00:20.000+00:00", 7.0, "pH")]
    assert sub.readings(site, "temperature") == [{"t": "2026-06-01T10:00:10.000+00:00", "v": 21.5, "u": "degC"}]


def test_publisher_runs_alone(services, mqtt):
    site, = site_ids(1)
    sub = mqtt([site])
    r = subprocess.run([sys.executable, "-m", "simulators.mqtt_publisher", "--scenario", "caustic", "--offset", "14:10",
                        "--duration", "2", "--sites", site, "--mqtt-url", services.mqtt_urls["device"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("simulating 1 device(s): caustic, speed 1x")
    sub.wait_for(lambda m: m[0].endswith("/status") and b"offline" in m[2])
    ph = sub.readings(site, "ph")
    assert len(ph) >= 2 and all(10.8 < m["v"] < 11.2 for m in ph)
