"""CLI: what an inspector finds at an establishment: a grease removal device missing
(``sewerwatch fog missing add``, :mod:`fog.missing_devices`). The office calls the same
functions.

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from foundation import moments


def register(actions) -> None:
    """Add ``missing`` to the ``fog`` command's ``actions``."""
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
