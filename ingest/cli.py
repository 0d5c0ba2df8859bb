"""CLI: ``sewerwatch collect`` (the collectors and the writer, without evaluation) and
``sewerwatch deadletters list|show|replay`` (:mod:`ingest.deadletters`)."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

from foundation.display import local_time

#: The MQTT client id of ``sewerwatch collect`` unless given.
DEFAULT_CLIENT_ID = "sewerwatch-collector"


def register(sub) -> None:
    p = sub.add_parser(
        "collect", help="run the Modbus and MQTT collectors and the database writer",
        description="Run the collectors alone, without evaluation or alerts: poll the config's Modbus "
        "devices and subscribe to the broker's sewerwatch/# topics, and write every reading to the "
        "database (binary COPY, as the ingest role). Unusable payloads are kept as dead letters with the "
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
    _register_deadletters(sub)


def _register_deadletters(sub) -> None:
    p = sub.add_parser(
        "deadletters", help="list, show and replay what the collectors and imports could not use",
        description="Dead letters are payloads and rows the collectors or an import could not use, kept "
        "with their raw bytes, topic and reason. 'list' shows them newest first with counts by source and "
        "reason; 'show ID' one of them with its payload; 'replay' feeds MQTT dead letters through the current "
        "config's decoding again (after the config was fixed) and stores the readings once. Lab-import dead "
        "letters are replayed by importing the corrected file.")
    dsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def filters(q, replay: bool) -> None:
        q.add_argument("--source", help="only this source (mqtt, lab-import, ...)")
        q.add_argument("--since", metavar="WHEN", help="received since: an age (30m, 2h, 7d), a date (a local calendar "
                       "day of the village) or a time (with an offset as given, without one the village's clock)")
        q.add_argument("--reason", metavar="TEXT", help="only those whose reason contains TEXT (any case)")
        q.add_argument("--limit", type=int, default=None if replay else 50, metavar="N",
                       help="at most N" + ("" if replay else " (default 50)"))
        q.add_argument("--state", choices=("pending", "replayed", "all"), default="pending",
                       help="not replayed yet (default), replayed, or all")
        q.add_argument("--json", action="store_true", help="print JSON")

    q = dsub.add_parser("list", help="dead letters newest first, with counts by source and reason")
    filters(q, replay=False)
    q.set_defaults(func=_dl_list)
    q = dsub.add_parser("show", help="one dead letter: reason, topic, payload as text or hex")
    q.add_argument("id", type=int)
    q.add_argument("--json", action="store_true", help="print JSON (the payload as hex)")
    q.set_defaults(func=_dl_show)
    q = dsub.add_parser("replay", help="decode MQTT dead letters again with the current config and store "
                        "their readings (exit 1 when some are still unusable)")
    q.add_argument("--id", type=int, action="append", default=[], metavar="ID", help="this dead letter (repeatable)")
    filters(q, replay=True)
    q.add_argument("--dry-run", action="store_true", help="say what would be stored; change nothing")
    q.set_defaults(func=_dl_replay)


def add_sharing_arguments(p, group: bool = True) -> None:
    """``--group``, ``--shard`` and ``--no-modbus``: how several collectors share the load
   . ``run`` takes no ``--group``: it judges what it receives, so it takes every
    reading, never a share."""
    if group:
        p.add_argument("--group", metavar="NAME", help="share the MQTT readings with the other collectors of this "
                       "group (shared subscription $share/NAME/...; default: the shared group the configuration names)")
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
              f"database {i.writer.database_state()}"
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


def _filters(args, ctx):
    from foundation import moments
    from foundation.errors import InputError
    from ingest import deadletters as dl   # lazy: psycopg and the collectors

    if args.limit is not None and args.limit < 1:
        raise InputError(f"deadletters: --limit must be at least 1, got {args.limit}")
    return dl.Filters(ids=tuple(getattr(args, "id", None) or ()), source=args.source,
                      since=dl.parse_since(args.since, tz=moments.village_zone(ctx.config)) if args.since else None,
                      reason=args.reason,
                      state=args.state, limit=args.limit)


def _dl_list(args, ctx) -> int:
    from ingest import deadletters as dl

    f = _filters(args, ctx)
    with ctx.connect("owner") as conn:
        res = dl.listing(conn, f)
    if args.json:
        print(dl.as_json(res))
        return 0
    what = {"pending": "not replayed", "replayed": "replayed", "all": "in all"}[f.state]
    print(f"dead letters {what}: {res['total']}"
          + (" (" + ", ".join(f"{s} {n}" for s, n in res["by_source"].items()) + ")" if res["by_source"] else ""))
    if res["by_reason"]:
        print("by reason (numbers shown as N):")
        for r in res["by_reason"]:
            print(f"  {r['count']:>7}  {r['source']:<10} {r['reason']}")
    if res["letters"]:
        shown = len(res["letters"])
        print(f"newest {shown}" + (f" of {res['total']}" if shown < res["total"] else "") + ":")
        for d in res["letters"]:
            mark = f"  [replayed as {d['replayed_as']}]" if d["replayed_at"] else ""
            print(f"  #{d['id']:<7} {local_time(d['received_at'], ctx.config.timezone)} {d['source']:<10} "
                  f"{d['topic'] or '-'}: "
                  f"{d['reason'][:160]}{mark}")
    return 0


def _dl_show(args, ctx) -> int:
    from ingest import deadletters as dl

    with ctx.connect("owner") as conn:
        d = dl.one(conn, args.id)
    if args.json:
        print(dl.as_json(d))
        return 0
    kind, shown = dl.payload_text(d["payload"])
    tz = ctx.config.timezone
    print(f"dead letter #{d['id']} ({d['source']}), received {local_time(d['received_at'], tz)}")
    print(f"  topic:  {d['topic'] or '-'}")
    print(f"  reason: {d['reason']}")
    for old in (d["detail"] or {}).get("previous_reasons", []):
        print(f"  before: {old}")
    if d["replayed_at"]:
        print(f"  replayed {local_time(d['replayed_at'], tz)} as {d['replayed_as']}")
    elif d["replay_tries"]:
        print(f"  replay tried {d['replay_tries']} time(s), last {local_time(d['last_replay_at'], tz)}")
    if d["source"] == "lab-import":
        print(f"  ({dl.LAB_IMPORT_NOTE})")
    detail = {k: v for k, v in (d["detail"] or {}).items() if k != "previous_reasons"}
    if detail:
        print(f"  detail: {dl.as_json(detail)}")
    size = d["size"] or 0
    print(f"  payload ({size:,} bytes, as {kind}):" if kind != "none" else "  payload: none")
    if shown:
        print("\n".join("    " + line for line in shown.splitlines()))
    return 0


def _dl_replay(args, ctx) -> int:
    from ingest import deadletters as dl

    from foundation.actor import Actor

    f = _filters(args, ctx)
    with ctx.connect("owner") as conn:
        out = dl.replay(conn, ctx.config, f, dry_run=args.dry_run, actor=Actor.os_user())
    if args.json:
        print(dl.as_json([o.__dict__ for o in out]))
    else:
        for o in out:
            print(o.line(args.dry_run))
        done = [o for o in out if not o.skipped and o.stored]
        failed = [o for o in out if not o.skipped and not o.stored]
        skipped = [o for o in out if o.skipped]
        verb = "would store" if args.dry_run else "stored"
        print(f"replay{' (dry run)' if args.dry_run else ''}: {len(out)} dead letters; {len(done)} {verb} "
              f"{sum(o.stored for o in done)} readings" + ("" if args.dry_run else f" ({sum(o.new for o in done)} new)")
              + f"; {len(failed)} still unusable; {len(skipped)} skipped")
    return 1 if any(not o.skipped and not o.stored for o in out) else 0
