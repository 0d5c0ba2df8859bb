"""CLI: ``sewerwatch fog reminders send|list``: reminders of the grease removal devices coming
due, mailed to the establishments' contacts and their haulers (:mod:`fog.reminders`, the
function the office's "Send reminders" form calls). Registered by :mod:`fog.cli`.

The mail goes through the portal's mailer (``[web] mail_url``), which the shell hands over as
``args.mail`` (the mail package is a floor above the grease program).
"""

from __future__ import annotations

import argparse
import json
from datetime import date, datetime

from foundation import moments


def register(s) -> None:
    """Add ``reminders`` to the ``fog`` command's actions ``s``."""
    r = s.add_parser("reminders", help="reminders of the devices coming due, mailed to the establishments and "
                                       "their haulers")
    rs = r.add_subparsers(dest="reminders_command", metavar="ACTION", required=True)
    q = rs.add_parser("send", help="mail the reminders of the devices due within DAYS (each once per device and "
                                   "due date: one sent before is skipped and said)")
    q.add_argument("--ahead", metavar="DAYS", help="the devices due from today to DAYS ahead (default: the "
                   "program's rule, sewerwatch fog rules)")
    q.add_argument("--dry-run", action="store_true", help="only say who would get what; send nothing")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.add_argument("--actor", help="who sends them (default: $USER)")
    q.set_defaults(func=_send)
    q = rs.add_parser("list", help="the reminders sent: when, to whom, for which device")
    q.add_argument("--since", metavar="DATE", help="only those sent on or after this day")
    q.set_defaults(func=_list)


def _actor(args):
    from foundation.actor import Actor

    return Actor(args.actor, "cli") if getattr(args, "actor", None) else Actor.os_user()


def _today(ctx) -> date:
    """The village's day (in its time zone), the day reminders are sent on."""
    return datetime.now(moments.village_zone(ctx.config)).date()


def _line(m) -> str:
    to = m.to or "no address on record"
    who = "the establishment" if m.recipient == "establishment" else "hauler"
    return f"  {m.licence} {m.name}, {m.device} due {m.due_on}: {who} {m.who} <{to}>"


def _send(args: argparse.Namespace, ctx) -> int:
    from fog import reminders
    from fog.rules import for_pack
    from foundation.config import WebOptions

    cfg = ctx.config
    mailer = args.mail.Mailer((cfg.web or WebOptions()).mail_url)
    if not mailer.configured and not args.dry_run:
        from foundation.errors import InputError
        raise InputError("no mail server is set up ([web] mail_url in the configuration): nothing was sent "
                         "(--dry-run shows who would get what)")
    with ctx.connect("owner") as conn:
        out = reminders.send(conn, for_pack(cfg.utility.pack), _today(ctx), mailer, _actor(args), utility=cfg.name,
                             ahead_days=args.ahead, dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"dry_run": out.dry_run, "from": out.today, "to": out.until,
                          "sent": [reminders.as_plain(m) for m in out.sent],
                          "skipped": [reminders.as_plain(m) for m in out.skipped],
                          "no_address": [reminders.as_plain(m) for m in out.no_address],
                          "failed": [{**reminders.as_plain(m), "reason": why} for m, why in out.failed]},
                         indent=2, default=str))
        return 0
    print(out.summary())
    tz = moments.village_zone(cfg)
    for title, items in (("would be sent" if out.dry_run else "sent", out.sent),
                         ("sent before, not again", out.skipped), ("not sent: no address", out.no_address)):
        if items:
            print(f"{title}:")
            for m in items:
                print(_line(m) + (f", sent {m.sent_at.astimezone(tz):%Y-%m-%d %H:%M}"
                                  if title.startswith("sent before") and m.sent_at else ""))
    if out.failed:
        print("not taken by the mail server (not recorded as sent; send again later):")
        for m, why in out.failed:
            print(_line(m) + f": {why}")
    return 0


def _list(args: argparse.Namespace, ctx) -> int:
    from fog import reminders

    since = moments.day(args.since, "--since") if args.since else None
    with ctx.connect("owner") as conn:
        rows = reminders.sent(conn, since)
    tz = moments.village_zone(ctx.config)
    if not rows:
        print("no reminders sent" + (f" since {since}" if since else ""))
    for r in rows:
        print(f"{r['sent_at'].astimezone(tz):%Y-%m-%d %H:%M} {r['licence']} {r['name']}, {r['device']} due {r['due_on']}: "
              f"{r['recipient']} <{r['address']}>, by {r['sent_by']}")
    return 0
