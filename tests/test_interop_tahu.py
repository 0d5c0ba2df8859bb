"""Eclipse Tahu's JavaScript ``sparkplug-client`` (from the npm
registry, installed by setup) as an edge node of sewerwatch, its primary host, against a real
``sewerwatch run`` subprocess, the embedded Mosquitto and TimescaleDB.

The edge node (``tests/interop/tahu_edge.js``) publishes 700 samples of five metrics at 50
a second with the site's own broker account: pH as Double and four temperatures as Int8,
Int16, Int32 and Int64, most of them negative; births with names and aliases, data with
aliases only, some payloads compressed with DEFLATE or GZIP; one sequence number skipped
near the end (a message "lost"), which sewerwatch answers with a rebirth request the node
honours. ``run`` is restarted (SIGTERM, start again) mid-stream: its offline STATE has the
node buffer, its online STATE has it publish new births and its history (``is_historical``).
Counted: every value published is stored exactly once, exact (the temperatures converted to
°F by hand), or is in a dead letter whose reason says why (the message after the skipped
sequence number, and any data that came before the rebirth); nothing else; the history was
judged in order (nothing dropped as late by the evaluator).
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
import uuid
from urllib.parse import unquote, urlsplit

import pytest

from sewerwatch import services as sw_services
from interop_support import INTEROP, ROOT, clean_env, dead_letters, need_npm_package, sparkplug_metrics, start_run, stored
from support import own_broker_village, wait_until

SENSORS = {"ph": ("ph", "pH"), "t8": ("temperature", "degC"), "t16": ("temperature", "degC"),
           "t32": ("temperature", "degC"), "t64": ("temperature", "degC")}
METRIC_SENSOR = {"pH": "ph", "T8": "t8", "T16": "t16", "T32": "t32", "T64": "t64"}
ALIASES = {1: "pH", 2: "T8", 3: "T16", 4: "T32", 5: "T64"}


def _inputs(group: str, site: str) -> str:
    out = f'[[mqtt.inputs]]\ntopic = "spBv1.0/{group}"\nformat = "sparkplug"\n'
    for metric, sensor in METRIC_SENSOR.items():
        out += (f'[[mqtt.inputs.metrics]]\nnode = "tahu1"\ndevice = "probe"\nmetric = "{metric}"\n'
                f'sensor = "{site}/{sensor}"\n')
    return out


def _canonical(metric: str, value: float) -> float:
    return value if metric == "pH" else value * 9 / 5 + 32          # °C -> °F, the canonical unit


def _run_status(state) -> dict:
    try:
        return json.loads((state / "run-status.json").read_text())
    except (OSError, ValueError):
        return {}


def test_tahu_edge_node_loses_nothing_while_run_restarts_mid_stream(db, tmp_path, monkeypatch):
    need_npm_package("sparkplug-client")
    for var in ("SEWERWATCH_MQTT_PORT", "SEWERWATCH_PG_PORT", "SEWERWATCH_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    site, group = "tahu" + uuid.uuid4().hex[:6], "g" + uuid.uuid4().hex[:6]
    cfg_path = tmp_path / "v.toml"
    # the script's STATE watcher is a second connection: an account of its own (an account is one
    # connection on the sites' listener, its client id its name; ``docs/devices/credentials.md``, "No account can take another's identity")
    cfg = own_broker_village(cfg_path, db.url, site, SENSORS, _inputs(group, site), site_extra='mqtt_devices = ["watcher"]\n')
    sw_services.up(cfg, db=False)
    state = cfg.services.state_dir
    log = tmp_path / "run.log"
    cred = sw_services.site_credentials(cfg, site)
    u = urlsplit(cred["mqtt_url"])
    w = urlsplit(cred["devices"]["watcher"])
    edge_cfg = {"url": f"mqtt://{u.hostname}:{u.port}", "username": unquote(u.username),      # the sites' listener
                "password": unquote(u.password), "watcherUsername": unquote(w.username),
                "watcherPassword": unquote(w.password),
                "group": group, "node": "tahu1", "hostId": cfg.sparkplug_host_id, "samples": 700, "rate": 50,
                "skipSeqAt": 680, "timeout_s": 150}
    runs, edge = [], None
    try:
        runs.append(start_run(cfg_path, log, "sw-tahu"))
        assert wait_until(lambda: "STATE online published" in log.read_text() or runs[-1].poll() is not None, 60), \
            log.read_text()[-2000:]
        edge = subprocess.Popen(["node", str(INTEROP / "tahu_edge.js"), json.dumps(edge_cfg)], cwd=INTEROP,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert wait_until(lambda: len(stored(db.url, site)) >= 5 * 60 or edge.poll() is not None, 60)
        runs[-1].terminate()                                     # restarted mid-stream
        assert runs[-1].wait(60) == 0, log.read_text()[-2000:]
        before = len(stored(db.url, site))
        time.sleep(1.0)                                          # the node buffers meanwhile
        runs.append(start_run(cfg_path, log, "sw-tahu"))
        out, err = edge.communicate(timeout=150)
        assert edge.returncode == 0, err[-2000:]
        result = json.loads(out.strip().splitlines()[-1])
        published = {(METRIC_SENSOR[m], t): _canonical(m, v) for m, t, v in result["published"]}
        in_gap = {(METRIC_SENSOR[m], t) for m, t, _ in result["in_gap"]}
        # what is not stored must be in a dead letter: read those back
        in_dead: set = set()

        def settled():
            in_dead.clear()
            for _, _, raw in dead_letters(db.url, f"spBv1.0/{group}/%"):
                try:
                    metrics = sparkplug_metrics(raw)
                except Exception:  # noqa: BLE001 - a dead letter that is no payload holds no sample
                    continue
                for m in metrics:
                    name = m.name if m.HasField("name") else ALIASES.get(m.alias)
                    if name in METRIC_SENSOR:
                        in_dead.add((METRIC_SENSOR[name], m.timestamp))
            return len(stored(db.url, site)) + len(in_dead - set(stored(db.url, site))) >= len(published) + len(in_gap)
        if not wait_until(settled, 60):
            rows = stored(db.url, site)
            missing = (set(published) | in_gap) - set(rows) - in_dead
            raise AssertionError(f"{len(missing)} published values neither stored nor dead letters, e.g. "
                                 f"{sorted(missing)[:5]} (stored {len(rows)}, dead {len(in_dead)}, published "
                                 f"{len(published)}); counts {result['counts']}; missing by sensor {sorted(collections.Counter(k[0] for k in missing).items())}; run log: " + "\n".join(x for x in log.read_text().splitlines() if "STATE" in x or "Sparkplug" in x or "error" in x.lower())[-4000:])
        assert wait_until(lambda: (_run_status(state).get("readings") or {}).get("evaluated", 0) > 0, 20)
        status = _run_status(state)
        text = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg_path), "status"], cwd=ROOT,
                              capture_output=True, text=True, env=clean_env(), timeout=60)
    finally:
        if edge is not None and edge.poll() is None:
            edge.kill()
        for p in runs:
            if p.poll() is None:
                p.terminate()
                p.wait(60)
        sw_services.down(cfg)
    rows = stored(db.url, site)
    counts = result["counts"]
    print(f"\nTahu edge node: {counts}; stored {len(rows)} readings ({before} before the restart), "
          f"{len(in_dead)} samples in dead letters")
    assert counts["host_offline"] >= 1 and counts["host_online"] >= 2 and counts["historical_messages"] >= 1
    assert counts["buffered_max"] > 0 and counts["compressed"] >= 3 and counts["rebirth_requests"] >= 1
    assert counts["longest_session"] > 256                        # the sequence number wrapped after 255
    assert in_gap <= in_dead                                      # the message after the skipped seq
    assert not (set(rows) & in_dead)                              # each reading once: stored or dead, not both
    assert set(rows) | in_dead == set(published) | in_gap         # nothing lost without a trace
    assert len(in_dead - in_gap) <= 5 * 10                        # only data between the gap and the rebirth
    assert {k: rows[k] for k in published if k in rows} == pytest.approx({k: published[k] for k in published
                                                                           if k in rows}, abs=1e-9)
    negative = [k for k in rows if k[0] != "ph" and rows[k] < 32]
    assert len(negative) > 1000                                   # below 0 °C: signed integers read as signed
    reasons = [r for _, r, _ in dead_letters(db.url, f"spBv1.0/{group}/%")]
    assert any(r.startswith("sequence gap: DDATA of") for r in reasons), reasons
    assert all(r.startswith(("sequence gap", "data before birth")) for r in reasons), reasons
    sp = status["components"]["mqtt-network"]["sparkplug"]
    assert sp["host_id"] == "sewerwatch" and sp["historical_metrics"] > 0
    assert status["readings"]["late_not_judged"] == 0             # the history was judged, late or not
    # status: the broker granted the collector's subscriptions, its ACL gives read on each
    assert text.returncode == 0, text.stderr
    assert ("mqtt subscriptions: 2 (sewerwatch/#, spBv1.0/#), each site's topics covered, readable under the "
            "broker's ACL") in text.stdout
    assert "'deadletters replay' stores" not in text.stdout and "Sparkplug B: not replayable" in text.stdout
