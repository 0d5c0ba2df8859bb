"""The simulators play field work through ``sewerwatch run``: the real
pipeline (in the background) with the session's broker and database, fed by ``sewerwatch
simulate`` itself.

``calibration``: a pH probe in buffers 4.00 and 10.00 three minutes each at two sites; the
device at ``cal-window`` opens and ends a maintenance window over MQTT around it (no
violation, no alert, its buffer readings stored with quality 3), the one at ``cal-none``
does not (the violations of today: below 6.0, above 9.0). ``meter-cleaning``: a flow meter
reading 0 for 20 minutes, in a window at ``clean-window`` (the zeros stored with quality 3)
and not at ``clean-none``. One pipeline for both scenarios."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from foundation import config as sw_config
from foundation.quality import MAINTENANCE
from sewerwatch.pipeline import Background, Pipeline
from support import add_site_and_sensors, wait_until

SENSORS = {"flow": ("flow", "gpm"), "ph": ("ph", "pH"), "temperature": ("temperature", "degF")}
#: the scenarios' day: 2026-06-01 -05:00
DAY = datetime(2026, 6, 1, 5, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def live(module_db, services, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("field-sim")
    u = uuid.uuid4().hex[:6]
    sites = {k: f"{k}-{u}" for k in ("cal-window", "cal-none", "clean-window", "clean-none")}
    for s in sites.values():
        ids = add_site_and_sensors(module_db.url, s, SENSORS)
        with psycopg.connect(module_db.url) as conn:
            conn.execute("UPDATE sensors SET interval_s = 60 WHERE id = ANY(%s)", (list(ids.values()),))
    cfg = sw_config.from_dict({"utility": {"name": "Simulated village", "timezone": "America/Chicago"},
                               "ingest": {"max_past_days": 36500.0},
                               "alerts": {"console": False, "mqtt": False, "digest_at": False}}, "<test>")
    p = Pipeline(cfg, owner_url=module_db.url, ingest_url=module_db.urls["ingest"],
                 mqtt_url=services.mqtt_urls["collector"], notifier_url=None, spool_dir=tmp / "spool",
                 client_id=f"field-sim-{u}", tick_s=0.05)
    bg = Background(p)
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        yield {"p": p, "db": module_db, "sites": sites, "url": services.mqtt_urls["device"]}
    finally:
        bg.stop()


def _simulate(live, scenario, offset, sites, duration="2.5"):
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "simulate", "--no-modbus", "--start", "scenario", "--scenario", scenario,
                        "--offset", offset, "--speed", "600", "--duration", duration, "--interval", "60", "--qos", "1",
                        "--devices", "2", "--sites", ",".join(sites), "--mqtt-url", live["url"]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def _q(db, sql, params=()):
    with psycopg.connect(db.url) as conn:
        return conn.execute(sql, params).fetchall()


def _quality(db, site, sensor):
    return dict(_q(db, "SELECT r.time, r.quality FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                       "JOIN sites t ON t.id = s.site_id WHERE t.key = %s AND s.name = %s", (site, sensor)))


def test_a_calibration_in_the_devices_window_raises_nothing_and_without_one_the_violations_of_today(live):
    db, w, n = live["db"], live["sites"]["cal-window"], live["sites"]["cal-none"]
    _simulate(live, "calibration", "08:55", [w, n])        # 08:55 to about 09:20, one reading a minute

    def judged():
        return {r for (r,) in _q(db, "SELECT v.rule FROM violations v JOIN sites s ON s.id = v.site_id WHERE "
                                     "s.key = %s AND v.end_time IS NOT NULL", (n,))} == {"ph-min", "ph-max"}
    assert wait_until(judged, 30)
    assert wait_until(lambda: _q(db, "SELECT count(*) FROM maintenance_windows w JOIN sites s ON s.id = w.site_id "
                                     "WHERE s.key = %s AND w.end_time IS NOT NULL", (w,))[0][0] == 1, 30)
    [(start, end, reason, source, person)] = _q(
        db, "SELECT w.start_time, w.end_time, w.reason, w.source, w.person FROM maintenance_windows w "
            "JOIN sites s ON s.id = w.site_id WHERE s.key = %s", (w,))
    assert (start, end) == (DAY + timedelta(hours=8, minutes=59), DAY + timedelta(hours=9, minutes=7))
    assert (reason, source, person) == ("calibration", "mqtt", "sewerwatch simulator")
    q = _quality(db, w, "ph")
    inside = {t for t in q if start <= t < end}
    assert len(inside) == 8 and {q[t] for t in inside} == {MAINTENANCE}         # 08:59 .. 09:06
    assert {q[t] for t in q if t not in inside} == {0} and len(q) > len(inside)
    assert {v for v in _quality(db, w, "flow").values()} == {0}                 # the window was the probe's only
    assert _q(db, "SELECT count(*) FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = %s", (w,)) == [(0,)]
    assert _q(db, "SELECT count(*) FROM alerts a JOIN sites s ON s.id = a.site_id WHERE s.key = %s", (w,)) == [(0,)]
    assert {r for (r,) in _q(db, "SELECT a.rule FROM alerts a JOIN sites s ON s.id = a.site_id WHERE s.key = %s "
                                 "AND a.kind = 'violation'", (n,))} == {"ph-min", "ph-max"}


def test_a_meter_cleaning_in_the_devices_window_is_stored_with_its_own_code(live):
    db, w, n = live["db"], live["sites"]["clean-window"], live["sites"]["clean-none"]
    _simulate(live, "meter-cleaning", "09:55", [w, n], duration="3.5")      # to about 10:30
    assert wait_until(lambda: _q(db, "SELECT count(*) FROM maintenance_windows w JOIN sites s ON s.id = w.site_id "
                                     "WHERE s.key = %s AND w.end_time IS NOT NULL", (w,))[0][0] == 1, 30)
    zero_w = {t: q for t, q in _quality(db, w, "flow").items()
              if DAY + timedelta(hours=10) <= t < DAY + timedelta(hours=10, minutes=20)}
    assert len(zero_w) == 20 and set(zero_w.values()) == {MAINTENANCE}
    assert wait_until(lambda: len([t for t in _quality(db, n, "flow")
                                   if DAY + timedelta(hours=10) <= t < DAY + timedelta(hours=10, minutes=20)]) == 20, 30)
    zero_n = {t: q for t, q in _quality(db, n, "flow").items()
              if DAY + timedelta(hours=10) <= t < DAY + timedelta(hours=10, minutes=20)}
    assert set(zero_n.values()) == {0}
    with psycopg.connect(db.url) as conn:
        vals = conn.execute("SELECT r.value FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t "
                            "ON t.id = s.site_id WHERE t.key = %s AND s.name = 'flow' AND r.quality = %s",
                            (w, MAINTENANCE)).fetchall()
    assert len(vals) == 22 and sum(v == 0.0 for (v,) in vals) == 20          # 09:59 .. 10:20: the zeros and a minute each side
