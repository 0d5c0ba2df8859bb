"""CLI: ``sewerwatch alerts list|show|ack|digest``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

from alerts import content, digest
from foundation.display import localise
from foundation import moments
from foundation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("alerts", help="list and acknowledge alerts")
    s = p.add_subparsers(dest="alerts_command", metavar="ACTION")
    q = s.add_parser("list", help="alerts, newest first")
    q.add_argument("--all", action="store_true", help="resolved ones too (default: not resolved)")
    q.add_argument("--limit", type=int, default=50)
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = s.add_parser("show", help="one alert with its notifications")
    q.add_argument("id", type=int)
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_show)
    q = s.add_parser("ack", help="acknowledge an alert (stops its escalation)")
    q.add_argument("id", type=int)
    q.add_argument("--by", required=True, metavar="NAME", help="who acknowledges")
    q.add_argument("--note", metavar="TEXT")
    q.set_defaults(func=_ack)
    q = s.add_parser("remind", help="alert the superintendent to permits whose term ends soon or that expired "
                     "(run daily)")
    q.add_argument("--today", metavar="YYYY-MM-DD", help="default: today in the village's time zone")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_remind)
    q = s.add_parser("digest", help="the digest of a local day's alerts")
    q.add_argument("--day", metavar="YYYY-MM-DD", help="default: today in the village's time zone")
    q.set_defaults(func=_digest)
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])


def _connect(ctx):
    """The config, an owner connection, and the alerts' SQL (:mod:`alerts.store`)."""
    # lazy: the store pulls in psycopg (about 0.15 s), which `sewerwatch --help` does not need
    from alerts import store

    return ctx.config, ctx.connect("owner"), store


def _tz(cfg) -> str:
    if cfg.timezone:
        return cfg.timezone
    from limits.packs import load_pack  # lazy: packs pull in numpy, which --help does not need

    return load_pack(cfg.pack).timezone


def _list(args, ctx) -> int:
    cfg, conn, store = _connect(ctx)
    with conn:
        recs = store.list_alerts(conn, args.all, args.limit)
    if args.json:
        print(json.dumps(recs, default=str))
        return 0
    if not recs:
        print("no alerts" if args.all else "no open alerts")
        return 0
    tz = _tz(cfg)
    for r in recs:
        ack = f" ack by {r['acknowledged_by']}" if r["acknowledged_by"] else ""
        print(f"#{r['id']:<5} {r['state']:<12} {content.local_time(r['opened_at'], tz)}  {localise(r['summary'], tz)}{ack}")
    return 0


def _show(args, ctx) -> int:
    cfg, conn, store = _connect(ctx)
    with conn:
        rec = store.show_alert(conn, args.id)
    if rec is None:
        raise InputError(f"alerts show: no alert #{args.id}")
    if args.json:
        print(json.dumps(rec, default=str))
        return 0
    tz = _tz(cfg)
    for k in store.SHOW_COLS:
        if k != "details" and rec[k] is not None:
            value = rec[k]
            shown = (content.local_time(value, tz) if hasattr(value, "astimezone")
                     else localise(value, tz) if isinstance(value, str) else value)
            print(f"{k + ':':<17}{shown}")
    print("notifications:")
    for n in rec["notifications"]:
        print(f"  {content.local_time(n['at'], tz)}  {n['event']:<9} {n['status']:<6} attempt {n['attempt']}  {n['contact']} via "
              f"{n['channel']}" + (f"  ({n['error']})" if n["error"] else ""))
    return 0


def _ack(args, ctx) -> int:
    if not args.by.strip():
        raise InputError("alerts ack: --by needs a name")
    cfg, conn, store = _connect(ctx)
    from foundation.actor import Actor

    with conn:
        before = store.acknowledge(conn, args.id, args.by, args.note, actor=Actor.os_user())
    if before is None:
        raise InputError(f"alerts ack: no alert #{args.id}")
    state, by = before
    if by is not None:
        raise InputError(f"alerts ack: alert #{args.id} was already acknowledged by {by}")
    print(f"alert #{args.id} acknowledged by {args.by}" + (" (it was already resolved)" if state == "resolved" else ""))
    return 0


def _digest(args, ctx) -> int:
    cfg, conn, store = _connect(ctx)
    tz = _tz(cfg)
    day = moments.day(args.day, "alerts digest: --day").isoformat() if args.day else \
        datetime.now(ZoneInfo(tz)).date().isoformat()
    with conn:
        rows = digest.rows(conn, day, tz)
    title, body = content.digest_message(day, rows, tz, cfg.name)
    print(title)
    print(body)
    sys.stdout.flush()
    return 0


def _remind(args, ctx) -> int:
    # lazy: the channels pull in apprise, the store psycopg
    from alerts import reminders
    from alerts.channels import build_routes
    from limits.permit_store import current_permits

    cfg = ctx.config
    tz = _tz(cfg)
    today = moments.day(args.today, "alerts remind: --today") if args.today else datetime.now(ZoneInfo(tz)).date()
    # machine output goes to standard output alone: the console channel's banner to stderr
    routes = build_routes(cfg, None, sys.stdout if not args.json else sys.stderr)
    with ctx.connect("owner") as conn:
        res = reminders.send(conn, routes, current_permits(conn), today, tz=tz)
    if args.json:
        print(json.dumps(res, default=str))
        return 0
    for r in res["opened"]:
        print(f"#{r['alert_id']} {r['rule']}: {r['site']} permit {r['permit']} (term end {r['term_end']}), "
              f"sent via {', '.join(r['sent']) or 'no channel'}")
    if not res["opened"]:
        print(f"no new permit reminders ({len(res['open'])} still open)")
    for aid in res["resolved"]:
        print(f"#{aid} resolved: the permit no longer calls for a reminder")
    return 0
