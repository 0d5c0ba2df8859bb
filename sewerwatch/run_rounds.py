"""The periodic rounds of ``sewerwatch run``: enforcement items fallen due, field work,
permit reminders once a day, and the Modbus devices down.

A part of :class:`sewerwatch.pipeline.Pipeline` (its attributes: ``cfg``, ``owner_url``,
``manager``, ``ingest``, ``clock``, ``reminded_on``, ``field_problems``); each round's error
is kept for ``status`` until the next round succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from zoneinfo import ZoneInfo

import psycopg

from alerts import reminders as permit_reminders
from enforcement.due import run_periodically as enforcement_alerts
from ingest import service
from ingest.supervise import Component
from limits.permit_store import current_permits

log = logging.getLogger("sewerwatch.run")

#: How often the permit reminders look whether the village's day has changed [s].
REMIND_CHECK_S = 60.0
#: A failed round of permit reminders is tried again after this long [s].
REMIND_RETRY_S = 600.0


class PeriodicRounds:
    """The rounds :class:`sewerwatch.pipeline.Pipeline` runs beside its evaluator."""


    def _round_problem(self, name: str) -> str | None:
        """The last round's error of a periodic component, while the database is up (with
        it down, that is the problem already reported)."""
        err = self._round_errors.get(name)
        if err is None or (self.ingest is not None and not self.ingest.writer.stats.db_up):
            return None
        return f"last round failed: {err}"

    def _round_done(self, name: str, error: str | None) -> None:
        if error is None:
            self._round_errors.pop(name, None)
        else:
            self._round_errors[name] = error

    async def _enforcement(self, comp: Component) -> None:
        """Enforcement items fallen due (notices unanswered, reports and samples overdue,
        milestones late): each opens an alert once, delivered to the primary contacts."""
        def on_round(error):
            comp.beat()
            self._round_done("enforcement", error)
        await enforcement_alerts(self.owner_url, self.cfg, self.manager.deliver_to_primary,
                                 first_delay_s=self.enforcement_first_s, on_round=on_round)

    async def _field_work(self, comp: Component) -> None:
        """Field work every ``[field] check_every_s``: grab samples compared with
        the live sensors, the findings of calibrations failed or overdue and of inspections,
        and the conditions alerted as sensor health (windows left open or awaiting approval,
        calibrations due, overdue or failed, sensors drifting)."""
        from enforcement import fieldwork
        from field import conditions

        loop = asyncio.get_running_loop()

        def once():
            with psycopg.connect(self.owner_url, connect_timeout=10) as conn:
                new, found = conditions.round_(conn, self.cfg)
                with conn.transaction():
                    fieldwork.check(conn, datetime.now(ZoneInfo("UTC")), self.cfg)
                return new, found
        # the first round once the start's own work is done (as the enforcement round's)
        first = min(self.enforcement_first_s, self.cfg.field.check_every_s)
        comp.beat()
        await asyncio.sleep(first)
        while True:
            comp.beat()
            if self.ingest is None or self.ingest.writer.stats.db_up is not False:
                try:
                    new, found = await loop.run_in_executor(None, once)
                except Exception as exc:  # noqa: BLE001 - shown in status, tried again
                    log.warning("field work round failed; trying again in %.0f s: %s", self.cfg.field.check_every_s,
                                exc)
                    self._round_done("field", f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                else:
                    self._round_done("field", None)
                    self.field_problems = found
                    for g in new:
                        if g["drifted"]:
                            log.warning("sensor %d drifting: %s", g["sensor_id"], g["detail"])
            await asyncio.sleep(self.cfg.field.check_every_s)

    async def _remind_daily(self, comp: Component) -> None:
        """Permit reminders (:mod:`alerts.reminders`) once a day of the village, at start and
        after each local midnight; each reminder is sent once, whatever restarts."""
        loop = asyncio.get_running_loop()
        tz = ZoneInfo(self.manager.tz)
        while True:
            comp.beat()
            today = datetime.fromtimestamp(self.clock(), tz).date()
            wait = REMIND_CHECK_S
            if today != self.reminded_on:
                def once(day=today):
                    with psycopg.connect(self.owner_url, connect_timeout=3) as conn:
                        return permit_reminders.send(conn, self.manager.routes, current_permits(conn), day,
                                                     tz=self.manager.tz)
                try:
                    res = await loop.run_in_executor(None, once)
                except Exception as exc:  # noqa: BLE001 - shown in status, tried again
                    log.warning("permit reminders failed; trying again in %.0f s: %s", REMIND_RETRY_S, exc)
                    self._round_done("reminders", f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                    wait = REMIND_RETRY_S
                else:
                    self.reminded_on = today
                    self._round_done("reminders", None)
                    for r in res["opened"]:
                        log.info("permit reminder #%s %s: %s permit %s (term end %s)", r["alert_id"], r["rule"],
                                 r["site"], r["permit"], r["term_end"])
            await asyncio.sleep(wait)

    def polled_devices(self) -> set:
        """The Modbus devices this run polls (none with ``--no-modbus``; a shard's with
        ``--shard``): the only ones whose health rows may raise its device alerts (rows another process, or an earlier run, left are not this run's to alert)."""
        if not self.modbus:
            return set()
        return {d.id for d in service.modbus_devices(self.cfg, self.shards)}

    async def _devices_down(self) -> dict:
        if not self.ingest.writer.stats.db_up:
            return {}
        polled = self.polled_devices()
        if not polled:
            return {}

        def q():
            with psycopg.connect(self.owner_url, connect_timeout=3) as conn:
                return conn.execute("SELECT device, site_key, last_good_at, last_error FROM device_health "
                                    "WHERE state = 'down'").fetchall()
        try:
            rows = await asyncio.get_running_loop().run_in_executor(None, q)
        except psycopg.Error:
            return {}
        return {("device-unreachable", d): {"site": site or self.device_sites.get(d, ""),
                                            "since": last_good.timestamp() if last_good else None,
                                            "detail": err} for d, site, last_good, err in rows if d in polled}
