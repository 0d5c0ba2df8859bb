"""Reminders of grease devices coming due, through ``sewerwatch fog reminders send|list``
against the test database, mailed to a real SMTP server (aiosmtpd) and read back.

The village (dated from today, T, in America/Chicago, the test config's zone; every device an
interceptor taken on by the program on T - 80):

- R0001 Rose Cafe, every 90 days, never pumped: due T - 80 + 90 = T + 10. Contact
  rose@cafe.example; Badger Grease Service hired for it (office address badger@haul.example).
- R0002 Birch Bakery, the same schedule (due T + 10), no contact address; Badger hired.
- R0003 Cedar Grill, every 90 days, pumped on T - 50 by Lakeshore Pumping (so it is hired for
  it): due T + 40. Contact cedar@grill.example. Lakeshore has no office address but a person in
  the portal, lee@lake.example.
- R0004 Dune Diner, every 30 days, never pumped: due T - 50, overdue (a finding, no reminder).

The program's window is 14 days: R0001 and R0002 are due within it (10 days), R0003 (40) is
not. So the first sending mails 3 reminders (Rose; Badger twice, one per device) and lists one
without an address (Birch's contact); a second sending mails nothing (3 sent before);
``--ahead 45`` adds R0003's two (Cedar, Lee): 2 sent, 3 before.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from enforcement_support import run
from portal_http import wait_mail, no_more_mail

HEADER = "licence,name,address,contact,category,device,kind,capacity_gal,liquid_depth_in,location,installed," \
         "interval_days"


@pytest.fixture
def mail():
    from alerts.catchers import MailCatcher
    m = MailCatcher().start()
    yield m
    m.stop()


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path, mail):
    (tmp_path / "village.toml").write_text(
        web_round.CONFIG + f'\n[web]\nmail_url = "mailto://127.0.0.1:{mail.port}?from=grease@palmyra.example"\n',
        encoding="utf-8")
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    rows = [HEADER] + [f"{lic},{name},{n} Main St,{contact},restaurant,GI-1,interceptor,1000,48,rear yard,"
                       f"2020-06-01,{every}" for n, (lic, name, contact, every) in enumerate(
                           (("R0001", "Rose Cafe", "Rosa Reyes", 90), ("R0002", "Birch Bakery", "", 90),
                            ("R0003", "Cedar Grill", "Cy Cedar", 90), ("R0004", "Dune Diner", "", 30)), 1)]
    (tmp_path / "licences.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return tmp_path, today


def ok(tmp, db, *args):
    r = run(tmp, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def seed(tmp, db, today) -> None:
    from identity import accounts
    from portal_support import ADMIN, PASSWORD

    ok(tmp, db, "fog", "import", "licences.csv", "--registered", str(today - timedelta(days=80)), "--commit")
    ok(tmp, db, "fog", "hauler", "add", "Badger Grease Service", "--licence", "WI-GH-101")
    ok(tmp, db, "fog", "hauler", "add", "Lakeshore Pumping", "--licence", "WI-GH-202")
    ok(tmp, db, "fog", "hauler", "email", "WI-GH-101", "badger@haul.example")
    for lic in ("R0001", "R0002"):
        ok(tmp, db, "fog", "hauler", "assign", "WI-GH-101", "--establishment", lic)
    ok(tmp, db, "fog", "pumpout", "add", "--establishment", "R0003", "--date", str(today - timedelta(days=50)),
       "--hauler", "WI-GH-202", "--gallons", "900", "--fog-depth", "4", "--solids-depth", "3", "--facility",
       "Palmyra WWTP", "--manifest", "C-1")
    ok(tmp, db, "fog", "contact", "R0001", "--email", "rose@cafe.example")
    ok(tmp, db, "fog", "contact", "R0003", "--email", "cedar@grill.example")
    with psycopg.connect(db.url, autocommit=True) as conn:
        accounts.add(conn, "lee", "Lee Lakeshore", None, PASSWORD, actor=ADMIN, kind="grease-hauler",
                     hauler="WI-GH-202", portal={"email": "lee@lake.example"})


def test_reminders_are_mailed_once_per_device_and_due_date(db, village, mail):
    tmp, today = village
    seed(tmp, db, today)
    due = today + timedelta(days=10)
    # a dry run: who would get what, nothing mailed, nothing recorded
    out = ok(tmp, db, "fog", "reminders", "send", "--dry-run")
    assert f"reminders of the devices due from {today} to {today + timedelta(days=14)}: 3 would be sent " \
           "(nothing was sent: a dry run), 0 sent before, 1 without an address" in out
    assert f"R0002 Birch Bakery, GI-1 due {due}: the establishment Birch Bakery <no address on record>" in out
    assert "Dune Diner" not in out and "Cedar Grill" not in out
    assert no_more_mail(mail, "rose@cafe.example", 0)
    # sent: Rose once, Badger once per device
    out = ok(tmp, db, "fog", "reminders", "send")
    assert "3 sent, 0 sent before, 1 without an address" in out
    rose = wait_mail(mail, "rose@cafe.example")
    badger = wait_mail(mail, "badger@haul.example", 2)
    assert rose[0]["subject"] == (f"Village of Palmyra: the grease interceptor GI-1 at Rose Cafe is due to be pumped "
                                  f"by {due:%B} {due.day}, {due.year}")
    text = rose[0]["body"]
    assert text.startswith("Rosa Reyes,") and "1 Main St" in text and "every 90 days" in text
    assert "no pump-out of it is on record" in text and "§13.51" in text and "registered with the village" in text
    assert sorted("Birch Bakery" in m["subject"] for m in badger) == [False, True]
    assert all(m["body"].startswith("Badger Grease Service,") and "report the pump-out" in m["body"]
               for m in badger)
    for m in rose + badger:       # the utility's words: no key, file or rule name of ours
        for word in ("fog_", "palmyra-wi", ".toml", "reminder_days", "None"):
            assert word not in m["body"] + m["subject"]
    # again: nothing mailed twice, each said with when it was sent
    out = ok(tmp, db, "fog", "reminders", "send")
    assert "0 sent, 3 sent before, 1 without an address" in out and "sent before, not again:" in out
    assert no_more_mail(mail, "rose@cafe.example", 1) and no_more_mail(mail, "badger@haul.example", 2)
    # a wider window: the grill's contact and the hauler's person in the portal
    got = json.loads(ok(tmp, db, "fog", "reminders", "send", "--ahead", "45", "--json"))
    assert sorted(m["to"] for m in got["sent"]) == ["cedar@grill.example", "lee@lake.example"]
    assert len(got["skipped"]) == 3 and got["to"] == str(today + timedelta(days=45))
    lee = wait_mail(mail, "lee@lake.example")
    assert lee[0]["body"].startswith("Lakeshore Pumping,") and "Cedar Grill" in lee[0]["subject"]
    assert f"it was last pumped on {today - timedelta(days=50):%B} {(today - timedelta(days=50)).day}" \
        in lee[0]["body"]
    # the log: when, to whom, by whom
    listed = ok(tmp, db, "fog", "reminders", "list")
    assert len(listed.splitlines()) == 5 and "hauler <lee@lake.example>" in listed
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT address, due_on FROM fog_reminders ORDER BY address").fetchall()
    assert rows == [("badger@haul.example", due), ("badger@haul.example", due),
                    ("cedar@grill.example", today + timedelta(days=40)), ("lee@lake.example",
                                                                           today + timedelta(days=40)),
                    ("rose@cafe.example", due)]


def test_reminders_refuse_bad_input_in_one_line(db, village, mail):
    tmp, today = village
    seed(tmp, db, today)
    r = run(tmp, db, "fog", "reminders", "send", "--ahead", "soon")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "days ahead: expected a whole number of days, got 'soon'" in r.stderr
    r = run(tmp, db, "fog", "reminders", "send", "--ahead", "400")
    assert r.returncode == 2 and "days ahead: expected 0 to 365 days, got 400" in r.stderr
    r = run(tmp, db, "fog", "contact", "R0001", "--email", "rose@cafe.example, eve@x.example")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "e-mail address" in r.stderr
    r = run(tmp, db, "fog", "contact", "Z0009", "--email", "z@z.example")
    assert r.returncode == 2 and "no establishment with licence 'Z0009'" in r.stderr
    # no mail server: refused, nothing recorded
    (tmp / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    r = run(tmp, db, "fog", "reminders", "send")
    assert r.returncode == 2 and "no mail server is set up" in r.stderr
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM fog_reminders").fetchone()[0] == 0
