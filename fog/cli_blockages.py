"""CLI: the sewer crew's grease blockages (``sewerwatch fog blockage add|import|list``), the hot
spots they make (``fog hotspots``) and the sewer segment an establishment drains to (``fog
segment``). The office's Grease pages call the same functions (:mod:`fog.blockages`).

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
import json
from datetime import date, timedelta

from foundation import moments


def register(actions) -> None:
    """Add ``blockage``, ``hotspots`` and ``segment`` to the ``fog`` command's ``actions``."""
    b = actions.add_parser("blockage", help="grease blockages the sewer crew found")
    bs = b.add_subparsers(dest="blockage_command", metavar="ACTION", required=True)
    q = bs.add_parser("add", help="record a grease blockage (traced to an establishment, it is a finding for it)")
    q.add_argument("--date", required=True, metavar="DATE", help="the day it was found (not after today)")
    q.add_argument("--location", required=True, metavar="PLACE", help="the manhole or sewer segment")
    q.add_argument("--found", required=True, metavar="TEXT", help="what the crew found")
    q.add_argument("--by", required=True, metavar="NAME", help="who found it")
    q.add_argument("--establishment", default="", metavar="LICENCE",
                   help="the establishment it was traced to (its business licence number)")
    q.add_argument("--actor", help="who enters it (default: $USER)")
    q.set_defaults(func=_add)
    q = bs.add_parser("import", help="the crew's CSV of blockages: a preview unless --commit")
    q.add_argument("file", metavar="FILE.csv", help="the crew's reports, one blockage a row (the guide names the "
                   "columns)")
    q.add_argument("--commit", action="store_true", help="store the good rows; the rejected ones go to the dead "
                   "letters with their reasons")
    q.add_argument("--actor", help="who imports it (default: $USER)")
    q.set_defaults(func=_import)
    q = bs.add_parser("list", help="the blockages found, newest first")
    q.add_argument("--since", metavar="DATE")
    q.add_argument("--until", metavar="DATE")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = actions.add_parser("hotspots", help="manholes and segments by their count of grease blockages, with the "
                                            "establishments upstream")
    q.add_argument("--since", metavar="DATE", help="from this day (default: a year before --until)")
    q.add_argument("--until", metavar="DATE", help="to this day (default: today)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_hotspots)
    q = actions.add_parser("segment", help="give an establishment the sewer segment or manhole it drains to")
    q.add_argument("licence", metavar="LICENCE", help="its business licence number")
    q.add_argument("segment", metavar="SEGMENT", help="the segment or manhole (\"\" for none)")
    q.add_argument("--actor", help="who sets it (default: $USER)")
    q.set_defaults(func=_segment)


def _today(ctx) -> date:
    from datetime import datetime

    return datetime.now(moments.village_zone(ctx.config)).date()


def _actor(args):
    from foundation.actor import Actor

    return Actor(args.actor, "cli") if getattr(args, "actor", None) else Actor.os_user()


def _add(args: argparse.Namespace, ctx) -> int:
    from fog import blockages

    rec = {"date": args.date, "location": args.location, "found": args.found, "found_by": args.by,
           "establishment": args.establishment}
    with ctx.connect("owner") as conn:
        b = blockages.add_blockage(conn, rec, _actor(args), _today(ctx))
    traced = f", traced to {b['establishment']} (a finding for it)" if b["establishment"] else ""
    print(f"recorded the grease blockage at {b['location']} on {b['found_on']}{traced}")
    return 0


def _import(args: argparse.Namespace, ctx) -> int:
    from pathlib import Path

    from fog import blockages
    from foundation.errors import InputError

    try:
        text = Path(args.file).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{args.file}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{args.file}: not UTF-8 text: expected a CSV file") from None
    with ctx.connect("owner") as conn:
        rep = blockages.import_blockages(conn, text, Path(args.file).name, _actor(args), _today(ctx),
                                         commit=args.commit)
    print(rep.summary())
    for line, reason, _ in rep.rejected:
        print(f"  line {line}: {reason}")
    return 0


def _list(args: argparse.Namespace, ctx) -> int:
    from fog import blockages

    since = moments.day(args.since, "--since") if args.since else None
    until = moments.day(args.until, "--until") if args.until else None
    with ctx.connect("owner") as conn:
        rows = blockages.blockages(conn, since, until)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print("no grease blockages recorded" + (" in that period" if since or until else ""))
    for b in rows:
        traced = f"; traced to {b['establishment']} ({b['licence']})" if b["establishment"] else ""
        print(f"{b['found_on']}  {b['location']}: {b['found']} (found by {b['found_by']}){traced}")
    return 0


def _hotspots(args: argparse.Namespace, ctx) -> int:
    from fog import blockages

    until = moments.day(args.until, "--until") if args.until else _today(ctx)
    since = moments.day(args.since, "--since") if args.since else until - timedelta(days=365)
    with ctx.connect("owner") as conn:
        spots = blockages.hot_spots(conn, since, until)
    if args.json:
        print(json.dumps({"since": since, "until": until, "hot_spots": spots}, indent=2, default=str))
        return 0
    print(f"grease blockages from {since} to {until}: {sum(s['blockages'] for s in spots)} at {len(spots)} places")
    for s in spots:
        up = "; ".join(f"{u['name']} ({u['licence']}, {u['address']})" for u in s["upstream"]) or "none given"
        traced = f"; traced to {', '.join(s['traced'])}" if s["traced"] else ""
        print(f"  {s['location']}: {s['blockages']} blockage(s), the last on {s['last']}{traced}; upstream: {up}")
    return 0


def _segment(args: argparse.Namespace, ctx) -> int:
    from fog import blockages

    with ctx.connect("owner") as conn:
        r = blockages.set_segment(conn, args.licence, args.segment, _actor(args))
    print(f"{r['name']} drains to {r['segment']}" if r["segment"] else f"{r['name']} has no segment given")
    return 0
