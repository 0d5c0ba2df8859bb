"""The collectors and the writer wired together from the utility's config.

``sewerwatch collect`` runs this alone; ``sewerwatch run`` adds the streaming evaluator
and the alerts on top (it subscribes to the same sink).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

from foundation import db
from foundation.config import Config
from ingest.modbus.collector import ModbusCollector
from ingest.modbus.options import Options
from ingest.mqtt.collector import MqttCollector, sensor_refs_from_db
from ingest.mqtt.topics import TopicMap
from ingest.sink import Sink
from ingest.writer import Writer

log = logging.getLogger("sewerwatch.ingest")


@dataclass
class Ingest:
    """The running collectors and writer."""

    sink: Sink
    writer: Writer
    mqtt: MqttCollector | None = None
    modbus: object | None = None
    threads: list = field(default_factory=list)

    def stop(self) -> None:
        """Stop the collectors, then let the writer write (or spool) everything it holds."""
        if self.modbus is not None:
            self.modbus.stop()
        for t in self.threads:
            t.join(10)
        if self.mqtt is not None:
            self.mqtt.stop()
        self.writer.stop()


def start(cfg: Config, *, ingest_url: str, mqtt_url: str | None, spool_dir: Path,
          client_id: str = "sewerwatch-collector", patterns=None, max_delay: float = 0.1,
          listeners=()) -> Ingest:
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
    """
    with db.connect(db_url=ingest_url) as conn:
        refs = sensor_refs_from_db(conn, "mqtt")
        modbus_refs = sensor_refs_from_db(conn, "modbus")
    sink = Sink()
    for listener in listeners:
        sink.subscribe(listener)
    writer = Writer(ingest_url, sink, spool_dir, max_delay=max_delay).start()
    ing = Ingest(sink=sink, writer=writer)
    explicit = {s.topic: s.key for s in cfg.sensors if s.source == "mqtt" and s.topic}
    if mqtt_url:
        topics = TopicMap(refs, explicit, patterns or cfg.mqtt_topics)
        ing.mqtt = MqttCollector(mqtt_url, topics, sink, client_id=client_id).start()
    modbus_sensors = [s for s in cfg.sensors if s.source == "modbus"]
    if cfg.devices and modbus_sensors:
        ing.modbus = _start_modbus(cfg, modbus_refs, sink, ing)
    return ing


def _start_modbus(cfg: Config, refs, sink: Sink, ing: Ingest):
    ids = {r.key: r.id for r in refs}
    sensor_map = {(s.device, s.field): ids[s.key] for s in cfg.sensors if s.source == "modbus" and s.key in ids}
    collector = ModbusCollector(list(cfg.devices), sensor_map, sink, Options.from_config(cfg))
    t = threading.Thread(target=lambda: asyncio.run(collector.run()), name="sewerwatch-modbus", daemon=True)
    t.start()
    ing.threads.append(t)
    return collector


def run_until_signalled(ing: Ingest, report=lambda ing: None, every: float = 10.0) -> None:
    """Block until SIGTERM or SIGINT, reporting every ``every`` seconds, then stop cleanly."""
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(every):
        report(ing)
    ing.stop()
