"""An alert that calls for the discharger's report goes to the industrial user's emergency
contact from the address book, through a real SMTP catcher (aiosmtpd), beside the utility's
own contacts; a user with no emergency contact on file gets nothing new (the utility is told
as before). The pH readings: 7.0, 7.1, then 4.0, 3.9, 4.2 (below the palmyra-wi minimum of
6.0, §13.48(2)(g)): one episode, peak 3.9, a report owed (§13.49, the pack's report duty)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import psycopg

from alerts.catchers import MailCatcher
from alerts.channels import AppriseChannel, Route
from alerts.episodes import LiveEpisodes, sensors_from_db
from alerts.manager import AlertManager
from foundation import config as sw_config
from foundation.actor import Actor
from identity import contacts
from support import add_site_and_sensors

T0 = 1_780_290_000_000_000          # 2026-06-01 05:00 UTC [us]
MIN = 60_000_000


def _push(ev, sid, values):
    n = len(values)
    t = T0 + np.arange(n) * MIN
    return ev.push(np.full(n, sid), t, np.asarray(values, float), np.zeros(n, np.int16))


def _wait(mail, address, n=1, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and len(mail.to(address)) < n:
        time.sleep(0.1)
    return mail.to(address)


def _acid_dump(db, mail, add_contacts) -> None:
    """The site ``plant`` (and ``other``) with a pH sensor each, ``add_contacts(conn)`` run, and
    ``run``'s alert manager fed the readings of the module's docstring; the utility's own
    contact is super@palmyra.example."""
    ids = add_site_and_sensors(db.url, "plant", {"ph": ("ph", "pH")})
    add_site_and_sensors(db.url, "other", {"ph": ("ph", "pH")})
    with psycopg.connect(db.url, autocommit=True) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60")
        add_contacts(conn)
        sensors = sensors_from_db(conn)
        sites = {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites")}
    cfg = sw_config.from_dict({"utility": {"name": "Village of Palmyra", "timezone": "America/Chicago"},
                               "alerts": {"digest_at": False},
                               "web": {"mail_url": f"mailto://127.0.0.1:{mail.port}?from=office@palmyra.example"}},
                              "<test>")
    staff = Route(AppriseChannel(mail.url("super@palmyra.example"), "Superintendent"))
    ev = LiveEpisodes(sensors)

    async def scenario():
        m = await AlertManager(cfg, db.url, [staff], sites).start()
        await m.idle()                  # the address book read (off the loop, never waited for by an alert)
        await m.on_episodes(*_push(ev, ids["ph"], [7.0, 7.1, 4.0, 3.9, 4.2]))
        await m.idle()
        await m.close()
    asyncio.run(scenario())


def test_the_report_request_goes_to_the_emergency_contact(db):
    def book(conn):
        contacts.add_contact(conn, "plant", {"full_name": "Night Desk", "roles": "emergency",
                                             "phone": "608-555-0199", "email": "night@plant.example"},
                             actor=Actor("pat", "cli"))
        contacts.add_contact(conn, "plant", {"full_name": "Bo Banks", "roles": "billing",
                                             "email": "ap@plant.example"}, actor=Actor("pat", "cli"))

    mail = MailCatcher().start()
    try:
        _acid_dump(db, mail, book)
        told = _wait(mail, "night@plant.example")
        assert len(told) == 1
        body = told[0]["body"]
        assert told[0]["subject"].startswith("Village of Palmyra: report required, plant, pH")
        assert "pH 3.9" in body and "§13.49" in body and "Complete and return:" in body
        assert "Location of discharge" in body
        assert "/ack/" not in body and "sewerwatch" not in body      # no capability of the staff's, no command
        assert _wait(mail, "super@palmyra.example")                   # the utility's contact, as before
        assert mail.to("ap@plant.example") == []                     # billing is not the emergency contact
        with psycopg.connect(db.url) as conn:
            sent = conn.execute("SELECT contact FROM alert_notifications WHERE error IS NULL ORDER BY contact").fetchall()
        assert [c for (c,) in sent] == ["Night Desk", "Superintendent"]
    finally:
        mail.stop()


def test_no_emergency_contact_no_new_mail(db):
    mail = MailCatcher().start()
    try:
        _acid_dump(db, mail, lambda conn: None)
        assert len(_wait(mail, "super@palmyra.example")) == 1
        time.sleep(0.5)
        assert [m["to"] for m in mail.messages] == [["super@palmyra.example"]]
    finally:
        mail.stop()
