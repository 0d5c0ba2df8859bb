"""Retention never drops evidence: past the records period, what a violation, a notice, an SNC
decision or an open enforcement case points to stays; what nothing points to goes; dead
letters and the office's old sessions go after their own days."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from enforcement import holds, notices
from enforcement.guide import load_guide
from enforcement.settings import DEFAULT_GUIDE
from foundation.actor import Actor
from foundation.config import Retention
from lab.documents.pdf import Letterhead
from sewerwatch.db import maintain
from tests.support import add_site_and_sensors

pytestmark = pytest.mark.services

GUIDE = load_guide(DEFAULT_GUIDE)
HEAD = Letterhead("Village of Palmyra (test)", ("123 Main Street",), "Pat Example", "Superintendent")


def kept(conn, sensor: int, since=None, until=None) -> tuple[int, int, int]:
    """(raw, evidence, one-minute aggregate) rows of ``sensor`` (in ``[since, until)`` if given)."""
    lo, hi = since or datetime(1970, 1, 1, tzinfo=timezone.utc), until or datetime(2999, 1, 1, tzinfo=timezone.utc)
    return tuple(conn.execute(f"SELECT count(*) FROM {t} WHERE sensor_id = %s AND {c} >= %s AND {c} < %s",
                              (sensor, lo, hi)).fetchone()[0]
                 for t, c in (("readings", "time"), ("readings_evidence", "time"), ("readings_1m", "minute")))


def a_day_of_readings(conn, sensor: int, start: datetime) -> None:
    """One reading a minute for a day from ``start``."""
    conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT %s + g * interval '1 min', %s, 7.5 "
                 "FROM generate_series(0, 1439) g", (start, sensor))


def violation(conn, sensor: int, start: datetime, minutes: int) -> int:
    return conn.execute(
        "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time, end_time, "
        "peak, limit_value, unit) SELECT site_id, id, 'ph', 'ph-min', 'palmyra-wi', '§13.34(2)(a)', "
        "'pH below 5.5', %s, %s, 2.0, 5.5, 'pH' FROM sensors WHERE id = %s RETURNING id",
        (start, start + timedelta(minutes=minutes), sensor)).fetchone()[0]


def test_old_evidence_behind_records_survives_retention_and_the_rest_goes(db, tmp_path):
    sensors = {key: add_site_and_sensors(db.url, key, {"ph": ("ph", "pH")})["ph"]
               for key in ("acme", "bolt", "candy", "delta", "echo")}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    old = (now - timedelta(days=4 * 366)).replace(hour=0, minute=0, second=0)   # past the records period
    policy = Retention(raw_days=30, dead_letters_days=90, sessions_days=30)
    me = Actor.os_user()
    with psycopg.connect(db.url) as conn:
        for key, sensor in sensors.items():
            a_day_of_readings(conn, sensor, old)
        a_day_of_readings(conn, sensors["echo"], old + timedelta(days=10))
        # acme: a violation whose notice was issued and closed long ago
        closed = violation(conn, sensors["acme"], old + timedelta(hours=10), 20)
        # candy: a notice issued and not closed (an open enforcement case)
        open_case = violation(conn, sensors["candy"], old + timedelta(hours=5), 5)
        # echo: an SNC decision for the first day's period
        conn.execute("INSERT INTO findings (site_id, kind, snc_criterion, occurred, period_start, period_end, "
                     "summary) SELECT id, 'snc', 'C', %s, %s, %s, 'significant noncompliance' FROM sites "
                     "WHERE key = 'echo'", (old.date(), old.date(), old.date() + timedelta(days=1)))
        for topic, at in (("sewerwatch/bolt/ph", old), ("sewerwatch/candy/ph", old),
                          ("sewerwatch/bolt/ph", now - timedelta(days=10))):
            conn.execute("INSERT INTO dead_letters (received_at, source, topic, payload, reason) "
                         "VALUES (%s, 'mqtt', %s, 'x', 'not a number')", (at, topic))
        conn.commit()
        day = old.date()
        n = notices.draft(conn, GUIDE, HEAD, day, violation_id=closed, by="supt")
        notices.issue(conn, n["id"], day, by="supt", pdf=b"%PDF-1.7 test")
        notices.close(conn, n["id"], day + timedelta(days=20), by="supt", note="corrected")
        n = notices.draft(conn, GUIDE, HEAD, day, violation_id=open_case, by="supt")
        notices.issue(conn, n["id"], day, by="supt", pdf=b"%PDF-1.7 test")
        holds.add(conn, "delta", "state enforcement case pending", actor=me)
        conn.commit()

    sessions = tmp_path / "web-sessions"
    sessions.mkdir()
    (sessions / "stale").write_text("{}")
    (sessions / "fresh").write_text("{}")
    long_ago = time.time() - 31 * 86400
    os.utime(sessions / "stale", (long_ago, long_ago))

    with psycopg.connect(db.url) as conn:
        out = maintain.maintain(conn, policy, state_dir=tmp_path)
        assert out["kept_sites"] == 2 and out["held_sites"] == 1
        # nothing points to bolt's readings: gone at every resolution
        assert kept(conn, sensors["bolt"]) == (0, 0, 0)
        # acme: the violation's readings (20 min and an hour either side: 141 one-minute
        # readings) at full resolution and their aggregates; the rest of the day gone
        v0 = old + timedelta(hours=9)
        assert kept(conn, sensors["acme"]) == (0, 141, 141)
        assert kept(conn, sensors["acme"], v0, v0 + timedelta(minutes=141)) == (0, 141, 141)
        # candy (open case) and delta (legal hold): every reading kept
        assert kept(conn, sensors["candy"]) == (0, 1440, 1440)
        assert kept(conn, sensors["delta"]) == (0, 1440, 1440)
        # echo: the SNC decision's period keeps its aggregates; ten days later nothing does
        assert kept(conn, sensors["echo"], old, old + timedelta(days=1)) == (0, 0, 1440)
        assert kept(conn, sensors["echo"], old + timedelta(days=5)) == (0, 0, 0)
        # dead letters: the old one of bolt goes, the old one of the open case and the recent one stay
        assert out["dead_letters_removed"] == 1
        left = conn.execute("SELECT topic, received_at > %s FROM dead_letters ORDER BY id", (old,)).fetchall()
        assert left == [("sewerwatch/candy/ph", False), ("sewerwatch/bolt/ph", True)]
        assert out["sessions_removed"] == 1 and [p.name for p in sessions.iterdir()] == ["fresh"]

        # a second run removes nothing more
        again = maintain.maintain(conn, policy, state_dir=tmp_path)
        assert again["records_removed"] == 0 and again["dead_letters_removed"] == 0

        # the case closed and the hold released: their days' readings go, but the readings behind
        # candy's violation stay as long as the violation does
        number = conn.execute("SELECT number FROM notices WHERE violation_id = %s", (open_case,)).fetchone()[0]
        notices.close(conn, number, day + timedelta(days=30), by="supt", note="corrected")
        holds.release(conn, "delta", "case closed", actor=me)
        conn.commit()
        maintain.maintain(conn, policy, state_dir=tmp_path)
        assert kept(conn, sensors["candy"]) == (0, 126, 126)   # 04:00 to 06:05
        assert kept(conn, sensors["delta"]) == (0, 0, 0)
        assert kept(conn, sensors["acme"]) == (0, 141, 141)
