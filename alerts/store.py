"""The alerts' SQL: every statement the alert manager and ``sewerwatch alerts`` run.

:class:`AlertStore` is the manager's: one autocommit connection (owner role) used by one
task at a time, reopened once when it drops. The functions at the bottom are the CLI's,
on a connection the command's context opened.

Tables (``sewerwatch/db/migrations/0040_alerts.sql``): ``alerts`` (one row per alert,
its state and timestamps), ``alert_notifications`` (every delivery attempt),
``violations`` (one row per episode, ``source`` 'stream' for the live ones) and
``audit_log`` (every state change).

The manager's writes go through its outbox (:mod:`alerts.outbox`) as *ops*: plain dicts,
journalled on local disk, applied here by :meth:`AlertStore.apply`, each in one
transaction and at most once (``alert_ops``, ``0045_alert_outbox.sql``). An alert is
named by the manager's ``uid`` before the database has given it an id (``alert_uids``);
an alert loaded from the database without one is ``alert-<id>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timezone

import psycopg

from alerts import digest

log = logging.getLogger("sewerwatch.alerts")

#: The audit log's actor for what the running pipeline does.
ACTOR = "sewerwatch-run"

UNRESOLVED_COLS = ("id", "kind", "rule", "sensor_id", "device", "state", "details", "opened_at", "escalated_at",
                   "acknowledged_at", "acknowledged_by", "ack_note", "episodes", "site", "site_name", "summary",
                   "uids", "starts_us")


#: Alert kinds whose lifecycle is not the manager's: permit reminders (:mod:`alerts.reminders`
#: opens and resolves them) and enforcement items (:mod:`enforcement.due`). The manager never
#: takes them up, so it never resolves them after its hold-off.
KINDS_OWNED_ELSEWHERE = ("permit", "enforcement")


def ts(epoch_s: float) -> datetime:
    """An aware UTC datetime of ``epoch_s`` [s]."""
    return datetime.fromtimestamp(epoch_s, timezone.utc)


class AlertStore:
    """The manager's statements on one connection.

    Parameters
    ----------
    db_url : str
        Database URL (owner role: the manager writes violations, alerts and the audit log).
    """

    def __init__(self, db_url: str):
        self.db_url = db_url
        self._conn: psycopg.AsyncConnection | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> "AlertStore":
        self._conn = await psycopg.AsyncConnection.connect(self.db_url, autocommit=True, connect_timeout=3)
        return self

    async def close(self) -> None:
        if self._conn is not None:
            try:
                await self._conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    async def reset(self) -> None:
        """Drop the connection (after a timeout): the next statement opens a new one."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - it is being replaced anyway
                pass

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(self.db_url, autocommit=True, connect_timeout=3)
        return self._conn

    async def _twice(self, work):
        """``await work(conn)`` on the connection, one task at a time; a dropped connection is
        reopened and the work tried once more."""
        async with self._lock:
            for attempt in (1, 2):
                try:
                    return await work(await self._connection())
                except psycopg.OperationalError:
                    if attempt == 2:
                        raise
                    log.warning("the alert database connection was lost; reconnecting")
                    await self.reset()

    async def apply(self, op: dict):
        """Apply one outbox op (see :data:`OPS`) in a transaction, at most once.

        Returns
        -------
        The op's result (an open op: ``{"alert_id", "seen", ...}``), also when the op was
        applied before (then from what the first application wrote).
        """
        async def work(conn):
            async with conn.transaction():
                cur = await conn.execute("INSERT INTO alert_ops (op_id) VALUES (%s) ON CONFLICT DO NOTHING",
                                         (op["op_id"],))
                return await OPS[op["op"]](conn, op, cur.rowcount == 1)

        return await self._twice(work)

    async def _exec(self, sql: str, params=(), fetch: bool = False, all_rows: bool = False):
        """Run one statement (see :meth:`_twice`)."""
        async def work(conn):
            cur = await conn.execute(sql, params)
            if all_rows:
                return await cur.fetchall()
            return await cur.fetchone() if fetch else None

        return await self._twice(work)

    # -- alerts ---------------------------------------------------------------------------

    async def unresolved(self) -> list[dict]:
        """Every alert not resolved, with its site's key and name, the manager's uids for it
        and the starts of the episodes it covers [µs since the epoch] (:data:`UNRESOLVED_COLS`);
        not the kinds :data:`KINDS_OWNED_ELSEWHERE`."""
        rows = await self._exec(
            """SELECT a.id, a.kind, a.rule, a.sensor_id, a.device, a.state, a.details, a.opened_at,
                      a.escalated_at, a.acknowledged_at, a.acknowledged_by, a.ack_note, a.episodes,
                      s.key, s.name, a.summary,
                      ARRAY(SELECT u.uid FROM alert_uids u WHERE u.alert_id = a.id),
                      ARRAY(SELECT (extract(epoch FROM v.start_time) * 1000000)::int8 FROM violations v
                            WHERE v.id = a.violation_id OR v.id IN (
                                SELECT (l.detail->>'violation_id')::bigint FROM audit_log l
                                WHERE l.action = 'alert-episode-continued' AND l.object = 'alert:' || a.id))
               FROM alerts a LEFT JOIN sites s ON s.id = a.site_id
               WHERE a.state <> 'resolved' AND a.kind <> ALL(%s)""", (list(KINDS_OWNED_ELSEWHERE),), all_rows=True)
        return [dict(zip(UNRESOLVED_COLS, r)) for r in rows]

    async def recently_alerted(self, within_s: float) -> list[tuple]:
        """``(sensor id, rule, start [µs since the epoch], alert id)`` of every episode an
        alert covers (its first or a continued one) that started in the last ``within_s``."""
        return await self._exec(
            """SELECT v.sensor_id, v.rule, (extract(epoch FROM v.start_time) * 1000000)::int8, x.alert_id
               FROM (SELECT id AS alert_id, violation_id FROM alerts WHERE violation_id IS NOT NULL
                     UNION ALL
                     SELECT substr(object, 7)::bigint, (detail->>'violation_id')::bigint FROM audit_log
                     WHERE action = 'alert-episode-continued' AND detail ? 'violation_id') x
               JOIN violations v ON v.id = x.violation_id
               WHERE v.start_time > now() - make_interval(secs => %s)""", (within_s,), all_rows=True)

    async def reserve_ids(self, n: int) -> list[int]:
        """``n`` alert numbers taken ahead from the alerts' sequence, for openings notified
        before their row is written (:meth:`alerts.outbox.Outbox.take_id`). A number taken
        and never used (the run stopped) leaves a gap, as a rolled-back insert does."""
        rows = await self._exec("SELECT nextval(pg_get_serial_sequence('alerts', 'id')) FROM generate_series(1, %s)",
                                (n,), all_rows=True)
        return [int(r[0]) for r in rows]

    async def alerts_resolved(self, alert_ids: list[int]) -> list[int]:
        """The alerts among ``alert_ids`` that are resolved in the database."""
        rows = await self._exec("SELECT id FROM alerts WHERE id = ANY(%s) AND state = 'resolved'", (alert_ids,),
                                all_rows=True)
        return [r[0] for r in rows]

    async def acknowledged(self, alert_ids: list[int]) -> list[tuple]:
        """``(id, by, at, note)`` of the alerts among ``alert_ids`` acknowledged since."""
        return await self._exec("SELECT id, acknowledged_by, acknowledged_at, ack_note FROM alerts "
                                "WHERE id = ANY(%s) AND acknowledged_at IS NOT NULL", (alert_ids,), all_rows=True)

    # -- digest ------------------------------------------------------------------------

    async def digest_sent(self, subject: str) -> bool:
        """Whether the digest ``subject`` (``digest:<day>``) went out already."""
        row = await self._exec("SELECT 1 FROM audit_log WHERE action = 'digest-sent' AND object = %s",
                               (subject,), fetch=True)
        return row is not None

    async def digest_rows(self, day: str, tz: str) -> list[dict]:
        """The alerts of local day ``day`` (:mod:`alerts.digest`)."""
        a, b = digest.day_bounds(day, tz)
        return [dict(zip(digest.COLS, r)) for r in await self._exec(digest.SQL, (b, a), all_rows=True)]


# -- the outbox's ops (AlertStore.apply): each (conn, op, fresh) -> result -----------------
# ``fresh`` is False when the op was applied before (a replay from the journal): nothing is
# written again, and an op with a result reads it back.

#: An episode's row, written as it opens, grows and closes. An open record (end NULL) never
#: reopens a row that was closed (a warm-up or a takeover judging a closed
#: episode again sees it open for a moment); only a judgement again of late readings
#: (``violation-move``) sets an end explicitly.
VIOLATION_UPSERT = """INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time,
        end_time, peak, limit_value, unit, days_of_violation, evidence, source)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'stream')
    ON CONFLICT (sensor_id, rule, start_time) DO UPDATE SET
        end_time = COALESCE(EXCLUDED.end_time, violations.end_time),
        peak = EXCLUDED.peak, limit_value = EXCLUDED.limit_value,
        days_of_violation = EXCLUDED.days_of_violation,
        evidence = CASE WHEN EXCLUDED.end_time IS NULL AND violations.end_time IS NOT NULL
                        THEN violations.evidence ELSE EXCLUDED.evidence END
    RETURNING id"""

#: The tables whose rows point at a violation (merged rows are pointed at the one kept).
VIOLATION_REFERENCES = ("alerts", "findings", "user_reports", "notices")

ALERTED_BEFORE = """SELECT id FROM alerts WHERE violation_id = %s
    UNION ALL
    SELECT substr(object, 7)::bigint FROM audit_log
    WHERE action = 'alert-episode-continued' AND (detail->>'violation_id')::bigint = %s
    LIMIT 1"""


def _violation_params(v: dict, end):
    return (v["site_id"], v["sensor_id"], v["parameter"], v["rule"], v["pack"], v["citation"], v["words"],
            v["start"], end, v["peak"], v["limit"], v["unit"], v.get("days_of_violation"),
            json.dumps({k: v.get(k) for k in ("last", "peak_time", "duration_s", "readings", "average",
                                                "multiple", "comparison")}))


async def _alert_id(conn, uid: str | None) -> int | None:
    """The ``alerts.id`` the manager's ``uid`` names (``alert-<id>``: that id)."""
    if uid is None:
        return None
    if uid.startswith("alert-"):
        return int(uid[6:])
    cur = await conn.execute("SELECT alert_id FROM alert_uids WHERE uid = %s", (uid,))
    row = await cur.fetchone()
    return None if row is None else row[0]


async def _op_violation(conn, op, fresh):
    cur = await conn.execute(VIOLATION_UPSERT, _violation_params(op["v"], op.get("end")))
    return (await cur.fetchone())[0]


async def _violation_id(conn, sensor_id, rule, start) -> int | None:
    cur = await conn.execute("SELECT id FROM violations WHERE sensor_id = %s AND rule = %s AND start_time = %s",
                             (sensor_id, rule, start))
    row = await cur.fetchone()
    return None if row is None else row[0]


async def _merge_rows(conn, old_id: int, into_id: int) -> None:
    """Point everything that names violation ``old_id`` at ``into_id``, then remove it."""
    for table in VIOLATION_REFERENCES:
        await conn.execute(f"UPDATE {table} SET violation_id = %s WHERE violation_id = %s", (into_id, old_id))
    await conn.execute("DELETE FROM violations WHERE id = %s", (old_id,))


async def _op_violation_move(conn, op, fresh):
    """A row whose episode late readings began earlier: it continues under the new start
    (merged into a row stored under that start already, if any), with the record's end."""
    v = op["v"]
    old_id = await _violation_id(conn, v["sensor_id"], v["rule"], op["old_start"])
    if old_id is None:       # never written (or moved already): the record is the row
        cur = await conn.execute(VIOLATION_UPSERT, _violation_params(v, op.get("end")))
        return (await cur.fetchone())[0]
    kept = await _violation_id(conn, v["sensor_id"], v["rule"], v["start"])
    if kept is not None and kept != old_id:
        await _merge_rows(conn, old_id, kept)
    else:
        kept = old_id
    p = _violation_params(v, op.get("end"))
    await conn.execute("UPDATE violations SET start_time = %s, end_time = %s, peak = %s, limit_value = %s, "
                       "days_of_violation = %s, evidence = %s WHERE id = %s",
                       (p[7], p[8], p[9], p[10], p[12], p[13], kept))
    return kept


async def _op_violation_withdraw(conn, op, fresh):
    """A row whose episode late readings merged into another (``into``: that one's start)
    or showed was none: removed, what named it pointed at the one kept; a row with no
    successor that a notice or finding names is kept (and the withdrawal audited)."""
    if not fresh:
        return None
    vid = await _violation_id(conn, op["sensor_id"], op["rule"], op["start"])
    if vid is None:
        return None
    into = None if op.get("into") is None else await _violation_id(conn, op["sensor_id"], op["rule"], op["into"])
    if into is not None and into != vid:
        await _merge_rows(conn, vid, into)
        return into
    cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM findings WHERE violation_id = %s) OR "
                             "EXISTS (SELECT 1 FROM notices WHERE violation_id = %s) OR "
                             "EXISTS (SELECT 1 FROM user_reports WHERE violation_id = %s)", (vid, vid, vid))
    if (await cur.fetchone())[0]:
        log.warning("violation %d: late readings show no such episode, but a notice or finding names it: kept", vid)
        return vid
    await conn.execute("UPDATE alerts SET violation_id = NULL WHERE violation_id = %s", (vid,))
    await conn.execute("DELETE FROM violations WHERE id = %s", (vid,))
    return None


async def _op_episodes(conn, op, fresh):
    """An alert's count of episodes (two of its episodes merged into one)."""
    if fresh:
        await conn.execute("UPDATE alerts SET episodes = %s WHERE id = %s", (op["episodes"], await _alert_id(conn, op["uid"])))
    return None


async def _op_open_violation(conn, op, fresh):
    if not fresh:
        return {"alert_id": await _alert_id(conn, op["uid"]), "seen": False}
    v = op["v"]
    vid = (await (await conn.execute(VIOLATION_UPSERT, _violation_params(v, None))).fetchone())[0]
    seen = await (await conn.execute(ALERTED_BEFORE, (vid, vid))).fetchone()
    if seen is not None:
        alert_id = seen[0]
    else:
        # the number taken ahead and already in the message (op "id"), else the sequence's next
        cur = await conn.execute(
            """INSERT INTO alerts (id, kind, violation_id, site_id, sensor_id, rule, state, summary, details, opened_at)
               VALUES (coalesce(%s, nextval(pg_get_serial_sequence('alerts', 'id'))), 'violation', %s, %s, %s, %s,
                       'open', %s, %s, %s) RETURNING id""",
            (op.get("id"), vid, v["site_id"], v["sensor_id"], v["rule"], op["summary"],
             json.dumps(op["details"], default=str), ts(op["at"])))
        alert_id = (await cur.fetchone())[0]
    await conn.execute("INSERT INTO alert_uids (uid, alert_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                       (op["uid"], alert_id))
    return {"alert_id": alert_id, "seen": seen is not None, "violation_id": vid}


async def _op_open_health(conn, op, fresh):
    if not fresh:
        return {"alert_id": await _alert_id(conn, op["uid"]), "seen": False}
    cur = await conn.execute(
        """INSERT INTO alerts (id, kind, site_id, sensor_id, device, rule, state, summary, details, opened_at)
           VALUES (coalesce(%s, nextval(pg_get_serial_sequence('alerts', 'id'))), 'sensor-health', %s, %s, %s, %s,
                   'open', %s, %s, %s) RETURNING id""",
        (op.get("id"), op["site_id"], op["sensor_id"], op["device"], op["rule"], op["summary"],
         json.dumps(op["details"], default=str), ts(op["at"])))
    alert_id = (await cur.fetchone())[0]
    await conn.execute("INSERT INTO alert_uids (uid, alert_id) VALUES (%s, %s)", (op["uid"], alert_id))
    return {"alert_id": alert_id, "seen": False}


async def _op_state(conn, op, fresh):
    if not fresh:
        return True
    column = op.get("column")
    if column not in (None, "notified_at", "escalated_at", "resolved_at"):
        raise ValueError(f"not a state timestamp column: {column!r}")
    sets = "state = %s" + (f", {column} = %s" if column else "")
    params = [op["state"]] + ([ts(op["at"])] if column else []) + [await _alert_id(conn, op["uid"])]
    where = "id = %s"
    if op.get("only_from"):
        where += " AND state = ANY(%s)"
        params.append(list(op["only_from"]))
    cur = await conn.execute(f"UPDATE alerts SET {sets} WHERE {where} RETURNING id", params)
    return (await cur.fetchone()) is not None


async def _op_episode(conn, op, fresh):
    """``episode-continued``, ``episode-ended``, ``episode-resumed``."""
    if not fresh:
        return None
    aid = await _alert_id(conn, op["uid"])
    details = None if op.get("details") is None else json.dumps(op["details"], default=str)
    if op["op"] == "episode-continued":
        await conn.execute("UPDATE alerts SET episode_ended_at = NULL, episodes = %s, details = %s WHERE id = %s",
                           (op["episodes"], details, aid))
    elif op["op"] == "episode-ended":
        await conn.execute("UPDATE alerts SET episode_ended_at = %s, details = COALESCE(%s::jsonb, details) "
                           "WHERE id = %s", (ts(op["at"]), details, aid))
    else:
        await conn.execute("UPDATE alerts SET episode_ended_at = NULL WHERE id = %s", (aid,))
    return None


async def _op_attempt(conn, op, fresh):
    if fresh:
        await conn.execute(
            "INSERT INTO alert_notifications (alert_id, event, channel, contact, attempt, status, error, at, "
            "subject) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (await _alert_id(conn, op.get("uid")), op["event"], op["channel"], op["contact"], op["attempt"],
             "failed" if op.get("error") else "sent", op.get("error"), ts(op["at"]), op.get("subject")))
    return None


async def _op_audit(conn, op, fresh):
    if fresh:
        aid = await _alert_id(conn, op.get("uid"))
        obj = op.get("object") or (f"alert:{aid}" if aid else None)
        detail = dict(op["detail"])
        if op.get("violation_of"):
            cur = await conn.execute("SELECT id FROM violations WHERE sensor_id = %s AND rule = %s AND start_time = %s",
                                     tuple(op["violation_of"]))
            row = await cur.fetchone()
            if row is not None:
                detail = {"violation_id": row[0], **detail}
        await conn.execute("INSERT INTO audit_log (at, actor, action, object, detail) VALUES (%s, %s, %s, %s, %s)",
                           (ts(op["at"]), ACTOR, op["action"], obj, json.dumps(detail, default=str)))
    return None


async def _op_interval(conn, op, fresh):
    """A sensor's nominal interval learned from its readings, where none is configured, so
    ``sewerwatch check --from --to`` judges with the same one."""
    await conn.execute("UPDATE sensors SET interval_s = %s WHERE id = %s AND interval_s IS NULL",
                       (op["interval_s"], op["sensor_id"]))
    return None


#: op name -> how it is applied
OPS = {"violation": _op_violation, "open-violation": _op_open_violation, "open-health": _op_open_health,
       "state": _op_state, "episode-continued": _op_episode, "episode-ended": _op_episode,
       "episode-resumed": _op_episode, "attempt": _op_attempt, "audit": _op_audit, "interval": _op_interval,
       "violation-move": _op_violation_move, "violation-withdraw": _op_violation_withdraw, "episodes": _op_episodes}


# -- the CLI's statements (a synchronous connection from the command's context) -------------

LIST_COLS = ("id", "kind", "state", "rule", "opened_at", "acknowledged_by", "resolved_at", "summary")
SHOW_COLS = ("id", "kind", "state", "rule", "summary", "details", "opened_at", "notified_at", "escalated_at",
             "acknowledged_at", "acknowledged_by", "ack_note", "resolved_at", "episodes")
NOTIFICATION_COLS = ("event", "channel", "contact", "attempt", "status", "error", "at")


def list_alerts(conn, include_resolved: bool, limit: int) -> list[dict]:
    """Alerts newest first (not resolved unless ``include_resolved``)."""
    rows = conn.execute(
        f"SELECT {', '.join(LIST_COLS)} FROM alerts {'' if include_resolved else 'WHERE state <> %s'} "
        "ORDER BY opened_at DESC, id DESC LIMIT %s",
        ((limit,) if include_resolved else ("resolved", limit))).fetchall()
    return [dict(zip(LIST_COLS, r)) for r in rows]


def show_alert(conn, alert_id: int) -> dict | None:
    """One alert (:data:`SHOW_COLS`) with its delivery attempts under ``notifications``."""
    row = conn.execute(f"SELECT {', '.join(SHOW_COLS)} FROM alerts WHERE id = %s", (alert_id,)).fetchone()
    if row is None:
        return None
    rec = dict(zip(SHOW_COLS, row))
    notes = conn.execute(f"SELECT {', '.join(NOTIFICATION_COLS)} FROM alert_notifications "
                         "WHERE alert_id = %s ORDER BY at, id", (alert_id,)).fetchall()
    rec["notifications"] = [dict(zip(NOTIFICATION_COLS, n)) for n in notes]
    return rec


def acknowledge(conn, alert_id: int, by: str, note: str | None, via: str | None = None, actor=None
                ) -> tuple[str, str | None] | None:
    """Acknowledge ``alert_id`` in one transaction (the running manager sees it within a
    second and stops its escalation); audited (``via``: ``link`` from the acknowledgement
    page, None from ``sewerwatch alerts ack``).

    ``by`` is the name the alert shows as acknowledging it; ``actor`` (a
    :class:`foundation.actor.Actor`) who acted, for the audit row: the signed-in account of
    the office (``web``), the operating-system user of ``sewerwatch alerts ack`` (``cli``).
    Without one the audit row names ``by``.

    Returns
    -------
    (state before, acknowledged by before) or None
        None: no such alert. Nothing is written when it was acknowledged already.
    """
    with conn.transaction():
        row = conn.execute("SELECT state, acknowledged_by FROM alerts WHERE id = %s FOR UPDATE",
                           (alert_id,)).fetchone()
        if row is None or row[1] is not None:
            return None if row is None else (row[0], row[1])
        state = row[0]
        new_state = "resolved" if state == "resolved" else "acknowledged"
        conn.execute("UPDATE alerts SET state = %s, acknowledged_at = now(), acknowledged_by = %s, ack_note = %s "
                     "WHERE id = %s", (new_state, by, note, alert_id))
        if actor is not None:
            via = via or actor.via
        _audit_sync(conn, actor.audit_name if actor is not None else by, "alert-acknowledged", alert_id,
                    {"from": state, "to": new_state, "note": note, **({"via": via} if via else {}),
                     **({"by": by} if actor is not None and by != actor.audit_name else {})})
    return state, None


# -- the acknowledgement page (alerts.ackpage) ----------------------------------------------

PAGE_COLS = ("id", "kind", "state", "rule", "summary", "details", "opened_at", "acknowledged_at", "acknowledged_by",
             "ack_note", "resolved_at", "episodes", "site", "site_name", "episode")
#: The alerts, each with its episode as it is now: the violations row of its
#: latest episode (the first or one it continued), which ``run`` keeps current while it grows
#: and closes when it ends, ``{start, end, peak, evidence}``; the alert's ``details`` are
#: what it was when the alert opened.
PAGE_SQL = """SELECT a.id, a.kind, a.state, a.rule, a.summary, a.details, a.opened_at, a.acknowledged_at,
                     a.acknowledged_by, a.ack_note, a.resolved_at, a.episodes, s.key, s.name,
                     (SELECT jsonb_build_object('start', v.start_time, 'end', v.end_time, 'peak', v.peak,
                                                'evidence', v.evidence)
                      FROM violations v
                      WHERE v.id = a.violation_id OR v.id IN (
                          SELECT (l.detail->>'violation_id')::bigint FROM audit_log l
                          WHERE l.action = 'alert-episode-continued' AND l.object = 'alert:' || a.id)
                      ORDER BY v.start_time DESC LIMIT 1)
              FROM alerts a LEFT JOIN sites s ON s.id = a.site_id"""


def alert_of_link(conn, alert_id: int | None, uid: str | None) -> int | None:
    """The alert a link names: its number, or the number the manager's ``uid`` got since."""
    if alert_id is not None:
        row = conn.execute("SELECT id FROM alerts WHERE id = %s", (alert_id,)).fetchone()
    elif uid and uid.startswith("alert-") and uid[6:].isdigit():
        row = conn.execute("SELECT id FROM alerts WHERE id = %s", (int(uid[6:]),)).fetchone()
    else:
        row = conn.execute("SELECT alert_id FROM alert_uids WHERE uid = %s", (uid,)).fetchone()
    return None if row is None else row[0]


def page_alerts(conn, also: int | None = None, limit: int = 50) -> list[dict]:
    """The alerts not resolved (:data:`PAGE_COLS`), newest first, and alert ``also`` whatever
    its state."""
    rows = conn.execute(f"{PAGE_SQL} WHERE a.state <> 'resolved' OR a.id = %s ORDER BY a.opened_at DESC, a.id DESC "
                        "LIMIT %s", (also, limit)).fetchall()
    return [dict(zip(PAGE_COLS, r)) for r in rows]


def link_used(conn, token_id: str) -> dict | None:
    """``{alert_id, used_at, used_by}`` of a link used before, or None."""
    row = conn.execute("SELECT alert_id, used_at, used_by FROM ack_links_used WHERE token_id = %s",
                       (token_id,)).fetchone()
    return None if row is None else dict(zip(("alert_id", "used_at", "used_by"), row))


class _NotAcknowledged(Exception):
    """Inside :func:`acknowledge_by_link`: nothing to acknowledge, undo the link's row."""


def acknowledge_by_link(conn, token_id: str, alert_id: int, by: str, note: str | None) -> dict:
    """Use link ``token_id`` to acknowledge ``alert_id``, in one transaction: the link is
    recorded as used only when it acknowledged the alert (:func:`acknowledge`, as
    ``sewerwatch alerts ack`` does).

    Returns
    -------
    dict
        ``{"outcome": "acknowledged", "state": state before}``; ``{"outcome": "link-used",
        "used_by", "used_at"}`` (a second use); ``{"outcome": "already", "by", "at"}``
        (acknowledged before, by the command line or another link; the link stays unused).
    """
    try:
        with conn.transaction():
            cur = conn.execute("INSERT INTO ack_links_used (token_id, alert_id, used_by) VALUES (%s, %s, %s) "
                               "ON CONFLICT (token_id) DO NOTHING RETURNING used_at", (token_id, alert_id, by))
            if cur.fetchone() is None:
                return {"outcome": "link-used", **link_used(conn, token_id)}
            before = acknowledge(conn, alert_id, by, note, via="link")
            if before is None or before[1] is not None:
                raise _NotAcknowledged      # rolls the link's row back: it stays unused
    except _NotAcknowledged:
        row = conn.execute("SELECT acknowledged_by, acknowledged_at FROM alerts WHERE id = %s", (alert_id,)).fetchone()
        return {"outcome": "already", "by": row[0] if row else None, "at": row[1] if row else None}
    return {"outcome": "acknowledged", "state": before[0]}


# -- permit reminders (alerts.reminders) ----------------------------------------------------

def site_names(conn) -> dict[str, tuple[int, str]]:
    """Site key -> (id, name)."""
    return {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites").fetchall()}


def permit_alerts(conn) -> list[tuple[int, dict, str]]:
    """``(id, details, state)`` of every permit reminder ever opened, oldest first."""
    return conn.execute("SELECT id, details, state FROM alerts WHERE kind = 'permit' ORDER BY id").fetchall()


def open_permit_alert(conn, site_id: int | None, rule: str, summary: str, record: dict, actor: str) -> int:
    """Open one permit reminder (kind ``permit``), audited, in one transaction; its id."""
    with conn.transaction():
        aid = conn.execute(
            "INSERT INTO alerts (kind, site_id, rule, state, summary, details) VALUES ('permit', %s, %s, 'open', %s, %s) "
            "RETURNING id", (site_id, rule, summary, json.dumps(record))).fetchone()[0]
        _audit_sync(conn, actor, "alert-open", aid, {"subject": record["subject"], "summary": summary})
    return aid


def record_attempt(conn, alert_id: int, channel, subject: str, error: str | None, actor: str) -> None:
    """One delivery attempt of event ``open`` (``channel``: an :class:`alerts.channels.Channel`), audited."""
    with conn.transaction():
        conn.execute("INSERT INTO alert_notifications (alert_id, event, channel, contact, attempt, status, "
                     "error, subject) VALUES (%s, 'open', %s, %s, 1, %s, %s, %s)",
                     (alert_id, channel.name, channel.contact, "failed" if error else "sent", error, subject))
        _audit_sync(conn, actor, "notification-failed" if error else "notification-sent", alert_id,
                    {"event": "open", "channel": channel.name, "contact": channel.contact, "error": error})


def mark_notified(conn, alert_id: int, channels: list[str], actor: str) -> None:
    """An open alert delivered: state ``notified``, audited."""
    with conn.transaction():
        conn.execute("UPDATE alerts SET state = 'notified', notified_at = now() WHERE id = %s AND state = 'open'",
                     (alert_id,))
        _audit_sync(conn, actor, "alert-notified", alert_id, {"channels": channels})


def resolve_alert(conn, alert_id: int, detail: dict, actor: str) -> None:
    """Resolve one alert, audited with ``detail`` (what and why)."""
    with conn.transaction():
        conn.execute("UPDATE alerts SET state = 'resolved', resolved_at = now() WHERE id = %s", (alert_id,))
        _audit_sync(conn, actor, "alert-resolved", alert_id, detail)


def _audit_sync(conn, actor: str, action: str, alert_id: int, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor, action, f"alert:{alert_id}", json.dumps(detail, default=str)))
