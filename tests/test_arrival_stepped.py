"""A logger flushing its buffer with a clock an hour behind.

Through the real broker into a real ``sewerwatch run`` (a subprocess, the real TimescaleDB),
two sites' devices each send ten pH 7 readings and then thirty of pH 2, one second apart by
their stamps, stamped an hour behind the collector's clock, all at once:

* ``fresh``: the sensor's first readings;
* ``stepped``: the device sent 20 readings with its clock right first; then the clock steps
  back an hour, the buffer is flushed, and the device goes on sending twice a second, an
  hour behind, for 12 s (every batch of it late: the sensor's judgement again must not wait
  for the stream to pause).

Each dump is alerted within 5 s of its readings being stored, as one ``violations`` row and
one alert of one episode, equal to what ``sewerwatch check --from --to`` finds over the
stored readings; the stepped clock is a clock-skew alert naming the offset within 5 s of
the flushed batch (not only once a steady offset is learned), and ``status`` shows it for
that sensor.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg

from support import close_all, count, mqtt_client, publish_all, sensors_toml, wait_until

ROOT = Path(__file__).resolve().parent.parent
HOUR = 3600.0


def _sw(cfg, *args, env, timeout=60):
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def _flush(pub, topic: str) -> tuple[list[int], list[float]]:
    """Ten pH 7 then thirty pH 2, one second apart, the newest stamped an hour behind now:
    published all at once (QoS 1, waited for)."""
    newest = time.time() - HOUR
    stamps = [int((newest - 39 + k) * 1000) for k in range(40)]
    values = [7.0] * 10 + [2.0] * 30
    publish_all(pub, [(topic, json.dumps({"t": t, "v": v, "u": "pH"})) for t, v in zip(stamps, values)])
    return stamps, values


def test_a_flushed_batch_of_a_clock_an_hour_behind_is_judged_alerted_and_said(db, services, tmp_path):
    u = uuid.uuid4().hex[:6]
    fresh, stepped = f"fresh-{u}", f"stepped-{u}"
    state = tmp_path / "state"
    text = (f'[utility]\nname = "Flushed village"\npack = "palmyra-wi"\ntimezone = "America/Chicago"\n'
            f'[services]\ndb_url = "{db.url}"\nmqtt_url = "{services.mqtt_urls["collector"]}"\nstate_dir = "{state}"\n'
            f'[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\nhold_off_s = 60\nno_data_after_s = 3600\n')
    for s in (fresh, stepped):
        text += f'[[sites]]\nid = "{s}"\nname = "{s}"\n' + sensors_toml(s, {"ph": ("ph", "pH")}) + "interval_s = 1.0\n"
    cfg = tmp_path / "village.toml"
    cfg.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    mig = _sw(cfg, "db", "migrate", env=env, timeout=120)
    assert mig.returncode == 0, mig.stderr
    err = open(tmp_path / "run.err", "w")
    proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "run", "--quiet",
                             "--client-id", f"test-{u}"], stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
    pub = None
    sent = {fresh: 0, stepped: 0}
    stored_sql = ("SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id "
                  "JOIN sites t ON t.id = s.site_id WHERE t.key = %s")
    alert_sql = ("SELECT count(*) FROM alerts a JOIN sites t ON t.id = a.site_id WHERE t.key = %s AND a.kind = %s "
                 "AND a.rule = %s")
    try:
        assert wait_until(lambda: "subscribed" in open(tmp_path / "run.err").read(), 60), \
            open(tmp_path / "run.err").read()
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{u}")
        # the stepped device first sends with its clock right
        now = time.time()
        publish_all(pub, [(f"sewerwatch/{stepped}/ph", json.dumps({"t": int((now - 20 + k) * 1000), "v": 7.0,
                                                                   "u": "pH"})) for k in range(20)])
        sent[stepped] += 20
        assert wait_until(lambda: count(db.url, stored_sql, (stepped,)) == 20, 20)
        time.sleep(1.5)

        # both flush their buffers, an hour behind, at once
        _flush(pub, f"sewerwatch/{fresh}/ph")
        last = _flush(pub, f"sewerwatch/{stepped}/ph")[0][-1]
        sent[fresh] += 40
        sent[stepped] += 40
        stored_at: dict[str, float] = {}
        alerted_at: dict[tuple[str, str], float] = {}

        def watch():
            end = time.time() + 30
            while time.time() < end and len(alerted_at) < 3:
                for s in (fresh, stepped):
                    if s not in stored_at and count(db.url, stored_sql, (s,)) >= sent[s]:
                        stored_at[s] = time.time()
                    if (s, "violation") not in alerted_at and count(db.url, alert_sql, (s, "violation", "ph-min")):
                        alerted_at[(s, "violation")] = time.time()
                if (stepped, "skew") not in alerted_at and count(db.url, alert_sql,
                                                                  (stepped, "sensor-health", "clock-skew")):
                    alerted_at[(stepped, "skew")] = time.time()
                time.sleep(0.05)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        # the stepped device goes on an hour behind, twice a second: every batch of it is late
        for k in range(24):
            time.sleep(0.5)
            publish_all(pub, [(f"sewerwatch/{stepped}/ph", json.dumps({"t": last + 500 * (k + 1), "v": 7.0,
                                                                       "u": "pH"}))])
        # (the stored count watched for the stepped site is the flush's: 60 readings)
        watcher.join(30)
        sent[stepped] += 24
        assert wait_until(lambda: all(count(db.url, stored_sql, (s,)) == n for s, n in sent.items()), 20)
        for s in (fresh, stepped):
            assert s in stored_at and (s, "violation") in alerted_at, (s, stored_at, alerted_at)
            latency = alerted_at[(s, "violation")] - stored_at[s]
            print(f"\n{s}: alerted {latency:.2f} s after its flushed readings were stored")
            assert latency <= 5.0, (s, latency)
        skew_latency = alerted_at.get((stepped, "skew"), float("inf")) - stored_at[stepped]
        print(f"stepped clock: clock-skew alert {skew_latency:.2f} s after the flushed readings were stored")
        assert skew_latency <= 5.0, alerted_at

        def shown():
            out = _sw(cfg, "status", env=env).stdout
            line = next((x for x in out.splitlines() if x.strip().startswith(f"{stepped}/ph: ")), "")
            return re.search(r"CLOCK SKEW: stamps (\d+) s behind the collector's clock", line)
        assert wait_until(shown, 20, step=0.5)
        assert abs(int(shown().group(1)) - HOUR) <= 5
        proc.terminate()
        assert proc.wait(60) == 0
    finally:
        close_all(pub, proc, err)

    with psycopg.connect(db.url) as conn:
        detail = conn.execute(
            "SELECT a.details->>'detail' FROM alerts a JOIN sites t ON t.id = a.site_id WHERE t.key = %s "
            "AND a.rule = 'clock-skew'", (stepped,)).fetchall()
        live = {}
        for site, rule, start, end in conn.execute(
                "SELECT t.key, v.rule, v.start_time, v.end_time FROM violations v JOIN sites t ON t.id = v.site_id "
                "WHERE v.source = 'stream' ORDER BY v.start_time"):
            live.setdefault(site, []).append((rule, start, end))
        episodes = dict(conn.execute(
            "SELECT t.key, sum(a.episodes) FROM alerts a JOIN sites t ON t.id = a.site_id WHERE a.kind = 'violation' "
            "GROUP BY t.key").fetchall())
    assert len(detail) == 1 and re.search(r"stamped 3[56]\d\d s behind", detail[0][0]), detail
    assert "stepped back" in detail[0][0], detail
    assert episodes == {fresh: 1, stepped: 1}, episodes
    frm = datetime.fromtimestamp(time.time() - 3 * HOUR, timezone.utc).isoformat()
    to = datetime.fromtimestamp(time.time() + 60, timezone.utc).isoformat()
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--from", frm, "--to", to, "--db-url", db.url,
                          "--json", "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    batch = {}
    for r in json.loads(out.stdout):
        batch.setdefault(r["site"], []).append((r["rule"], datetime.fromisoformat(r["start"].replace("Z", "+00:00")),
                                                datetime.fromisoformat(r["end"].replace("Z", "+00:00"))))
    for s in (fresh, stepped):
        assert len(live.get(s, [])) == len(batch[s]) == 1, (s, live.get(s), batch[s])
        (rule, start, end), (b_rule, b_start, b_end) = live[s][0], batch[s][0]
        assert (rule, start) == (b_rule, b_start) == ("ph-min", start)
        # the stepped device's later readings closed its episode; the fresh one's is still open
        # (no reading after it yet), where check ends it at its last reading
        assert (end is None) == (s == fresh), (s, end)
        assert end is None or abs((end - b_end).total_seconds()) <= 1.0, (s, end, b_end)
