"""End to end: the acid-dump scenario through Mosquitto, the MQTT collector, the streaming
evaluator and the alert manager, to a local SMTP server (aiosmtpd) and webhooks.

Each test has its own database (``db``), its own site key and MQTT client ids (the session
broker is shared by parallel runs) and runs the real pipeline in-process.
"""

from __future__ import annotations

import json
import socket
import uuid

import numpy as np
import psycopg
import pytest

import simulators
from alerts.catchers import MailCatcher, WebhookCatcher
from sewerwatch import cli
from foundation import config as sw_config
from sewerwatch.pipeline import Background, Pipeline
from support import HISTORIC, add_site_and_sensors, mqtt_client, publish_all, wait_until

pytest.importorskip("aiosmtpd")

ACID_FROM, ACID_TO = 630, 660        # indices of the acid dump's readings below pH 6.0 (1-min steps)


def _scenario():
    return simulators.generate("acid-dump", step_s=60, devices=1)


def _messages(site: str, s, lo: int, hi: int, chunk: int = 30):
    """(topic, payload) batches of the scenario's readings with index in [lo, hi)."""
    out = []
    ms = (s.times * 1000).astype(np.int64)
    for sensor in ("flow", "ph", "temperature"):
        vals = s.values[sensor][0]
        for a in range(lo, hi, chunk):
            b = min(hi, a + chunk)
            out.append((f"sewerwatch/{site}/{sensor}",
                        json.dumps({"u": s.units[sensor], "t": ms[a:b].tolist(), "v": vals[a:b].tolist()})))
    return out


def _setup(db, tmp_path, contacts, **alerts):
    site = "acid-" + uuid.uuid4().hex[:8]
    ids = add_site_and_sensors(db.url, site, {"flow": ("flow", "gpm"), "ph": ("ph", "pH"),
                                              "temperature": ("temperature", "degF")})
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60 WHERE id = ANY(%s)", (list(ids.values()),))
        conn.execute("UPDATE sites SET name = 'Acme Plating' WHERE key = %s", (site,))
    cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"}, "ingest": HISTORIC,
                               "alerts": {"console": False, "mqtt": False, "digest_at": False, "contacts": contacts,
                                                          **alerts}},
                              "<test>")
    return site, ids, cfg


def _start(cfg, db, services, tmp_path, site, notifier=None):
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=services.mqtt_urls["collector"],
                 notifier_url=notifier, spool_dir=tmp_path / "spool", client_id=f"test-{site}", tick_s=0.05)
    bg = Background(p)
    assert p.ingest.mqtt.wait_subscribed(10)
    return p, bg


def _alert_rows(db):
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT id, kind, state, rule, notified_at, escalated_at, acknowledged_by, resolved_at, "
                            "episodes FROM alerts ORDER BY id").fetchall()


def test_acid_dump_one_email_escalation_then_resolution(db, services, tmp_path):
    mail = MailCatcher().start()
    try:
        contacts = [{"name": "Superintendent", "urls": [mail.url("super@village.example")]},
                    {"name": "Village President", "urls": [mail.url("president@village.example")], "escalation": True}]
        site, ids, cfg = _setup(db, tmp_path, contacts, hold_off_s=1.0, escalate_after_min=2.0 / 60)
        p, bg = _start(cfg, db, services, tmp_path, site)
        s = _scenario()
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        try:
            # up to the middle of the dump: the episode is open
            publish_all(pub, _messages(site, s, 560, 645))
            assert wait_until(lambda: len(mail.to("super@village.example")) >= 1, 15)
            first = mail.to("super@village.example")[0]
            assert "VIOLATION" in first["subject"] and "Acme Plating" in first["subject"]
            body = first["body"]
            assert "Limit:       lower than 6 pH" in body                      # limit with units
            assert "2026-06-01 10:3" in body and "CDT" in body               # local time, village zone
            assert "13.48(2)(g)" in body                                     # the citation
            assert "sewerwatch check --from" in body                         # how to see the readings
            assert "Corrective actions" in body and "Concentration and volume" in body  # the §240-6 form
            # the ordinance by its title and section, not the seed file
            assert "Village of Palmyra Code §13.49" in body                   # Palmyra's duty to report
            assert "Ordinance:   Village of Palmyra Code §13.48(2)(g)" in body and ".txt" not in body
            peak = float(body.split("Value:")[1].split()[0])
            assert peak == pytest.approx(s.values["ph"][0][ACID_FROM:645].min(), abs=1e-3)
            # unacknowledged: escalation to the second list, once
            assert wait_until(lambda: len(mail.to("president@village.example")) >= 1, 15)
            assert "ESCALATED" in mail.to("president@village.example")[0]["subject"]
            # the rest of the day: the episode ends, the hold-off passes, the resolution follows
            publish_all(pub, _messages(site, s, 645, 760))
            assert wait_until(lambda: any("RESOLVED" in m["subject"] for m in mail.to("super@village.example")), 15)
            bg.call(p.manager.idle())
        finally:
            pub.loop_stop()
            pub.disconnect()
            bg.stop()
        sup = mail.to("super@village.example")
        assert [("VIOLATION" in m["subject"], "RESOLVED" in m["subject"]) for m in sup] == [(True, False), (False, True)]
        assert len(mail.to("president@village.example")) == 2      # escalation, then the resolution
        rows = _alert_rows(db)
        assert len(rows) == 1
        aid, kind, state, rule, notified, escalated, acked, resolved, episodes = rows[0]
        assert (kind, state, rule, acked, episodes) == ("violation", "resolved", "ph-min", None, 1)
        assert notified and escalated and resolved
        with psycopg.connect(db.url) as conn:
            v = conn.execute("SELECT rule, start_time, end_time, source, peak FROM violations").fetchall()
            audit = [r[0] for r in conn.execute("SELECT action FROM audit_log WHERE object = %s ORDER BY id",
                                                (f"alert:{aid}",))]
            sent = conn.execute("SELECT event, status, contact FROM alert_notifications WHERE alert_id = %s "
                                "ORDER BY id", (aid,)).fetchall()
        assert len(v) == 1 and v[0][0] == "ph-min" and v[0][3] == "stream" and v[0][2] is not None
        assert int(v[0][1].timestamp()) == int(s.times[ACID_FROM])
        assert audit[:3] == ["alert-open", "notification-sent", "alert-notified"]
        assert audit.count("notification-sent") == 4                 # open, escalate, resolve to both lists
        assert "alert-escalated" in audit and "alert-resolved" in audit
        assert sorted(sent) == sorted([("open", "sent", "Superintendent"), ("escalate", "sent", "Village President"),
                                       ("resolve", "sent", "Superintendent"), ("resolve", "sent", "Village President")])
    finally:
        mail.stop()


def test_acknowledgement_stops_escalation(db, services, tmp_path, monkeypatch):
    mail = MailCatcher().start()
    try:
        contacts = [{"name": "Superintendent", "urls": [mail.url("super@village.example")]},
                    {"name": "Village President", "urls": [mail.url("president@village.example")], "escalation": True}]
        site, ids, cfg = _setup(db, tmp_path, contacts, hold_off_s=1.0, escalate_after_min=3.0 / 60)
        p, bg = _start(cfg, db, services, tmp_path, site)
        s = _scenario()
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        try:
            publish_all(pub, _messages(site, s, 600, 645))
            assert wait_until(lambda: len(mail.to("super@village.example")) >= 1, 15)
            aid = _alert_rows(db)[0][0]
            monkeypatch.setenv("SEWERWATCH_DB_URL", db.url)
            assert cli.main(["alerts", "ack", str(aid), "--by", "Pat Jones", "--note", "called the plant"]) == 0
            assert cli.main(["alerts", "ack", str(aid), "--by", "Again"]) == 2      # only once
            # well past the escalation time: nothing goes to the second list
            import time
            time.sleep(4.5)
            assert mail.to("president@village.example") == []
            assert _alert_rows(db)[0][2] == "acknowledged"
            publish_all(pub, _messages(site, s, 645, 700))
            assert wait_until(lambda: any("RESOLVED" in m["subject"] for m in mail.to("super@village.example")), 15)
            bg.call(p.manager.idle())
        finally:
            pub.loop_stop()
            pub.disconnect()
            bg.stop()
        resolved = [m for m in mail.to("super@village.example") if "RESOLVED" in m["subject"]][0]
        assert "Acknowledged by Pat Jones" in resolved["body"] and "called the plant" in resolved["body"]
        rows = _alert_rows(db)
        assert len(rows) == 1 and rows[0][2] == "resolved" and rows[0][5] is None and rows[0][6] == "Pat Jones"
        assert mail.to("president@village.example") == []
    finally:
        mail.stop()


def test_failing_webhooks_are_retried_and_recorded(db, services, tmp_path):
    flaky = WebhookCatcher(fail_first=2).start()
    good = WebhookCatcher().start()
    dead = WebhookCatcher()
    dead_url = dead.url("/dead")
    dead.stop()                                        # nothing listens there any more
    silent = socket.create_server(("127.0.0.1", 0))     # takes the connection, never answers
    try:
        contacts = [{"name": "Flaky hook", "urls": [flaky.url("/flaky")]},
                    {"name": "Dead hook", "urls": [dead_url]},
                    {"name": "Silent hook", "urls": [f"json://127.0.0.1:{silent.getsockname()[1]}/silent"]},
                    {"name": "Good hook", "urls": [good.url("/good")]}]
        site, ids, cfg = _setup(db, tmp_path, contacts, hold_off_s=30.0, escalate_after_min=30.0,
                                retry_attempts=3, retry_backoff_s=0.05)
        p, bg = _start(cfg, db, services, tmp_path, site, notifier=services.mqtt_urls["notifier"])
        p.manager.send_timeout_s = 0.5                  # not the 60 s of a real run
        s = _scenario()
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        try:
            publish_all(pub, _messages(site, s, 600, 640))
            assert wait_until(lambda: len(good.received()) >= 1 and len(flaky.received()) >= 1, 15)
            bg.call(p.manager.idle())
        finally:
            pub.loop_stop()
            pub.disconnect()
            bg.stop()
        assert len(good.received()) == 1 and len(flaky.received()) == 1
        assert [x["status"] for x in flaky.posts] == [500, 500, 200]
        hook = flaky.received()[0]["body"]
        assert "VIOLATION" in hook["title"] and "ph-min" in hook["message"]
        with psycopg.connect(db.url) as conn:
            rows = conn.execute("SELECT contact, attempt, status, error FROM alert_notifications "
                                "ORDER BY contact, attempt").fetchall()
            failed = conn.execute("SELECT detail FROM audit_log WHERE action = 'notification-failed'").fetchall()
        by = {}
        for contact, attempt, status, error in rows:
            by.setdefault(contact, []).append((attempt, status, error is not None))
        assert by["Flaky hook"] == [(1, "failed", True), (2, "failed", True), (3, "sent", False)]
        assert by["Dead hook"] == [(1, "failed", True), (2, "failed", True), (3, "failed", True)]
        assert by["Silent hook"] == [(1, "failed", True), (2, "failed", True), (3, "failed", True)]
        assert by["Good hook"] == [(1, "sent", False)]
        assert sorted((f[0]["contact"], f[0]["attempts"]) for f in failed) == [("Dead hook", 3), ("Silent hook", 3)]
        # each failure keeps its reason: the receiver's status, that nothing listens, that it never answered
        reasons = {(c, a): e for c, a, _, e in rows if e is not None}
        assert all("500" in reasons[("Flaky hook", a)] for a in (1, 2)), reasons
        assert all("connection" in reasons[("Dead hook", a)].lower() for a in (1, 2, 3)), reasons
        assert all(reasons[("Silent hook", a)] == "no answer from the service within 0.5 s" for a in (1, 2, 3)), reasons
        assert not any("Error:" in e for e in reasons.values()), reasons     # shown on the alert's page
    finally:
        flaky.stop()
        good.stop()
        silent.close()


def test_mqtt_alert_channel(db, services, tmp_path):
    site, ids, cfg = _setup(db, tmp_path, [], hold_off_s=30.0)
    cfg = sw_config.from_dict({**cfg.raw, "alerts": {**cfg.raw["alerts"], "mqtt": True}}, "<test>")
    got = []
    sub = mqtt_client(services.mqtt_urls["admin"], f"sub-{site}")
    sub.on_message = lambda c, u, m: got.append((m.topic, json.loads(m.payload)))
    sub.subscribe(f"sewerwatch-alerts/{site}/#", qos=1)
    p, bg = _start(cfg, db, services, tmp_path, site, notifier=services.mqtt_urls["notifier"])
    pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
    try:
        publish_all(pub, _messages(site, _scenario(), 620, 640))
        assert wait_until(lambda: len(got) >= 1, 15)
    finally:
        for c in (pub, sub):
            c.loop_stop()
            c.disconnect()
        bg.stop()
    topic, msg = got[0]
    assert topic == f"sewerwatch-alerts/{site}/violation"
    assert msg["event"] == "open" and msg["rule"] == "ph-min" and msg["record"]["site"] == site
    assert msg["record"]["peak"] < 6.0


def test_a_backlog_queued_while_run_was_down_is_judged_on_start(db, services, tmp_path):
    """The acid dump happens while `sewerwatch run` is down; its persistent session keeps the
    messages at the broker. On start the backlog is judged from its first reading: one alert.
    (The pipeline taps the sink before any collector starts; on this machine the race that
    ordering closes is too narrow for this test to catch on its own.)"""
    hook = WebhookCatcher().start()
    try:
        site, ids, cfg = _setup(db, tmp_path, [{"name": "Hook", "urls": [hook.url("/hook")]}],
                                hold_off_s=60.0, escalate_after_min=60.0)
        p, bg = _start(cfg, db, services, tmp_path, site)   # creates the persistent session
        bg.stop()
        s = _scenario()
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        try:
            publish_all(pub, _messages(site, s, ACID_FROM - 5, ACID_FROM + 10, chunk=5))  # queued at the broker
        finally:
            pub.loop_stop()
            pub.disconnect()
        p, bg = _start(cfg, db, services, tmp_path, site)
        try:
            assert wait_until(lambda: len(hook.posts) >= 1, 15)
            bg.call(p.manager.idle())
        finally:
            bg.stop()
        assert [r[3] for r in _alert_rows(db)] == ["ph-min"]
        with psycopg.connect(db.url) as conn:
            start = conn.execute("SELECT start_time FROM violations").fetchone()[0]
        assert int(start.timestamp()) == int(s.times[ACID_FROM])   # judged from the first queued reading
    finally:
        hook.stop()
