"""What ``sewerwatch run`` says about itself: ``status`` and the status file.

A part of :class:`sewerwatch.pipeline.Pipeline`: the status is read from its components,
the evaluator's arrivals and the alert manager, and written every two seconds by a thread
of its own (it stays truthful when the loop is stuck).
"""

from __future__ import annotations

import os
import time

from ingest import service
from ingest.supervise import Component


class RunStatus:
    """The status of :class:`sewerwatch.pipeline.Pipeline`."""


    def status(self) -> dict:
        """What the pipeline is doing: every component (alive, healthy, restarts, problem,
        ages), queues, dead letters of the last hour, the database, the spool, alerts."""
        ing, man = self.ingest, self.manager
        base = ing.status() if ing else {"components": self.supervisor.snapshot(), "readings": {}, "queues": {},
                                         "dead_letters": {}}
        w = ing.writer.stats if ing else None
        comps = base["components"]
        if "evaluator" in comps:
            comps["evaluator"].update({
                "queue_batches": self._queue.qsize() if self._queue else 0, "evaluated": self.evaluated,
                "errors": self.eval_errors, "learning_interval": self.episodes.learning if self.episodes else [],
                "last_evaluated_age_s": None if self.last_evaluated_at is None
                else round(time.time() - self.last_evaluated_at, 3)})
        if "alerts" in comps and man is not None:
            comps["alerts"].update(man.status())
        if "web" in comps and self.web is not None:
            comps["web"].update(self.web.status())
        problems = self.problems()
        database = "unknown (starting)" if w is None else ing.writer.database_state()
        return {
            "pid": os.getpid(), "started": self.started, "updated": time.time(),
            "state": "degraded" if problems else "ok", "problems": problems,
            "leadership": self.leadership.status() if self.leadership is not None else None,
            **(self.liveness.status() if self.liveness is not None else {}),
            "warmed_up": self.warmed_up,
            "components": comps,
            "collectors": {"mqtt": bool(ing and ing.mqtt), "modbus": bool(ing and ing.modbus),
                           "mqtt_connected": ing.mqtt.connected if ing and ing.mqtt else None},
            "readings": {**base["readings"], "evaluated": self.evaluated,
                         "late_not_judged": self.episodes.dropped_late if self.episodes else 0,
                         "judged_again": self.episodes.rejudged if self.episodes else 0},
            "arrivals": self.arrivals_status(),
            "queues": {**base["queues"], "evaluator_batches": self._queue.qsize() if self._queue else 0,
                       "alert_writes": len(man.outbox) if man else 0},
            "dead_letters": base["dead_letters"],
            "database": database, "sensors_from": self.sensors_from,
            "slug_without_baseline": self.episodes.without_baseline() if self.episodes else [],
            "permit_reminders_on": self.reminded_on.isoformat() if self.reminded_on else None,
            "spool": ing.writer.spool.status() if ing else None,
            "alerts": {"active": len(man.active) if man else 0, **(man.stats if man else {})},
        }

    def arrivals_status(self) -> list[dict]:
        """Per sensor with anything to say: readings late, reordered,
        duplicate and held for their stamp, the clock offset and skew, late readings waiting
        to be judged again."""
        if self.episodes is None:
            return []
        waiting = self.episodes.late_waiting
        out = []
        for c, rec in self.episodes.arrivals.status().items():
            site, name, _ = self.sensor_names.get(c, ("?", str(c), None))
            out.append({"sensor_id": c, "site": site, "sensor": name, **rec,
                        "waiting_to_be_judged": waiting.get(c, {}).get("readings", 0)})
        for c, w in waiting.items():
            if not any(o["sensor_id"] == c for o in out):
                site, name, _ = self.sensor_names.get(c, ("?", str(c), None))
                out.append({"sensor_id": c, "site": site, "sensor": name, "waiting_to_be_judged": w["readings"]})
        return sorted(out, key=lambda o: (o["site"], o["sensor"]))

    def _status_loop(self, comp: Component) -> None:
        """The status file, from a thread of its own: it stays truthful when the loop is stuck
        (the stuck components show as stalled)."""
        while not comp.stopping and not self._final:
            self._write_status()
            if comp.sleep(2.0):
                return

    def _write_status(self, final: bool = False) -> None:
        if not self.status_path:
            return
        for attempt in (1, 2, 3):
            try:
                st = self.status()
                break
            except RuntimeError:        # a dict changed size while read from this thread: read again
                if attempt == 3:
                    raise
        st["running"] = not final
        self._last_status = st
        service.write_status(self.status_path, st)

    def _status_for_office(self) -> dict:
        """The office's banners: the status the status thread wrote last (at most 2 s old),
        or a fresh one where no status file is kept."""
        if self._last_status is not None and not self._final:
            return self._last_status
        st = self.status()
        st["running"] = not self._final
        return st
