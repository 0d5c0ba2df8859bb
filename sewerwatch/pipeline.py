"""``sewerwatch run``: collectors, writer, streaming evaluator and alerts on one asyncio loop.

::

    collectors (paho thread, Modbus thread) -> Sink -> writer -> TimescaleDB
                                                 \\-> tap (call_soon_threadsafe) -> queue
    queue -> evaluator task (numpy, in one worker thread) -> AlertManager -> channels
    ticker task: acknowledgements, escalation, hold-off, sensor health, digest, status file

The evaluator sees each batch as the collector puts it, before the database write, so an
alert does not wait for the writer. SIGTERM / Ctrl-C: the collectors stop, the writer
writes (or spools) everything it holds, deliveries in flight finish, then the process
exits. While running, ``<state dir>/run-status.json`` is rewritten every few seconds
(``sewerwatch status`` reads it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

from alerts.channels import build_routes
from alerts.episodes import LiveEpisodes, sensors_from_db
from alerts.health import HealthWatch
from alerts.manager import AlertManager
from foundation.paths import RUN_STATUS_FILE
from ingest import service
from ingest.batch import Readings
from sewerwatch.db.maintain import run_periodically as storage_maintenance

log = logging.getLogger("sewerwatch.run")

STATUS_FILE = RUN_STATUS_FILE


class Pipeline:
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
    clock : callable
        Time [epoch s] for the alert timers (tests pass a faster one).
    tick_s : float
        How often timers and health are checked [s].
    """

    def __init__(self, cfg, *, owner_url: str, ingest_url: str, mqtt_url: str | None,
                 notifier_url: str | None, spool_dir: Path, status_path: Path | None = None,
                 client_id: str = "sewerwatch-run", clock=time.time, tick_s: float = 0.2,
                 console_stream=None, routes=None, max_delay: float = 0.1):
        self.cfg = cfg
        self.owner_url, self.ingest_url = owner_url, ingest_url
        self.mqtt_url, self.notifier_url = mqtt_url, notifier_url
        self.spool_dir, self.status_path = spool_dir, status_path
        self.client_id, self.clock, self.tick_s = client_id, clock, tick_s
        self.console_stream, self._routes, self.max_delay = console_stream, routes, max_delay
        self.ingest = None
        self.manager: AlertManager | None = None
        self.episodes: LiveEpisodes | None = None
        self.health: HealthWatch | None = None
        self.started = time.time()
        self.evaluated = 0
        self.ready = threading.Event()
        self._queue: asyncio.Queue | None = None
        self._eval_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sewerwatch-eval")

    # -- setup -------------------------------------------------------------------------

    def _load(self):
        with psycopg.connect(self.owner_url) as conn:
            sensors = sensors_from_db(conn)
            sites = {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites").fetchall()}
        return sensors, sites, {}

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down cleanly."""

        loop = asyncio.get_running_loop()
        sensors, sites, _ = await loop.run_in_executor(None, self._load)
        self.sensor_names = {s.id: (s.site, s.name, s.site_id) for s in sensors}
        self.device_sites = {d.id: d.site for d in self.cfg.devices}
        self.episodes = LiveEpisodes(sensors)
        opts = self.cfg.alert_options
        # health is watched for the config's sensors (all of the database's without any):
        # sensors dropped from the config stay in the database as evidence but report nothing
        keys = {s.key for s in self.cfg.sensors}
        watched = [s.id for s in sensors if not keys or f"{s.site}/{s.name}" in keys]
        self.health = HealthWatch(watched, opts.no_data_after_s, opts.flatline_after_s, self.clock())
        routes = self._routes if self._routes is not None else build_routes(
            self.cfg, self.notifier_url, self.console_stream, client_id=f"{self.client_id}-notifier")
        self.manager = await AlertManager(self.cfg, self.owner_url, routes, sites, clock=self.clock).start()
        self._queue = asyncio.Queue()

        def tap(readings: Readings) -> None:   # called in the collector's thread
            loop.call_soon_threadsafe(self._queue.put_nowait, readings)

        self.ingest = await loop.run_in_executor(None, lambda: service.start(
            self.cfg, ingest_url=self.ingest_url, mqtt_url=self.mqtt_url, spool_dir=self.spool_dir,
            client_id=self.client_id, max_delay=self.max_delay, listeners=[tap]))
        tasks = [asyncio.create_task(self._evaluate()), asyncio.create_task(self._tick())]
        maintenance = asyncio.create_task(storage_maintenance(self.owner_url, self.cfg.retention))  # issue 15
        self.ready.set()
        log.info("running: %d sensors, %d channels", len(sensors), len(routes))
        try:
            await stop.wait()
        finally:
            maintenance.cancel()
            await loop.run_in_executor(None, self.ingest.stop)   # collectors, then writer flush
            self._queue.put_nowait(None)
            await tasks[0]
            tasks[1].cancel()
            try:
                await tasks[1]
            except asyncio.CancelledError:
                pass
            await self.manager.close()
            self._write_status(final=True)
            self._eval_pool.shutdown(wait=True)

    # -- tasks --------------------------------------------------------------------------

    def _evaluate_batch(self, r: Readings, now: float):
        self.health.observe(r.sensor_id, r.time_us, r.value, r.quality, now)
        return self.episodes.push(r.sensor_id, r.time_us, r.value, r.quality)

    async def _evaluate(self) -> None:
        loop = asyncio.get_running_loop()
        done = False
        while not done:
            parts = [await self._queue.get()]
            while not self._queue.empty():
                parts.append(self._queue.get_nowait())
            if parts[-1] is None or None in parts:
                done = True
                parts = [p for p in parts if p is not None]
            if not parts:
                continue
            batch = Readings.concat(parts)
            try:
                opened, closed = await loop.run_in_executor(self._eval_pool, self._evaluate_batch, batch,
                                                            self.clock())
                self.evaluated += len(batch)
                if opened or closed:
                    await self.manager.on_episodes(opened, closed)
            except Exception:  # noqa: BLE001 - the pipeline must keep running
                log.exception("evaluating a batch of %d readings failed", len(batch))

    async def _tick(self) -> None:
        last_status = last_devices = 0.0
        devices: dict = {}
        while True:
            await asyncio.sleep(self.tick_s)
            try:
                now = time.monotonic()
                if self.cfg.devices and now - last_devices >= 2.0:
                    devices = await self._devices_down()
                    last_devices = now
                problems = dict(self.health.problems(self.clock()))
                problems.update(devices)
                await self.manager.on_health(problems, self.sensor_names)
                await self.manager.tick()
                if now - last_status >= 2.0:
                    self._write_status()
                    last_status = now
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001
                log.exception("alert timers failed; retrying")

    async def _devices_down(self) -> dict:
        def q():
            with psycopg.connect(self.owner_url) as conn:
                return conn.execute("SELECT device, site_key, last_good_at, last_error FROM device_health "
                                    "WHERE state = 'down'").fetchall()
        try:
            rows = await asyncio.get_running_loop().run_in_executor(None, q)
        except psycopg.Error:
            return {}
        return {("device-unreachable", d): {"site": site or self.device_sites.get(d, ""),
                                            "since": last_good.timestamp() if last_good else None,
                                            "detail": err} for d, site, last_good, err in rows}

    # -- status -------------------------------------------------------------------------

    def status(self) -> dict:
        """What the pipeline is doing: collectors, counts, the database, alerts."""
        ing, man = self.ingest, self.manager
        w = ing.writer.stats if ing else None
        return {
            "pid": os.getpid(), "started": self.started, "updated": time.time(),
            "collectors": {"mqtt": bool(ing and ing.mqtt), "modbus": bool(ing and ing.modbus),
                           "mqtt_connected": ing.mqtt.connected if ing and ing.mqtt else None},
            "readings": {"accepted": ing.sink.accepted if ing else 0,
                         "evaluated": self.evaluated,
                         "inserted": w.readings_inserted if w else None,
                         "spooled": w.readings_spooled if w else None,
                         "dead_letters": w.dead_letters if w else None,
                         "late_dropped": self.episodes.dropped_late if self.episodes else 0},
            "database": "up" if (w is None or w.db_up) else "down (spooling)",
            "alerts": {"active": len(man.active) if man else 0, **(man.stats if man else {})},
        }

    def _write_status(self, final: bool = False) -> None:
        if not self.status_path:
            return
        st = self.status()
        st["running"] = not final
        tmp = self.status_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(st, indent=1))
        tmp.replace(self.status_path)


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
