"""The collectors and the writer wired together from the utility's config, supervised.

``sewerwatch collect`` runs this alone; ``sewerwatch run`` adds the streaming evaluator
and the alerts on top (it subscribes to the same sink and hands its own
:class:`~ingest.supervise.Supervisor`, so every thread of both is watched in one place).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from foundation import db, paths
from foundation.config import Config
from foundation.errors import InputError
from foundation.statusfile import write_status
from foundation.windows import WindowBook
from foundation.windows import load as load_windows
from ingest.modbus.collector import ModbusCollector
from ingest.modbus.options import Options
from ingest.mqtt.collector import MqttCollector, sensor_refs_from_db
from ingest.mqtt.payload import Bounds
from ingest.mqtt.topics import topic_map
from ingest.sink import Sink
from ingest.supervise import Component, Supervisor
from ingest.writer import Writer

log = logging.getLogger("sewerwatch.ingest")

#: How often the maintenance windows are read again from the database [s] (a window
#: opened from the office or the command line marks the readings from then on).
WINDOWS_POLL_S = 1.0

#: ``sewerwatch collect``'s status file in the state folder (``sewerwatch status`` reads it).
COLLECT_STATUS_FILE = paths.COLLECT_STATUS_FILE


@dataclass
class Ingest:
    """The running collectors and writer, and their supervisor."""

    sink: Sink
    writer: Writer
    supervisor: Supervisor
    mqtt: MqttCollector | None = None
    modbus: ModbusCollector | None = None
    threads: list = field(default_factory=list)
    own_supervisor: bool = True
    windows: WindowBook | None = None
    windows_read_at: float | None = None       # [epoch s] when the database's windows were last read

    def stop(self) -> None:
        """Stop the collectors, then let the writer write (or spool) everything it holds."""
        if self.modbus is not None:
            comp = self.supervisor.components.get("modbus")
            if comp is not None:
                comp.finished = True
            self.modbus.stop()
            if comp is not None and comp.thread is not None:
                comp.thread.join(10)
        if self.mqtt is not None:
            self.mqtt.stop()
        self.writer.stop()
        if self.own_supervisor:
            self.supervisor.stop()

    def status(self) -> dict:
        """Components (alive, healthy, restarts, problem), counts, ages, queues and dead
        letters, for ``sewerwatch status`` (never healthy where a component is not)."""
        comps = self.supervisor.snapshot()
        if self.mqtt is not None:
            comps["mqtt-network"].update(self.mqtt.status())
            comps["mqtt-flusher"]["buffered_readings"] = comps["mqtt-network"]["buffered_readings"]
        if self.modbus is not None and "modbus" in comps:
            last = self.modbus.last_reading_at
            down = sorted(d for d, h in self.modbus.health().items() if h.state == "down")
            comps["modbus"].update({"devices": len(self.modbus.devices), "devices_down": down,
                                    "last_reading_age_s": None if last is None else round(time.time() - last, 3)})
        comps["writer"].update(self.writer.status())
        if "windows" in comps and self.windows is not None:
            w = self.windows.windows()
            comps["windows"].update({"sensors_in_windows": len(w.sensors), "windows": len(w),
                                     "read_age_s": None if self.windows_read_at is None
                                     else round(time.time() - self.windows_read_at, 3)})
        last_put = self.sink.last_put_at
        return {"components": comps,
                "readings": {"accepted": self.sink.accepted, "inserted": self.writer.stats.readings_inserted,
                             "spooled": self.writer.stats.readings_spooled,
                             "last_reading_age_s": None if last_put is None else round(time.time() - last_put, 3)},
                "queues": {"sink_readings": self.sink.pending(), "writer_held_readings": self.writer.stats.held_readings},
                "dead_letters": {**self.sink.recent_dead_letters(), "total": self.writer.stats.dead_letters}}


def start(cfg: Config, *, ingest_url: str, mqtt_url: str | None, spool_dir: Path,
          client_id: str = "sewerwatch-collector", patterns=None, max_delay: float = 0.1,
          listeners=(), supervisor: Supervisor | None = None, refs=None, share_group: str | None = None,
          shards=None, modbus: bool = True, sparkplug_host_id: str | None = None,
          may_connect=None, windows: WindowBook | None = None) -> Ingest:
    """Start the writer and the collectors the config describes.

    Parameters
    ----------
    ingest_url : str
        Database URL of the ingest role.
    mqtt_url : str or None
        Broker URL of the collector account; None for no MQTT collector.
    patterns : sequence of str, optional
        Topic patterns (default: the config's ``[mqtt] topics``).
    listeners : sequence of callable
        Taps on the sink (``Sink.subscribe``), attached before any collector starts, so
        they see every batch, the first ones of a backlog included.
    spool_dir : path-like
        The writer's spool folder.
    supervisor : ingest.supervise.Supervisor, optional
        Watches every thread (default: one of the ingest's own, started here).
    refs : tuple of (list, list), optional
        The MQTT and Modbus sensors (``SensorRef``) when the caller already has them
        (``sewerwatch run`` keeps a copy for when the database is down at start);
        default: read from the database.
    share_group : str, optional
        The MQTT shared-subscription group (``collect`` passes ``--group`` or the config's
        ``[mqtt] share_group``; ``run`` none: it judges what it receives, so it takes all).
    shards : sequence of str, optional
        The ``[modbus] shards`` whose devices this process polls (:func:`modbus_devices`).
    modbus : bool
        False: poll no Modbus device.
    sparkplug_host_id : str, optional
        The MQTT collector is the Sparkplug primary host of this id (``run``:
        :func:`foundation.endpoints.sparkplug_host`; ``collect`` is none).
    may_connect : callable, optional
        Asked before the MQTT collector (re)connects: a leader that stood still must not
        take its session back from the one that took over (``sewerwatch.leader``).
    windows : foundation.windows.WindowBook, optional
        The live maintenance windows the sink marks readings by (default: a new one), kept
        current from the database every :data:`WINDOWS_POLL_S` by the component ``windows``.
    """
    if refs is None:
        with db.connect(db_url=ingest_url) as conn:
            refs = (sensor_refs_from_db(conn, "mqtt"), sensor_refs_from_db(conn, "modbus"))
    scale = {s.key: s.full_scale_canonical for s in cfg.sensors if s.full_scale is not None}
    modbus_refs = refs[1]
    own = supervisor is None
    sup = supervisor or Supervisor()
    book = windows if windows is not None else WindowBook()
    sink = Sink(windows=book)
    for listener in listeners:
        sink.subscribe(listener)
    writer = Writer(ingest_url, sink, spool_dir, max_delay=max_delay,
                    spool_max_bytes=cfg.ingest.spool_max_bytes).start(sup)
    ing = Ingest(sink=sink, writer=writer, supervisor=sup, own_supervisor=own, windows=book)
    _read_windows(ing, ingest_url, cfg)       # before any reading is put
    sup.add("windows", lambda comp: _windows_loop(comp, ing, ingest_url, cfg), stall_after=60.0)
    if mqtt_url:
        topics = topic_map(cfg, refs[0], patterns)
        ing.mqtt = MqttCollector(mqtt_url, topics, sink, client_id=client_id,
                                 bounds=Bounds.from_options(cfg.ingest),
                                 share_group=share_group, sparkplug_host_id=sparkplug_host_id,
                                 may_connect=may_connect).start(sup)
    devices = modbus_devices(cfg, shards) if modbus else []
    if devices and any(s.source == "modbus" for s in cfg.sensors):
        ing.modbus = _start_modbus(cfg, devices, modbus_refs, sink, sup, scale)
    if own:
        sup.start()
    return ing


def _read_windows(ing: Ingest, url: str, cfg: Config, held: list | None = None) -> bool:
    """The database's maintenance windows that can still cover an incoming reading (those
    open, and those ended within ``[ingest] max_past_days``) into the book. ``held``: a
    one-item list keeping the connection between rounds."""
    held = held if held is not None else [None]
    try:
        if held[0] is None or held[0].closed:
            held[0] = db.connect(db_url=url, connect_timeout=3, autocommit=True)
        back = int((time.time() - cfg.ingest.max_past_days * 86400.0) * 1e6)
        items = load_windows(held[0], None, back, None).items
    except Exception as exc:  # noqa: BLE001 - the database away: the windows known stay in effect
        if held[0] is not None:
            try:
                held[0].close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            held[0] = None
        if ing.windows_read_at is None or time.time() - ing.windows_read_at > 60:
            log.warning("maintenance windows not read (%s); those known stay in effect",
                        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        return False
    ing.windows.replace_stored(items)
    ing.windows_read_at = time.time()
    return True


def _windows_loop(comp: Component, ing: Ingest, url: str, cfg: Config) -> None:
    held: list = [None]
    try:
        while not comp.stopping:
            comp.beat()
            if comp.sleep(WINDOWS_POLL_S):
                return
            _read_windows(ing, url, cfg, held)
    finally:
        if held[0] is not None:
            held[0].close()


def modbus_devices(cfg: Config, shards=None) -> list:
    """The Modbus devices this process polls: all of them, or where ``[modbus] shards``
    splits them among collectors, those of ``shards`` (each collector names its own, so
    two collectors never poll one device).

    Raises
    ------
    foundation.errors.InputError
        A shard the config does not declare, or shards declared and none named.
    """
    declared = cfg.modbus_shards
    if not shards:
        if declared and any(s.source == "modbus" for s in cfg.sensors):
            raise InputError(f"{cfg.path}: [modbus] shards splits the devices among collectors "
                             f"({', '.join(declared)}): name this one's with --shard (or poll none with --no-modbus)")
        return list(cfg.devices)
    unknown = [s for s in shards if s not in declared]
    if unknown:
        raise InputError(f"--shard {unknown[0]!r}: not a shard of {cfg.path} "
                         + (f"(shards: {', '.join(declared)})" if declared else "(it declares no [modbus] shards)"))
    return [d for d in cfg.devices if d.shard in shards]


def _start_modbus(cfg: Config, devices: list, refs, sink: Sink, sup: Supervisor, scale: dict) -> ModbusCollector:
    ids = {r.key: r.id for r in refs}
    polled = {d.id for d in devices}
    sensor_map = {(s.device, s.field): ids[s.key] for s in cfg.sensors
                  if s.source == "modbus" and s.key in ids and s.device in polled}
    full_scale = {ids[k]: v for k, v in scale.items() if k in ids}
    collector = ModbusCollector(devices, sensor_map, sink, Options.from_config(cfg), full_scale=full_scale)

    def body(comp: Component) -> None:
        asyncio.run(collector.run(comp))

    sup.add("modbus", body, stall_after=60.0)
    return collector


def run_until_signalled(ing: Ingest, report=lambda ing: None, every: float = 10.0,
                        status_path: Path | None = None) -> None:
    """Block until SIGTERM or SIGINT, reporting every ``every`` seconds and writing the
    status file every two, then stop cleanly."""
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    started = time.time()
    last_report = time.monotonic()
    while not done.wait(2.0):
        if status_path is not None:
            write_status(status_path, {"pid": os.getpid(), "started": started, "updated": time.time(),
                                       "running": True, **ing.status()})
        if time.monotonic() - last_report >= every:
            last_report = time.monotonic()
            report(ing)
    ing.stop()
    if status_path is not None:
        write_status(status_path, {"pid": os.getpid(), "started": started, "updated": time.time(),
                                   "running": False, **ing.status()})
