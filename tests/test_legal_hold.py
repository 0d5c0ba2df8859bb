"""A legal hold on an industrial user: retention deletes nothing of the site's until it is released."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from enforcement import holds
from foundation.actor import Actor
from foundation.config import Retention
from foundation.errors import InputError
from sewerwatch.db import maintain
from tests.support import add_site_and_sensors

pytestmark = pytest.mark.services


def kept(conn, sensor: int) -> tuple[int, int, int]:
    """(raw, evidence, one-minute aggregate) rows of ``sensor``."""
    return tuple(conn.execute(f"SELECT count(*) FROM {t} WHERE sensor_id = %s", (sensor,)).fetchone()[0]
                 for t in ("readings", "readings_evidence", "readings_1m"))


def test_a_hold_keeps_every_record_of_the_site_past_retention_until_released(db):
    held = add_site_and_sensors(db.url, "acme", {"ph": ("ph", "pH")})["ph"]
    free = add_site_and_sensors(db.url, "bolt", {"ph": ("ph", "pH")})["ph"]
    old = datetime.now(timezone.utc) - timedelta(days=4 * 366)      # past raw retention and the records period
    policy = Retention(raw_days=30)
    with psycopg.connect(db.url) as conn:
        for sensor in (held, free):
            conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT %s + g * interval '1 min', %s, 7.5 "
                         "FROM generate_series(0, 59) g", (old, sensor))
        conn.commit()
        me = Actor.os_user()
        h = holds.add(conn, "acme", "state enforcement case 2026-14 pending", actor=me)
        assert h["site"] == "acme" and h["released_at"] is None
        with pytest.raises(InputError, match=r"on hold already since .*\(state enforcement case 2026-14"):
            holds.add(conn, "acme", "again", actor=me)
        with pytest.raises(InputError, match="--reason"):
            holds.add(conn, "bolt", "  ", actor=me)
        with pytest.raises(InputError, match="not on hold"):
            holds.release(conn, "bolt", "nothing", actor=me)

        out = maintain.maintain(conn, policy)
        assert out["held_sites"] == 1
        assert kept(conn, free) == (0, 0, 0)                 # retention as configured
        raw, evidence, minutes = kept(conn, held)
        assert raw == 0 and evidence == 60 and minutes == 60   # every reading kept as evidence, aggregates too

        holds.release(conn, "acme", "case closed by consent order", actor=me)
        assert holds.holds(conn) == [] and len(holds.holds(conn, active_only=False)) == 1
        maintain.maintain(conn, policy)
        assert kept(conn, held) == (0, 0, 0)
        actions = [r[0] for r in conn.execute("SELECT action FROM audit_log WHERE object = 'site:acme' ORDER BY id")]
        assert actions == ["legal-hold.add", "legal-hold.release"]
