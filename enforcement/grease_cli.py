"""CLI: ``sewerwatch fog notices due|issue|list|pdf|guide``: the grease program's enforcement
(:mod:`enforcement.grease_notices`), added to the ``fog`` command (:mod:`fog.cli` sits a floor
below and cannot name it). The office's establishment page calls the same functions.

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
import json
from datetime import date, datetime
from pathlib import Path

from foundation import moments
from foundation.errors import InputError


def register(sub) -> None:
    """Add ``notices`` to the ``fog`` command (registered before this)."""
    n = sub.choices["fog"].actions.add_parser(
        "notices", help="the grease program's notices: the steps the guide proposes for the findings, issued")
    ns = n.add_subparsers(dest="notices_command", metavar="ACTION", required=True)
    q = ns.add_parser("due", help="the findings the guide proposes a notice for and none was issued")
    q.add_argument("--as-of", metavar="DATE", help="the findings as of this day, not after today (default: today)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_due)
    q = ns.add_parser("issue", help="issue the notice the guide proposes for a finding (or every one due)")
    q.add_argument("licence", nargs="?", metavar="LICENCE", help="the establishment's business licence number")
    q.add_argument("--kind", help="the kind of finding, as fog show prints it (overdue, too late, blockage, ...)")
    q.add_argument("--on", metavar="DATE", help="the finding's day, as fog show prints it")
    q.add_argument("--device", default="", help="the device (where two have such a finding that day)")
    q.add_argument("--all", action="store_true", help="every notice due, instead of one establishment's finding")
    q.add_argument("--as-of", metavar="DATE", help="the findings as of this day, not after today (default: today)")
    q.add_argument("--issued", metavar="DATE", help="the day the notice is dated, not after today nor before "
                   "--as-of (default: today)")
    q.add_argument("--out", metavar="DIR", help="also write each PDF into DIR")
    q.add_argument("--actor", help="who issues it (default: $USER)")
    q.set_defaults(func=_issue)
    q = ns.add_parser("list", help="the notices issued, newest first")
    q.add_argument("--establishment", metavar="LICENCE")
    q.add_argument("--year", type=int)
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = ns.add_parser("pdf", help="write a notice's PDF as it was issued")
    q.add_argument("number", metavar="NUMBER", help="the notice's number (GWL-2026-001)")
    q.add_argument("--out", metavar="DIR", default=".", help="the folder to write it into (default: here)")
    q.set_defaults(func=_pdf)
    q = ns.add_parser("guide", help="the grease program's enforcement response guide: its steps and figures")
    q.set_defaults(func=_guide)
    q = ns.add_parser("respond", help="record the establishment's response to a notice (once)")
    q.add_argument("number", metavar="NUMBER", help="the notice's number (GWL-2026-001)")
    q.add_argument("--received", required=True, metavar="DATE", help="the day the response was received")
    q.add_argument("--note", default="", help="what the response says")
    q.add_argument("--actor", help="who records it (default: $USER)")
    q.set_defaults(func=_respond)
    q = ns.add_parser("escalate", help="issue the guide's next step for a notice unanswered by its deadline, or "
                                       "answered inadequately (once)")
    q.add_argument("number", metavar="NUMBER", help="the notice's number (GWL-2026-001)")
    q.add_argument("--note", default="", help="why the response is inadequate (needed when one was recorded)")
    q.add_argument("--out", metavar="DIR", help="also write the new notice's PDF into DIR")
    q.add_argument("--actor", help="who escalates it (default: $USER)")
    q.set_defaults(func=_escalate)


def _today(ctx) -> date:
    return datetime.now(moments.village_zone(ctx.config)).date()


def _setting(ctx):
    from enforcement.grease_guide import load
    from fog.rules import for_pack
    from lab.documents.pdf import letterhead

    return {"rules": for_pack(ctx.config.utility.pack), "guide": load(), "pack": ctx.config.utility.pack,
            "letterhead": letterhead(ctx.config)}


def _as_of(args, today: date) -> date:
    as_of = moments.day(args.as_of, "--as-of") if args.as_of else today
    if as_of > today:
        raise InputError(f"--as-of: {as_of} is after today ({today})")
    return as_of


def _due(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_notices

    s, today = _setting(ctx), _today(ctx)
    as_of = _as_of(args, today)
    with ctx.connect("owner") as conn:
        rows = grease_notices.due(conn, s["rules"], s["guide"], as_of)
    if args.json:
        print(json.dumps([{k: r[k] for k in ("licence", "name", "kind", "on", "device", "words", "nth")}
                          | {"step": r["step"].title} for r in rows], indent=2, default=str))
        return 0
    print(f"as of {as_of}: {len(rows)} notices due")
    for r in rows:
        print(f"  {r['licence']:<10} {r['name'][:28]:<28} {r['on']} {r['device']}: {r['kind']} -> {r['step'].title}")
    return 0


def _actor(args):
    from foundation.actor import Actor

    return Actor(args.actor, "cli") if args.actor else Actor.os_user()


def _issue(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_notices

    s, today = _setting(ctx), _today(ctx)
    as_of = _as_of(args, today)
    issued_on = moments.day(args.issued, "--issued") if args.issued else None
    if args.all == bool(args.licence):
        raise InputError("name an establishment's licence with --kind and --on, or --all (not both)")
    if args.licence and not (args.kind and args.on):
        raise InputError("--kind and --on: name the finding (sewerwatch fog show LICENCE lists them)")
    issued = []
    with ctx.connect("owner") as conn:
        if args.all:
            todo = [(r["establishment_id"], r["key"], r["step"].id)
                    for r in grease_notices.due(conn, s["rules"], s["guide"], as_of)]
        else:
            est, p = grease_notices.find(conn, s["rules"], s["guide"], args.licence, as_of, args.kind.strip(),
                                         moments.day(args.on, "--on"), args.device)
            if p["step"] is None:
                raise InputError(f"the grease guide proposes no step for a finding {args.kind.strip()!r}")
            todo = [(est["id"], p["key"], p["step"].id)]
        for est_id, key, step in todo:
            issued.append(grease_notices.issue(conn, establishment=est_id, key=key, step=step, as_of=as_of,
                                               today=today, actor=_actor(args), issued_on=issued_on, **s))
    for n in issued:
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / f"{n['number']}.pdf").write_bytes(n["pdf"])
        print(f"issued {n['title'].lower()} {n['number']} to {n['name']} ({n['licence']}) on {n['issued_on']}")
    if args.all:
        print(f"{len(issued)} notices issued")
    return 0


def _list(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_notices
    from enforcement.grease_responses import standing

    with ctx.connect("owner") as conn:
        est = None
        if args.establishment:
            row = conn.execute("SELECT id FROM fog_establishments WHERE licence = %s",
                               (args.establishment.strip(),)).fetchone()
            if row is None:
                raise InputError(f"--establishment: no establishment with licence {args.establishment.strip()!r}")
            est = row[0]
        rows = grease_notices.notices(conn, est, args.year)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print("no grease notices issued")
    for n in rows:
        amount = f", ${float(n['amount_dollars']):,.2f}" if n["amount_dollars"] is not None else ""
        print(f"{n['number']:<14} {n['issued_on']} {n['title']}{amount} to {n['name']} ({n['licence']}): "
              f"{n['finding_kind']} of {n['finding_on']}; issued by {n['issued_by']}; {standing(n)}")
    return 0


def _pdf(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_notices

    with ctx.connect("owner") as conn:
        n, data = grease_notices.pdf(conn, args.number)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{n['number']}.pdf").write_bytes(data)
    print(f"wrote {out / (n['number'] + '.pdf')} (as issued on {n['issued_on']})")
    return 0


def _guide(args: argparse.Namespace, ctx) -> int:
    from enforcement.grease_guide import load

    g = load()
    print(f"{g.name}: an establishment's findings counted over {g.window_days} days")
    for kinds, steps in g.responses:
        turns = ", then ".join(g.steps[s].title.lower() for s in steps)
        print(f"  {', '.join(kinds)}: {turns}")
    for s in g.steps.values():
        amount = f"; ${s.amount_dollars:,.2f}, {s.amount_words}" if s.amount_dollars is not None else ""
        print(f"{s.title}: respond within {s.respond_within_days} days{amount}")
    return 0


def _respond(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_responses

    with ctx.connect("owner") as conn:
        n = grease_responses.respond(conn, args.number, moments.day(args.received, "--received"), args.note,
                                     _actor(args), _today(ctx))
    late = f" (after its deadline, {n['response_due']})" if n["late"] else ""
    print(f"recorded the response to {n['title'].lower()} {n['number']}, received {n['response_received_on']}{late}")
    return 0


def _escalate(args: argparse.Namespace, ctx) -> int:
    from enforcement import grease_responses

    s, today = _setting(ctx), _today(ctx)
    with ctx.connect("owner") as conn:
        n, new = grease_responses.escalate(conn, args.number, on=today, note=args.note, actor=_actor(args),
                                           today=today, **s)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"{new['number']}.pdf").write_bytes(new["pdf"])
    print(f"escalated {n['title'].lower()} {n['number']}: issued {new['title'].lower()} {new['number']} to "
          f"{new['name']} ({new['licence']}) on {new['issued_on']}")
    return 0
