"""An opening's message carries its alert number without waiting for the alert's row
(alerts/outbox.py takes numbers ahead from the database's sequence; alerts/manager.py
``_number_ahead``), against a real database whose ``alerts`` table another session holds
locked: the row cannot be written, the message still goes, numbered, and the row written
once the lock is let go has that number. An episode older than what the manager read from
the database at its start still waits for its row (only the row can say whether it was
alerted before).
"""

from __future__ import annotations

import asyncio
import io
import time

import numpy as np
import psycopg

from alerts.channels import ConsoleChannel, Route
from alerts.episodes import LiveEpisodes, sensors_from_db
from alerts.manager import AlertManager
from foundation import config as sw_config
from support import add_site_and_sensors

MIN_US = 60_000_000


def _world(db, site: str):
    ids = add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60 WHERE id = %s", (ids["ph"],))
        sensors = sensors_from_db(conn)
        sites = {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites")}
    return ids["ph"], LiveEpisodes(sensors), sites


def _acid(ev, sid, t0_us: int):
    values = [7.0, 3.5, 3.4]
    t = t0_us + np.arange(len(values)) * MIN_US
    return ev.push(np.full(len(values), sid), t, np.asarray(values, float), np.zeros(len(values), np.int16))


async def _manager(db, sites, out) -> AlertManager:
    """An alert manager on the test database telling ``out``, its outbox taking numbers ahead
    (asserted: the tests are about them)."""
    cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                               "alerts": {"digest_at": False}}, "<test>")
    m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites).start()
    if not await _until(lambda: m.outbox.status()["numbers_ahead"] > 0, 10):
        await m.close()
        raise AssertionError("no numbers taken ahead")
    return m


def _alert_ids(db, site: str) -> list[int]:
    with psycopg.connect(db.url) as conn:
        return [r[0] for r in conn.execute("SELECT a.id FROM alerts a JOIN sites s ON s.id = a.site_id "
                                           "WHERE s.key = %s", (site,)).fetchall()]


async def _until(pred, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(0.02)
    return pred()


def test_an_opening_is_told_with_its_number_while_its_row_cannot_be_written(db):
    sid, ev, sites = _world(db, "aheadplant")
    out = io.StringIO()

    async def scenario():
        m = await _manager(db, sites, out)
        m.open_wait_s = 30.0          # were the message to wait for its row, it would wait for the lock
        try:
            blocker = psycopg.connect(db.url)
            blocker.execute("LOCK TABLE alerts IN ACCESS EXCLUSIVE MODE")      # held: no alert row now
            try:
                now_us = int(time.time() * 1e6)
                started = time.monotonic()
                await asyncio.wait_for(m.on_episodes(*_acid(ev, sid, now_us - 5 * MIN_US)), 10)
                assert time.monotonic() - started < m.open_wait_s, "the opening waited for its row"
                assert await _until(lambda: "VIOLATION #" in out.getvalue(), 10), out.getvalue()[:500]
                told = int(out.getvalue().split("VIOLATION #", 1)[1].split(":", 1)[0])
                with psycopg.connect(db.url) as c2:
                    c2.execute("SET lock_timeout = '200ms'")
                    try:
                        c2.execute("SELECT count(*) FROM alerts")
                        raise AssertionError("the alerts table was not locked")
                    except psycopg.errors.LockNotAvailable:
                        pass
            finally:
                blocker.rollback()
                blocker.close()
            await m.idle()
            return told
        finally:
            await m.close()

    told = asyncio.run(scenario())
    assert _alert_ids(db, "aheadplant") == [told]


def test_an_old_episode_waits_for_its_row(db):
    """An episode that started three days ago (readings replayed): older than the alerted
    episodes the manager read at its start, so the message waits for the row, which says
    whether it was alerted before; while the table is locked it is not told."""
    sid, ev, sites = _world(db, "oldplant")
    out = io.StringIO()

    async def scenario():
        m = await _manager(db, sites, out)
        m.open_wait_s = 1.0
        try:
            blocker = psycopg.connect(db.url)
            blocker.execute("LOCK TABLE alerts IN ACCESS EXCLUSIVE MODE")
            try:
                old_us = int((time.time() - 3 * 86400) * 1e6)
                task = asyncio.ensure_future(m.on_episodes(*_acid(ev, sid, old_us)))
                await asyncio.sleep(0.5)
                assert not task.done() and "VIOLATION" not in out.getvalue(), "told before its row answered"
            finally:
                blocker.rollback()
                blocker.close()
            await asyncio.wait_for(task, 10)
            await m.idle()
            assert await _until(lambda: "VIOLATION #" in out.getvalue(), 10)
        finally:
            await m.close()

    asyncio.run(scenario())
    assert len(_alert_ids(db, "oldplant")) == 1


def test_an_opening_while_numbers_are_being_taken_gets_the_first_of_them(db):
    """Numbers are being taken (the outbox's top-up under way) when an episode opens: the
    opening waits for them and takes the first, so the alerts' numbers follow their order;
    were it numbered by its row meanwhile, it would come after the numbers taken."""
    sid, ev, sites = _world(db, "orderplant")
    out = io.StringIO()

    async def scenario():
        m = await _manager(db, sites, out)
        try:
            while m.outbox.status()["numbers_ahead"]:            # none at hand: the next are to be taken
                await m.outbox.take_id()
            topping = asyncio.ensure_future(m.outbox._top_up_ids())
            await asyncio.sleep(0)                                  # the top-up asks the database now
            await m.on_episodes(*_acid(ev, sid, int(time.time() * 1e6) - 5 * MIN_US))
            await topping
            await m.idle()
            assert await _until(lambda: "VIOLATION #" in out.getvalue(), 10)
            told = int(out.getvalue().split("VIOLATION #", 1)[1].split(":", 1)[0])
            left = list(m.outbox._ids)
            return told, left
        finally:
            await m.close()

    told, left = asyncio.run(scenario())
    assert left and all(n > told for n in left), (told, left)
    assert _alert_ids(db, "orderplant") == [told]
