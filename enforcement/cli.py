"""CLI of enforcement: ``sewerwatch findings``, ``user-reports``, ``milestones``, ``snc``,
``notice`` (in :mod:`enforcement.cli_notices`), ``due`` and ``report`` (its ``icis`` and ``publish`` in
:mod:`enforcement.cli_state`); what they share is :mod:`enforcement.cli_common`.

:func:`register` adds the parsers; each handler is ``func(args, ctx)`` and returns the exit
code. The shell imports this module at startup (for ``--help`` too), so the work (numpy,
matplotlib, WeasyPrint, the database) is imported inside each handler.
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timezone

from foundation.display import local_time, num
from foundation import moments
from foundation.errors import InputError
from enforcement import cli_common as common
from enforcement import cli_letters, cli_notices, cli_sampling, cli_state


def register(sub) -> None:
    p = sub.add_parser("findings", help="violations and enforcement findings: list them, record one",
                       description="What enforcement acts on: the violation episodes (live, re-evaluated and lab) and "
                       "the findings sewerwatch computes (failure to monitor, reports more than 45 days late, "
                       "noncompliance not reported, milestones more than 90 days late) or the superintendent "
                       "records (pass through, interference, endangerment, designated: 40 CFR 403.8(f)(2)(viii)(C), "
                       "(D), (H)).")
    fs = p.add_subparsers(dest="findings_command", metavar="ACTION", required=True)
    q = fs.add_parser("list", help="violations and findings of a period")
    q.add_argument("--since", default=None, metavar="WHEN",
                   help="from this date or time (default: 1 January of this year; " + moments.HELP + ")")
    q.add_argument("--until", default=None, metavar="WHEN",
                   help="up to this date or time, exclusive (default: tomorrow)")
    common.add_site(q)
    common.add_json(q)
    q.set_defaults(func=_findings_list)
    q = fs.add_parser("record", help="record a finding the superintendent makes")
    q.add_argument("--site", required=True)
    q.add_argument("--kind", required=True, help="pass-through, interference, endangerment or designated")
    q.add_argument("--on", required=True, help="the local day of the village it arose (a date)")
    q.add_argument("--summary", required=True, help="what happened, in words")
    q.add_argument("--violation", type=int, default=None, help="the violation episode behind it")
    q.add_argument("--days", type=int, default=None, help="days of violation (default 1)")
    q.add_argument("--by", default=None, help="who records it (default: $USER)")
    q.set_defaults(func=_findings_record)

    p = sub.add_parser("schedule", help="sampling schedules: what is due, taken and missing per period",
                       description="The samples each industrial user owes per period, from its permit's monitoring "
                       "conditions and the ordinance where it sets a frequency (e.g. webster-wi §240-8: at least "
                       "quarterly): due, taken, or missing. A period that ends without its samples is a failure "
                       "to monitor, a finding on the first day after it.")
    common.add_site(p)
    p.add_argument("--year", default=None, help="the periods of this year, its local days (default: this year, to now)")
    p.add_argument("--as-of", default=None, metavar="DATE", help=common.AS_OF)
    common.add_json(p)
    p.set_defaults(func=_schedule)

    p = sub.add_parser("user-reports", help="reports owed by industrial users: require, receive, list",
                       description="Reports owed by industrial users. A report received more than 45 days after its "
                       "due date, or still missing on day 46, is a finding (40 CFR 403.8(f)(2)(viii)(F)). "
                       "Accidental-discharge reports (e.g. palmyra-wi §13.49) are owed from the alerts that call for "
                       "them, due within the hours the configuration sets after the discharge began; one not received "
                       "by then is a noncompliance not reported ((G)).")
    rs = p.add_subparsers(dest="reports_command", metavar="ACTION", required=True)
    q = rs.add_parser("require", help="record a report a user owes")
    q.add_argument("--site", required=True)
    q.add_argument("--kind", default="self-monitoring",
                   help="self-monitoring (default), baseline, 90-day-compliance, compliance-schedule, other")
    q.add_argument("--due", required=True, help="the local day of the village it is due (a date)")
    q.add_argument("--period", nargs=2, metavar=("START", "END"), default=None,
                   help="the period it covers (local dates, END exclusive)")
    q.add_argument("--title", default=None)
    q.add_argument("--citation", default=None, help="the requirement (e.g. 'Permit PAL-IU-2026-02, condition 6')")
    q.add_argument("--words", default=None, help="the requirement's words")
    q.add_argument("--by", default=None)
    q.set_defaults(func=_reports_require)
    q = rs.add_parser("receive", help="record that a report was received")
    q.add_argument("id", type=int)
    q.add_argument("--on", required=True, help="the local day of the village it was received (a date)")
    q.add_argument("--by", default=None)
    q.add_argument("--note", default=None)
    q.set_defaults(func=_reports_receive)
    q = rs.add_parser("list", help="the reports owed and where each stands")
    common.add_site(q)
    q.add_argument("--open", action="store_true", help="only those not received")
    q.add_argument("--as-of", default=None, metavar="DATE", help=common.AS_OF)
    common.add_json(q)
    q.set_defaults(func=_reports_list)

    p = sub.add_parser("milestones", help="compliance schedule milestones: add, met, list",
                       description="Milestones of compliance schedules; one not met within 90 days after its date is "
                       "a finding (40 CFR 403.8(f)(2)(viii)(E)).")
    ms = p.add_subparsers(dest="milestones_command", metavar="ACTION", required=True)
    q = ms.add_parser("add")
    q.add_argument("--site", required=True)
    q.add_argument("--due", required=True, help="the milestone's local date")
    q.add_argument("--description", required=True)
    q.add_argument("--source", default=None, help="the order or permit that sets it")
    q.add_argument("--by", default=None)
    q.set_defaults(func=_milestones_add)
    q = ms.add_parser("met")
    q.add_argument("id", type=int)
    q.add_argument("--on", required=True, help="the local date it was met")
    q.add_argument("--by", default=None)
    q.set_defaults(func=_milestones_met)
    q = ms.add_parser("list")
    common.add_site(q)
    common.add_json(q)
    q.set_defaults(func=_milestones_list)

    p = sub.add_parser("snc", help="significant noncompliance of each user, criterion by criterion",
                       description="The whole SNC test of 40 CFR 403.8(f)(2)(viii), criteria (A) to (H), for a "
                       "six-month period: a calendar half (2026H1, 2026H2) or the six months ending with a quarter "
                       "(2026Q1 ... 2026Q4), local days of the village, each criterion explained with its evidence. "
                       "A question only: it answers from the records as they stood at --as-of (default now) and "
                       "records nothing, so any order of questions gives the same answers.")
    p.add_argument("--period", required=True, help="2026H1, 2026H2, or 2026Q1 ... 2026Q4 (six months ending with it): "
                   "local calendar days of the village")
    common.add_site(p)
    p.add_argument("--as-of", default=None, metavar="DATE", help=common.AS_OF)
    common.add_json(p)
    p.set_defaults(func=_snc)

    cli_notices.register(sub)
    cli_sampling.register(sub)
    cli_letters.register(sub)

    p = sub.add_parser("due", help="what is due and overdue: notices awaiting a response, reports owed, milestones",
                       description="The superintendent's enforcement list: issued notices awaiting a response (an "
                       "unanswered one with the guide's proposed next action), reports owed (the accidental-discharge "
                       "reports the alerts call for among them), compliance schedule milestones; the words of the "
                       "requirement behind each. --alert opens an alert for each overdue item once; --notify also "
                       "sends it to the config's contacts.")
    p.add_argument("--as-of", default=None, metavar="DATE", help=common.AS_OF + " (not with --alert)")
    p.add_argument("--alert", action="store_true", help="open an enforcement alert for each overdue item (once); "
                   "records the findings of the present")
    p.add_argument("--notify", action="store_true", help="with --alert: send the new alerts to the contacts")
    common.add_json(p)
    p.set_defaults(func=_due)

    p = sub.add_parser("calendar", help="the compliance calendar: samples, reports, notice deadlines, renewals, SNC",
                       description="One calendar of what the program owes and is owed: sampling periods (due, taken, "
                       "missing), reports owed by the users, notice response deadlines, compliance schedule milestones, "
                       "permit renewals and the last day for notice, the SNC decisions and the annual report. --ics "
                       "writes it as an iCalendar file (the office serves the same as a feed).")
    p.add_argument("--from", dest="first", default=None, help="ISO date (default: the first of this month)")
    p.add_argument("--to", dest="end", default=None, help="ISO date, exclusive (default: three months on)")
    p.add_argument("--site", default=None, help="one industrial user's dates")
    p.add_argument("--ics", metavar="FILE.ics", default=None, help="write the entries as an iCalendar file")
    common.add_json(p)
    p.set_defaults(func=_calendar)

    p = sub.add_parser("report", help="the annual SNC publication list and its publication, the annual pretreatment "
                       "report, the state's electronic report")
    rp = p.add_subparsers(dest="report_command", metavar="KIND", required=True)
    q = rp.add_parser("snc", help="users in significant noncompliance during a year, for the newspaper")
    q.add_argument("--year", required=True, help="e.g. 2026: the SNC periods ending in it (local days)")
    common.add_json(q)
    q.set_defaults(func=_report_snc)
    q = rp.add_parser("annual", help="the pretreatment program's annual report (HTML, PDF, JSON)")
    q.add_argument("--year", required=True, help="e.g. 2026: its local calendar days of the village")
    q.add_argument("--out", default=".", metavar="DIR")
    q.add_argument("--on", default=None, help="the report's local date (default: today)")
    common.add_json(q)
    q.set_defaults(func=_report_annual)
    cli_state.register(rp)   # icis (--draft, --check) and publish


# --- findings ----------------------------------------------------------------------------

def _findings_list(args, ctx) -> int:
    from enforcement import findings as fnd   # lazy

    tz = common.tz(ctx)
    today = datetime.now(tz).date()
    a = moments.instant(args.since, "--since", tz) if args.since else moments.midnight(date(today.year, 1, 1), tz)
    b = (moments.instant(args.until, "--until", tz) if args.until
         else moments.midnight(date.fromordinal(today.toordinal() + 1), tz))
    if b <= a:
        raise InputError(f"--until ({args.until}) must be after --since ({args.since})")
    since, until = a.astimezone(tz).date(), b.astimezone(tz).date()
    with ctx.connect("owner") as conn:
        common.record_now(ctx, conn)
        if args.site:
            fnd.site(conn, args.site)
        vs = fnd.violations_between(conn, a, b, args.site)
        fs = fnd.findings_between(conn, since, until, args.site)
    if args.json:
        print(common.as_json({"violations": vs, "findings": fs}))
        return 0
    for v in vs:
        print(f"violation {v['id']:<5} {v['site']:<12} {fnd.violation_kind(v):<14} {v['rule']:<16} "
              f"{local_time(v['start'], str(tz), seconds=False)} peak {num(v['peak'])} {v['unit'] or ''} ({v['source']}"
              + (f", alert #{v['alert_id']}" if v["alert_id"] else "") + ")")
    for f in fs:
        crit = f" SNC ({f['snc_criterion']})" if f["snc_criterion"] else ""
        print(f"finding   {f['id']:<5} {f['site']:<12} {f['kind']:<14} {f['occurred'].isoformat()}{crit}  {f['summary']}")
    if not vs and not fs:
        print(f"no violations or findings from {since} to {until}")
    return 0


def _findings_record(args, ctx) -> int:
    from enforcement import findings as fnd   # lazy

    with ctx.connect("owner") as conn:
        fid = fnd.record(conn, args.site, args.kind, common.day(args.on, "--on"), args.summary, by=args.by,
                         violation_id=args.violation, evidence={"days": args.days} if args.days else None)
    print(f"finding {fid} recorded: {args.kind} at {args.site} on {args.on} "
          f"(SNC criterion ({fnd.KINDS[args.kind][1]}))")
    return 0


# --- schedules ---------------------------------------------------------------------------

def _schedule(args, ctx) -> int:
    from enforcement import findings as fnd   # lazy
    from enforcement import schedules
    from enforcement.periods import year_period

    now = common.now(ctx, args.as_of)
    first = end = None
    if args.year:
        y = year_period(args.year)
        first, end = y.start, y.end
    with ctx.connect("owner") as conn:
        if args.site:
            fnd.site(conn, args.site)
        rows = schedules.schedule(conn, now, first, end, args.site)
    if args.json:
        print(common.as_json([r.as_json() for r in rows]))
        return 0
    last = None
    for r in rows:
        req = r.requirement
        if (req.site, req.id) != last:
            last = (req.site, req.id)
            what = "continuous" if req.continuous else f"{req.times} a {req.per}"
            print(f"{req.site}: {req.citation}: {', '.join(req.parameters)}, {what}")
        if not req.continuous:
            print(f"  {r.period.name:<9} {r.period.start} to {r.period.last_day}  {r.words()}")
    if not rows:
        print("no sampling requirements: no permit with monitoring conditions, and no ordinance frequency")
    return 0


# --- reports owed ------------------------------------------------------------------------

def _reports_require(args, ctx) -> int:
    from enforcement import reports   # lazy

    period = (common.day(args.period[0], "--period"), common.day(args.period[1], "--period")) if args.period else None
    with ctx.connect("owner") as conn:
        rid = reports.require(conn, args.site, args.kind, common.day(args.due, "--due"), title=args.title, period=period,
                              citation=args.citation, words=args.words, by=args.by)
    print(f"report {rid}: {args.site} owes a {args.kind} report due {args.due}")
    return 0


def _reports_receive(args, ctx) -> int:
    from enforcement import reports   # lazy

    with ctx.connect("owner") as conn:
        r = reports.receive(conn, args.id, common.day(args.on, "--on"), by=args.by, note=args.note)
        st = reports.status(r, datetime.now(timezone.utc))
    print(f"report {r['id']} ({r['site']}, {r['title']}): {st['standing']}" + (" (a finding: late)" if st["late"] else ""))
    return 0


def _reports_list(args, ctx) -> int:
    from enforcement import reports   # lazy

    now = common.now(ctx, args.as_of)
    with ctx.connect("owner") as conn:
        if args.as_of is None:
            st, _guide = common.record_now(ctx, conn)
            rows = reports.list_reports(conn, now, args.site, open_only=args.open)
        else:      # a question about a past day: the reports as they stood, nothing written
            rows = reports.list_reports(conn, now, args.site, open_only=args.open,
                                        accidental_hours=common.settings(ctx).accidental_report_hours)
    if args.json:
        print(common.as_json(rows))
        return 0
    for r in rows:
        rid = r["id"] if r["id"] is not None else "-"      # owed from an alert, not stored yet
        print(f"{rid:<5} {r['site']:<12} {r['kind']:<21} {r['title']}: {r['standing']}"
              + ("  [FINDING: late]" if r["late"] else ""))
    if not rows:
        print("no reports owed")
    return 0


# --- milestones --------------------------------------------------------------------------

def _milestones_add(args, ctx) -> int:
    from enforcement import milestones   # lazy

    with ctx.connect("owner") as conn:
        mid = milestones.add(conn, args.site, args.description, common.day(args.due, "--due"), source=args.source,
                             by=args.by)
    print(f"milestone {mid}: {args.site}, '{args.description}' due {args.due}")
    return 0


def _milestones_met(args, ctx) -> int:
    from enforcement import milestones   # lazy

    with ctx.connect("owner") as conn:
        milestones.met(conn, args.id, common.day(args.on, "--on"), by=args.by)
    print(f"milestone {args.id} met on {args.on}")
    return 0


def _milestones_list(args, ctx) -> int:
    from enforcement import milestones   # lazy

    with ctx.connect("owner") as conn:
        rows = milestones.list_milestones(conn, args.site)
    if args.json:
        print(common.as_json(rows))
        return 0
    for m in rows:
        print(f"{m['id']:<5} {m['site']:<12} due {m['due_on']}  {'met ' + m['met_on'].isoformat() if m['met_on'] else 'not met':<14} "
              f"{m['description']}" + (f" ({m['source']})" if m["source"] else ""))
    if not rows:
        print("no milestones")
    return 0


# --- SNC ---------------------------------------------------------------------------------

def _snc(args, ctx) -> int:
    from enforcement import findings as fnd   # lazy
    from enforcement import snc
    from enforcement.periods import snc_period

    period = snc_period(args.period)
    now = common.now(ctx, args.as_of)
    st = common.settings(ctx)
    with ctx.connect("owner") as conn:
        if args.site:
            fnd.site(conn, args.site)
        results = snc.evaluate(conn, period, args.site, now, st)
    if args.json:
        print(common.as_json(results))
        return 0
    print(f"Significant noncompliance, {period.name}: {period.start} to {period.last_day} "
          f"({snc.SNC_CITATION}); "
          f"as of {now.astimezone(common.tz(ctx)):%Y-%m-%d}")
    for r in results:
        print()
        print(snc.explain(r))
    if not results:
        print("no industrial users in the database")
    return 0


# --- due ---------------------------------------------------------------------------------

def _due(args, ctx) -> int:
    from enforcement import due   # lazy

    if args.as_of is not None and (args.alert or args.notify):
        raise InputError("--alert opens the alerts of the present: it takes no --as-of")
    now = common.now(ctx, args.as_of)
    with ctx.connect("owner") as conn:
        if args.as_of is None:
            st, guide = common.record_now(ctx, conn)
        else:      # a question about a past day: nothing recorded
            from enforcement.guide import load_guide   # lazy
            st = common.settings(ctx)
            guide = load_guide(st.guide)
        items = due.due_items(conn, now, st, guide)
        raised = due.raise_alerts(conn, now, st, guide, ctx.config) if args.alert else []
    if args.notify and raised:
        _deliver(ctx, raised, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(common.as_json({"items": [i.as_json() for i in items], "alerts_opened": [a[0] for a in raised]}))
        return 0
    tz = str(common.tz(ctx))
    for i in items:
        print(f"{'OVERDUE' if i.overdue else 'due':<8} {local_time(i.due, tz, seconds=False):<20} {i.title}")
        if i.proposal:
            print(f"         proposed: {i.proposal}")
    if not items:
        print("nothing due or overdue")
    for aid, title, _b, _p in raised:
        print(f"alert #{aid} opened: {title}")
    return 0


def _deliver(ctx, raised, console) -> None:
    """Send new enforcement alerts to the primary contacts (and the console, on ``console``:
    standard error when standard output carries JSON, which is for machines alone)."""
    from alerts.channels import build_routes, primary   # lazy

    routes = primary(build_routes(ctx.config, None, console))
    for _aid, title, body, payload in raised:
        for r in routes:
            try:
                r.channel.send(title, body, payload)
            except Exception as exc:  # noqa: BLE001 - one failed channel must not hide the others
                print(f"sewerwatch: warning: alert not delivered via {getattr(r.channel, 'name', r.channel)}: {exc}",
                      file=sys.stderr)


# --- reports -----------------------------------------------------------------------------

def _year(text: str) -> int:
    from enforcement.periods import year_period   # lazy

    return int(year_period(text).name)


def _report_snc(args, ctx) -> int:
    from enforcement.annual import publication_text, snc_list   # lazy

    year = _year(args.year)
    st = common.settings(ctx)
    with ctx.connect("owner") as conn:
        lst = snc_list(conn, year, st.snc_periods, st)
    if args.json:
        print(common.as_json(lst))
    else:
        print(publication_text(lst, ctx.config.name))
    return 0


def _report_annual(args, ctx) -> int:
    from enforcement.annual import annual_report   # lazy
    from enforcement.documents.annual_page import write_report
    from lab.documents.pdf import letterhead

    year = _year(args.year)
    head = letterhead(ctx.config)
    on = common.today(ctx, args.on)
    st = common.settings(ctx)
    with ctx.connect("owner") as conn:
        from fog.rules import for_pack

        rep = annual_report(conn, year, st.snc_periods, head.village, st, program=st.program,
                            grease_rules=for_pack(ctx.config.utility.pack))
    paths = write_report(rep, head, on, args.out)
    if args.json:
        print(common.as_json(rep))
    else:
        t = rep["totals"]
        print(f"annual report {year}: {len(rep['users'])} users, {t['samples_taken']} samples, "
              f"{t['violation_episodes']} violation episodes ({t['days_of_violation']} days of violation), "
              f"{t['notices']} notice{'s' if t['notices'] != 1 else ''}, "
              f"{t['users_in_snc']} in SNC, surcharges billed ${t['surcharge_dollars']:,.2f}")
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


__all__ = ["register"]


# --- the compliance calendar ---------------------------------------------------------------

def _calendar(args, ctx) -> int:
    from pathlib import Path

    from enforcement import calendar   # lazy
    from enforcement.periods import add_months
    from enforcement.settings import settings

    tz = common.tz(ctx)
    now = datetime.now(timezone.utc)
    today = now.astimezone(tz).date()
    first = common.day(args.first, "--from") if args.first else today.replace(day=1)
    end = common.day(args.end, "--to") if args.end else add_months(first, 3)
    if end <= first:
        raise InputError("--to must be after --from")
    st = settings(ctx.config)
    with ctx.connect("owner") as conn:
        if args.site is not None:
            from enforcement.findings import site as site_of
            site_of(conn, args.site)
        from fog.rules import for_pack

        items = calendar.entries(conn, first, end, now, site=args.site, snc_periods=st.snc_periods,
                                 annual_report_due=st.annual_report_due,
                                 significant=st.program.significant_users,
                                 grease=for_pack(ctx.config.utility.pack))
    if args.ics:
        Path(args.ics).write_bytes(calendar.ical(items, ctx.config.name, now=now))
    if args.json:
        print(common.as_json([e.as_json() for e in items]))
        return 0
    for e in items:
        print(f"{e.day}  {'!' if e.attention else ' '} {calendar.KIND_WORDS[e.kind]:<28} {e.state:<9} {e.title}")
    if not items:
        print(f"nothing on the calendar from {first} to {end}")
    if args.ics:
        print(f"wrote {len(items)} entries to {args.ics}")
    return 0
