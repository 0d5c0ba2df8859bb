"""CLI: ``sewerwatch mail batch new|review|send|paper|list|show``, ``sewerwatch mail bounces``
and ``sewerwatch mail paper-preference`` (mailing issued notices and bills).

Each command calls :mod:`ereport.mailing` with the operating-system user as the actor, as
the office's Mailing pages call it with the signed-in account.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from foundation.actor import Actor


def register(sub) -> None:
    p = sub.add_parser("mail", help="mail issued notices and bills to their contacts, in batches reviewed first")
    s = p.add_subparsers(dest="mail_command", metavar="ACTION")
    b = s.add_parser("batch", help="make, review and send a batch of documents")
    bs = b.add_subparsers(dest="batch_command", metavar="STEP")
    q = bs.add_parser("new", help="make a batch to review: every document not yet sent, a bill run's bills, "
                                  "or documents by number")
    q.add_argument("--unsent", action="store_true", help="every issued document not yet sent")
    q.add_argument("--bill-run", type=int, help="the bills of this bill run not yet sent")
    q.add_argument("--document", action="append", default=[], metavar="KIND:NUMBER",
                   help="one document, such as bill:12, notice:NOV-2026-001 or grease-notice:GWL-2026-001 "
                        "(again for more)")
    q.add_argument("--resend", action="append", default=[], metavar="KIND:NUMBER",
                   help="a document sent before, to send again (needs --reason)")
    q.add_argument("--reason", help="why the documents named with --resend go again")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_new)
    for name, what, fn in (("review", "who gets what: by e-mail, on paper, or no address on file", _review),
                           ("show", "a batch with every sending and its outcome", _review)):
        q = bs.add_parser(name, help=what)
        q.add_argument("batch", type=int, help="the batch's number (mail batch list)")
        q.add_argument("--json", action="store_true", help="print JSON instead of text")
        q.set_defaults(func=fn)
    q = bs.add_parser("send", help="send a reviewed batch (once), showing each message as it goes")
    q.add_argument("batch", type=int, help="the batch's number")
    q.set_defaults(func=_send)
    q = bs.add_parser("paper", help="the paper list: who gets the documents by post and what to print")
    q.add_argument("batch", type=int, help="the batch's number")
    q.add_argument("--pdf", help="write the list to this PDF file")
    q.add_argument("--print", dest="print_file", help="write the list and every document on it to this PDF file")
    q.set_defaults(func=_paper)
    q = bs.add_parser("list", help="the batches, newest first")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    b.set_defaults(func=lambda args, ctx: (b.print_help(), 2)[1])
    q = s.add_parser("bounces", help="read the mail server's reports of undelivered mail (a mailbox file or "
                                     ".eml files) and mark the messages that did not arrive")
    q.add_argument("files", nargs="+", help="mailbox or .eml files")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_bounces)
    q = s.add_parser("paper-preference", help="record that a contact wants documents on paper (or by e-mail again)")
    q.add_argument("contact", type=int, help="the contact's number (contacts list)")
    q.add_argument("--email", action="store_true", help="by e-mail again")
    q.set_defaults(func=_preference)
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])


def _local(ctx, t: datetime | None) -> str:
    from ereport.mailing.batches import local
    from foundation.moments import village_zone
    return local(t, str(village_zone(ctx.config)))


def _print_batch(ctx, b: dict) -> None:
    print(f"batch {b['id']} ({b['state']}): {b['choice']}; made {_local(ctx, b['made_at'])} by {b['made_by']}"
          + (f"; sent {_local(ctx, b['sent_at'])} by {b['sent_by']}" if b["sent_at"] else ""))
    heads = {"email": "by e-mail", "paper": "on paper", "none": "no address on file"}
    for ch, items in b["by_channel"].items():
        print(f"{heads[ch]}: {len(items)}")
        for it in items:
            to = it["email"] if ch == "email" else "; ".join(it["lines"]) if ch == "paper" else it["why"]
            print(f"  {it['kind_words']} {it['number']}  {it['recipient']}"
                  + (f", {it['person']}" if it["person"] else "") + f"  -> {to}"
                  + (f"  ({it['why']})" if ch == "paper" else "")
                  + (f"  [sent again: {it['resend_reason']}]" if it["resend_reason"] else "")
                  + (f"  [not sent: {it['skipped']}]" if it["skipped"] else ""))
            for s in it["sendings"]:
                print(f"      {_local(ctx, s['sent_at'])} to {s['to_address']}: {s['outcome_words']}"
                      + (f" ({s['detail']})" if s["detail"] else "")
                      + (f"; bounced {_local(ctx, s['bounced_at'])}: {s['bounce_reason']}" if s["bounced_at"] else "")
                      + f"  Message-ID {s['message_id']}")


def _new(args, ctx) -> int:
    from ereport.mailing import batches

    with ctx.connect("owner", autocommit=True) as conn:
        b = batches.make(conn, actor=Actor.os_user(), unsent=args.unsent, bill_run=args.bill_run,
                         documents=args.document, resend=args.resend, reason=args.reason)
    if args.json:
        print(json.dumps(b, default=str))
        return 0
    _print_batch(ctx, b)
    print(f"review it, then send it: sewerwatch mail batch send {b['id']}")
    return 0


def _review(args, ctx) -> int:
    from ereport.mailing import batches

    with ctx.connect("owner", autocommit=True) as conn:
        b = batches.batch(conn, args.batch)
    if args.json:
        print(json.dumps(b, default=str))
    else:
        _print_batch(ctx, b)
    return 0


def _send(args, ctx) -> int:
    from ereport.mail import MailError
    from ereport.mailing import send
    from foundation.config import WebOptions
    from foundation.errors import InputError

    cfg = ctx.config
    opts = cfg.web or WebOptions()

    def progress(n, total, item, outcome):
        print(f"[{n}/{total}] {item['kind_words']} {item['number']} to {item['email']}: {outcome}", flush=True)

    with ctx.connect("owner", autocommit=True) as conn:
        try:
            b = send.send(conn, args.batch, mail_url=opts.mail_url, cfg=cfg, actor=Actor.os_user(), progress=progress)
        except MailError as exc:
            raise InputError(f"mail batch send: {exc}; nothing was sent") from None
    sent = [s for it in b["items"] for s in it["sendings"]]
    print(f"batch {b['id']}: {sum(s['outcome'] == 'sent' for s in sent)} sent, "
          f"{sum(s['outcome'] == 'bounced' for s in sent)} refused, {sum(s['outcome'] == 'failed' for s in sent)} "
          f"not sent (in a new batch they go again), {b['counts']['paper']} on paper "
          f"(sewerwatch mail batch paper {b['id']}), {b['counts']['none']} with no address on file")
    return 0


def _paper(args, ctx) -> int:
    from enforcement.cli_common import today
    from ereport.mailing import paper

    with ctx.connect("owner", autocommit=True) as conn:
        p = paper.paper_list(conn, args.batch)
        if args.pdf:
            Path(args.pdf).write_bytes(paper.list_pdf(conn, args.batch, ctx.config, today(ctx, None)))
        if args.print_file:
            Path(args.print_file).write_bytes(paper.print_pdf(conn, args.batch, ctx.config, today(ctx, None)))
    for n, L in enumerate(p["letters"], 1):
        print(f"{n}. " + "; ".join(x for x in [L["person"], L["recipient"], *L["lines"]] if x) + f"  ({L['why']})")
        for d in L["documents"]:
            print(f"     print {d['kind_words']} {d['number']}: {d['title']}")
    for it in p["nowhere"]:
        print(f"no address on file: {it['recipient']}: {it['kind_words']} {it['number']} ({it['why']})")
    if not p["letters"] and not p["nowhere"]:
        print(f"batch {args.batch}: nothing on paper")
    for f in (args.pdf, args.print_file):
        if f:
            print(f"wrote {f}", file=sys.stderr)
    return 0


def _list(args, ctx) -> int:
    from ereport.mailing import batches

    with ctx.connect("owner", autocommit=True) as conn:
        found = batches.list_batches(conn)
    if args.json:
        print(json.dumps(found, default=str))
        return 0
    if not found:
        print("no batches yet (sewerwatch mail batch new --unsent)")
    for b in found:
        print(f"{b['id']:>4}  {b['state']:<10} {b['documents']} documents, {b['paper']} on paper, "
              f"{b['trouble']} not delivered  {b['choice']}")
    return 0


def _bounces(args, ctx) -> int:
    from ereport.mailing import bounces

    with ctx.connect("owner", autocommit=True) as conn:
        r = bounces.import_bounces(conn, args.files, actor=Actor.os_user())
    if args.json:
        print(json.dumps(r, default=str))
        return 0
    for x in r["bounced"]:
        print(f"bounced: {x['document']} to {x['to']}: {x['reason']}")
    for x in r["again"]:
        print(f"already marked bounced: {x['document']} to {x['to']}")
    for x in r["delivered"]:
        print(f"not a failure ({x['action']}): {x['document']} to {x['to']}")
    for x in r["unmatched"]:
        print(f"not matched, kept in the dead letters: {x['where']}: {x['reason']}")
    print(f"{len(r['bounced'])} bounced, {len(r['unmatched'])} not matched")
    return 0


def _preference(args, ctx) -> int:
    from ereport.mailing import batches

    with ctx.connect("owner", autocommit=True) as conn:
        batches.set_paper(conn, args.contact, not args.email, actor=Actor.os_user())
    print(f"contact {args.contact}: documents go " + ("by e-mail" if args.email else "on paper"))
    return 0
