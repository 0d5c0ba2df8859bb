"""CLI: ``sewerwatch collect`` (the collectors and the writer, without evaluation)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser(
        "collect", help="run the Modbus and MQTT collectors and the database writer",
        description="Run the collectors alone, without evaluation or alerts: poll the config's Modbus "
        "devices and subscribe to the broker's sewerwatch/# topics, and write every reading to the "
        "database (binary COPY, as the ingest role). Unusable payloads go to dead_letters with the "
        "reason; during a database outage readings are spooled to disk and replayed. Runs until "
        "SIGTERM or Ctrl-C, printing counts. 'sewerwatch run' does the same and also checks and alerts.")
    p.add_argument("--client-id", default="sewerwatch-collector", help="MQTT client id (fixed: the broker keeps its session)")
    p.add_argument("--no-mqtt", action="store_true", help="do not subscribe to the broker")
    p.add_argument("--spool-dir", help="the writer's spool folder (default: <state dir>/spool)")
    p.add_argument("--report-every", type=float, default=10.0, metavar="S", help="print counts every S seconds")
    p.set_defaults(func=_collect)


def _collect(args, ctx) -> int:
    # lazy: the collectors pull in paho, pymodbus and psycopg, which --help does not need
    from ingest import service

    logging.basicConfig(level=logging.INFO, format="sewerwatch: %(name)s: %(message)s", stream=sys.stderr)
    cfg = ctx.config
    ep = ctx.endpoints(start=True)
    spool = Path(args.spool_dir) if args.spool_dir else cfg.services.state_dir / "spool"
    ing = service.start(cfg, ingest_url=ep.db("ingest"), mqtt_url=None if args.no_mqtt else ep.mqtt("collector"),
                        spool_dir=spool, client_id=args.client_id)

    def report(i):
        w = i.writer.stats
        problems = i.supervisor.problems()
        print(f"collect: accepted {i.sink.accepted} readings, inserted {w.readings_inserted}, "
              f"spooled {w.readings_spooled}, dead letters {w.dead_letters}, "
              f"database {'up' if w.db_up else 'DOWN (spooling)'}"
              + ("".join(f"; DEGRADED {k}: {v}" for k, v in problems.items())), file=sys.stderr, flush=True)

    print(f"collect: running (spool {spool}); SIGTERM or Ctrl-C stops after writing everything",
          file=sys.stderr, flush=True)
    cfg.services.state_dir.mkdir(parents=True, exist_ok=True)
    service.run_until_signalled(ing, report, args.report_every,
                                status_path=cfg.services.state_dir / service.COLLECT_STATUS_FILE)
    report(ing)
    return 0
