"""The alert manager: one alert per violation episode, its lifecycle, and its notifications.

It reacts to episode openings and closings from the streaming evaluator (never to single
readings) and to sensor-health conditions:

* an episode opens -> an ``alerts`` row (state ``open``) and a ``violations`` row
  (``end_time`` NULL, ``source`` 'stream'); the primary contacts are notified and the
  alert becomes ``notified`` once any channel delivered it;
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

Time comes from an injectable ``clock`` (epoch seconds) so tests run escalation and the
hold-off in seconds. Deliveries run in a thread pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from alerts import content
from alerts.channels import Route
from alerts.keys import DEVICE_UNREACHABLE, AlertKey
from alerts.store import AlertStore, ts
from limits.packs import load_pack

log = logging.getLogger("sewerwatch.alerts")


@dataclass
class Active:
    """An alert not yet resolved, as the manager tracks it."""

    id: int
    kind: str
    key: AlertKey
    rule: str
    site: str
    site_name: str
    record: dict
    opened: float                 # [epoch s, manager clock]
    state: str = "open"
    escalated: bool = False
    acknowledged: bool = False
    ack: dict | None = None
    ended: float | None = None    # episode over at [epoch s]; resolved after the hold-off
    episodes: int = 1
    violation_ids: list = field(default_factory=list)
    summary: str = ""


class AlertManager:
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
    """

    def __init__(self, cfg, db_url: str, routes: list[Route], sites: dict, *, clock=time.time,
                 timezone_name: str | None = None, workers: int = 4):
        self.cfg = cfg
        self.db_url = db_url
        self.routes = routes
        self.sites = sites
        self.clock = clock
        self.tz = timezone_name or cfg.timezone or load_pack(cfg.pack).timezone
        self.opts = cfg.alert_options
        self.active: dict[AlertKey, Active] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sewerwatch-notify")
        self.store = AlertStore(db_url)
        self._deliveries: set[asyncio.Task] = set()
        self._last_ack_poll = 0.0
        self._retry: list[tuple[str, dict]] = []
        self._last_digest_check = 0.0
        self._seen_again: set[int] = set()  # violations alerted before, seen again in this run
        self.stats = {"opened": 0, "resolved": 0, "escalated": 0, "sent": 0, "failed": 0, "lost": 0}

    # -- life -------------------------------------------------------------------------

    async def start(self) -> "AlertManager":
        await self.store.open()
        await self._load()
        return self

    async def close(self, timeout: float = 30.0) -> None:
        """Wait (up to ``timeout`` s) for deliveries in flight, then close."""
        if self._deliveries:
            done, pending = await asyncio.wait(set(self._deliveries), timeout=timeout)
            for t in pending:
                t.cancel()
                log.error("alert delivery still retrying at shutdown; abandoned (recorded as failed attempts)")
        self._pool.shutdown(wait=False, cancel_futures=True)
        for r in self.routes:
            close = getattr(r.channel, "close", None)
            if close:
                close()
        await self.store.close()

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until no delivery is in flight (tests, shutdown)."""
        end = time.monotonic() + timeout
        while self._deliveries and time.monotonic() < end:
            await asyncio.wait(set(self._deliveries), timeout=max(0.0, end - time.monotonic()))

    async def _load(self) -> None:
        """Alerts left unresolved by an earlier run: tracked again. Their episodes' state
        was lost with the evaluator's, so each waits out the hold-off from now: a
        violation still going reopens its episode within it and continues the alert."""
        now = self.clock()
        for r in await self.store.unresolved():
            key = AlertKey.of_row(r["kind"], r["rule"], r["sensor_id"], r["device"])
            acked = r["acknowledged_at"]
            self.active[key] = Active(
                id=r["id"], kind=r["kind"], key=key, rule=r["rule"], site=r["site"] or "",
                site_name=r["site_name"] or "", record=r["details"] or {}, opened=r["opened_at"].timestamp(),
                state=r["state"], escalated=r["escalated_at"] is not None, acknowledged=acked is not None,
                ack={"by": r["acknowledged_by"], "at": str(acked), "note": r["ack_note"]} if acked else None,
                ended=now, episodes=r["episodes"], summary=r["summary"])

    # -- database -----------------------------------------------------------------------

    async def _audit(self, action: str, alert_id: int | None, detail: dict) -> None:
        await self.store.audit(action, alert_id, detail, self.clock())

    async def _set_state(self, a: Active, state: str, column: str | None = None, only_from=None) -> bool:
        if not await self.store.set_state(a.id, state, column, self.clock(), only_from):
            return False
        old, a.state = a.state, state
        await self._audit(f"alert-{state}", a.id, {"from": old, "to": state, "rule": a.rule, "site": a.site})
        return True

    # -- violation episodes ---------------------------------------------------------------

    async def on_episodes(self, opened: list[dict], closed: list[dict]) -> None:
        """React to episodes the evaluator saw open or closed (records as
        :func:`limits.evaluator.violations` plus ``sensor_id`` and ``site_id``)."""
        for what, v in [("open", v) for v in opened] + [("close", v) for v in closed]:
            try:
                await (self._episode_opened(v) if what == "open" else self._episode_closed(v))
            except psycopg.Error as exc:
                # kept and retried every tick until the database takes it: never dropped
                log.error("ALERT NOT YET RECORDED (database: %s): %s episode of %s/%s %s from %s; retrying",
                          str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                          what, v.get("site"), v.get("sensor"), v.get("rule"), v.get("start"))
                self._retry.append((what, v))

    async def _retry_episodes(self) -> None:
        todo, self._retry = self._retry, []
        for what, v in todo:
            try:
                await (self._episode_opened(v) if what == "open" else self._episode_closed(v))
            except psycopg.Error:
                self._retry.append((what, v))

    async def _episode_opened(self, v: dict) -> None:
        key = AlertKey.violation(v["sensor_id"], v["rule"])
        rec = {**v, "end": None}
        vid = await self.store.upsert_violation(v, None)
        a = self.active.get(key)
        if a is not None:
            # within the hold-off (or still open): the same alert goes on
            was_ended = a.ended is not None
            a.ended = None
            a.violation_ids.append(vid)
            if was_ended:
                a.episodes += 1
                a.record = {**rec, "start": a.record.get("start", rec["start"])}
                await self.store.episode_continued(a.id, a.episodes, a.record)
                await self._audit("alert-episode-continued", a.id, {"violation_id": vid, "start": v["start"]})
            return
        # The same episode seen again (readings redelivered after a restart, or replayed) was
        # alerted already: one alert per episode, never a second round of notifications.
        seen = await self.store.alerted_before(vid)
        if seen is not None:
            if vid not in self._seen_again:
                self._seen_again.add(vid)
                await self._audit("alert-episode-seen-again", seen, {"violation_id": vid, "start": v["start"]})
            return
        site_id, site_name = self.sites.get(v["site"], (v.get("site_id"), v["site"]))
        summary = content.summary(v, site_name)
        alert_id = await self.store.open_violation_alert(vid, v, summary, rec, self.clock())
        a = Active(id=alert_id, kind="violation", key=key, rule=v["rule"], site=v["site"], site_name=site_name,
                   record=rec, opened=self.clock(), violation_ids=[vid], summary=summary)
        self.active[key] = a
        self.stats["opened"] += 1
        await self._audit("alert-open", a.id, {"violation_id": vid, "summary": summary})
        self._notify(a, "open")

    async def _episode_closed(self, v: dict) -> None:
        key = AlertKey.violation(v["sensor_id"], v["rule"])
        if key not in self.active:
            await self._episode_opened(v)
        a = self.active.get(key)
        if a is None:  # an episode alerted before (see _episode_opened): keep its record current
            await self.store.upsert_violation(v, v["end"])
            return
        await self.store.upsert_violation(v, v["end"])
        a.record = {**v, "start": a.record.get("start", v["start"]),
                    "peak": _worse(a.record.get("peak"), v["peak"], v.get("comparison"))}
        a.ended = self.clock()
        await self.store.episode_ended(a.id, a.ended, a.record)
        await self._audit("alert-episode-ended", a.id, {"end": v["end"], "hold_off_s": self.cfg.hold_off_s})

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
                    await self.store.episode_resumed(a.id)
                    await self._audit("alert-episode-continued", a.id, {"rule": rule})
                continue
            if rule == DEVICE_UNREACHABLE:
                site = info.get("site") or ""
                sensor_id, device = None, obj
                h = {"rule": rule, "site": site, "device": obj, "since": info.get("since"), "detail": info.get("detail")}
            else:
                site, name, _ = sensors.get(obj, ("", str(obj), None))
                sensor_id, device = obj, None
                h = {"rule": rule, "site": site, "sensor": name, "since": info.get("since"),
                     "detail": info.get("detail")}
            if isinstance(h["since"], (int, float)):
                h["since"] = ts(h["since"]).isoformat()
            site_id, site_name = self.sites.get(site, (None, site))
            summary = f"{site_name}: {h.get('device') or h.get('sensor')} {content.HEALTH_WORDS.get(rule, rule)}"
            alert_id = await self.store.open_health_alert(site_id, sensor_id, device, rule, summary, h, now)
            a = Active(id=alert_id, kind="sensor-health", key=key, rule=rule, site=site, site_name=site_name,
                       record=h, opened=now, summary=summary)
            self.active[key] = a
            self.stats["opened"] += 1
            await self._audit("alert-open", a.id, {"summary": summary})
            self._notify(a, "open")
        current = {AlertKey.health(r, o) for r, o in problems}
        for key, a in list(self.active.items()):
            if a.kind == "sensor-health" and key not in current and a.ended is None:
                a.ended = now
                await self.store.episode_ended(a.id, now)
                await self._audit("alert-episode-ended", a.id, {"rule": a.rule})

    # -- timers -----------------------------------------------------------------------------

    async def tick(self) -> None:
        """Acknowledgements, escalations, resolutions after the hold-off, the daily digest."""
        now = self.clock()
        if self._retry:
            await self._retry_episodes()
        if now - self._last_ack_poll >= 1.0 or now < self._last_ack_poll:
            await self._poll_acks()
            self._last_ack_poll = now
        esc_after = self.cfg.escalate_after_min * 60.0
        for key, a in list(self.active.items()):
            if a.ended is not None and now - a.ended >= self.cfg.hold_off_s:
                await self._resolve(a)
                continue
            if not a.acknowledged and not a.escalated and now - a.opened >= esc_after:
                a.escalated = True
                self.stats["escalated"] += 1
                await self._set_state(a, "escalated", "escalated_at")
                if not any(r.escalation for r in self.routes):
                    log.warning("alert #%d is unacknowledged but no escalation contact is configured", a.id)
                self._notify(a, "escalate")
        if self.opts.digest_at and now - self._last_digest_check >= 30.0:
            self._last_digest_check = now
            await self._maybe_digest(now)

    async def _poll_acks(self) -> None:
        ids = [a.id for a in self.active.values() if not a.acknowledged]
        if not ids:
            return
        rows = await self.store.acknowledged(ids)
        by_id = {a.id: a for a in self.active.values()}
        for aid, by, at, note in rows:
            a = by_id[aid]
            a.acknowledged, a.state = True, "acknowledged"
            a.ack = {"by": by, "at": content.local_time(at, self.tz), "note": note}
            log.info("alert #%d acknowledged by %s", aid, by)

    async def _resolve(self, a: Active) -> None:
        self.active.pop(a.key, None)
        self.stats["resolved"] += 1
        await self._set_state(a, "resolved", "resolved_at")
        self._notify(a, "resolve")

    # -- notifications ------------------------------------------------------------------------

    def message(self, a: Active, event: str) -> tuple[str, str, dict]:
        try:
            if a.kind == "violation":
                title, body = content.violation_message(a.id, event, a.record, site_name=a.site_name, tz=self.tz,
                                                        options=self.opts, ack=a.ack)
            else:
                title, body = content.health_message(a.id, event, a.record, site_name=a.site_name, tz=self.tz)
        except (KeyError, TypeError, ValueError):
            # an alert from elsewhere (or an older run) without a full record: its summary
            title = f"[sewerwatch] {content.EVENT_WORDS.get(event, event.upper())} #{a.id}: {a.summary or a.rule}"
            body = (f"Alert #{a.id} ({a.kind}, {a.rule}): {a.summary}\n"
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
        return [r for r in self.routes if not r.escalation]

    def _notify(self, a: Active, event: str) -> None:
        title, body, payload = self.message(a, event)
        for r in self._routes_for(a, event):
            t = asyncio.get_running_loop().create_task(self._deliver(a, event, r, title, body, payload))
            self._deliveries.add(t)
            t.add_done_callback(self._deliveries.discard)

    async def _deliver(self, a: Active | None, event: str, route: Route, title: str, body: str, payload: dict,
                       subject: str | None = None) -> bool:
        ch = route.channel
        loop = asyncio.get_running_loop()
        attempts = self.opts.retry_attempts
        aid = a.id if a is not None else None
        for attempt in range(1, attempts + 1):
            try:
                await loop.run_in_executor(self._pool, ch.send, title, body, payload)
                error = None
            except Exception as exc:  # noqa: BLE001 - every failure is recorded
                error = f"{type(exc).__name__}: {exc}"[:2000]
            try:
                await self.store.record_attempt(aid, event, ch.name, ch.contact, attempt, error, self.clock(),
                                                subject)
            except psycopg.Error as exc:
                log.error("could not record alert #%s %s via %s attempt %d (%s): %s", aid, event, ch.name, attempt,
                          "failed: " + error if error else "sent", exc)
            if error is None:
                self.stats["sent"] += 1
                try:
                    await self._audit("notification-sent", aid, {"event": event, "channel": ch.name,
                                                                 "contact": ch.contact, "attempt": attempt,
                                                                 "subject": subject})
                    if a is not None and event == "open" and a.state == "open":
                        await self._set_state(a, "notified", "notified_at", only_from=("open",))
                except psycopg.Error as exc:
                    log.error("could not record the delivery of alert #%s: %s", aid, exc)
                return True
            self.stats["failed"] += 1
            if attempt < attempts:
                delay = min(self.opts.retry_backoff_s * 2 ** (attempt - 1), 300.0)
                log.warning("alert #%s %s via %s failed (attempt %d/%d, retry in %.1f s): %s",
                            aid, event, ch.name, attempt, attempts, delay, error)
                await asyncio.sleep(delay)
        self.stats["lost"] += 1
        log.error("ALERT NOT DELIVERED: alert #%s %s via %s to %s failed %d times; last error: %s",
                  aid, event, ch.name, ch.contact, attempts, error)
        try:
            await self._audit("notification-failed", aid, {"event": event, "channel": ch.name,
                                                           "contact": ch.contact, "attempts": attempts, "error": error})
        except psycopg.Error as exc:
            log.error("could not audit the failed delivery of alert #%s: %s", aid, exc)
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
        await self.store.audit("digest-sent", None, {"alerts": len(rows)}, self.clock(), object_=subject)
        payload = {"kind": "digest", "day": day, "alerts": [r["id"] for r in rows]}
        for r in self.routes:
            if not r.escalation:
                t = asyncio.get_running_loop().create_task(
                    self._deliver(None, "digest", r, title, body, payload, subject=subject))
                self._deliveries.add(t)
                t.add_done_callback(self._deliveries.discard)


def _worse(a, b, comparison):
    if a is None:
        return b
    low = comparison in ("less than", "lower than", "below")
    return min(a, b) if low else max(a, b)
