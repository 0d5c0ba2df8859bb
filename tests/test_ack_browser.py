"""Acknowledging an alert from a phone, in a real headless Chromium.

The acid dump goes through Mosquitto, the collector, the evaluator and the alert manager of
``sewerwatch run``'s pipeline to a real SMTP server (aiosmtpd); the link in the received
e-mail is opened in Debian's Chromium driven by selenium (Debian's chromedriver; the session's
one browser, ``browser`` in ``conftest.py``), at a phone's width; a name and a note are typed and the form sent. Then no escalation mail goes
out after ``escalate_after``, the alert row shows the acknowledgement, the used link says
so, an expired link says so, and a changed one is refused.

``SEWERWATCH_WRITE_PREVIEWS=1`` also writes the page's screenshot to
``alerts/previews/ack-page.png`` (the guide shows it:
``docs/office/acknowledge.md``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from itsdangerous.encoding import base64_decode, base64_encode

from alerts.catchers import MailCatcher
from alerts.links import AckLinks
from foundation.config import WebOptions
from sewerwatch.services.scratch import free_port
from support import add_site_and_sensors, mqtt_client, publish_all, wait_until
from test_alerts_e2e import _messages, _scenario, _setup, _start

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402 - after the skip

#: A phone's viewport [CSS px].
PHONE = (412, 915)
PREVIEW = Path(__file__).resolve().parents[1] / "alerts" / "previews" / "ack-page.png"


def test_link_in_the_mail_acknowledges_from_a_phone_and_escalation_stops(db, services, tmp_path, caplog, chromium):
    for name in ("sewerwatch", "uvicorn"):         # what the service logs (not selenium's own requests)
        caplog.set_level(logging.DEBUG, logger=name)
    mail = MailCatcher().start()
    chromium.phone(PHONE)
    driver = chromium.driver
    try:
        contacts = [{"name": "Superintendent", "urls": [mail.url("super@village.example")]},
                    {"name": "Village President", "urls": [mail.url("president@village.example")], "escalation": True}]
        escalate_s = 8.0
        site, ids, cfg = _setup(db, tmp_path, contacts, hold_off_s=1.0, escalate_after_min=escalate_s / 60)
        port = free_port()
        cfg = replace(cfg, web=WebOptions(port=port, public_url=f"http://127.0.0.1:{port}/"))
        p, bg = _start(cfg, db, services, tmp_path, site)
        other = _other_open_alert(db)
        pub = mqtt_client(services.mqtt_urls["device"], f"pub-{site}")
        try:
            assert wait_until(lambda: p.web.listening is not None, 10)
            publish_all(pub, _messages(site, _scenario(), 600, 645))
            assert wait_until(lambda: len(mail.to("super@village.example")) >= 1, 15)
            opened = next(iter(p.manager.active.values())).opened
            body = mail.to("super@village.example")[0]["body"]
            url = re.search(r"Acknowledge from your phone: (\S+)", body).group(1)
            assert url.startswith(f"http://127.0.0.1:{port}/ack/") and "(works once, until " in body
            aid = _row(db)[0]

            driver.get(url)
            text = driver.find_element(By.TAG_NAME, "body").text
            assert f"Acknowledge alert #{aid}" in driver.find_element(By.ID, "acknowledge").text
            assert "Acme Plating" in text and "Limit\nlower than 6 pH" in text and "Started\n2026-06-01 10:3" in text
            assert "Village of Palmyra Code §13.48(2)(g)" in text and "CDT" in text
            assert driver.execute_script("return document.documentElement.scrollWidth") <= PHONE[0]  # no sideways scroll
            # the other open alert is listed, below the link's, without a form of its own
            assert f"#{other} No data: flow at Palmyra Brewing" in text and "brewery/flow" in text
            assert text.index(f"#{aid} ") < text.index(f"#{other} ") and len(driver.find_elements(By.TAG_NAME, "form")) == 1
            assert _row(db)[2] is None                                  # opening the link acknowledged nothing
            driver.find_element(By.ID, "name").send_keys("Pat Jones")
            driver.find_element(By.ID, "note").send_keys("Called the plant: neutralising tank bypassed, closed.")
            shot = tmp_path / "ack-page.png"
            width, height = chromium.screenshot(shot)
            assert width == PHONE[0] and height > 600
            if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
                PREVIEW.parent.mkdir(exist_ok=True)
                shutil.copy(shot, PREVIEW)
            driver.find_element(By.ID, "acknowledge").click()
            assert wait_until(lambda: "is acknowledged by Pat Jones" in driver.find_element(By.ID, "message").text, 5)
            acked_after = time.time() - opened
            assert acked_after < escalate_s - 2, f"acknowledged only {acked_after:.1f} s after the alert opened"

            # past escalate_after: nothing went to the escalation contact, the manager knows
            time.sleep(max(0.0, opened + escalate_s + 2.0 - time.time()))
            assert mail.to("president@village.example") == []
            assert next(iter(p.manager.active.values())).acknowledged
            assert p.status()["components"]["web"]["acknowledged"] == 1

            # the same link again: used, by whom and when
            driver.get(url)
            text = driver.find_element(By.TAG_NAME, "body").text
            assert "This link has been used" in text and f"Alert #{aid} was acknowledged with this link by Pat Jones" in text
            assert not driver.find_elements(By.ID, "ack-form")
            # a genuine link of this utility, 25 hours old
            key = json.loads((tmp_path / "secrets.json").read_text())["keys"]["ack_links"]
            old = AckLinks(key, f"http://127.0.0.1:{port}", 24 * 3600.0, clock=lambda: time.time() - 25 * 3600)
            driver.get(old.url(aid, None, "open"))
            text = driver.find_element(By.TAG_NAME, "body").text
            assert "This link has expired" in text and f"sewerwatch alerts ack {aid} --by NAME" in text
            # changed: the mail's link made to name another alert
            token = url.rsplit("/", 1)[1]
            payload, rest = token.split(".", 1)
            other = json.dumps({**json.loads(base64_decode(payload)), "a": aid + 1}, separators=(",", ":"))
            driver.get(f"http://127.0.0.1:{port}/ack/{base64_encode(other).decode()}.{rest}")
            assert "This link is not valid" in driver.find_element(By.TAG_NAME, "body").text
        finally:
            pub.loop_stop()
            pub.disconnect()
            bg.stop()
        aid_, state, by, note, escalated = _row(db)
        assert (state, by, note, escalated) == ("acknowledged", "Pat Jones",
                                                "Called the plant: neutralising tank bypassed, closed.", None)
        assert mail.to("president@village.example") == []
        logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("sewerwatch", "uvicorn")))
        assert token not in logged and "/ack/<token withheld>" in logged
    finally:
        mail.stop()


def _row(db):
    """The violation alert: id, state, acknowledged by, note, escalated at."""
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT id, state, acknowledged_by, ack_note, escalated_at FROM alerts "
                            "WHERE kind = 'violation'").fetchone()


def _other_open_alert(db) -> int:
    """An open no-data alert of another site (as an earlier run left it)."""
    ids = add_site_and_sensors(db.url, "brewery", {"flow": ("flow", "gpm")})
    rec = {"rule": "no-data", "site": "brewery", "sensor": "flow", "since": "2026-06-01T14:55:00Z",
           "detail": "no reading for 15 min (expected every 60 s)"}
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sites SET name = 'Palmyra Brewing' WHERE key = 'brewery'")
        return conn.execute(
            "INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details, opened_at) "
            "SELECT 'sensor-health', site_id, id, 'no-data', 'notified', 'Palmyra Brewing: flow no data', %s, "
            "'2026-06-01T14:55:00Z' FROM sensors WHERE id = %s RETURNING id",
            (json.dumps(rec), ids["flow"])).fetchone()[0]
