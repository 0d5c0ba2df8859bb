"""CLI: what an inspector finds at an establishment: a grease inspection of a device
(``sewerwatch fog inspect add|list``, :mod:`fog.inspections`, what the office's inspection form
calls) and a grease removal device missing (``fog missing add``, :mod:`fog.missing_devices`).

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from foundation import moments


def register(actions) -> None:
    """Add ``inspect`` and ``missing`` to the ``fog`` command's ``actions``."""
    from fog.inspections import BAFFLES, COVER

    i = actions.add_parser("inspect", help="grease inspections of the establishments' devices")
    ins = i.add_subparsers(dest="inspect_command", metavar="ACTION", required=True)
    q = ins.add_parser("add", help="record an inspection of a device (a visit after today is refused)")
    q.add_argument("licence", metavar="LICENCE", help="the establishment's business licence number")
    q.add_argument("--device", default="", help="the device's label (may be left out when there is one)")
    q.add_argument("--date", required=True, metavar="DATE", help="the day of the visit")
    q.add_argument("--baffles", required=True, choices=BAFFLES, help="what the baffles were found")
    q.add_argument("--cover", required=True, choices=COVER, help="what the cover was found")
    q.add_argument("--fog-depth", required=True, metavar="INCHES", help="FOG depth measured [in]")
    q.add_argument("--solids-depth", required=True, metavar="INCHES", help="solids depth measured [in]")
    for key, words in (("scraping", "plates and pans scraped into the trash before washing"),
                       ("strainers", "strainers in the sinks' drains"),
                       ("training", "the staff's grease training on record")):
        q.add_argument(f"--{key}", required=True, choices=("yes", "no"), help=words)
    q.add_argument("--notes", default="", help="what else was seen")
    q.add_argument("--actor", help="who records it (default: $USER)")
    q.set_defaults(func=_inspect_add)
    q = ins.add_parser("list", help="the inspections, newest first, with their 25 %% reading")
    q.add_argument("licence", nargs="?", metavar="LICENCE", help="only this establishment's")
    q.add_argument("--year", type=int, help="only this year's")
    q.set_defaults(func=_inspect_list)
    m = actions.add_parser("missing", help="grease removal devices found missing (a finding)")
    ms = m.add_subparsers(dest="missing_command", metavar="ACTION", required=True)
    q = ms.add_parser("add", help="record that an establishment has no grease removal device, or that its "
                                  "device on record is not there (once a day)")
    q.add_argument("licence", metavar="LICENCE", help="the establishment's business licence number")
    q.add_argument("--date", required=True, metavar="DATE", help="the day it was found (not after today)")
    q.add_argument("--device", default="", help="the device on record that is not there (left out: the "
                   "establishment has none)")
    q.add_argument("--notes", default="", help="what was seen")
    q.add_argument("--actor", help="who records it (default: $USER)")
    q.set_defaults(func=_missing_add)


def _actor(args):
    from foundation.actor import Actor

    return Actor(args.actor, "cli") if getattr(args, "actor", None) else Actor.os_user()


def _today(ctx):
    return datetime.now(moments.village_zone(ctx.config)).date()


def _rules_of(ctx):
    from fog.rules import for_pack

    return for_pack(ctx.config.utility.pack)


def _missing_add(args: argparse.Namespace, ctx) -> int:
    from fog import missing_devices

    with ctx.connect("owner") as conn:
        m = missing_devices.record(conn, _rules_of(ctx), args.licence, found_on=args.date, device=args.device,
                                   notes=args.notes, actor=_actor(args), today=_today(ctx))
    what = f"its device {m['device']} is not there" if m["device"] else "it has no grease removal device"
    print(f"recorded for {m['name']} ({m['licence']}) on {m['found_on']}: {what} (a finding)")
    return 0


def _inspect_add(args: argparse.Namespace, ctx) -> int:
    from fog import inspections, store

    fields = {"device": args.device, "date": args.date, "baffles": args.baffles, "cover": args.cover,
              "fog_depth_in": args.fog_depth, "solids_depth_in": args.solids_depth, "scraping": args.scraping,
              "strainers": args.strainers, "training_records": args.training, "notes": args.notes}
    rules = _rules_of(ctx)
    with ctx.connect("owner") as conn:
        e = store.establishment(conn, rules, _today(ctx), args.licence)
        i = inspections.record(conn, e["id"], fields, _actor(args), _today(ctx))
        depth = next(d["liquid_depth_in"] for d in e["devices"] if d["label"] == i["device"])
    share, reached = inspections.reading(rules, {**i, "liquid_depth_in": depth})
    print(f"recorded the inspection of {e['name']} {i['device']} on {i['inspected_on']}: FOG and solids "
          f"{share:.0%} of the liquid depth" + (f", the rule is {rules.depth_share:.0%}: a finding, to be pumped now"
                                               if reached else ""))
    return 0


def _inspect_list(args: argparse.Namespace, ctx) -> int:
    from fog import inspections, store

    with ctx.connect("owner") as conn:
        est = store.establishment(conn, _rules_of(ctx), _today(ctx), args.licence)["id"] if args.licence else None
        rows = inspections.listed(conn, est, args.year)
    if not rows:
        print("no grease inspections recorded")
    for i in rows:
        print(f"{i['licence']} {i['name']}, " + inspections.line(i))
    return 0
