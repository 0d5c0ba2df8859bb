"""``sewerwatch run`` reading the ordinances closer: the 20-minute slug at 5.2 x
normal flow is one 20-minute episode in the live pipeline too, a permit's stricter pH limit
alerts with the permit's citation, and the sensors without a slug baseline are known.

The real pipeline (sewerwatch/pipeline.py, Pipeline in Background) with Mosquitto, the MQTT
collector, the streaming evaluator and the alert manager; each test its own database and
site (the session broker is shared)."""

from __future__ import annotations

import json
import uuid
from datetime import date

import numpy as np
import psycopg

from foundation import config as sw_config
from limits.permit_store import import_permit
from limits.permits import parse_permit
from support import add_site_and_sensors, mqtt_client, publish_all, wait_until
from test_alerts_e2e import _start

T0_MS = 1_780_000_000_000          # 2026-05-28T20:26:40Z


def _setup(db, sensors):
    site = "run16-" + uuid.uuid4().hex[:8]
    ids = add_site_and_sensors(db.url, site, sensors)
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60 WHERE id = ANY(%s)", (list(ids.values()),))
    # the slug test's flow meter reads one value for 25 h of readings before the slug: a true
    # flatline by [alerts] flatline_after_s's default (1 h), raised or not by when the health
    # check runs; these tests are about the ordinance's rules, so the flatline limit is 2 days
    cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                               "alerts": {"console": False, "mqtt": False, "digest_at": False,
                                          "flatline_after_s": 2 * 86400.0}}, "<test>")
    return site, ids, cfg


def _batches(site, sensor, unit, values, start_ms=T0_MS, chunk=120):
    t = start_ms + np.arange(len(values), dtype=np.int64) * 60_000
    return [(f"sewerwatch/{site}/{sensor}", json.dumps({"u": unit, "t": t[a:a + chunk].tolist(),
                                                          "v": [float(x) for x in values[a:a + chunk]]}))
            for a in range(0, len(values), chunk)]


def test_run_reports_the_20_minute_slug_at_5_2_times_normal_flow_as_one_episode(db, services, tmp_path):
    site, ids, cfg = _setup(db, {"flow": ("flow", "gpm")})
    p, bg = _start(cfg, db, services, tmp_path, site)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    vals = np.r_[np.full(25 * 60, 100.0), np.full(20, 520.0), np.full(30, 100.0)]
    try:
        publish_all(pub, _batches(site, "flow", "gpm", vals[:60]))
        # a flow meter with fewer than 24 hours of readings and no permit: no baseline yet
        assert wait_until(lambda: p.evaluated >= 60, 15)
        assert bg.call(_async(p.episodes.without_baseline)) == [
            {"sensor_id": ids["flow"], "site": site, "sensor": "flow", "note": "slug not judged: no baseline yet"}]
        assert p.status()["slug_without_baseline"] == bg.call(_async(p.episodes.without_baseline))
        publish_all(pub, _batches(site, "flow", "gpm", vals[60:], start_ms=T0_MS + 60 * 60_000))

        def closed():
            with psycopg.connect(db.url) as conn:
                return conn.execute("SELECT count(*) FROM violations WHERE rule = 'slug' AND end_time IS NOT NULL"
                                    ).fetchone()[0] >= 1
        assert wait_until(closed, 30)
        assert bg.call(_async(p.episodes.without_baseline)) == []
        assert p.episodes.dropped_late == 0
    finally:
        pub.loop_stop()
        pub.disconnect()
        bg.stop()
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT rule, start_time, end_time, limit_value, peak, evidence FROM violations").fetchall()
        alerts = conn.execute("SELECT kind, rule FROM alerts").fetchall()
    assert len(rows) == 1, rows
    rule, start, end, limit, peak, evidence = rows[0]
    k = 25 * 60
    assert rule == "slug" and int(start.timestamp() * 1000) == T0_MS + k * 60_000
    assert (end - start).total_seconds() == 1200.0            # 20 minutes, one episode
    assert limit == 500.0 and peak == 520.0 and evidence["average"] == 100.0
    assert alerts == [("violation", "slug")]


def test_run_judges_a_permits_stricter_limit_and_cites_the_permit(db, services, tmp_path):
    site, ids, cfg = _setup(db, {"ph": ("ph", "pH"), "flow": ("flow", "gpm")})
    with psycopg.connect(db.url) as conn:
        import_permit(conn, parse_permit(
            {"number": "PAL-RUN-1", "site": site, "pack": "palmyra-wi", "issued": date(2026, 1, 1),
             "effective": date(2026, 1, 1), "expires": date(2026, 12, 31), "flow": {"average_daily_gpd": 144000},
             "limits": [{"condition": "4", "parameter": "ph", "unit": "pH", "minimum": 6.5, "words": "pH at least 6.5."}]},
            "run-permit.toml"), actor="test")
    p, bg = _start(cfg, db, services, tmp_path, site)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    try:
        # pH 6.3 for 3 minutes: lawful under "lower than 6.0", a violation of the permit's 6.5
        publish_all(pub, _batches(site, "ph", "pH", np.r_[np.full(10, 7.0), np.full(3, 6.3), np.full(5, 7.0)])
                    + _batches(site, "flow", "gpm", np.full(18, 100.0)))
        assert wait_until(lambda: p.evaluated >= 36, 15)

        def closed():
            with psycopg.connect(db.url) as conn:
                return conn.execute("SELECT count(*) FROM violations WHERE end_time IS NOT NULL").fetchone()[0] >= 1
        assert wait_until(closed, 15)
        # the flow meter has the permit's average daily flow (100 gpm) as its baseline already
        assert bg.call(_async(p.episodes.without_baseline)) == []
    finally:
        pub.loop_stop()
        pub.disconnect()
        bg.stop()
    with psycopg.connect(db.url) as conn:
        [(rule, citation, limit, peak)] = conn.execute("SELECT rule, citation, limit_value, peak FROM violations").fetchall()
        [(summary, details)] = conn.execute("SELECT summary, details FROM alerts WHERE kind = 'violation'").fetchall()
    assert (rule, citation, limit, peak) == ("ph-min", "Permit PAL-RUN-1, condition 4", 6.5, 6.3)
    assert details["applies"] == "permit" and "stricter than Village of Palmyra Code §13.48(2)(g)" in details["stricter_of"]


async def _async(fn):
    return fn()
