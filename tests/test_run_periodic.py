"""``sewerwatch run``'s periodic rounds: the enforcement items that fall overdue and the permit
reminders are alerted from the running pipeline, each once, to the primary contacts; a
restarted run does not take them up as its own (it would resolve them after its hold-off).

The real pipeline (Pipeline in Background) on the test database, with a real SMTP catcher
(aiosmtpd) as the superintendent's and the president's mailboxes; no MQTT collector (the
rounds need none)."""

from __future__ import annotations

import time
from datetime import date, datetime
from zoneinfo import ZoneInfo

import psycopg
import pytest

from enforcement import reports
from foundation import config as sw_config
from limits.permit_store import import_permit
from limits.permits import load_permit
from sewerwatch.pipeline import Background, Pipeline
from support import wait_until
from test_permits_db import PERMITS, sites

TZ = "America/Chicago"
#: the run's clock starts at noon on 2026-12-01 in the village (candy's term ends in 45 days)
OFFSET_S = datetime(2026, 12, 1, 12, tzinfo=ZoneInfo(TZ)).timestamp() - time.time()


def _pipeline(cfg, db, tmp_path):
    p = Pipeline(cfg, owner_url=db.url, ingest_url=db.urls["ingest"], mqtt_url=None, notifier_url=None,
                 spool_dir=tmp_path / "spool", state_dir=tmp_path / "state", client_id="test-periodic",
                 tick_s=0.05, clock=lambda: time.time() + OFFSET_S, enforcement_first_s=0.0)
    return p, Background(p)


def test_run_alerts_enforcement_items_and_permit_reminders_once_and_keeps_them_across_a_restart(db, tmp_path):
    pytest.importorskip("aiosmtpd")
    from alerts.catchers import MailCatcher

    mail = MailCatcher().start()
    try:
        cfg = sw_config.from_dict({
            "utility": {"name": "Test village", "timezone": TZ},
            "alerts": {"console": False, "mqtt": False, "digest_at": False, "hold_off_s": 0.5, "contacts": [
                {"name": "Superintendent", "urls": [mail.url("super@village.example")]},
                {"name": "Village President", "urls": [mail.url("president@village.example")],
                 "escalation": True}]}}, "<test>")
        with db.connect() as conn:
            sites(conn)
            for n in ("plating", "sausage", "candy"):
                import_permit(conn, load_permit(PERMITS / f"{n}.toml"), actor="t")
            reports.require(conn, "plating", "self-monitoring", date(2026, 4, 30))   # long overdue
            conn.commit()

        p, bg = _pipeline(cfg, db, tmp_path)
        try:
            # two permit reminders (candy's renewal, sausage expired) and the overdue report
            assert wait_until(lambda: len(mail.to("super@village.example")) >= 3, 20)
            assert wait_until(lambda: p.reminded_on == date(2026, 12, 1), 10)
            st = p.status()
            assert st["components"]["enforcement"]["healthy"] and st["components"]["reminders"]["healthy"]
            assert st["permit_reminders_on"] == "2026-12-01"
            time.sleep(1.0)      # further enforcement rounds and reminder checks: nothing new
        finally:
            bg.stop()
        subjects = sorted(m["subject"] for m in mail.to("super@village.example"))
        assert len(subjects) == 3, subjects
        assert mail.to("president@village.example") == []          # reminders go to the primary contacts
        with psycopg.connect(db.url) as conn:
            rows = conn.execute("SELECT id, kind, rule, state FROM alerts ORDER BY id").fetchall()
            attempts = conn.execute("SELECT alert_id, status FROM alert_notifications ORDER BY id").fetchall()
        assert sorted((k, r, s) for _i, k, r, s in rows) == [
            ("enforcement", "report-overdue", "notified"), ("permit", "permit-expired", "notified"),
            ("permit", "permit-renewal", "notified")]
        enf = next(i for i, k, *_ in rows if k == "enforcement")
        assert (enf, "sent") in attempts        # the run's delivery recorded against the enforcement alert

        # a restart: the reminders and the enforcement item are not the manager's to resolve
        p2, bg2 = _pipeline(cfg, db, tmp_path)
        try:
            time.sleep(2.0)      # well past the 0.5 s hold-off
            assert all(key[0] not in ("permit", "enforcement") for key in p2.manager.active)
        finally:
            bg2.stop()
        with psycopg.connect(db.url) as conn:
            states = conn.execute("SELECT kind, state FROM alerts ORDER BY id").fetchall()
        assert [s for _k, s in states] == ["notified"] * 3, states
        assert len(mail.to("super@village.example")) == 3           # nothing sent twice
    finally:
        mail.stop()
