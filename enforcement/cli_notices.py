"""CLI of notices of violation: ``sewerwatch notice draft|edit|issue|response|close|escalate|
penalty|list|show|pdf``.

Each handler is ``func(args, ctx)`` calling the package's functions (:mod:`enforcement.notices`,
:mod:`enforcement.escalation`) as the office's pages do, and returns the exit code; the work
is imported inside each handler.
"""

from __future__ import annotations

import argparse

from foundation.display import local_time
from foundation.errors import InputError
from enforcement import cli_common as common


def register(sub) -> None:
    p = sub.add_parser("notice", help="notices of violation: draft, edit, issue, response, close, escalate, penalty, "
                       "list, show, pdf",
                       description="Notices of violation and the orders after them, drafted from a finding as HTML "
                       "and PDF (the ordinance's words, the evidence, the days of violation, the forfeiture range, "
                       "the corrective action and report demanded, the response deadline), with their lifecycle "
                       "and audit trail in the database. The enforcement response guide picks the action.")
    ns = p.add_subparsers(dest="notice_command", metavar="ACTION", required=True)
    q = ns.add_parser("draft", help="draft a notice from a violation, a finding, or a user's SNC in a period")
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--violation", type=int, help="a violation episode's id (sewerwatch findings list)")
    g.add_argument("--alert", type=int, help="a violation alert's id: every episode it covers (sewerwatch alerts list)")
    g.add_argument("--finding", type=int, help="a finding's id (sewerwatch findings list)")
    g.add_argument("--snc", metavar="SITE", help="a user in significant noncompliance (with --period)")
    q.add_argument("--period", default=None, help="the SNC period (with --snc): 2026H1, 2026Q2, local days")
    q.add_argument("--on", default=None, help="the local day of drafting (default: today)")
    q.add_argument("--out", default=".", metavar="DIR", help="where the HTML and PDF go (default .)")
    q.add_argument("--by", default=None)
    common.add_json(q)
    q.set_defaults(func=_notice_draft)
    q = _step(ns, "issue", "issue a drafted notice (its response deadline counts from the issue date)",
              _notice_issue, on="the issue date (default: today)", out=True)
    q.add_argument("--revision", type=int, default=None, metavar="N",
                   help="the revision you read (notice show and notice edit print it): refused, nothing issued, "
                        "when someone saved another revision since (default: the current one)")
    _step(ns, "response", "record the user's response", _notice_response, on="the day it was received",
          on_required=True, note=True)
    _step(ns, "close", "close a notice", _notice_close, on="default: today", note=True)
    _step(ns, "escalate", "escalate an issued notice to the guide's next action (drafts it): once its deadline "
          "passed without a response, or with --note saying why its response is inadequate", _notice_escalate,
          on="default: today", note=True, out=True)
    q = ns.add_parser("edit", help="edit the free-text parts of a draft the guide allows (corrective action, report, "
                      "remarks)", description="Edit a drafted notice's free-text parts that its enforcement response "
                      "guide's action lists as editable; the finding, the requirement, the evidence, the days and "
                      "the penalties come from the data. Prints the new revision; --revision N refuses the edit when "
                      "someone saved another revision since N.")
    q.add_argument("notice", help="id or number")
    q.add_argument("--corrective-action", default=None, metavar="TEXT")
    q.add_argument("--report", default=None, metavar="TEXT", help="the report demanded")
    q.add_argument("--remarks", default=None, metavar="TEXT", help="remarks added to the notice ('' removes them)")
    q.add_argument("--revision", type=int, default=None, help="the revision the edit is made from (default: the "
                   "current one)")
    q.add_argument("--out", default=None, metavar="DIR", help="also write the draft's HTML and PDF here")
    q.add_argument("--by", default=None, help="who (default: $USER)")
    q.set_defaults(func=_notice_edit)
    q = ns.add_parser("penalty", help="record a penalty or fine collected on an issued notice")
    q.add_argument("notice", help="id or number")
    q.add_argument("--dollars", type=float, required=True)
    q.add_argument("--on", required=True, help="the day it was collected (ISO date)")
    q.add_argument("--note", default=None)
    q.add_argument("--by", default=None, help="who (default: $USER)")
    q.set_defaults(func=_notice_penalty)
    q = ns.add_parser("list")
    common.add_site(q)
    q.add_argument("--state", action="append", default=None)
    common.add_json(q)
    q.set_defaults(func=_notice_list)
    q = ns.add_parser("show", help="a notice and its audit trail")
    q.add_argument("notice")
    common.add_json(q)
    q.set_defaults(func=_notice_show)
    q = ns.add_parser("pdf", help="render a notice again from the database")
    q.add_argument("notice")
    q.add_argument("--out", default=".", metavar="DIR")
    q.set_defaults(func=_notice_pdf)


def _step(ns, name: str, help_: str, func, *, on: str, on_required: bool = False, note: bool = False,
          out: bool = False) -> argparse.ArgumentParser:
    """A step of a notice's lifecycle: ``sewerwatch notice NAME NOTICE --on DATE [--note] [--out] [--by]``
    (its parser, for a step's own options)."""
    q = ns.add_parser(name, help=help_)
    q.add_argument("notice", help="id or number")
    q.add_argument("--on", required=on_required, default=None, help=on)
    if note:
        q.add_argument("--note", default=None)
    if out:
        q.add_argument("--out", default=".", metavar="DIR")
    q.add_argument("--by", default=None, help="who (default: $USER)")
    q.set_defaults(func=func)
    return q


# --- notices -----------------------------------------------------------------------------

def _guide_and_head(ctx):
    from enforcement.service import guide_and_head   # lazy

    return guide_and_head(ctx.config)


def _actor(args):
    """Who acts on the command line: ``--by NAME``, else the operating-system user."""
    from enforcement.notices import who   # lazy

    return who(getattr(args, "by", None))


def _notice_draft(args, ctx) -> int:
    from enforcement import notices   # lazy
    from enforcement.documents.notice_page import write_notice

    guide, head = _guide_and_head(ctx)
    on = common.today(ctx, args.on)
    with ctx.connect("owner") as conn:
        st, _guide = common.record_now(ctx, conn)
        finding_id = args.finding
        if args.snc:
            from enforcement.periods import snc_period
            from enforcement.snc import snc_finding

            if not args.period:
                raise InputError("--snc needs --period (e.g. 2026H1)")
            finding_id = snc_finding(conn, args.snc, snc_period(args.period), on, st)
        n = notices.draft(conn, guide, head, on, violation_id=args.violation, finding_id=finding_id,
                          alert_id=args.alert, actor=_actor(args))
    html_path, pdf_path, _pdf = write_notice(n["document"], None, args.out)
    if args.json:
        print(common.as_json({**n, "html": str(html_path), "pdf": str(pdf_path)}))
        return 0
    doc = n["document"]
    print(f"{n['number']} drafted: {doc['title']} to {doc['site']['name']} for {doc['finding']['ref']} "
          f"({doc['finding_words']}); respond within {n['respond_within_days']} days of issue")
    print(f"  requirement: {doc['requirement']['citation']}")
    print(f"  days of violation: {doc['days_of_violation']['days']}")
    for f in doc["forfeitures"]:
        print(f"  {f['citation']}: {f['sentence']}")
    print(f"wrote {html_path} and {pdf_path}; issue it with: sewerwatch notice issue {n['number']}")
    return 0


def _notice_issue(args, ctx) -> int:
    from enforcement import notices   # lazy
    from enforcement.documents.notice_page import write_notice

    on = common.today(ctx, args.on)
    with ctx.connect("owner") as conn:
        n, page, pdf = notices.issue_rendered(conn, args.notice, on, actor=_actor(args),
                                              expected_revision=args.revision)
    html_path, pdf_path, _pdf = write_notice(n["document"], on, args.out, rendered=(page, pdf))
    print(f"{n['number']} issued {n['issued_on']}: response due {n['response_due']}; wrote {html_path} and {pdf_path}")
    return 0


def _notice_response(args, ctx) -> int:
    from enforcement import notices   # lazy

    with ctx.connect("owner") as conn:
        n = notices.respond(conn, args.notice, common.day(args.on, "--on"), note=args.note, actor=_actor(args))
    late = n["response_due"] and n["response_received_on"] > n["response_due"]
    print(f"{n['number']}: response received {n['response_received_on']}"
          + (f", after its deadline {n['response_due']}" if late else ""))
    return 0


def _notice_close(args, ctx) -> int:
    from enforcement import notices   # lazy

    with ctx.connect("owner") as conn:
        n = notices.close(conn, args.notice, common.today(ctx, args.on), note=args.note, actor=_actor(args))
    print(f"{n['number']}: closed {n['closed_on']}")
    return 0


def _notice_escalate(args, ctx) -> int:
    from enforcement import escalation, notices   # lazy
    from enforcement.documents.notice_page import write_notice

    guide, head = _guide_and_head(ctx)
    with ctx.connect("owner") as conn:
        old, new = escalation.escalate(conn, args.notice, common.today(ctx, args.on), guide, head, note=args.note,
                                       actor=_actor(args))
        reason = next((e["detail"].get("reason") for e in reversed(notices.events(conn, old["id"]))
                       if e["event"] == "escalated"), None)
    html_path, pdf_path, _pdf = write_notice(new["document"], None, args.out)
    if reason:
        print(reason)
    print(f"{old['number']} escalated: {new['number']} drafted ({new['document']['title']}, respond within "
          f"{new['respond_within_days']} days of issue); wrote {html_path} and {pdf_path}")
    return 0


def _notice_edit(args, ctx) -> int:
    from enforcement import notices   # lazy

    changes = {k: v for k, v in (("corrective_action", args.corrective_action), ("report_demanded", args.report),
                                 ("remarks", args.remarks)) if v is not None}
    if not changes:
        raise InputError("notice edit: give --corrective-action, --report or --remarks")
    guide, _head = _guide_and_head(ctx)
    with ctx.connect("owner") as conn:
        rev = args.revision if args.revision is not None else notices.notice(conn, args.notice)["revision"]
        n = notices.edit(conn, args.notice, changes, expected_revision=rev, guide=guide, actor=_actor(args))
    print(f"{n['number']}: revision {n['revision']} ({', '.join(notices.EDITABLE[k].lower() for k in changes)})")
    if args.out:
        from enforcement.documents.notice_page import write_notice

        html_path, pdf_path, _pdf = write_notice(n["document"], None, args.out)
        print(f"wrote {html_path} and {pdf_path}")
    return 0


def _notice_penalty(args, ctx) -> int:
    from enforcement import notices   # lazy

    with ctx.connect("owner") as conn:
        n = notices.record_penalty(conn, args.notice, args.dollars, common.day(args.on, "--on"), note=args.note,
                                   actor=_actor(args))
    print(f"{n['number']}: penalty ${n['penalty_dollars']:,.2f} collected {n['penalty_collected_on']}")
    return 0


def _notice_list(args, ctx) -> int:
    from enforcement import notices   # lazy

    with ctx.connect("owner") as conn:
        rows = notices.list_notices(conn, args.site, tuple(args.state) if args.state else None)
    if args.json:
        print(common.as_json([{k: v for k, v in n.items() if k != "document"} for n in rows]))
        return 0
    for n in rows:
        print(f"{n['number']:<13} {n['site']:<12} {n['state']:<17} drafted {n['drafted_on']}"
              + (f" issued {n['issued_on']} due {n['response_due']}" if n["issued_on"] else "")
              + f"  {n['document']['finding']['summary']}")
    if not rows:
        print("no notices")
    return 0


def _notice_show(args, ctx) -> int:
    from enforcement import notices   # lazy

    with ctx.connect("owner") as conn:
        n = notices.notice(conn, args.notice)
        ev = notices.events(conn, n["id"])
    if args.json:
        print(common.as_json({**n, "events": ev}))
        return 0
    doc = n["document"]
    print(f"{n['number']}: {doc['title']} to {doc['site']['name']} ({n['state']}, revision {n['revision']})")
    print(f"  finding: {doc['finding']['ref']}: {doc['finding']['summary']}")
    print(f"  requirement: {doc['requirement']['citation']}")
    print(f"  action: {doc['action']['title']}, respond within {n['respond_within_days']} days"
          + (f" (due {n['response_due']})" if n["response_due"] else ""))
    print("  audit trail:")
    for e in ev:
        print(f"    {local_time(e['at'], str(common.tz(ctx)), seconds=False)} {e['actor']:<14} {e['event']:<18}"
              + (f" {e['from'] or '-'} -> {e['to']}" if e["to"] else "") + (f"  {e['note']}" if e["note"] else ""))
    return 0


def _notice_pdf(args, ctx) -> int:
    from enforcement import notices   # lazy
    from enforcement.documents.notice_page import write_notice

    with ctx.connect("owner") as conn:
        n = notices.notice(conn, args.notice)
    html_path, pdf_path, _pdf = write_notice(n["document"], n["issued_on"], args.out)
    print(f"wrote {html_path} and {pdf_path}")
    return 0
