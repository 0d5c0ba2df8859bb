"""``sewerwatch run`` as a subprocess: alerts on the console and a webhook, ``sewerwatch
status`` while it runs (the acknowledgement page of ``[web]`` among its components), SIGTERM or
Ctrl-C (SIGINT) writes everything and exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid

import numpy as np
import psycopg
import pytest

import simulators
from alerts.catchers import WebhookCatcher
from sewerwatch.services.scratch import free_port
from support import HISTORIC, HISTORIC_TOML, count, mqtt_client, publish_all, village_toml, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sw(cfg_path, *args, **kw):
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg_path), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, **kw)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_run_alerts_status_and_clean_stop(db, services, tmp_path, stop):
    site = "run-" + uuid.uuid4().hex[:8]
    hook = WebhookCatcher().start()
    state = tmp_path / "state"
    cfg = village_toml(tmp_path / "village.toml", site, db_url=db.url, mqtt_url=services.mqtt_urls["collector"],
                       state=state, name="Run test village", site_name="Acme Plating", interval_s=None, console=True,
                       alerts="hold_off_s = 600", contacts=[("Hook", hook.url("/run"))],
                       extra=HISTORIC_TOML + f"[web]\nport = {(port := free_port())}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    assert _sw(cfg, "db", "migrate", env=env).returncode == 0            # writes the site and sensor
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60")
    out = open(tmp_path / "run.out", "w")
    err = open(tmp_path / "run.err", "w")
    proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "run", "--client-id",
                             f"test-{site}"], stdout=out, stderr=err, cwd=ROOT, env=env)
    pub = None
    try:
        status_file = state / "run-status.json"
        assert wait_until(lambda: status_file.is_file(), 30), open(tmp_path / "run.err").read()
        assert wait_until(lambda: "subscribed" in open(tmp_path / "run.err").read(), 10)
        s = simulators.generate("acid-dump", step_s=60, devices=1)
        ms = (s.times * 1000).astype(np.int64)
        ph = s.values["ph"][0]
        msgs = [(f"sewerwatch/{site}/ph", json.dumps({"u": "pH", "t": ms[a:a + 20].tolist(),
                                                     "v": ph[a:a + 20].tolist()})) for a in range(600, 700, 20)]
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        publish_all(pub, msgs)
        assert wait_until(lambda: len(hook.received("/run")) == 1, 15)
        assert wait_until(lambda: json.loads(status_file.read_text())["readings"]["accepted"] == 100, 10)
        st = _sw(cfg, "status", "--json", env=env)
        assert st.returncode == 0, st.stderr
        js = json.loads(st.stdout)
        assert js["run"]["running"] is True and js["run"]["collectors"]["mqtt_connected"] is True
        assert [a["kind"] for a in js["open_alerts"]] == ["violation"]
        text = _sw(cfg, "status", env=env).stdout
        assert "run: running" in text and "open alerts: 1" in text and "Acme Plating" in text
        # [web]: the acknowledgement page is a component, and the alert carries its link
        assert js["run"]["components"]["web"]["healthy"] is True
        assert re.search(rf"\n  web +alive .*healthy; listening on http://127.0.0.1:{port}, links to "
                         rf"http://127.0.0.1:{port}/ack/", text), text
        link = re.search(r"Acknowledge from your phone: (\S+)", hook.received("/run")[0]["body"]["message"]).group(1)
        assert link.startswith(f"http://127.0.0.1:{port}/ack/")
        proc.send_signal(stop)
        assert proc.wait(30) == 0
    finally:
        if pub is not None:
            pub.loop_stop()
            pub.disconnect()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hook.stop()
        out.close()
        err.close()
    console = open(tmp_path / "run.out").read()
    assert console.count("[sewerwatch] VIOLATION #1") == 1 and "Acme Plating" in console
    # the link is a capability: withheld from the console and the log, its key only in the state folder
    token = link.rsplit("/", 1)[1]
    assert "/ack/<token withheld>" in console and token not in console + open(tmp_path / "run.err").read()
    assert json.loads((state / "secrets.json").read_text())["keys"]["ack_links"] not in cfg.read_text()
    assert "run: stopped; 100 readings accepted, 100 inserted" in open(tmp_path / "run.err").read()
    assert count(db.url, "SELECT count(*) FROM readings") == 100
    final = json.loads((state / "run-status.json").read_text())
    assert final["running"] is False
    js = json.loads(_sw(cfg, "status", "--json", env=env).stdout)
    assert js["run"]["running"] is False and len(js["open_alerts"]) == 1


def test_stop_writes_every_batch_the_writer_still_held(db, services, tmp_path):
    from foundation import config as sw_config
    from sewerwatch.pipeline import Background, Pipeline
    from support import add_site_and_sensors

    site = "flush-" + uuid.uuid4().hex[:8]
    add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    cfg = sw_config.from_dict({"alerts": {"console": False, "mqtt": False, "digest_at": False}, "ingest": HISTORIC},
                              "<test>")
    # the writer waits up to 30 s for a batch to grow: the readings are still in memory at stop
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=None, spool_dir=tmp_path / "spool", client_id=f"test-{site}", max_delay=30.0)
    bg = Background(p)
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    try:
        assert p.ingest.mqtt.wait_subscribed(10)
        wait_until(lambda: False, 0.3)
        t0 = 1_780_290_000_000
        publish_all(pub, [(f"sewerwatch/{site}/ph", json.dumps(
            {"u": "pH", "t": [t0 + k * 1000 + j * 100_000 for k in range(100)], "v": [7.0 + k / 1000 for k in range(100)]}))
            for j in range(30)])
        assert wait_until(lambda: p.ingest.sink.accepted == 3000 and p.evaluated == 3000, 10)
        assert count(db.url, "SELECT count(*) FROM readings") == 0
    finally:
        pub.loop_stop()
        pub.disconnect()
        bg.stop()
    assert count(db.url, "SELECT count(*) FROM readings") == 3000
