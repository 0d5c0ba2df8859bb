"""``sewerwatch run``: collectors, writer, streaming evaluator and alerts on one asyncio loop.

::

    collectors (MQTT network + flusher threads, Modbus thread) -> Sink -> writer thread -> TimescaleDB
                                                 \\-> tap (call_soon_threadsafe) -> queue
    queue -> evaluator task (numpy, in one worker thread) -> AlertManager -> channels
    ticker task: acknowledgements, escalation, hold-off, sensor health, degraded, digest
    web task (with [web]): the office, the web application (web/, uvicorn on this loop), with the
                           acknowledgement page the alerts' links open
    periodic tasks: storage maintenance, enforcement items fallen due (every 5 min),
                    permit reminders (once a day), field work (every [field] check_every_s:
                    grab samples against the sensors, calibrations due, windows left open)
    status thread: <state dir>/run-status.json every two seconds

The evaluator sees each batch as the collector puts it, before the database write, so an
alert does not wait for the writer; the alert manager notifies from memory and writes its
rows behind (:mod:`alerts.outbox`), so an alert does not wait for the database either.

Never blind, never lying: every thread and task is a component of one
:class:`ingest.supervise.Supervisor`; a dead one is restarted with backoff, and any
component that is dead, stalled or failing its check (broker disconnected, database
unreachable, spool full, alert writes waiting) is a "sewerwatch degraded" alert to the
primary contacts through channels that need no database, after ``DEGRADED_AFTER_S``
(a death at once), and is shown in ``sewerwatch status``. The run can start with the
database down: the sensors then come from the copy the last start kept in the state folder.

The periodic rounds are :mod:`sewerwatch.run_rounds`, what the run says about itself (``status``,
the status file) :mod:`sewerwatch.run_status`: parts of :class:`Pipeline`.

SIGTERM / Ctrl-C: the collectors stop, the writer writes (or spools) everything it holds,
deliveries in flight finish, then the process exits.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psycopg

from alerts.channels import build_routes
from alerts.episodes import LiveEpisodes, SensorInfo, sensors_from_db
from alerts.health import HealthWatch
from alerts.stored import StoredReadings
from alerts.links import AckLinks
from alerts.manager import AlertManager
from foundation import secrets
from foundation.endpoints import sparkplug_host
from foundation.paths import RUN_STATUS_FILE
from foundation.windows import WindowBook
from ingest import service
from ingest.batch import Readings
from ingest.mqtt.collector import sensor_refs_from_db
from ingest.mqtt.topics import SensorRef
from ingest.supervise import Component, Supervisor, supervise_task
from limits.packs import load_pack
from limits.permit_store import CURRENT_SQL as CURRENT_PERMITS_SQL
from limits.permits import parse_permit
from sewerwatch.db.maintain import run_periodically as storage_maintenance
from sewerwatch.run_rounds import PeriodicRounds
from sewerwatch.run_status import RunStatus

log = logging.getLogger("sewerwatch.run")

STATUS_FILE = RUN_STATUS_FILE
#: The sensors and sites as the last start read them, for a start while the database is down.
SENSOR_CACHE_FILE = "sensors-cache.json"
#: A condition must last this long before it is a "sewerwatch degraded" alert [s] (a
#: component that died is one at once).
DEGRADED_AFTER_S = 5.0
#: A component that died stays "degraded" this long after its restart [s].
RESTART_REPORTED_S = 60.0
#: Late readings waiting longer than this to be judged again (the database up) are a problem [s].
LATE_WAIT_S = 30.0
#: How often the evaluator looks, while late readings wait, whether the writer has stored
#: them (they are then judged again) [s].
LATE_POLL_S = 0.1
#: Readings read at a time by a new leader's warm-up.
WARM_UP_CHUNK = 50_000


class Pipeline(PeriodicRounds, RunStatus):
    """The live pipeline of one utility.

    Parameters
    ----------
    cfg : foundation.config.Config
    owner_url, ingest_url : str
        Database URLs (owner: alerts and violations; ingest: readings).
    mqtt_url : str or None
        Collector account URL; None: no MQTT collector.
    notifier_url : str or None
        Broker URL of the notifier account for the MQTT alert channel.
    spool_dir : Path
        The writer's spool.
    status_path : Path or None
        Where to write the status JSON.
    state_dir : Path, optional
        Where the alert manager keeps its memory and the sensor copy (default: the spool
        folder's parent).
    clock : callable
        Time [epoch s] for the alert timers (tests pass a faster one).
    tick_s : float
        How often timers and health are checked [s].
    warm_up_s : float
        A new leader (:mod:`sewerwatch.leader`) first judges again the readings stored this
        long before now (and back to the start of any episode still open, at most a day),
        before its collectors start [s]; 0: none.
    leadership : sewerwatch.leader.Leadership, optional
        Shown in the status (the role, the lock).
    shards, modbus
        The Modbus devices polled (:func:`ingest.service.modbus_devices`).
    """

    def __init__(self, cfg, *, owner_url: str, ingest_url: str, mqtt_url: str | None,
                 notifier_url: str | None, spool_dir: Path, status_path: Path | None = None,
                 client_id: str = "sewerwatch-run", clock=time.time, tick_s: float = 0.2,
                 console_stream=None, routes=None, max_delay: float = 0.1, state_dir: Path | None = None,
                 degraded_after_s: float = DEGRADED_AFTER_S, enforcement_first_s: float = 30.0,
                 warm_up_s: float = 0.0, leadership=None, shards=None, modbus: bool = True, liveness=None):
        self.cfg = cfg
        self.owner_url, self.ingest_url = owner_url, ingest_url
        self.mqtt_url, self.notifier_url = mqtt_url, notifier_url
        self.spool_dir, self.status_path = Path(spool_dir), status_path
        self.state_dir = Path(state_dir) if state_dir is not None else self.spool_dir.parent
        self.client_id, self.clock, self.tick_s = client_id, clock, tick_s
        self.console_stream, self._routes, self.max_delay = console_stream, routes, max_delay
        self.degraded_after_s = degraded_after_s
        self.enforcement_first_s = enforcement_first_s
        self.warm_up_s, self.leadership, self.shards, self.modbus = warm_up_s, leadership, shards, modbus
        self.liveness = liveness                    # sewerwatch.liveness.Liveness: shown in the status
        self.warmed_up = 0                          # readings judged again at the start of a term
        self._round_errors: dict[str, str] = {}     # periodic component -> its last round's error
        #: the live maintenance windows: the collectors' sink marks readings by them
        self.windows = WindowBook()
        self.field_problems: dict = {}              # field work's conditions (field.conditions), alerted as health
        self.reminded_on = None                     # the village's day the permit reminders last ran
        self.ingest = None
        self.links: AckLinks | None = None
        self.web = None                             # the office (web.server.WebServer), with [web]
        self._last_status: dict | None = None
        self.manager: AlertManager | None = None
        self.episodes: LiveEpisodes | None = None
        self.health: HealthWatch | None = None
        self.supervisor = Supervisor(on_event=self._on_event)
        self.started = time.time()
        self.evaluated = 0
        self.eval_errors = 0
        self.last_evaluated_at: float | None = None
        self.sensors_from = "database"
        self.ready = threading.Event()
        self._queue: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._eval_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sewerwatch-eval")
        self._inflight: tuple | None = None     # (readings, sink sequence number, received [epoch s] or None)
        self._carried: tuple | None = None      # a queued part of the other kind than the batch before it
        self._problem_since: dict[str, float] = {}
        self._restarted: dict[str, tuple[float, str]] = {}    # component -> (monotonic, what)
        self._eval_error: tuple[float, str] | None = None
        self._logged_kinds: set = set()
        self._final = False

    # -- setup -------------------------------------------------------------------------

    def _load(self) -> tuple[list[SensorInfo], dict, tuple]:
        """Sensors (with their sites' current permits), sites and the collectors' sensor
        refs: from the database, kept in the state folder; from that copy when the
        database is unreachable."""
        cache = self.state_dir / SENSOR_CACHE_FILE
        try:
            with psycopg.connect(self.owner_url, connect_timeout=5) as conn:
                sensors = sensors_from_db(conn)
                sites = {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites").fetchall()}
                refs = (sensor_refs_from_db(conn, "mqtt"), sensor_refs_from_db(conn, "modbus"))
                permits = {key: [pack, f"permit {number} version {version}", doc] for key, pack, number, version, doc,
                           *_ in conn.execute(CURRENT_PERMITS_SQL).fetchall()}
        except psycopg.OperationalError as exc:
            if not cache.is_file():
                raise
            data = json.loads(cache.read_text())
            log.error("database unreachable at start (%s); using the sensors kept in %s",
                      str(exc).strip().splitlines()[0] if str(exc).strip() else exc, cache)
            self.sensors_from = f"{cache} (database unreachable at start)"
            permit = {k: parse_permit(doc, label, load_pack(pack)) for k, (pack, label, doc) in
                      data.get("permits", {}).items()}
            return ([SensorInfo(*s, permit=permit.get(s[2])) for s in data["sensors"]],
                    {k: tuple(v) for k, v in data["sites"].items()},
                    tuple([SensorRef(*r) for r in data[src]] for src in ("mqtt", "modbus")))
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            service.write_status(cache, {
                "sensors": [[s.id, s.site_id, s.site, s.name, s.parameter, s.interval_s, s.pack] for s in sensors],
                "sites": sites, "permits": permits,
                "mqtt": [[r.id, r.key, r.parameter] for r in refs[0]],
                "modbus": [[r.id, r.key, r.parameter] for r in refs[1]]})
        except OSError as exc:
            log.warning("could not keep the sensors in %s: %s", cache, exc)
        return sensors, sites, refs

    def _ack_links(self) -> AckLinks | None:
        """The acknowledgement links, where ``[web]`` is configured: signed
        with the key generated once into the state folder's ``secrets.json``."""
        web = self.cfg.web
        if web is None:
            return None
        key = secrets.load_or_create(self.state_dir)["keys"]["ack_links"]
        return AckLinks(key, web.link_base, web.link_lifetime_h * 3600.0)

    async def _load_waiting(self) -> tuple:
        """:meth:`_load`, waiting for the database when it is down and no copy exists."""
        loop = asyncio.get_running_loop()
        delay = 1.0
        while True:
            try:
                return await loop.run_in_executor(None, self._load)
            except psycopg.OperationalError as exc:
                log.error("database unreachable and no copy of the sensors in %s yet (%s); retrying in %.0f s",
                          self.state_dir, str(exc).strip().splitlines()[0] if str(exc).strip() else exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down cleanly."""
        loop = self._loop = asyncio.get_running_loop()
        self.supervisor.start()
        sensors, sites, refs = await self._load_waiting()
        self.sensor_names = {s.id: (s.site, s.name, s.site_id) for s in sensors}
        self.device_sites = {d.id: d.site for d in self.cfg.devices}
        opts = self.cfg.alert_options
        self.stored = StoredReadings(self.owner_url, self._stored_seq)
        self.episodes = LiveEpisodes(sensors, source=self.stored, skew_limit_s=opts.clock_skew_s, windows=self.windows)
        # health is watched for the config's sensors (all of the database's without any):
        # sensors dropped from the config stay in the database as evidence but report nothing
        keys = {s.key for s in self.cfg.sensors}
        watched = [s.id for s in sensors if not keys or f"{s.site}/{s.name}" in keys]
        self.health = HealthWatch(watched, opts.no_data_after_s, opts.flatline_after_s, self.clock())
        routes = self._routes if self._routes is not None else build_routes(
            self.cfg, self.notifier_url, self.console_stream, client_id=f"{self.client_id}-notifier")
        self.links = self._ack_links()
        # a leader that stood still (SIGSTOP) sends and writes nothing until it knows it still
        # leads (sewerwatch.leader: the fence)
        gate = self.leadership.fence if self.leadership is not None else None
        self.manager = await AlertManager(self.cfg, self.owner_url, routes, sites, clock=self.clock,
                                          state_dir=self.state_dir, links=self.links, gate=gate).start()
        self._queue = asyncio.Queue()
        if self.warm_up_s > 0:
            await self._warm_up()

        def tap(readings: Readings, seq: int) -> None:   # called in the collector's thread
            loop.call_soon_threadsafe(self._queue.put_nowait, (readings, seq, time.time()))

        self.ingest = await loop.run_in_executor(None, lambda: service.start(
            self.cfg, ingest_url=self.ingest_url, mqtt_url=self.mqtt_url, spool_dir=self.spool_dir,
            client_id=self.client_id, max_delay=self.max_delay, listeners=[tap], supervisor=self.supervisor,
            refs=refs, shards=self.shards, modbus=self.modbus, sparkplug_host_id=sparkplug_host(self.cfg),
            may_connect=None if self.leadership is None else (lambda: self.leadership.may_act() is True),
            windows=self.windows))
        stopping = asyncio.Event()
        evaluator = self.supervisor.add("evaluator", stall_after=60.0, check=self._evaluator_problem)
        ticker = self.supervisor.add("alerts", stall_after=60.0, check=self.manager.problem)
        storage = self.supervisor.add("storage")      # it sleeps between runs, so no stall check
        tasks = [loop.create_task(supervise_task(evaluator, self._evaluate, stopping), name="evaluator"),
                 loop.create_task(supervise_task(ticker, self._tick, stopping), name="alerts")]
        enforcement = self.supervisor.add("enforcement", check=lambda: self._round_problem("enforcement"))
        reminders = self.supervisor.add("reminders", check=lambda: self._round_problem("reminders"))
        fieldwork = self.supervisor.add("field", check=lambda: self._round_problem("field"))
        periodic = [
            loop.create_task(supervise_task(
                storage, lambda comp: storage_maintenance(self.owner_url, self.cfg.retention, stop=stopping,
                                                      state_dir=self.state_dir),
                stopping), name="storage"),
            loop.create_task(supervise_task(enforcement, self._enforcement, stopping), name="enforcement"),
            loop.create_task(supervise_task(reminders, self._remind_daily, stopping), name="reminders"),
            loop.create_task(supervise_task(fieldwork, self._field_work, stopping), name="field")]
        web_task = None
        if self.links is not None:
            from sewerwatch.office import office_server
            self.web = office_server(self.cfg, self.owner_url, self.state_dir, links=self.links, tz=self.manager.tz,
                                     status_source=self._status_for_office)
            web = self.supervisor.add("web", stall_after=30.0, check=self.web.problem)
            web_task = loop.create_task(supervise_task(web, lambda comp: self.web.serve(comp, stopping), stopping),
                                        name="web")
        self.supervisor.add("status", self._status_loop, stall_after=30.0)
        self.ready.set()
        log.info("running: %d sensors, %d channels", len(sensors), len(routes))
        try:
            await stop.wait()
        finally:
            for t in periodic:
                t.cancel()
            if web_task is not None:          # the page first: no acknowledgement taken while stopping
                web_task.cancel()
                try:
                    await web_task
                except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping anyway
                    pass
            await loop.run_in_executor(None, self.ingest.stop)   # collectors, then writer flush
            stopping.set()
            self._queue.put_nowait(None)
            try:
                await asyncio.wait_for(tasks[0], 60)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - stopping anyway
                log.exception("the evaluator did not finish cleanly")
            tasks[1].cancel()
            try:
                await tasks[1]
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping anyway
                pass
            await self.manager.close()
            self.supervisor.stop()
            self._final = True
            self._write_status(final=True)
            self._eval_pool.shutdown(wait=True)

    async def _warm_up(self) -> None:
        """Queue for judging the readings stored in the last :attr:`warm_up_s` (and back to
        the start of any episode still open, at most a day), before the collectors start:
        a new leader sees the episodes its predecessor saw, with the same starts."""
        def read() -> list[Readings]:
            with psycopg.connect(self.owner_url, connect_timeout=5) as conn:
                since = conn.execute(
                    "SELECT LEAST(now() - make_interval(secs => %s), GREATEST(coalesce(min(start_time), now()), "
                    "now() - interval '1 day'))"
                    " FROM violations WHERE end_time IS NULL AND source = 'stream'", (self.warm_up_s,)).fetchone()[0]
                out = []
                with conn.cursor(name="warm_up") as cur:
                    cur.itersize = WARM_UP_CHUNK
                    cur.execute("SELECT (extract(epoch FROM time) * 1000000)::int8, sensor_id, value, quality "
                                "FROM readings WHERE time >= %s ORDER BY time", (since,))
                    while rows := cur.fetchmany(WARM_UP_CHUNK):
                        t, s, v, q = zip(*rows)
                        out.append(Readings(np.array(t), np.array(s), np.array(v, dtype=np.float64), np.array(q)))
                return out
        try:
            batches = await asyncio.get_running_loop().run_in_executor(None, read)
        except psycopg.Error as exc:
            log.error("warm-up: cannot read the recent readings (%s); judging from the live ones only",
                      str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            return
        for b in batches:
            self._queue.put_nowait((b, 0, None))     # stored readings: no arrival to judge
            self.warmed_up += len(b)
        log.info("warm-up: %d stored readings queued for judging before collecting", self.warmed_up)

    # -- supervision --------------------------------------------------------------------

    def _on_event(self, event: str, comp: Component, detail: str) -> None:
        """From the watchdog (or a dying) thread: remember deaths so they are reported."""
        if event in ("died", "restarted"):
            self._restarted[comp.name] = (time.monotonic(), detail)

    def problems(self) -> dict[str, str]:
        """Everything degraded now, ``{component: problem}``: unhealthy components, deaths
        in the last :data:`RESTART_REPORTED_S`, evaluation errors, a failed or too old backup
        (:func:`sewerwatch.backup.health`)."""
        out = self.supervisor.problems()
        now = time.monotonic()
        for name, (at, detail) in list(self._restarted.items()):
            if now - at <= RESTART_REPORTED_S:
                out.setdefault(name, f"{detail} (restarted)" if "restarted" not in detail else detail)
            else:
                self._restarted.pop(name, None)
        from sewerwatch import backup     # a failed or too old backup: a "degraded" alert with its reason
        if not (b := backup.health(self.cfg))["ok"]:
            out.setdefault("backup", b["problem"])
        return out

    def _evaluator_problem(self) -> str | None:
        if self._eval_error is not None and time.monotonic() - self._eval_error[0] <= RESTART_REPORTED_S:
            return self._eval_error[1]
        if self.episodes is not None and self.episodes.late_waiting and self.ingest is not None \
                and self.ingest.writer.stats.db_up:
            waiting = self.episodes.late_waiting
            oldest = min(w["since"] for w in waiting.values())
            if time.time() - oldest > LATE_WAIT_S:
                why = f" ({self.episodes.rejudge_error})" if self.episodes.rejudge_error else ""
                return (f"late readings of {len(waiting)} sensor(s) ({sum(w['readings'] for w in waiting.values())} "
                        f"readings) not judged for {time.time() - oldest:.0f} s{why}")
        if self._queue is not None and self._queue.qsize() > 1000:
            return f"{self._queue.qsize()} batches waiting to be judged"
        return None

    def _degraded_now(self) -> dict[str, str]:
        """:meth:`problems` that have lasted :attr:`degraded_after_s` (a death at once)."""
        probs = self.problems()
        now = time.monotonic()
        for name in list(self._problem_since):
            if name not in probs:
                del self._problem_since[name]
        out = {}
        for name, text in probs.items():
            since = self._problem_since.setdefault(name, now)
            if name in self._restarted or now - since >= self.degraded_after_s:
                out[name] = text
        return out

    # -- tasks --------------------------------------------------------------------------

    def _stored_seq(self) -> int:
        """How far the writer has stored the sink's batches (late readings wait for it)."""
        return self.ingest.writer.stats.stored_seq if self.ingest is not None else 0

    def _evaluate_batch(self, batch, now: float):
        r, seq, received = batch
        changed = self.windows.take_changed()
        if changed:
            n = self.episodes.judge_again(changed, now)
            if n:
                log.info("maintenance windows changed: %d sensor(s) judged again from their stored readings", n)
        if len(r):
            self.health.observe(r.sensor_id, r.time_us, r.value, r.quality, now)
        return self.episodes.push(r.sensor_id, r.time_us, r.value, r.quality, received_s=received, seq=seq,
                                  now_s=now)

    async def _evaluate(self, comp: Component) -> None:
        loop = asyncio.get_running_loop()
        while True:
            comp.beat()
            if self._inflight is None:
                # late readings wait for the writer to store them: looked at every LATE_POLL_S,
                # so they are judged that soon after being stored, however the batches come
                wait = LATE_POLL_S if self.episodes.has_late else 1.0
                try:
                    if self._carried is not None:
                        parts, self._carried = [self._carried], None
                    else:
                        parts = [await asyncio.wait_for(self._queue.get(), wait)]
                except asyncio.TimeoutError:
                    # nothing came: readings held for their stamp, or late ones now stored, may be due,
                    # or maintenance windows changed (their sensors judged again)
                    if not self.episodes.due(self.clock()) and not self.windows.changed_pending():
                        continue
                    parts = [(Readings.empty(), 0, None)]
                self._carried = _take_same_kind(self._queue, parts)
                done = any(p is None for p in parts)
                parts = [p for p in parts if p is not None]
                if not parts:
                    if done:
                        return
                    continue
                # kept until judged: a restarted evaluator takes it up again
                self._inflight = _merge_parts(parts)
            else:
                done = False
            batch = self._inflight
            try:
                opened, closed = await loop.run_in_executor(self._eval_pool, self._evaluate_batch, batch,
                                                            self.clock())
                self.evaluated += len(batch[0])
                self.last_evaluated_at = time.time()
            except Exception as exc:  # noqa: BLE001 - one bad batch must not stop the judging of the rest
                self._evaluation_failed(batch[0], exc)
                opened, closed = [], []
            self._inflight = None
            changes = self.episodes.take_changes()
            if changes:
                await self.manager.on_rejudged(changes)
            if opened or closed:
                await self.manager.on_episodes(opened, closed)
            if done:
                return

    def _evaluation_failed(self, batch: Readings, exc: Exception) -> None:
        self.eval_errors += 1
        text = f"judging a batch of {len(batch)} readings failed: {type(exc).__name__}: {exc}"[:300]
        self._eval_error = (time.monotonic(), text)
        tb = traceback.extract_tb(exc.__traceback__)
        kind = (type(exc).__name__, tb[-1].filename if tb else "", tb[-1].lineno if tb else 0)
        if kind not in self._logged_kinds:
            self._logged_kinds.add(kind)
            log.exception("%s (traceback logged once for this kind)", text)
        else:
            log.error("%s", text)

    async def _tick(self, comp: Component) -> None:
        last_devices = 0.0
        devices: dict = {}
        while True:
            comp.beat()
            await asyncio.sleep(self.tick_s)
            now = time.monotonic()
            if self.cfg.devices and now - last_devices >= 2.0:
                devices = await self._devices_down()
                last_devices = now
            problems = dict(self.health.problems(self.clock()))
            problems.update(self.episodes.arrivals.problems(self.clock()))
            problems.update(devices)
            problems.update(self.field_problems)
            await self.manager.on_health(problems, self.sensor_names)
            await self.manager.on_system(self._degraded_now())
            await self.manager.on_growing(self.episodes.open_records())
            while self.episodes.learned:
                sensor_id, interval_s = self.episodes.learned.popitem()
                log.info("sensor %d: nominal interval %.3f s learned from its readings", sensor_id, interval_s)
                self.manager.outbox.put({"op": "interval", "sensor_id": sensor_id, "interval_s": interval_s})
            await self.manager.tick()




def _take_same_kind(queue: asyncio.Queue, parts: list) -> tuple | None:
    """Take the queued parts judged with ``parts`` (in place) and return the first of the
    other kind, which waits for the next batch (None: the queue was emptied).

    Stored readings (a new leader's warm-up, received None) and live ones are judged in
    batches of their own, in the order they were queued: merged into one push, the live
    readings of a sensor whose clock stands behind would be judged in order against nothing
    (its stored history sorted after them), opening its episode again at the first live
    reading, as a new episode of its alert.
    """
    while not queue.empty():
        part = queue.get_nowait()
        if part is not None and parts and parts[0] is not None and (part[2] is None) != (parts[0][2] is None):
            return part
        parts.append(part)
    return None


def _merge_parts(parts: list) -> tuple:
    """Queued ``(readings, seq, received)`` parts of one kind as one: readings concatenated,
    the newest sequence number, each reading's arrival time (None for stored readings)."""
    if len(parts) == 1:
        return parts[0]
    readings = Readings.concat([p[0] for p in parts])
    seq = max(p[1] for p in parts)
    if parts[0][2] is None:          # stored readings: never merged with live ones (_take_same_kind)
        return readings, seq, None
    return readings, seq, np.concatenate([np.full(len(p[0]), p[2]) for p in parts])


def run_until_signalled(pipeline: Pipeline) -> None:
    """Run ``pipeline`` on a new event loop until SIGTERM or SIGINT."""

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await pipeline.run(stop)

    asyncio.run(main())


class Background:
    """A pipeline on its own loop in a thread (tests, benchmarks): ``stop()`` ends it cleanly."""

    def __init__(self, pipeline: Pipeline, timeout: float = 30.0):
        self.pipeline = pipeline
        self.error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._main, name="sewerwatch-pipeline", daemon=True)
        self._thread.start()
        if not pipeline.ready.wait(timeout):
            raise RuntimeError(f"the pipeline did not start within {timeout} s")
        if self.error is not None:
            raise self.error

    def _main(self):
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.pipeline.run(self._stop))
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
            self.pipeline.ready.set()
        finally:
            self._loop.close()

    def call(self, coro, timeout: float = 30.0):
        """Run a coroutine on the pipeline's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)
        if self.error is not None:
            raise self.error
