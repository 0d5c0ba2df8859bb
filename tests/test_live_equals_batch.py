"""Live episodes equal batch episodes: one pH scenario played through ``sewerwatch
run`` as single messages one second apart, as batches, and over Modbus polls gives the same
``violations`` (count, starts, ends within one sample interval, days of violation) as
``sewerwatch check --from --to`` over the same stored readings, and one episode is one
alert's one episode (before: pH 3.0 sent once a second gave 21 one-second rows).

The same scenario with its batches published out of order (each pair
swapped), and in order but for eleven readings in the middle of an episode sent last (live
sees two episodes, then the late readings join them into one: the row continues, the second
is withdrawn, the alert counts one episode), gives the same rows too."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg

from foundation import config as sw_config
from sewerwatch.db import sync
from sewerwatch.pipeline import Background, Pipeline
from sewerwatch.services.scratch import free_port
from support import ServedDevice, close_all, count, mqtt_client, publish_all, wait_until

ROOT = Path(__file__).resolve().parent.parent
TZ = "America/Chicago"        # palmyra-wi's time zone: days of violation are counted in it


def _scenario(now: float) -> tuple[list[int], list[float]]:
    """pH one reading a second over six minutes across the last local midnight: an episode of
    30 s, one of a single reading, one across midnight (two days of violation), two split
    by a 10 s gap, and normal readings at the end (every episode closed)."""
    midnight = datetime.fromtimestamp(now, ZoneInfo(TZ)).replace(hour=0, minute=0, second=0, microsecond=0)
    base_ms = int((midnight - timedelta(seconds=180)).timestamp() * 1000)
    times, values = [], []
    for k in range(360):
        if 250 <= k < 260:
            continue                                   # the device was silent: a gap
        v = 7.0 + 0.01 * (k % 5)
        if 60 <= k < 90 or 240 <= k < 270:
            v = 5.0
        elif k == 120:
            v = 5.5
        elif 170 <= k < 200:
            v = 4.0
        times.append(base_ms + 1000 * k)
        values.append(v)
    return times, values


def test_single_messages_batches_and_modbus_polls_give_the_episodes_check_gives(db, services, tmp_path):
    u = uuid.uuid4().hex[:6]
    single, batch, modbus = f"single-{u}", f"batch-{u}", f"modbus-{u}"
    reordered, late = f"reordered-{u}", f"late-{u}"
    port = free_port()
    device = ServedDevice(port, "acid-dump")
    cfg = sw_config.from_dict({
        "utility": {"name": "Equal village", "pack": "palmyra-wi", "timezone": TZ},
        "sites": [{"id": s, "name": s} for s in (single, batch, modbus, reordered, late)],
        "devices": [{"id": f"{modbus}-mh1", "site": modbus, "port": port, "unit_id": 1, "interval_s": 1.0}],
        # no interval_s for the MQTT sensors: learned from their first readings
        "sensors": [{"site": single, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"},
                    {"site": batch, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"},
                    {"site": modbus, "name": "ph", "parameter": "ph", "unit": "pH", "source": "modbus",
                     "device": f"{modbus}-mh1"},
                    {"site": reordered, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"},
                    {"site": late, "name": "ph", "parameter": "ph", "unit": "pH", "source": "mqtt"}],
        "modbus": {"flush_s": 0.2},
        "alerts": {"console": False, "mqtt": False, "digest_at": False, "hold_off_s": 600.0,
                   "no_data_after_s": 3600}}, "<test>")
    with psycopg.connect(db.url) as conn:
        sync.sync(conn, cfg)
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp_path / "spool", client_id=f"test-{u}", tick_s=0.05, routes=[])
    bg = Background(p)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{u}")
    times, values = _scenario(time.time())
    src = device.sim.source
    stored_of = ("SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id "
                 "WHERE t.key = %s")
    normal, dump = src.start + 9 * 3600, src.start + 10.75 * 3600     # acid-dump: pH 3.5 from 10:30 to 11:00
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        time.sleep(0.3)
        publish_all(pub, [(f"sewerwatch/{single}/ph", json.dumps({"t": t, "v": v, "u": "pH"}))
                          for t, v in zip(times, values)])
        publish_all(pub, [(f"sewerwatch/{batch}/ph", json.dumps({"u": "pH", "t": times[a:a + 25],
                                                                 "v": values[a:a + 25]}))
                          for a in range(0, len(times), 25)])
        # batches of 25, each pair swapped: the first of a pair arrives after the second
        starts = list(range(0, len(times), 25))
        swapped = [x for k in range(0, len(starts), 2) for x in reversed(starts[k:k + 2])]
        for a in swapped:
            publish_all(pub, [(f"sewerwatch/{reordered}/ph", json.dumps({"u": "pH", "t": times[a:a + 25],
                                                                         "v": values[a:a + 25]}))])
        # in order, but readings 175-185 (inside the episode across midnight) come last
        held = set(range(175, 186))
        publish_all(pub, [(f"sewerwatch/{late}/ph", json.dumps({"t": t, "v": v, "u": "pH"}))
                          for k, (t, v) in enumerate(zip(times, values)) if k not in held])
        late_id = next(i for i, (site, _, _) in p.sensor_names.items() if site == late)
        ev = p.episodes.evaluators[p.episodes.pack_of[late_id]]
        assert wait_until(lambda: ev.latest(late_id) == times[-1] * 1000, 60)      # judged up to its newest
        publish_all(pub, [(f"sewerwatch/{late}/ph", json.dumps({"t": times[k], "v": values[k], "u": "pH"}))
                          for k in sorted(held)])
        assert wait_until(lambda: p.episodes.rejudged >= 1 and not p.episodes.late_waiting, 60)
        for at, seconds in ((normal, 4), (dump, 6), (normal, 4), (dump, 3), (normal, 4)):
            device.loop.call_soon_threadsafe(device.sim.update, at)
            time.sleep(seconds)
        stored = "SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id " \
                 "WHERE t.key = %s"
        assert wait_until(lambda: all(count(db.url, stored, (x,)) == len(times)
                                      for x in (single, batch, reordered, late)), 60)
        assert wait_until(lambda: p.episodes.learning == [] and not p.episodes.late_waiting
                          and len(p.manager.outbox) == 0, 60)
        time.sleep(1.0)
        bg.call(p.manager.idle())
    finally:
        close_all(pub, bg, device)

    with psycopg.connect(db.url) as conn:
        ids = dict(conn.execute("SELECT t.key, s.id FROM sensors s JOIN sites t ON t.id = s.site_id"))
        intervals = dict(conn.execute("SELECT t.key, s.interval_s FROM sensors s JOIN sites t ON t.id = s.site_id"))
        live = {}
        for site, rule, start, end, days in conn.execute(
                "SELECT t.key, v.rule, v.start_time, v.end_time, v.days_of_violation FROM violations v "
                "JOIN sites t ON t.id = v.site_id WHERE v.source = 'stream' ORDER BY v.start_time"):
            live.setdefault(site, []).append((rule, start, end, days))
        alerts = conn.execute("SELECT t.key, a.episodes FROM alerts a JOIN sites t ON t.id = a.site_id "
                              "WHERE a.kind = 'violation'").fetchall()
    assert intervals == {single: 1.0, batch: 1.0, modbus: 1.0, reordered: 1.0, late: 1.0}   # learned, stored
    frm = datetime.fromtimestamp(times[0] / 1000 - 3600, timezone.utc).isoformat()
    to = datetime.fromtimestamp(time.time() + 60, timezone.utc).isoformat()
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--from", frm, "--to", to, "--db-url", db.url,
                          "--json", "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    batch_eps = {}
    for r in json.loads(out.stdout):
        batch_eps.setdefault(r["site"], []).append(
            (r["rule"], datetime.fromisoformat(r["start"].replace("Z", "+00:00")),
             datetime.fromisoformat(r["end"].replace("Z", "+00:00")), r["days_of_violation"]))
    assert len(batch_eps[single]) == 5 and len(batch_eps[modbus]) == 2
    assert [e[3] for e in batch_eps[single]] == [1, 1, 2, 1, 1]          # one episode across midnight
    for site in (single, batch, modbus, reordered, late):
        got, want = live[site], sorted(batch_eps[site], key=lambda e: e[1])
        assert [(r, s, d) for r, s, _, d in got] == [(r, s, d) for r, s, _, d in want], site
        for (_, _, end, _), (_, _, want_end, _) in zip(got, want):
            assert end is not None and abs((end - want_end).total_seconds()) <= 1.0, (site, end, want_end)
    # one episode is one alert's one episode: every episode counted once, never split
    per_site = {}
    for site, episodes in alerts:
        per_site[site] = per_site.get(site, 0) + episodes
    assert per_site == {single: 5, batch: 5, modbus: 2, reordered: 5, late: 5}
    # the late site: judged again, the two episodes live saw are one (the row continued)
    assert p.episodes.arrivals.counts[ids[late]]["late"] == len(held)      # about three minutes behind
