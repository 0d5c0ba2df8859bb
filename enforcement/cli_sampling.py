"""``sewerwatch sampling``: sampling events planned from the schedule, listed, shown with what
the laboratory returned, and printed as chain-of-custody forms. The same functions as the
office's Sampling pages: :func:`enforcement.sampling_plan.plan_month`,
:mod:`lab.sampling.events`, :mod:`lab.sampling.custody`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from enforcement import cli_common as common
from foundation import moments
from foundation.actor import Actor
from foundation.display import local_time


def register(sub) -> None:
    p = sub.add_parser("sampling", help="sampling events: plan a month's samples, list them, chain of custody",
                       description="The samples the schedule says are due, planned as sampling events: who samples, "
                       "where, which parameters, the containers and preservation, the laboratory. Each event has a "
                       "sample id the laboratory writes in its results; when the results file is imported they are "
                       "matched to the event, and what is missing, not planned or analysed too late is listed.")
    ss = p.add_subparsers(dest="sampling_command", metavar="ACTION", required=True)
    q = ss.add_parser("plan", help="plan the sampling events the schedule owes in a month")
    q.add_argument("--month", required=True, help="the month, e.g. 2026-05")
    common.add_site(q)
    common.add_json(q)
    q.set_defaults(func=_plan)
    q = ss.add_parser("add", help="plan one sampling event by hand")
    q.add_argument("--site", required=True, help="the industrial user")
    q.add_argument("--at", required=True, metavar="WHEN",
                   help="when the sample is to be taken (for a composite: when it starts); " + moments.HELP)
    q.add_argument("--parameters", required=True, help="what to analyse, separated by commas, e.g. bod5,tss")
    q.add_argument("--type", default="grab", choices=("grab", "composite"), help="grab (default) or composite")
    q.add_argument("--by", default="user", choices=("user", "utility"),
                   help="who samples: the industrial user (default) or the utility")
    q.add_argument("--point", default=None, help="where (default: the control manhole)")
    q.add_argument("--lab", default=None, help="the laboratory (default: the one of the user's last sample)")
    q.set_defaults(func=_add)
    q = ss.add_parser("cancel", help="cancel a planned sampling event")
    q.add_argument("event", metavar="SAMPLE_ID", help="the event's sample id")
    q.set_defaults(func=_cancel)
    q = ss.add_parser("list", help="the sampling events of a month, and where each stands")
    q.add_argument("--month", default=None, help="the month, e.g. 2026-05 (default: this month)")
    common.add_site(q)
    common.add_json(q)
    q.set_defaults(func=_list)
    q = ss.add_parser("show", help="one event: what was planned, what came back, what is missing or extra")
    q.add_argument("event", metavar="SAMPLE_ID", help="the event's sample id, e.g. SW-2605-0003")
    common.add_json(q)
    q.set_defaults(func=_show)
    q = ss.add_parser("custody", help="print an event's chain-of-custody form (PDF)")
    q.add_argument("event", metavar="SAMPLE_ID", help="the event's sample id, e.g. SW-2605-0003")
    q.add_argument("--out", default=None, metavar="FILE", help="where to write the PDF (default: a file named after the sample id, in the working folder)")
    q.set_defaults(func=_custody)


def _plan(args, ctx) -> int:
    from enforcement.sampling_plan import plan_month   # lazy

    with ctx.connect("owner") as conn:
        plan = plan_month(conn, args.month, datetime.now(timezone.utc), actor=Actor.os_user().audit_name,
                          site=args.site)
    if args.json:
        print(common.as_json(plan.as_json()))
        return 0
    print(f"{len(plan.created)} sampling event(s) planned for {plan.month}")
    for ev in plan.created:
        _line(ev)
    if plan.already:
        print(f"planned before: {', '.join(plan.already)}")
    return 0


def _add(args, ctx) -> int:
    from lab.sampling import events   # lazy

    at = moments.instant(args.at, "--at", common.tz(ctx))
    with ctx.connect("owner") as conn:
        ev = events.create(conn, args.site, at, args.parameters.split(","), sample_type=args.type, sampler=args.by,
                           point=args.point, laboratory=args.lab, actor=Actor.os_user().audit_name)
    print("sampling event planned:")
    _line(ev)
    return 0


def _cancel(args, ctx) -> int:
    from lab.sampling import events   # lazy

    with ctx.connect("owner") as conn:
        ev = events.cancel(conn, args.event, Actor.os_user().audit_name)
    print(f"sampling event {ev.sample_key} cancelled")
    return 0


def _line(ev) -> None:
    print(f"  {ev.sample_key}  {local_time(ev.planned_at, ev.tz, seconds=False)}  {ev.site_name}: "
          f"{', '.join(ev.parameters)} ({ev.sample_type}, by {ev.sampler})  {_state(ev)}")


def _state(ev) -> str:
    from lab.sampling.events import STATES   # lazy

    words = STATES[ev.state]
    if ev.state == "returned":
        bits = [f"missing {', '.join(ev.missing)}" if ev.missing else "",
                f"not planned {', '.join(ev.extra)}" if ev.extra else "",
                f"held too long {', '.join(ev.over_hold)}" if ev.over_hold else ""]
        words += "".join(f"; {b}" for b in bits if b)
    return words


def _list(args, ctx) -> int:
    from enforcement.periods import add_months   # lazy
    from enforcement.sampling_plan import month_of
    from lab.sampling import events

    tz = common.tz(ctx)
    first = month_of(args.month) if args.month else datetime.now(tz).date().replace(day=1)
    a, b = moments.midnight(first, tz), moments.midnight(add_months(first, 1), tz)
    with ctx.connect("owner") as conn:
        evs = events.listing(conn, a, b, args.site)
    if args.json:
        print(common.as_json([e.as_json() for e in evs]))
        return 0
    print(f"{len(evs)} sampling event(s) in {first:%Y-%m}")
    for ev in evs:
        _line(ev)
    return 0


def _show(args, ctx) -> int:
    from lab.sampling import events   # lazy
    from lab.sampling.methods import method

    with ctx.connect("owner") as conn:
        ev = events.show(conn, args.event)
    if args.json:
        print(common.as_json(ev.as_json()))
        return 0
    print(f"sample {ev.sample_key}: {ev.site_name}, {ev.point}; {ev.sample_type}, sampled by {ev.sampler}; "
          f"laboratory {ev.laboratory or 'not named'}")
    print(f"  planned {local_time(ev.planned_at, ev.tz, seconds=False)}; "
          f"sampled {local_time(ev.sampled_at, ev.tz, seconds=False) if ev.sampled_at else 'not yet'}; {_state(ev)}")
    for p in ev.parameters:
        m = method(p)
        print(f"  {p:<6} {m.container}; {m.preservation}; analyse within {m.words}")
    for r in ev.results:
        held = f", analysed {r['held_hours']:.1f} h after sampling" if r["held_hours"] is not None else ""
        flag = " HELD TOO LONG: not counted as taken" if r["over_hold"] else ""
        plan = "" if r["planned"] else " (not planned)"
        print(f"  result {r['analyte']:<6} {r['qualifier']}{r['value']:g}{held}{plan}{flag}")
    print(f"  missing: {', '.join(ev.missing) or 'none'}")
    print(f"  not planned: {', '.join(ev.extra) or 'none'}")
    return 0


def _custody(args, ctx) -> int:
    from lab.documents.pdf import letterhead   # lazy
    from lab.sampling import custody, events

    with ctx.connect("owner") as conn:
        ev = events.show(conn, args.event)
    out = Path(args.out or f"custody-{ev.sample_key}.pdf")
    out.write_bytes(custody.render_pdf(ev, letterhead(ctx.config), datetime.now(common.tz(ctx)).date()))
    print(f"chain of custody of sample {ev.sample_key}: {out}")
    return 0
