"""The alert manager: one alert per violation episode, its lifecycle, and its notifications.

It reacts to episode openings and closings from the streaming evaluator (never to single
readings), to sensor-health conditions, and to sewerwatch's own degraded conditions:

* an episode opens -> an ``alerts`` row (state ``open``) and a ``violations`` row
  (``end_time`` NULL, ``source`` 'stream'); the primary contacts are notified and the
  alert becomes ``notified`` once any channel delivered it;
* while it grows -> its ``violations`` row is brought up to date (:meth:`on_growing`);
* the episode closes -> the violation gets its end; the alert waits ``hold_off_s``: a new
  episode of the same sensor and rule within it continues the same alert (a value
  hovering at the limit does not flap), otherwise the alert is ``resolved`` and the
  resolution is sent;
* unacknowledged ``escalate_after_min`` after opening -> the escalation contacts are
  notified once (state ``escalated``); an acknowledgement (``sewerwatch alerts ack``,
  written to the database, seen here within a second) stops it;
* every state change goes to ``audit_log``, every delivery attempt (sent or failed) to
  ``alert_notifications``; a failed delivery is retried with exponential backoff up to
  ``retry_attempts`` times, the final failure logged at ERROR level and audited.

Alerts never wait for the database: the manager decides and notifies from memory. Its
database writes go through the outbox (:mod:`alerts.outbox`), journalled on local disk and
applied in order, each once, when the database takes them. An opening's message carries
the alert's number, one the outbox took ahead from the database's sequence; it goes at
once when the database's alerted episodes are all in memory (the usual case), else after
its row, waited for up to ``open_wait_s`` with the database up. What the manager knows
(the alerts not resolved, the episodes already alerted) is also kept in
``<state dir>/alerts-state.json``, so a restart while the database is down neither alerts
an episode twice nor loses an alert.

"sewerwatch degraded" alerts (:meth:`on_system`) need no database at all: they go to the
primary contacts and are recorded in the audit log when it can be written.

Violation episodes are handled by :mod:`alerts.episode_alerts` (a part of
:class:`AlertManager`); the alert it tracks is :class:`alerts.active.Active`.

Time comes from an injectable ``clock`` (epoch seconds) so tests run escalation and the
hold-off in seconds. Deliveries run in a thread pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg

from alerts import content
from alerts.active import Active, when
from alerts.channels import DeliveryError, Route, failure_text, primary
from alerts.dischargers import DischargerMail
from alerts.dischargers import message as discharger_message
from alerts.episode_alerts import EpisodeAlerts
from alerts.keys import DEVICE_UNREACHABLE, AlertKey, object_subject
from alerts.links import LINKED_EVENTS, LINKED_KINDS
from alerts.outbox import Outbox
from alerts.store import AlertStore, ts
from foundation.files import write_whole
from limits.evaluator import iso_utc_array
from limits.packs import load_pack

log = logging.getLogger("sewerwatch.alerts")

#: The manager's memory and its journal of pending writes, in the state folder.
STATE_FILE = "alerts-state.json"
OUTBOX_FILE = "alerts-outbox.jsonl"
#: Episodes remembered as alerted (for "seen again" after a restart), newest kept.
ALERTED_KEEP = 20_000
#: Episodes alerted this recently are taken from the database when it is reached [s]
#: (more than a new leader's warm-up, sewerwatch.leader).
ALERTED_WITHIN_S = 2 * 86400.0
#: An alert write waiting this long is "database slow" [s].
SLOW_AFTER_S = 5.0
#: a send not answered within this long counts as a failed attempt (the service's answer is
#: no longer awaited; its thread is left to finish) [s]: what apprise's own service timeout
#: did before sends ran in the delivery thread
SEND_TIMEOUT_S = 60.0


class AlertManager(EpisodeAlerts):
    """Alerts of one utility, kept in the database at ``db_url`` (owner role).

    Parameters
    ----------
    cfg : foundation.config.Config
        ``hold_off_s``, ``escalate_after_min``, ``alert_options``, ``timezone``.
    db_url : str
        Database URL (owner role: the manager writes violations, alerts and the audit log).
    routes : list of alerts.channels.Route
        The channels.
    sites : dict
        Site key -> (site id, site name).
    clock : callable
        Returns the time [epoch s].
    state_dir : path-like, optional
        Where the manager keeps its memory and journal; None: in memory only (tests).
    open_wait_s : float
        With the database up, how long an opening waits for its row (and number) before
        it is notified anyway [s].
    links : alerts.links.AckLinks, optional
        Makes the acknowledgement link each open and escalation message of a violation or
        sensor-health alert carries (None: messages name the command only).
    """

    def __init__(self, cfg, db_url: str, routes: list[Route], sites: dict, *, clock=time.time,
                 timezone_name: str | None = None, workers: int = 4, state_dir: Path | None = None,
                 open_wait_s: float = 1.0, links=None, gate=None):
        self.cfg = cfg
        self.links = links
        self.gate = gate        # async (timeout) -> bool: whether this run may still send and write
        self.db_url = db_url
        self.routes = routes
        self.sites = sites
        self.clock = clock
        self.tz = timezone_name or cfg.timezone or load_pack(cfg.pack).timezone
        self.opts = cfg.alert_options
        self.open_wait_s = open_wait_s
        self.active: dict[AlertKey, Active] = {}
        self.alerted: dict[tuple, str] = {}     # (sensor id, rule, start) -> uid of the alert that covered it
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sewerwatch-notify")
        self.send_timeout_s = SEND_TIMEOUT_S
        self.store = AlertStore(db_url)
        state_dir = Path(state_dir) if state_dir is not None else None
        self.state_path = state_dir / STATE_FILE if state_dir is not None else None
        self.outbox = Outbox(self.store, state_dir / OUTBOX_FILE if state_dir is not None else None,
                             on_db_up=self._catch_up, gate=gate)
        self._outbox_task: asyncio.Task | None = None
        self._deliveries: set[asyncio.Task] = set()
        self._last_ack_poll = 0.0
        self._last_digest_check = 0.0
        self._seen_again: set = set()  # episodes alerted before, seen again in this run
        self._db_loaded = False
        self._dirty = False
        self._state_error: str | None = None
        self.stats = {"opened": 0, "resolved": 0, "escalated": 0, "sent": 0, "failed": 0, "lost": 0}
        mail_url = cfg.web.mail_url if getattr(cfg, "web", None) is not None else None
        # the discharger's copy of an alert that calls for its report (the address book's emergency contacts)
        self.dischargers = DischargerMail(mail_url, db_url) if mail_url else None
        self._dis_task: asyncio.Task | None = None

    # -- life -------------------------------------------------------------------------

    async def start(self) -> "AlertManager":
        """Restore the memory of an earlier run, queue its unapplied writes, and start the
        outbox; the database need not be reachable."""
        self._restore()
        self.outbox.load()
        self._outbox_task = asyncio.get_running_loop().create_task(self.outbox.run(), name="alert outbox")
        await self.outbox.probe()
        self._read_dischargers_soon()
        return self

    def _read_dischargers_soon(self) -> None:
        """Start reading the emergency contacts when due, never waiting for it."""
        if self.dischargers is None or not self.dischargers.due(self.clock()):
            return
        if self._dis_task is None or self._dis_task.done():
            self._dis_task = asyncio.get_running_loop().create_task(self._read_dischargers(), name="emergency contacts")

    async def _read_dischargers(self) -> None:
        """Read the emergency contacts again when due (off the loop; a failure keeps the last)."""
        now = self.clock()
        if self.dischargers is None or not self.dischargers.due(now):
            return
        try:
            found = await asyncio.get_running_loop().run_in_executor(self._pool, self.dischargers.read)
        except Exception as exc:  # noqa: BLE001 - a failed read keeps the last; alerts go on
            log.warning("could not read the emergency contacts: %s", str(exc).strip().splitlines()[0]
                        if str(exc).strip() else type(exc).__name__)
            found = None
        self.dischargers.took(now, found)

    async def close(self, timeout: float = 30.0) -> None:
        """Wait (up to ``timeout`` s) for deliveries in flight and for the database writes,
        then close (writes still waiting stay in the journal for the next start)."""
        if self._deliveries:
            done, pending = await asyncio.wait(set(self._deliveries), timeout=timeout)
            for t in pending:
                t.cancel()
                log.error("alert delivery still retrying at shutdown; abandoned (recorded as failed attempts)")
        if self.outbox.db_up and (self.gate is None or await self.gate(0.0)) and not await self.outbox.flush(timeout):
            log.error("%d alert writes not applied at shutdown; kept in the journal", len(self.outbox))
        self._save()
        if self._dis_task is not None:
            self._dis_task.cancel()
        if self._outbox_task is not None:
            self._outbox_task.cancel()
            try:
                await self._outbox_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it is being stopped
                pass
        self._pool.shutdown(wait=False, cancel_futures=True)
        for r in self.routes:
            close = getattr(r.channel, "close", None)
            if close:
                close()
        await self.store.close()

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until no delivery is in flight and, with the database up, every write is
        applied (tests, shutdown)."""
        end = time.monotonic() + timeout
        if self._dis_task is not None and not self._dis_task.done():      # the emergency contacts' read
            await asyncio.wait({self._dis_task}, timeout=max(0.0, end - time.monotonic()))
        while self._deliveries and time.monotonic() < end:
            await asyncio.wait(set(self._deliveries), timeout=max(0.0, end - time.monotonic()))
        if self.outbox.db_up:
            await self.outbox.flush(max(0.0, end - time.monotonic()))

    def problem(self) -> str | None:
        """Why the manager is not doing all its work, or None (the pipeline's health check)."""
        if self._outbox_task is not None and self._outbox_task.done():
            return "the alert outbox stopped; restarting it"
        if self.outbox.db_up is False and len(self.outbox):
            return (f"alert database unreachable ({self.outbox.last_error}); {len(self.outbox)} writes wait, "
                    "notifications go on")
        behind = self.outbox.behind_s()
        if behind is not None and behind >= SLOW_AFTER_S:
            return (f"database slow ({behind:.0f} s behind): {len(self.outbox)} alert writes wait (locks or load); "
                    "notifications go on")
        return None

    def status(self) -> dict:
        return {"active": len(self.active), **self.stats, "outbox": self.outbox.status(),
                "state_error": self._state_error}

    # -- memory across restarts ---------------------------------------------------------

    def _restore(self) -> None:
        if self.state_path is None or not self.state_path.is_file():
            return
        try:
            data = json.loads(self.state_path.read_text())
        except (OSError, ValueError) as exc:
            log.error("alerts: cannot read %s (%s); starting without it", self.state_path, exc)
            return
        now = self.clock()
        for d in data.get("active", []):
            key = AlertKey(*d.pop("key"))
            a = Active(key=key, **{k: v for k, v in d.items() if k in Active.__dataclass_fields__})
            # the episodes' state was lost with the evaluator's: each waits out the hold-off
            # from now, and a violation still going reopens its episode within it
            a.ended, a.open_starts = now, []
            self.active[key] = a
        for sensor_id, rule, start, uid in data.get("alerted", []):
            self.alerted[(sensor_id, rule, start)] = uid
        log.info("alerts: %d alerts not resolved and %d alerted episodes remembered from %s",
                 len(self.active), len(self.alerted), self.state_path)

    def _save(self) -> None:
        """Write the memory (atomically; a full disk leaves the last one and says so once)."""
        self._dirty = False
        if self.state_path is None:
            return
        while len(self.alerted) > ALERTED_KEEP:
            self.alerted.pop(next(iter(self.alerted)))
        data = {"active": [{**asdict(a), "key": list(a.key)} for a in self.active.values() if a.kind != "system"],
                "alerted": [[*k, uid] for k, uid in self.alerted.items()]}
        try:
            write_whole(self.state_path, json.dumps(data, default=str), mode=0o644)
            self._state_error = None
        except OSError as exc:
            if self._state_error is None:
                log.error("alerts: cannot save %s (%s); a restart may alert an episode again",
                          self.state_path, exc.strerror or exc)
            self._state_error = str(exc)

    async def _catch_up(self) -> None:
        """The database is reachable (again): take up what it knows that memory does not."""
        if self._db_loaded:
            return
        self._db_loaded = True
        now = self.clock()
        # first forget what was resolved meanwhile (by another run: a standby that led while
        # this one was down), so a stale alert does not hide the one that took its place
        known = [a.id for a in self.active.values() if a.id is not None]
        if known:
            gone = set(await self.store.alerts_resolved(known))
            for key, a in list(self.active.items()):
                if a.id in gone:
                    del self.active[key]
        # the episodes alerted lately, by whichever run: judged again (a new leader's warm-up)
        # they are seen again, never a second alert nor an episode added to another alert
        for sensor_id, rule, start_us, alert_id in await self.store.recently_alerted(ALERTED_WITHIN_S):
            self.alerted.setdefault((int(sensor_id), rule, iso_utc_array([start_us])[0]), f"alert-{alert_id}")
        by_id = {a.id: a for a in self.active.values() if a.id is not None}
        by_uid = {a.uid: a for a in self.active.values()}
        for r in await self.store.unresolved():
            local = by_id.get(r["id"]) or next((by_uid[u] for u in r["uids"] or () if u in by_uid), None)
            acked = r["acknowledged_at"]
            ack = {"by": r["acknowledged_by"], "at": str(acked), "note": r["ack_note"]} if acked else None
            if local is not None:
                local.id = r["id"]
                if acked and not local.acknowledged:
                    local.acknowledged, local.ack, local.state = True, ack, r["state"]
                continue
            key = AlertKey.of_row(r["kind"], r["rule"], r["sensor_id"], r["device"])
            if key in self.active:
                continue
            # left by an earlier run (or the leader before a takeover, sewerwatch.leader):
            # tracked again, with the episodes it covers, and it waits out the hold-off from now
            self.active[key] = Active(
                uid=f"alert-{r['id']}", id=r["id"], kind=r["kind"], key=key, rule=r["rule"], site=r["site"] or "",
                site_name=r["site_name"] or "", record=r["details"] or {}, opened=r["opened_at"].timestamp(),
                state=r["state"], escalated=r["escalated_at"] is not None, acknowledged=acked is not None,
                ack=ack, ended=now, episodes=r["episodes"], summary=r["summary"],
                starts=iso_utc_array(r["starts_us"]) if r["starts_us"] else [])
        self._save()

    # -- writes (through the outbox) -------------------------------------------------------

    def _op(self, op: dict) -> asyncio.Future:
        return self.outbox.put(op)

    def _audit(self, action: str, a: Active | None, detail: dict, object_: str | None = None,
               violation_of: tuple | None = None) -> None:
        """An audit row; ``violation_of`` (sensor id, rule, start) puts the episode's
        ``violation_id`` into the detail once the row is written."""
        self._op({"op": "audit", "uid": a.uid if a is not None else None, "action": action, "detail": detail,
                  "at": self.clock(), "object": object_, "violation_of": list(violation_of) if violation_of else None})

    def _set_state(self, a: Active, state: str, column: str | None = None, only_from=None) -> bool:
        if only_from and a.state not in only_from:
            return False
        old, a.state = a.state, state
        self._op({"op": "state", "uid": a.uid, "state": state, "column": column, "at": self.clock(),
                  "only_from": list(only_from) if only_from else None})
        self._audit(f"alert-{state}", a, {"from": old, "to": state, "rule": a.rule, "site": a.site})
        self._dirty = True
        return True

    async def _number_ahead(self, start: str) -> tuple[int | None, bool]:
        """The next alert number taken ahead (:meth:`alerts.outbox.Outbox.take_id`; None when
        none is at hand) for the opening of an episode that started at ``start`` (ISO-8601),
        and whether its message may go without waiting for the row: only when the database's
        alerted episodes are all in memory (read at the catch-up and kept since) and the
        episode is recent enough to be among them; otherwise only the row can say that it was
        alerted before (:meth:`_opened_row` waits for it, unless the database is down or
        behind). Numbers are taken in order either way, so they run on without gaps but where
        a run stopped holding some."""
        number = await self.outbox.take_id()
        sure = number is not None and self._db_loaded and len(self.alerted) < ALERTED_KEEP \
            and self.clock() - when(start).timestamp() <= ALERTED_WITHIN_S - 3600.0
        return number, sure

    async def _opened_row(self, a: Active, fut: asyncio.Future, wait: bool = True) -> bool:
        """Wait (briefly, only with the database up; not at all unless ``wait``) for an
        opening's row. False when the database knew the episode as alerted before (no second
        alert)."""
        fut.add_done_callback(lambda f: self._numbered(a, f))
        if not wait or not self.outbox.db_up or len(self.outbox) > 50:
            return True
        try:
            res = await asyncio.wait_for(asyncio.shield(fut), self.open_wait_s)
        except (asyncio.TimeoutError, psycopg.Error):
            return True
        return not res.get("seen")

    def _numbered(self, a: Active, fut: asyncio.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        res = fut.result()
        if res and res.get("alert_id") is not None and a.id != res["alert_id"]:
            a.id = res["alert_id"]          # the row's number is the alert's (numbered ahead: the same)
            self._dirty = True

    # -- sensor health --------------------------------------------------------------------

    async def on_health(self, problems: dict, sensors: dict) -> None:
        """Current health conditions ``{(rule, sensor_or_device): {"since", "detail", ...}}``;
        ``sensors``: sensor id -> (site key, sensor name, site id). A condition no longer
        present ends its alert (resolved after the hold-off)."""
        now = self.clock()
        for (rule, obj), info in problems.items():
            key = AlertKey.health(rule, obj)
            a = self.active.get(key)
            if a is not None:
                if a.ended is not None:
                    a.ended = None
                    self._dirty = True
                    self._op({"op": "episode-resumed", "uid": a.uid})
                    self._audit("alert-episode-continued", a, {"rule": rule})
                continue
            if rule == DEVICE_UNREACHABLE or object_subject(obj):
                site = info.get("site") or ""
                sensor_id, device = info.get("sensor_id"), obj
                h = {"rule": rule, "site": site, "device": obj, "since": info.get("since"), "detail": info.get("detail")}
                if info.get("label"):
                    h["label"] = info["label"]
            else:
                site, name, _ = sensors.get(obj, ("", str(obj), None))
                sensor_id, device = obj, None
                h = {"rule": rule, "site": site, "sensor": name, "since": info.get("since"),
                     "detail": info.get("detail")}
            if isinstance(h["since"], (int, float)):
                h["since"] = ts(h["since"]).isoformat()
            site_id, site_name = self.sites.get(site, (None, site))
            summary = (f"{site_name}: {h.get('label') or h.get('device') or h.get('sensor')} "
                       f"{content.HEALTH_WORDS.get(rule, rule)}")
            a = Active(uid=uuid.uuid4().hex, id=await self.outbox.take_id(), kind="sensor-health", key=key, rule=rule,
                       site=site, site_name=site_name, record=h, opened=now, summary=summary)
            self.active[key] = a
            self._dirty = True
            fut = self._op({"op": "open-health", "uid": a.uid, "id": a.id, "site_id": site_id, "sensor_id": sensor_id,
                            "device": device, "rule": rule, "summary": summary, "details": h, "at": now})
            await self._opened_row(a, fut)
            self.stats["opened"] += 1
            self._audit("alert-open", a, {"summary": summary})
            self._notify(a, "open")
        current = {AlertKey.health(r, o) for r, o in problems}
        for key, a in list(self.active.items()):
            if a.kind == "sensor-health" and key not in current and a.ended is None:
                a.ended = now
                self._dirty = True
                self._op({"op": "episode-ended", "uid": a.uid, "at": now, "details": None})
                self._audit("alert-episode-ended", a, {"rule": a.rule})
        if self._dirty:
            self._save()

    # -- sewerwatch itself -------------------------------------------------------------------

    async def on_system(self, problems: dict[str, str]) -> None:
        """Current degraded conditions of sewerwatch itself, ``{component: problem}``: a new
        one is a "sewerwatch degraded" alert to the primary contacts at once (no database
        needed); one gone ends, and after the hold-off a recovery notice follows."""
        now = self.clock()
        for component, problem in problems.items():
            key = AlertKey.system(component)
            a = self.active.get(key)
            if a is not None:
                a.ended = None
                a.record["problem"] = problem
                continue
            a = Active(uid=uuid.uuid4().hex, id=None, kind="system", key=key, rule="degraded", site="",
                       site_name=self.cfg.name, opened=now,
                       record={"component": component, "problem": problem, "since": ts(now).isoformat()},
                       summary=f"sewerwatch degraded: {component}: {problem}")
            self.active[key] = a
            self.stats["opened"] += 1
            log.error("SEWERWATCH DEGRADED: %s: %s", component, problem)
            self._audit("system-degraded", None, a.record, object_=f"system:{component}")
            self._notify(a, "open")
        for key, a in list(self.active.items()):
            if a.kind == "system" and key.subject not in problems and a.ended is None:
                a.ended = now

    # -- timers -----------------------------------------------------------------------------

    async def tick(self) -> None:
        """Acknowledgements, escalations, resolutions after the hold-off, the daily digest."""
        now = self.clock()
        if self._outbox_task is not None and self._outbox_task.done():
            if not self._outbox_task.cancelled() and self._outbox_task.exception() is not None:
                log.error("alert outbox stopped (%s); restarting it", self._outbox_task.exception())
            self._outbox_task = asyncio.get_running_loop().create_task(self.outbox.run(), name="alert outbox")
        if self.outbox.db_up and (now - self._last_ack_poll >= 1.0 or now < self._last_ack_poll):
            try:
                await self._poll_acks()
            except psycopg.Error as exc:
                log.warning("could not read acknowledgements: %s", str(exc).strip().splitlines()[0] if str(exc).strip()
                            else type(exc).__name__)
            self._last_ack_poll = now
        esc_after = self.cfg.escalate_after_min * 60.0
        for key, a in list(self.active.items()):
            if a.ended is not None and now - a.ended >= self.cfg.hold_off_s:
                self._resolve(a)
                continue
            if a.kind != "system" and not a.acknowledged and not a.escalated and now - a.opened >= esc_after:
                a.escalated = True
                self.stats["escalated"] += 1
                self._set_state(a, "escalated", "escalated_at")
                if not any(r.escalation for r in self.routes):
                    log.warning("alert %s is unacknowledged but no escalation contact is configured", a.label)
                self._notify(a, "escalate")
        if self.opts.digest_at and self.outbox.db_up and now - self._last_digest_check >= 30.0:
            self._last_digest_check = now
            try:
                await self._maybe_digest(now)
            except psycopg.Error as exc:
                log.warning("could not prepare the daily digest: %s", exc)
        if self.outbox.db_up:
            self._read_dischargers_soon()
        if self._dirty:
            self._save()

    async def _poll_acks(self) -> None:
        ids = [a.id for a in self.active.values() if not a.acknowledged and a.id is not None]
        if not ids:
            return
        rows = await self.store.acknowledged(ids)
        by_id = {a.id: a for a in self.active.values()}
        for aid, by, at, note in rows:
            a = by_id[aid]
            a.acknowledged, a.state = True, "acknowledged"
            a.ack = {"by": by, "at": content.local_time(at, self.tz), "note": note}
            self._dirty = True
            log.info("alert #%d acknowledged by %s", aid, by)

    def _resolve(self, a: Active) -> None:
        self.active.pop(a.key, None)
        self.stats["resolved"] += 1
        self._dirty = True
        if a.kind == "system":
            self._audit("system-recovered", None, a.record, object_=f"system:{a.key.subject}")
        else:
            self._set_state(a, "resolved", "resolved_at")
        self._notify(a, "resolve")

    # -- notifications ------------------------------------------------------------------------

    def _link(self, a: Active, event: str) -> dict | None:
        """A new acknowledgement link for this message (:mod:`alerts.links`), or None."""
        if self.links is None or event not in LINKED_EVENTS or a.kind not in LINKED_KINDS or a.acknowledged:
            return None
        return {"url": self.links.url(a.id, a.uid, event),
                "until": content.local_time(ts(self.links.expires_at()), self.tz)}

    def message(self, a: Active, event: str) -> tuple[str, str, dict]:
        link = self._link(a, event)
        try:
            if a.kind == "violation":
                title, body = content.violation_message(a.id, event, a.record, site_name=a.site_name, tz=self.tz,
                                                        options=self.opts, ack=a.ack, link=link)
            elif a.kind == "system":
                title, body = content.system_message(event, a.record, utility=self.cfg.name, tz=self.tz)
            else:
                title, body = content.health_message(a.id, event, a.record, site_name=a.site_name, tz=self.tz,
                                                     link=link)
        except (KeyError, TypeError, ValueError):
            # an alert from elsewhere (or an older run) without a full record: its summary
            title = f"[sewerwatch] {content.EVENT_WORDS.get(event, event.upper())} {a.label}: {a.summary or a.rule}"
            body = (f"Alert {a.label} ({a.kind}, {a.rule}): {a.summary}\n"
                    f"Details: sewerwatch alerts show {a.id}\n"
                    f"Acknowledge: sewerwatch alerts ack {a.id} --by NAME [--note TEXT]")
        payload = {"alert_id": a.id, "event": event, "kind": a.kind, "rule": a.rule, "site": a.site,
                   "state": a.state, "record": a.record}
        return title, body, payload

    def _routes_for(self, a: Active, event: str) -> list[Route]:
        if event == "escalate":
            return [r for r in self.routes if r.escalation or r.channel.kind != "apprise"]
        if event == "resolve" and a.escalated:
            return list(self.routes)
        return primary(self.routes)

    def _notify(self, a: Active, event: str) -> None:
        title, body, payload = self.message(a, event)
        sends = [(r, title, body) for r in self._routes_for(a, event)]
        if self.dischargers is not None and a.kind == "violation" and event == "open":
            told = discharger_message(a.record, site_name=a.site_name, utility=self.cfg.name, tz=self.tz)
            if told is not None:
                sends += [(r, *told) for r in self.dischargers.routes(a.site)]
        for r, t_, b_ in sends:
            t = asyncio.get_running_loop().create_task(self._deliver(a, event, r, t_, b_, payload))
            self._deliveries.add(t)
            t.add_done_callback(self._deliveries.discard)

    async def deliver_to_primary(self, alert_id: int, title: str, body: str, payload: dict) -> list[str]:
        """Deliver an alert opened elsewhere (an enforcement item, :mod:`enforcement.due`) to the
        primary contacts, with the manager's retries; each attempt recorded against ``alert_id``.

        Returns
        -------
        list of str
            The channels that delivered it.
        """
        routes = primary(self.routes)
        ok = await asyncio.gather(*(self._deliver(None, "open", r, title, body, payload,
                                                  subject=f"alert:{alert_id}", alert_id=alert_id) for r in routes))
        sent = [r.channel.name for r, done in zip(routes, ok) if done]
        if sent:
            self._op({"op": "state", "uid": f"alert-{alert_id}", "state": "notified", "column": "notified_at",
                      "at": self.clock(), "only_from": ["open"]})
        return sent

    async def _deliver(self, a: Active | None, event: str, route: Route, title: str, body: str, payload: dict,
                       subject: str | None = None, alert_id: int | None = None) -> bool:
        ch = route.channel
        loop = asyncio.get_running_loop()
        attempts = self.opts.retry_attempts
        uid = a.uid if a is not None and a.kind != "system" else None
        if uid is None and alert_id is not None:     # an alert this manager does not track
            uid = f"alert-{alert_id}"
        label = a.label if a is not None else subject
        if a is not None and a.kind == "system":
            subject = f"system:{a.key.subject}"
        for attempt in range(1, attempts + 1):
            if self.gate is not None and not await self.gate():
                self.stats["not_sent"] = self.stats.get("not_sent", 0) + 1
                log.warning("alert %s %s via %s not sent: this run no longer leads (another took over while it "
                            "stood still)", label, event, ch.name)
                return False
            try:
                sending = loop.run_in_executor(self._pool, ch.send, title, body, payload)
                done, _ = await asyncio.wait({sending}, timeout=self.send_timeout_s)
                if not done:        # a timeout the send raises itself is its own reason, not this one
                    sending.cancel()        # its thread is left to finish; its outcome is not awaited
                    raise DeliveryError(f"no answer from the service within {self.send_timeout_s:g} s")
                sending.result()
                error = None
            except Exception as exc:  # noqa: BLE001 - every failure is recorded
                error = failure_text(exc)
                if not isinstance(exc, DeliveryError):      # not a refusal: a fault of the channel's code
                    log.warning("alert %s %s via %s: the send raised", label, event, ch.name, exc_info=exc)
            self._op({"op": "attempt", "uid": uid, "event": event, "channel": ch.name, "contact": ch.contact,
                      "attempt": attempt, "error": error, "at": self.clock(), "subject": subject})
            if error is None:
                self.stats["sent"] += 1
                self._audit("notification-sent", a if a is not None and a.kind != "system" else None,
                            {"event": event, "channel": ch.name, "contact": ch.contact, "attempt": attempt,
                             "subject": subject}, object_=f"alert:{alert_id}" if alert_id is not None else None)
                if a is not None and event == "open" and a.kind != "system":
                    self._set_state(a, "notified", "notified_at", only_from=("open",))
                return True
            self.stats["failed"] += 1
            if attempt < attempts:
                delay = min(self.opts.retry_backoff_s * 2 ** (attempt - 1), 300.0)
                log.warning("alert %s %s via %s failed (attempt %d/%d, retry in %.1f s): %s",
                            label, event, ch.name, attempt, attempts, delay, error)
                await asyncio.sleep(delay)
        self.stats["lost"] += 1
        log.error("ALERT NOT DELIVERED: alert %s %s via %s to %s failed %d times; last error: %s",
                  label, event, ch.name, ch.contact, attempts, error)
        self._audit("notification-failed", a if a is not None and a.kind != "system" else None,
                    {"event": event, "channel": ch.name, "contact": ch.contact, "attempts": attempts, "error": error},
                    object_=f"alert:{alert_id}" if alert_id is not None else None)
        return False

    # -- digest ------------------------------------------------------------------------------

    async def _maybe_digest(self, now: float) -> None:
        tz = ZoneInfo(self.tz)
        local = datetime.fromtimestamp(now, tz)
        hh, mm = map(int, self.opts.digest_at.split(":"))
        if (local.hour, local.minute) < (hh, mm):
            return
        day = (local.date() - timedelta(days=1)).isoformat()
        subject = f"digest:{day}"
        if await self.store.digest_sent(subject):
            return
        await self.send_digest(day)

    async def send_digest(self, day: str) -> None:
        """Send the digest of local day ``day`` (YYYY-MM-DD) to the primary contacts."""
        rows = await self.store.digest_rows(day, self.tz)
        title, body = content.digest_message(day, rows, self.tz, self.cfg.name)
        subject = f"digest:{day}"
        self._audit("digest-sent", None, {"alerts": len(rows)}, object_=subject)
        await self.outbox.flush(5.0)      # recorded before it goes, so a second tick does not send it again
        payload = {"kind": "digest", "day": day, "alerts": [r["id"] for r in rows]}
        for r in primary(self.routes):
            t = asyncio.get_running_loop().create_task(
                self._deliver(None, "digest", r, title, body, payload, subject=subject))
            self._deliveries.add(t)
            t.add_done_callback(self._deliveries.discard)
