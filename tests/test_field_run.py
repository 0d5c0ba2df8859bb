"""Maintenance windows through ``sewerwatch run``: the real pipeline
(sewerwatch/pipeline.py in the background) with a broker of the module's own whose ACL is
made from the config, the MQTT collector, the streaming evaluator and the alert manager.

A pH probe calibrated in buffers 4 and 10 (three readings each, one a minute) at site
``calw`` inside a window the device opens and ends by its documented MQTT message (published
with the site's own broker account): no violation, no alert, its readings stored with
quality 3. The same calibration at ``calx`` without a window: the violations of today. A
window opened 40 minutes ago at ``calo`` and left open past ``[field] window_limit_h``: its
alert, resolved when it ends. One pipeline for the three."""

from __future__ import annotations

import json
import os
import threading
import time
from urllib.parse import unquote, urlsplit

import paho.mqtt.client as mqtt
import psycopg
import pytest

from foundation import config as sw_config
from foundation.quality import MAINTENANCE
from sewerwatch import services as sw_services
from sewerwatch.pipeline import Background, Pipeline
from support import close_all, free_port, publish_all, state_dir, wait_until
from test_field_windows import cli

MIN_MS = 60_000
#: the calibration: pH 7, then buffers 4 and 10 three minutes each, back to 7 (one a minute)
VALUES = [7.0] * 10 + [4.0] * 3 + [10.0] * 3 + [7.0] * 14
IN_WINDOW = (10, 17)                 # the window: minutes 10 to 17 (the buffers and a minute after)


def _village(tmp_path, db_url: str) -> str:
    state = state_dir("sewerwatch-field-run-")
    sensors = "".join(f'[[sensors]]\nsite = "{s}"\nname = "ph"\nparameter = "ph"\nunit = "pH"\nsource = "mqtt"\n'
                      'interval_s = 60\n' for s in ("calw", "calx", "calo"))
    text = f"""[utility]
name = "Field run village"
pack = "palmyra-wi"
timezone = "America/Chicago"
[services]
db_url = "{db_url}"
state_dir = "{state}"
mqtt_port = {free_port()}
mqtt_sites_port = {free_port()}
[mqtt]
topics = ["plant/{{site}}/{{sensor}}"]
[field]
check_every_s = 0.5
window_limit_h = 0.5
[alerts]
hold_off_s = 1.0
console = false
mqtt = false
digest_at = false
[[sites]]
id = "calw"
name = "With a window"
[[sites]]
id = "calx"
name = "Without a window"
[[sites]]
id = "calo"
name = "Left open"
""" + sensors
    (tmp_path / "village.toml").write_text(text, encoding="utf-8")
    return str(tmp_path / "village.toml")


def _client(url: str, client_id: str):
    u = urlsplit(url)
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    c.username_pw_set(unquote(u.username), unquote(u.password))
    acks: dict = {}
    c.on_publish = lambda client, userdata, mid, rc, props: acks.__setitem__(mid, rc)
    c.connect(u.hostname, u.port)
    c.loop_start()
    return c, acks


@pytest.fixture(scope="module")
def live(module_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("field-run")
    path = _village(tmp, module_db.url)
    saved = {v: os.environ.pop(v) for v in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR")
             if v in os.environ}
    cfg = sw_config.load(path)
    r = cli(tmp, module_db, "db", "migrate")
    assert r.returncode == 0, r.stderr
    ep = sw_services.up(cfg, db=False)
    p = Pipeline(cfg, owner_url=module_db.url, ingest_url=module_db.urls["ingest"], mqtt_url=ep.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp / "spool", client_id="field-run", tick_s=0.05)
    bg = Background(p)
    clients = {}
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        for site in ("calw", "calx"):
            clients[site] = _client(ep.site_urls[site], f"dev-{site}")
        assert wait_until(lambda: all(c.is_connected() for c, _ in clients.values()), 10)
        time.sleep(0.3)      # the collector's subscriptions
        yield {"p": p, "db": module_db, "tmp": tmp, "clients": clients, "cfg": cfg}
    finally:
        close_all(*(c for c, _ in clients.values()))
        bg.stop()
        sw_services.down(cfg)
        os.environ.update(saved)


def _readings(site, t0_ms, lo, hi):
    return (f"plant/{site}/ph", json.dumps({"u": "pH", "t": [t0_ms + i * MIN_MS for i in range(lo, hi)],
                                             "v": VALUES[lo:hi]}))


def _send(client, acks, messages):
    mids = [client.publish(t, p, qos=1).mid for t, p in messages]
    assert wait_until(lambda: all(m in acks for m in mids), 10)
    assert all(not acks[m].is_failure for m in mids), [str(acks[m]) for m in mids]


def _q(db, sql, params=()):
    with psycopg.connect(db.url) as conn:
        return conn.execute(sql, params).fetchall()


def _stored(db, site):
    return _q(db, "SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id "
                  "WHERE t.key = %s", (site,))[0][0]


def test_a_calibration_inside_a_device_window_raises_nothing_and_without_one_it_does(live):
    db = live["db"]
    t0 = (int(time.time() * 1000) // MIN_MS - 25) * MIN_MS           # 25 minutes ago
    live["t0"] = t0
    cw, aw = live["clients"]["calw"]
    cx, ax = live["clients"]["calx"]
    _send(cx, ax, [_readings("calx", t0, 0, 30)])
    start = {"state": "start", "reason": "calibration", "by": "J. Smith", "sensors": ["ph"], "t": t0 + 10 * MIN_MS}
    _send(cw, aw, [_readings("calw", t0, 0, 10), ("sewerwatch/calw/maintenance", json.dumps(start))])
    _send(cw, aw, [_readings("calw", t0, 10, 17)])
    _send(cw, aw, [("sewerwatch/calw/maintenance",
                    json.dumps({"state": "end", "sensors": ["ph"], "t": t0 + 17 * MIN_MS}))])
    _send(cw, aw, [_readings("calw", t0, 17, 30)])
    # the site's account may publish the maintenance topic of its own site only
    denied = cw.publish("sewerwatch/calx/maintenance", json.dumps(start), qos=1).mid
    assert wait_until(lambda: denied in aw, 10) and aw[denied].value == 0x87

    assert wait_until(lambda: _stored(db, "calw") == 30 and _stored(db, "calx") == 30, 30)
    assert wait_until(lambda: _q(db, "SELECT count(*) FROM maintenance_windows WHERE end_time IS NOT NULL")[0][0] == 1,
                      30)

    def calx_judged():
        return {r for (r,) in _q(db, "SELECT v.rule FROM violations v JOIN sites s ON s.id = v.site_id "
                                     "WHERE s.key = 'calx' AND v.end_time IS NOT NULL")} == {"ph-min", "ph-max"}
    assert wait_until(calx_judged, 30)
    assert wait_until(lambda: live["p"].evaluated >= 60, 30)
    time.sleep(1.0)          # anything the evaluator would still do for calw

    [(src, person, reason, by, a, b, n)] = _q(db, "SELECT w.source, w.person, w.reason, w.opened_by, w.start_time, "
                                                  "w.end_time, w.sensor_id FROM maintenance_windows w")
    assert (src, person, reason, by) == ("mqtt", "J. Smith", "calibration", "device site-calw")
    assert int(a.timestamp() * 1000) == t0 + 10 * MIN_MS and int(b.timestamp() * 1000) == t0 + 17 * MIN_MS
    quality = dict(_q(db, "SELECT (extract(epoch FROM r.time) * 1000)::int8, r.quality FROM readings r "
                          "JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id WHERE t.key = 'calw'"))
    inside = {t0 + i * MIN_MS for i in range(*IN_WINDOW)}
    assert {t for t, q in quality.items() if q == MAINTENANCE} == inside
    assert {q for t, q in quality.items() if t not in inside} == {0}
    assert _q(db, "SELECT count(*) FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'calw'")[0][0] == 0
    alerts = _q(db, "SELECT s.key, a.kind, a.rule FROM alerts a JOIN sites s ON s.id = a.site_id ORDER BY a.id")
    assert [a for a in alerts if a[0] == "calw"] == []
    assert {a[2] for a in alerts if a[0] == "calx" and a[1] == "violation"} == {"ph-min", "ph-max"}

    # check --from --to says the same, and lists the window
    r = cli(live["tmp"], db, "check", "--from", _iso(t0), "--to", _iso(t0 + 30 * MIN_MS), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "calw" not in "\n".join(ln for ln in r.stdout.splitlines() if "maintenance window" not in ln)
    assert "calx" in r.stdout
    assert "maintenance window 1: calw/ph" in r.stdout and "7 readings not judged" in r.stdout


def test_a_window_left_open_past_its_limit_raises_its_alert_until_it_ends(live):
    db = live["db"]
    at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 40 * 60))
    r = cli(live["tmp"], db, "maintenance", "start", "calo/ph", "--reason", "repair", "--person", "R. Doe", "--at", at)
    assert r.returncode == 0, r.stderr
    wid = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])

    def alert(state_not="resolved"):
        return _q(db, "SELECT a.rule, a.state, a.summary FROM alerts a WHERE a.rule = 'maintenance-open' "
                      "AND a.state <> %s", (state_not,))
    assert wait_until(lambda: alert() != [], 30)
    [(rule, state, summary)] = alert()
    assert f"maintenance window {wid}" in summary and "left open" in summary, summary
    r = cli(live["tmp"], db, "maintenance", "end", str(wid))
    assert r.returncode == 0, r.stderr
    # the condition over, the alert resolved after the hold-off ([alerts] hold_off_s = 1 here)
    assert wait_until(lambda: alert() == [] and alert("open") != [], 30)


def test_a_grab_sample_half_a_ph_from_the_sensor_and_an_overdue_calibration_alert_in_run(live):
    """Run after the calibration test: calw's probe read 7.0 at minutes 17-29. An inspector's
    grab of 7.5 at minute 22 is 0.5 pH from it (tolerance 0.3): a sensor-drift alert with
    both numbers; calx's grab of 7.2 at minute 22 is within it: compared, no alert. calo's
    probe installed on 2026-01-01 and calibrated every 14 days, never since: overdue, a
    finding from 2026-01-16 and its alert."""
    db, tmp, t0 = live["db"], live["tmp"], live["t0"]
    at = _iso(t0 + 22 * MIN_MS)
    for site, value in (("calw", "7.5"), ("calx", "7.2")):
        r = cli(tmp, db, "grab", "record", "--site", site, "--parameter", "ph", "--value", value, "--at", at)
        assert r.returncode == 0, r.stderr
    r = cli(tmp, db, "instruments", "set", "calo/ph", "--make", "Hach", "--serial", "P-9", "--installed", "2026-01-01",
            "--every", "14")
    assert r.returncode == 0, r.stderr

    def alerts(rule):
        return _q(db, "SELECT s.key, a.summary, a.details FROM alerts a JOIN sites s ON s.id = a.site_id "
                      "WHERE a.rule = %s", (rule,))
    assert wait_until(lambda: alerts("sensor-drift") != [] and alerts("calibration-overdue") != [], 30)
    [(site, summary, details)] = alerts("sensor-drift")
    assert site == "calw" and "sensor drift" in summary
    assert "grab pH 7.50 pH (field reading" in details["detail"] and "against the sensor's 7.00 pH" in details["detail"]
    assert "0.50 pH apart, tolerance 0.3 pH: the sensor is drifting" in details["detail"]
    checks = dict(_q(db, "SELECT s.key, g.drifted FROM grab_checks g JOIN sensors se ON se.id = g.sensor_id "
                         "JOIN sites s ON s.id = se.site_id"))
    assert checks == {"calw": True, "calx": False}
    [(site, summary, details)] = alerts("calibration-overdue")
    assert site == "calo" and "calibration was due 2026-01-15" in details["detail"]
    assert wait_until(lambda: _q(db, "SELECT occurred FROM findings WHERE kind = 'calibration-overdue'") != [], 30)
    [(occurred,)] = _q(db, "SELECT occurred FROM findings WHERE kind = 'calibration-overdue'")
    assert str(occurred) == "2026-01-16"


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
