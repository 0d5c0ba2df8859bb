"""Late readings judged again in the same push as live readings of their
sensor. The pipeline hands the alert manager a push's moves and withdrawals first, then its
openings and closings; a record of the live part naming an episode the judgement again moved
(or merged away) would, applied after the move, write that episode's old row again: one
episode, two ``violations`` rows (seen once in CI, when two reordered batches of one sensor
were queued together and the writer had stored them before the evaluator took them).

Played here deterministically against the real database and the real alert manager, in the
pipeline's order, with the readings stored before each push as the writer stores them."""

from __future__ import annotations

import asyncio
import io
from datetime import datetime, timezone

import numpy as np
import psycopg

from alerts.channels import ConsoleChannel, Route
from alerts.episodes import LiveEpisodes, sensors_from_db
from alerts.manager import AlertManager
from alerts.stored import StoredReadings
from foundation import config as sw_config
from limits import rejudge
from support import add_site_and_sensors

T0 = 1_780_290_000_000_000          # 2026-06-01 05:00 UTC [us]
S = 1_000_000


def _scenario():
    """pH once a second for 300 s: an episode (pH 4.0) over readings 170-199, normal before
    and after, another (pH 5.0) over 240-249."""
    k = np.arange(300)
    v = 7.0 + 0.01 * (k % 5)
    v[(k >= 170) & (k < 200)] = 4.0
    v[(k >= 240) & (k < 250)] = 5.0
    return T0 + k * S, v


def _store(url, sid, t, v):
    with psycopg.connect(url) as conn, conn.cursor().copy("COPY readings (time, sensor_id, value) FROM STDIN") as cp:
        for a, b in zip(t.tolist(), v.tolist()):
            cp.write_row((datetime.fromtimestamp(a / 1e6, timezone.utc), sid, b))


def test_a_move_and_the_live_records_of_one_push_leave_one_row_per_episode(db):
    sid = add_site_and_sensors(db.url, "reordered", {"ph": ("ph", "pH")})["ph"]
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 1")
        sensors = sensors_from_db(conn)
        sites = {key: (i, n) for i, key, n in conn.execute("SELECT id, key, name FROM sites")}
    t, v = _scenario()
    source = StoredReadings(db.url, lambda: 10**9)          # everything pushed is stored before it
    live = LiveEpisodes(sensors, source=source)
    now_s = t[-1] / 1e6 + 5
    # received in this order: 0-149 in time, 175-199 (the episode seen from its 6th reading),
    # then ONE push holding 150-174 (late: the episode's first five) and 200-224 (live: it ends)
    pushes = [np.arange(0, 150), np.arange(175, 200), np.concatenate([np.arange(150, 175), np.arange(200, 225)]),
              np.arange(225, 300)]
    cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                               "alerts": {"digest_at": False, "hold_off_s": 600.0}}, "<test>")
    seen_in_one_push = []

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(io.StringIO()))], sites,
                               clock=lambda: now_s).start()
        for seq, idx in enumerate(pushes, start=1):
            _store(db.url, sid, t[idx], v[idx])
            opened, closed = live.push(np.full(len(idx), sid), t[idx], v[idx], np.zeros(len(idx), np.int16),
                                       seq=seq, now_s=now_s)
            changes = live.take_changes()
            if changes and (opened or closed):
                seen_in_one_push.append(seq)
            # the pipeline's order (sewerwatch.pipeline.Pipeline._evaluate)
            if changes:
                await m.on_rejudged(changes)
            if opened or closed:
                await m.on_episodes(opened, closed)
        await m.idle()
        await m.close()

    try:
        asyncio.run(scenario())
    finally:
        source.close()
    assert live.rejudged == 1 and seen_in_one_push == [3]     # the case this test is about happened
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT rule, start_time, end_time FROM violations WHERE sensor_id = %s "
                            "ORDER BY start_time", (sid,)).fetchall()
        episodes = conn.execute("SELECT sum(episodes) FROM alerts WHERE kind = 'violation'").fetchone()[0]
    # what check --from --to finds over the same readings (limits.rejudge.judge: check's evaluator)
    rules = live.rules[0]
    meta = {sid: live.meta[0][sid]}
    _, done, still = rejudge.judge(rules, meta, np.full(len(t), sid), t, v, np.zeros(len(t), np.int16))
    want = sorted((rules[int(e["rule"])].id, int(e["start"]), int(e["end"])) for e in np.concatenate([done, still]))
    got = [(r, int(a.timestamp() * 1e6), None if b is None else int(b.timestamp() * 1e6)) for r, a, b in rows]
    assert [(r, a) for r, a, _ in got] == [(r, a) for r, a, _ in want] == \
        [(want[0][0], int(t[170])), (want[1][0], int(t[240]))]
    assert all(b is not None and abs(b - e) <= S for (_, _, b), (_, _, e) in zip(got, want))
    assert episodes == 2                                       # one alert, its two episodes, each once
