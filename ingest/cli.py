"""CLI: ``sewerwatch collect`` (the collectors and the writer, without evaluation)."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

#: The MQTT client id of ``sewerwatch collect`` unless given.
DEFAULT_CLIENT_ID = "sewerwatch-collector"


def register(sub) -> None:
    p = sub.add_parser(
        "collect", help="run the Modbus and MQTT collectors and the database writer",
        description="Run the collectors alone, without evaluation or alerts: poll the config's Modbus "
        "devices and subscribe to the broker's sewerwatch/# topics, and write every reading to the "
        "database (binary COPY, as the ingest role). Unusable payloads go to dead_letters with the "
        "reason; during a database outage readings are spooled to disk and replayed. Runs until "
        "SIGTERM or Ctrl-C, printing counts. 'sewerwatch run' does the same and also checks and alerts.")
    p.add_argument("--client-id", default=DEFAULT_CLIENT_ID,
                   help="MQTT client id (fixed: the broker keeps its session); each collector of a group its own")
    p.add_argument("--no-mqtt", action="store_true", help="do not subscribe to the broker")
    p.add_argument("--spool-dir", help="the writer's spool folder (default: <state dir>/spool, or "
                   "<state dir>/spool-<client id> for a client id of its own)")
    p.add_argument("--report-every", type=float, default=10.0, metavar="S", help="print counts every S seconds")
    add_sharing_arguments(p)
    p.set_defaults(func=_collect)


def add_sharing_arguments(p, group: bool = True) -> None:
    """``--group``, ``--shard`` and ``--no-modbus``: how several collectors share the load
    (issue 15). ``run`` takes no ``--group``: it judges what it receives, so it takes every
    reading, never a share."""
    if group:
        p.add_argument("--group", metavar="NAME", help="share the MQTT readings with the other collectors of this "
                       "group (shared subscription $share/NAME/...; default: the config's [mqtt] share_group)")
    p.add_argument("--shard", action="append", metavar="NAME",
                   help="poll only the Modbus devices of this [modbus] shard (repeat for several)")
    p.add_argument("--no-modbus", action="store_true", help="poll no Modbus device")


def instance_files(state_dir: Path, client_id: str, default_id: str, spool: str | None,
                   status_name: str) -> tuple[Path, Path]:
    """The spool folder and status file of one collector: the state folder's own for the
    default client id, ``spool-<client id>`` and ``<status>-<client id>.json`` for any other,
    so several collectors on one machine never share a spool."""
    own = client_id != default_id
    name = re.sub(r"[^A-Za-z0-9._-]", "_", client_id)      # a file name whatever the client id holds
    spool_dir = Path(spool) if spool else state_dir / (f"spool-{name}" if own else "spool")
    status = state_dir / (status_name.replace(".json", f"-{name}.json") if own else status_name)
    return spool_dir, status


def _collect(args, ctx) -> int:
    # lazy: the collectors pull in paho, pymodbus and psycopg, which --help does not need
    from ingest import service

    logging.basicConfig(level=logging.INFO, format="sewerwatch: %(name)s: %(message)s", stream=sys.stderr)
    cfg = ctx.config
    service.modbus_devices(cfg, None if args.no_modbus else args.shard)   # a bad --shard: one line, exit 2
    ep = ctx.endpoints(start=True)
    spool, status_path = instance_files(cfg.services.state_dir, args.client_id, DEFAULT_CLIENT_ID, args.spool_dir,
                                        service.COLLECT_STATUS_FILE)
    ing = service.start(cfg, ingest_url=ep.db("ingest"), mqtt_url=None if args.no_mqtt else ep.mqtt("collector"),
                        spool_dir=spool, client_id=args.client_id, share_group=args.group or cfg.mqtt_share_group,
                        shards=args.shard, modbus=not args.no_modbus)

    def report(i):
        w = i.writer.stats
        problems = i.supervisor.problems()
        print(f"collect: accepted {i.sink.accepted} readings, inserted {w.readings_inserted}, "
              f"spooled {w.readings_spooled}, dead letters {w.dead_letters}, "
              f"database {'up' if w.db_up else 'DOWN (spooling)'}"
              + ("".join(f"; DEGRADED {k}: {v}" for k, v in problems.items())), file=sys.stderr, flush=True)

    group = args.group or cfg.mqtt_share_group
    shares = (f", MQTT shared with group {group!r} as {args.client_id!r}" if group and ing.mqtt else "") + (
        f", Modbus {len(ing.modbus.devices)} devices" + (f" of shard {', '.join(args.shard)}" if args.shard else "")
        if ing.modbus else "")
    print(f"collect: running (spool {spool}{shares}); SIGTERM or Ctrl-C stops after writing everything",
          file=sys.stderr, flush=True)
    cfg.services.state_dir.mkdir(parents=True, exist_ok=True)
    service.run_until_signalled(ing, report, args.report_every, status_path=status_path)
    report(ing)
    return 0
