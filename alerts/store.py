"""The alerts' SQL: every statement the alert manager and ``sewerwatch alerts`` run.

:class:`AlertStore` is the manager's: one autocommit connection (owner role) used by one
task at a time, reopened once when it drops. The functions at the bottom are the CLI's,
on a connection the command's context opened.

Tables (``sewerwatch/db/migrations/0040_alerts.sql``): ``alerts`` (one row per alert,
its state and timestamps), ``alert_notifications`` (every delivery attempt),
``violations`` (one row per episode, ``source`` 'stream' for the live ones) and
``audit_log`` (every state change).
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
                   "acknowledged_at", "acknowledged_by", "ack_note", "episodes", "site", "site_name", "summary")


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
        self._conn = await psycopg.AsyncConnection.connect(self.db_url, autocommit=True)
        return self

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()

    async def _exec(self, sql: str, params=(), fetch: bool = False, all_rows: bool = False):
        """Run one statement; a dropped connection is reopened and the statement tried once more."""
        async with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = await psycopg.AsyncConnection.connect(self.db_url, autocommit=True)
                    cur = await self._conn.execute(sql, params)
                    if all_rows:
                        return await cur.fetchall()
                    return await cur.fetchone() if fetch else None
                except psycopg.OperationalError:
                    if attempt == 2:
                        raise
                    log.warning("the alert database connection was lost; reconnecting")
                    try:
                        await self._conn.close()
                    except Exception:  # noqa: BLE001 - it is being replaced anyway
                        pass
                    self._conn = None

    # -- alerts ---------------------------------------------------------------------------

    async def unresolved(self) -> list[dict]:
        """Every alert not resolved, with its site's key and name (:data:`UNRESOLVED_COLS`)."""
        rows = await self._exec(
            """SELECT a.id, a.kind, a.rule, a.sensor_id, a.device, a.state, a.details, a.opened_at,
                      a.escalated_at, a.acknowledged_at, a.acknowledged_by, a.ack_note, a.episodes,
                      s.key, s.name, a.summary
               FROM alerts a LEFT JOIN sites s ON s.id = a.site_id WHERE a.state <> 'resolved'""", all_rows=True)
        return [dict(zip(UNRESOLVED_COLS, r)) for r in rows]

    async def open_violation_alert(self, violation_id: int, v: dict, summary: str, details: dict,
                                   at: float) -> int:
        """A new ``violation`` alert (state ``open``) for the episode stored as ``violation_id``."""
        row = await self._exec(
            """INSERT INTO alerts (kind, violation_id, site_id, sensor_id, rule, state, summary, details, opened_at)
               VALUES ('violation', %s, %s, %s, %s, 'open', %s, %s, %s) RETURNING id""",
            (violation_id, v["site_id"], v["sensor_id"], v["rule"], summary, json.dumps(details, default=str),
             ts(at)), fetch=True)
        return row[0]

    async def open_health_alert(self, site_id, sensor_id, device, rule: str, summary: str, details: dict,
                                at: float) -> int:
        """A new ``sensor-health`` alert (state ``open``)."""
        row = await self._exec(
            """INSERT INTO alerts (kind, site_id, sensor_id, device, rule, state, summary, details, opened_at)
               VALUES ('sensor-health', %s, %s, %s, %s, 'open', %s, %s, %s) RETURNING id""",
            (site_id, sensor_id, device, rule, summary, json.dumps(details, default=str), ts(at)), fetch=True)
        return row[0]

    async def set_state(self, alert_id: int, state: str, column: str | None, at: float,
                        only_from: tuple[str, ...] | None = None) -> bool:
        """``state`` (and the timestamp ``column`` = ``at``); False when ``only_from`` did not match."""
        sets = "state = %s" + (f", {column} = %s" if column else "")
        params = [state] + ([ts(at)] if column else []) + [alert_id]
        where = "id = %s"
        if only_from:
            where += " AND state = ANY(%s)"
            params.append(list(only_from))
        row = await self._exec(f"UPDATE alerts SET {sets} WHERE {where} RETURNING id", params, fetch=True)
        return row is not None

    async def episode_continued(self, alert_id: int, episodes: int, details: dict) -> None:
        """A new episode within the hold-off: the alert goes on with one episode more."""
        await self._exec("UPDATE alerts SET episode_ended_at = NULL, episodes = %s, details = %s WHERE id = %s",
                         (episodes, json.dumps(details, default=str), alert_id))

    async def episode_ended(self, alert_id: int, at: float, details: dict | None = None) -> None:
        """The alert's episode is over at ``at``; it resolves after the hold-off."""
        if details is None:
            await self._exec("UPDATE alerts SET episode_ended_at = %s WHERE id = %s", (ts(at), alert_id))
        else:
            await self._exec("UPDATE alerts SET episode_ended_at = %s, details = %s WHERE id = %s",
                             (ts(at), json.dumps(details, default=str), alert_id))

    async def episode_resumed(self, alert_id: int) -> None:
        """A health condition is back within the hold-off."""
        await self._exec("UPDATE alerts SET episode_ended_at = NULL WHERE id = %s", (alert_id,))

    async def acknowledged(self, alert_ids: list[int]) -> list[tuple]:
        """``(id, by, at, note)`` of the alerts among ``alert_ids`` acknowledged since."""
        return await self._exec("SELECT id, acknowledged_by, acknowledged_at, ack_note FROM alerts "
                                "WHERE id = ANY(%s) AND acknowledged_at IS NOT NULL", (alert_ids,), all_rows=True)

    # -- violations ----------------------------------------------------------------------

    async def upsert_violation(self, v: dict, end: str | None) -> int:
        """The episode's ``violations`` row (source 'stream'), inserted or brought up to date."""
        row = await self._exec(
            """INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time,
                   end_time, peak, limit_value, unit, days_of_violation, evidence, source)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'stream')
               ON CONFLICT (sensor_id, rule, start_time) DO UPDATE SET end_time = EXCLUDED.end_time,
                   peak = EXCLUDED.peak, limit_value = EXCLUDED.limit_value,
                   days_of_violation = EXCLUDED.days_of_violation, evidence = EXCLUDED.evidence
               RETURNING id""",
            (v["site_id"], v["sensor_id"], v["parameter"], v["rule"], v["pack"], v["citation"], v["words"],
             v["start"], end, v["peak"], v["limit"], v["unit"], v.get("days_of_violation"),
             json.dumps({k: v.get(k) for k in ("last", "peak_time", "duration_s", "readings", "average",
                                                 "multiple", "comparison")})), fetch=True)
        return row[0]

    async def alerted_before(self, violation_id: int) -> int | None:
        """The alert that already covered the episode ``violation_id`` (opened by it, or
        continued by it), or None."""
        row = await self._exec(
            """SELECT id FROM alerts WHERE violation_id = %s
               UNION ALL
               SELECT substr(object, 7)::bigint FROM audit_log
               WHERE action = 'alert-episode-continued' AND (detail->>'violation_id')::bigint = %s
               LIMIT 1""",
            (violation_id, violation_id), fetch=True)
        return None if row is None else row[0]

    # -- notifications, audit, digest ----------------------------------------------------

    async def record_attempt(self, alert_id: int | None, event: str, channel: str, contact: str, attempt: int,
                             error: str | None, at: float, subject: str | None = None) -> None:
        """One delivery attempt, sent (``error`` None) or failed."""
        await self._exec(
            "INSERT INTO alert_notifications (alert_id, event, channel, contact, attempt, status, error, at, "
            "subject) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (alert_id, event, channel, contact, attempt, "failed" if error else "sent", error, ts(at), subject))

    async def audit(self, action: str, alert_id: int | None, detail: dict, at: float, *,
                    object_: str | None = None) -> None:
        """An ``audit_log`` row on ``alert:<id>`` (or ``object_``)."""
        obj = object_ or (f"alert:{alert_id}" if alert_id else None)
        await self._exec("INSERT INTO audit_log (at, actor, action, object, detail) VALUES (%s, %s, %s, %s, %s)",
                         (ts(at), ACTOR, action, obj, json.dumps(detail, default=str)))

    async def digest_sent(self, subject: str) -> bool:
        """Whether the digest ``subject`` (``digest:<day>``) went out already."""
        row = await self._exec("SELECT 1 FROM audit_log WHERE action = 'digest-sent' AND object = %s",
                               (subject,), fetch=True)
        return row is not None

    async def digest_rows(self, day: str, tz: str) -> list[dict]:
        """The alerts of local day ``day`` (:mod:`alerts.digest`)."""
        a, b = digest.day_bounds(day, tz)
        return [dict(zip(digest.COLS, r)) for r in await self._exec(digest.SQL, (b, a), all_rows=True)]


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


def acknowledge(conn, alert_id: int, by: str, note: str | None) -> tuple[str, str | None] | None:
    """Acknowledge ``alert_id`` in one transaction (the running manager sees it within a
    second and stops its escalation); audited.

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
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'alert-acknowledged', %s, %s)",
                     (by, f"alert:{alert_id}", json.dumps({"from": state, "to": new_state, "note": note})))
    return state, None
