"""CLI: ``sewerwatch surcharge``, ``sewerwatch lab import|check|list|composites``, ``sewerwatch bill``,
``sewerwatch bills draft|show|issue|list|pay`` (both over :mod:`lab.bill_runs`); the statements of account
and the bank's payments are :mod:`lab.statements_cli`'s.

:func:`register` adds the parsers; each handler is ``func(args, ctx)`` (``ctx`` a
:class:`foundation.context.Context`) and returns the exit code. The shell imports this module
at startup (for ``--help`` too), so the work (numpy, matplotlib, the database code) is
imported lazily inside each handler.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from foundation import moments
from foundation.errors import InputError

#: ``lab import``'s exit status when some rows became dead letters (0: every row imported;
#: 2: the file could not be read at all), so that a script importing nightly notices.
DEAD_LETTERS_EXIT = 4
from lab import permit_cli, rates_cli, statements_cli
from lab.permit_cli import print_check, village_tz


def register(sub) -> None:
    p = sub.add_parser(
        "surcharge", help="compute surcharges from lab results and volumes (no database needed)",
        description="Surcharge on high-strength waste (EPA Model No. 2 as the pack adopts it, e.g. "
        "palmyra-wi §13.45(4)) from a lab CSV, the period's volume per site and the rates per pound.")
    p.add_argument("--pack", default=None, help="rule pack giving the normal-sewage bases and the surcharge formula: "
                   "an id on the pack search path or a pack TOML file (default: the [utility] pack of the config)")
    p.add_argument("--lab", required=True, metavar="FILE.csv",
                   help="lab results: sample_id,site,collected,analyte,value,unit,qualifier")
    vol = p.add_mutually_exclusive_group(required=True)
    vol.add_argument("--volume-mg", metavar="X", help="the period's volume of the one site [million gallons]")
    vol.add_argument("--volume", metavar="FILE.csv", help="volumes per site: site,volume_mg")
    p.add_argument("--rates", required=True, metavar="FILE.toml", help="bod, tss, tkn, tp in dollars per pound")
    p.add_argument("--non-detect", default=None, choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for billing (default: the rates file's "
                   "non-detect policy, else zero)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_surcharge)

    p = sub.add_parser("lab", help="import lab results, list them, check them")
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    q = lsub.add_parser("import", help="import a lab CSV into the database (rows that cannot be used are kept as dead letters)",
                        description="Import a lab CSV into the database. A row that cannot be used is kept as a "
                        "dead letter with its reason. Exit status: 0 when every row was imported; "
                        f"{DEAD_LETTERS_EXIT} when some rows became dead letters (with --dry-run: would; a summary line on "
                        "standard error gives their count and first reasons); 2 when the file cannot be read at all.")
    q.add_argument("file", metavar="FILE.csv")
    q.add_argument("--actor", default=None, help="who imports (audit log; default: $USER)")
    q.add_argument("--correct", action="store_true",
                   help="rows for results already stored become corrections (new versions)")
    q.add_argument("--dry-run", action="store_true",
                   help="a preview: check every row as the import would (the database too) and say what would be "
                   "stored and which rows cannot be used, storing nothing")
    q.add_argument("--check", action="store_true",
                   help="then judge the months of the file's results against the ordinance and the permits and store "
                   "the violations found (lab check --store of those months)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_lab_import)
    q = lsub.add_parser("check", help="check stored lab results against the ordinance (FOG, cyanide, permit, SNC)")
    _since_until(q)
    q.add_argument("--store", action="store_true", help="store the violations found")
    q.add_argument("--non-detect", default="dl", choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for compliance (default dl: its detection limit)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_lab_check)
    q = lsub.add_parser("list", help="list the current version of stored results")
    _since_until(q)
    q.add_argument("--site", action="append", help="only this site (repeatable)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_lab_list)
    q = lsub.add_parser("composites", help="composite samples with their window's metered volume and loadings")
    _since_until(q)
    q.add_argument("--relink", action="store_true", help="recompute each window's volume from the readings now stored")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_lab_composites)

    p = sub.add_parser(
        "bill", help="bill each industrial user for a quarter, in one step (or preview it)",
        description="Each industrial user's bill for a quarter, from the database: the metered volume "
        "from its flow readings and the quarter's lab results, priced by the charges its village's pack "
        "adopts (e.g. surcharges on high-strength waste, palmyra-wi §13.45(4); sewer rents, webster-ny "
        "§113-75; residential-equivalent charges, westfield-wi); written as JSON, HTML and PDF (letter size) "
        "into --out. The quarter is drafted and issued in one step, as 'sewerwatch bills draft' then "
        "'sewerwatch bills issue' do: a quarter is billed once, so a quarter billed already is refused (exit 2, "
        "naming its bills; a corrected bill is drafted with 'sewerwatch bills draft --correct'). A bill whose "
        "volume is unknown (the flow readings cover less than 95 %% of the quarter and the rates file gives no "
        "bill.volume_mg) is not issued (exit 2) unless --draft, which only previews.")
    p.add_argument("--quarter", required=True, help="e.g. 2026Q1: its local calendar days in the time zone of each "
                   "user's village (its rule pack)")
    p.add_argument("--rates", required=True, metavar="FILE.toml",
                   help="the rates of the charges in force: per pound where a surcharge is, and the keys the pack names")
    p.add_argument("--out", default=".", metavar="DIR", help="where the JSON, HTML and PDF bills go (default .)")
    p.add_argument("--on", default=None, metavar="DATE", help="the date of the bills (default: today in the village)")
    p.add_argument("--non-detect", default=None, choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for billing (default: the rates file's "
                   "non-detect policy, else zero)")
    p.add_argument("--draft", action="store_true",
                   help="a preview: print drafts even where a volume is unknown (flow readings under 95 %% of the "
                   "quarter and no bill.volume_mg in the rates file); every page says DRAFT, nothing is stored")
    p.add_argument("--json", action="store_true", help="also print the bills as JSON")
    p.set_defaults(func=_bill)

    p = sub.add_parser(
        "bills", help="a quarter's bills: draft, review, issue, record payments (late charges)",
        description="The clerk's round: draft a quarter's bills (stored as a bill run, with the rates file as it "
        "was), review each user's bill (the volume and its coverage, the lab results used, the charges with their "
        "citations), issue the quarter (the bills computed again for the issue date; refused when anything reviewed "
        "changed meanwhile), record payments with the late charge the ordinance adds (e.g. palmyra-wi §13.46(8)).")
    bs = p.add_subparsers(dest="bills_command", metavar="ACTION", required=True)
    q = bs.add_parser("draft", help="draft the quarter's bills")
    q.add_argument("--quarter", required=True, help="e.g. 2026Q1")
    q.add_argument("--rates", default=None, metavar="FILE.toml",
                   help="save this rates file as the rates in effect from the quarter's first day first (default: the "
                   "stored rates in effect on that day, sewerwatch rates list)")
    q.add_argument("--non-detect", default=None, choices=("zero", "half", "dl"))
    q.add_argument("--on", default=None, help="the planned issue date (default: today)")
    q.add_argument("--out", default=None, metavar="DIR", help="also write the drafts' JSON, HTML and PDF here")
    q.add_argument("--correct", default=None, metavar="REASON",
                   help="draft corrected bills of a quarter billed already, for this reason: each user's bill that "
                   "differs from the one issued replaces it when issued (both kept; the corrected bill shows both "
                   "amounts and the difference)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_bills_draft)
    q = bs.add_parser("show", help="a bill run and its bills")
    q.add_argument("run", type=int)
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_bills_show)
    q = bs.add_parser("issue", help="issue a drafted run's bills")
    q.add_argument("run", type=int)
    q.add_argument("--on", default=None, help="the issue date (default: today)")
    q.add_argument("--out", default=".", metavar="DIR", help="where the JSON, HTML and PDF bills go (default .)")
    q.set_defaults(func=_bills_issue)
    q = bs.add_parser("list", help="the bill runs, or with --issued the bills issued")
    q.add_argument("--quarter", default=None)
    q.add_argument("--issued", action="store_true", help="the bills issued, each replaced one marked with the "
                   "corrected bill that replaced it")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_bills_list)
    q = bs.add_parser("pay", help="record a payment: the late charge the ordinance adds for its day")
    q.add_argument("bill", type=int, help="the bill's id (bills list --issued)")
    q.add_argument("--on", required=True, help="the day it was paid (ISO date)")
    q.add_argument("--dollars", type=float, default=None, help="the amount paid (default: the bill's total)")
    q.set_defaults(func=_bills_pay)
    statements_cli.register(bs)

    rates_cli.register(sub)
    permit_cli.register(sub)


def _since_until(q, required: bool = True) -> None:
    """``--since`` and ``--until`` (exclusive), read by :mod:`foundation.moments`."""
    q.add_argument("--since", required=required, metavar="WHEN", help="from this date or time (" + moments.HELP + ")")
    q.add_argument("--until", required=required, metavar="WHEN",
                   help="up to this date or time, exclusive (--until 2026-07-01 ends with June 30)")


def _period(args, ctx) -> tuple[datetime, datetime]:
    return moments.span(args.since, args.until, village_tz(ctx))


def _surcharge(args: argparse.Namespace, ctx) -> int:
    # lazy (see the module docstring): numpy and the pack readers load only for this command
    from lab.charges import surcharge_provision, surcharges
    from lab.documents.text_tables import surcharge_table
    from lab.ordinance import normal_strength
    from lab.readers.rates import (read_lab_file_strict, read_non_detect_policy, read_rates, read_rates_file,
                                   read_volumes)

    if args.pack is None:        # never another village's by default
        if not ctx.has_config:
            from foundation.context import config_search_note
            raise InputError(f"surcharge needs --pack PACK (a pack id such as palmyra-wi, or a pack file) or a config "
                             f"naming the utility's pack; {config_search_note()}")
        args.pack = ctx.config.pack
    normal_strength(args.pack)  # an unknown pack or one without a surcharge base fails first
    rates = read_rates(args.rates)
    rates_doc = read_rates_file(args.rates)
    # then one that adopts no surcharge formula, or leaves it to a village that did not say
    surcharge_provision(args.pack, rates_doc, args.rates)
    rows = read_lab_file_strict(args.lab)
    non_detect = args.non_detect or read_non_detect_policy(args.rates) or "zero"
    if args.volume is not None:
        volumes = read_volumes(args.volume)
        vsrc = args.volume
    else:
        try:
            volume_mg = float(args.volume_mg)
        except ValueError:
            volume_mg = float("nan")
        if not math.isfinite(volume_mg) or volume_mg < 0:
            raise InputError(f"--volume-mg: expected a volume >= 0 [million gallons], got {args.volume_mg!r}")
        sites = sorted({r.site for r in rows})
        if len(sites) != 1:
            raise InputError(f"{args.lab}: --volume-mg is for one site, the file has {len(sites)} "
                             f"({', '.join(sites) or 'none'}); use --volume FILE.csv")
        volumes, vsrc = {sites[0]: volume_mg}, "--volume-mg"
    result = surcharges(rows, volumes, rates, args.pack, non_detect,
                        lab_source=args.lab, volume_source=vsrc, rates_source=args.rates, rates_doc=rates_doc)
    if args.json:
        print(json.dumps([s.as_json() for s in result], indent=2))
    else:
        print(surcharge_table(result))
    return 0


def _lab_import(args: argparse.Namespace, ctx) -> int:
    from lab.store.results import import_lab_file   # lazy: see the module docstring

    tz = ZoneInfo(ctx.config.timezone) if ctx.config.timezone else None
    with ctx.connect("owner") as conn:
        _require_sites(ctx, conn, "lab import")
        report = import_lab_file(conn, args.file, actor=args.actor, correct=args.correct, tz=tz,
                                 dry_run=args.dry_run, check=args.check).as_json()
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.dry_run:
        print(f"{report['file']}: preview, nothing stored: {report['stored']} would be stored, {report['corrected']} "
              f"corrected, {report['unchanged']} unchanged; {report['bad']} cannot be used")
        for b in report["bad_rows"]:
            print(f"  line {b['line']}: {b['reason']}")
    else:
        print(f"{report['file']}: {report['stored']} stored, {report['corrected']} corrected, "
              f"{report['unchanged']} unchanged, "
              f"{report['bad']} bad (kept as dead letters)")
        for b in report["bad_rows"]:
            print(f"  line {b['line']}: {b['reason']}")
    if not args.json and report.get("sampling"):
        from lab.sampling.matching import words   # lazy
        for line in words(report["sampling"]):
            print(line)
    if not args.json and report.get("checked") is not None:
        c = report["checked"]
        verb = "would be found" if args.dry_run else f"found ({c['stored']} new stored)"
        print(f"checked {c['start']} to {c['last']}: {len(c['violations'])} violation(s) {verb}")
        for v in c["violations"]:
            print(f"  {v['site']:<16} {v['rule']:<16} {v['start'][:10]} {v['peak']:g} {v['unit']} over "
                  f"{v['limit']:g}  ({v['citation']})")
    if report["bad"]:
        first = "; ".join(f"line {b['line']}: {b['reason']}" for b in report["bad_rows"][:3])
        more = f"; and {report['bad'] - 3} more" if report["bad"] > 3 else ""
        rows = report['bad'] + report['stored'] + report['corrected'] + report['unchanged']
        what = "rows cannot be used (a preview: nothing stored)" if args.dry_run else \
            "rows became dead letters (not imported)"
        print(f"sewerwatch: {report['file']}: {report['bad']} of {rows} {what}: {first}{more}", file=sys.stderr)
        return DEAD_LETTERS_EXIT
    return 0


def _require_sites(ctx, conn, what: str) -> None:
    """Refuse when the database knows no site: every row would be a dead letter."""
    from foundation.context import config_search_note

    if conn.execute("SELECT count(*) FROM sites").fetchone()[0]:
        return
    if not ctx.has_config:
        raise InputError(f"{what}: the database knows no sites and there is no config to take them from "
                         f"({config_search_note()}); pass --config FILE, then 'sewerwatch db migrate' "
                         "writes its sites")
    raise InputError(f"{what}: the database knows no sites; 'sewerwatch db migrate' writes the sites "
                     f"of {ctx.config.path} ({len(ctx.config.sites)} listed)")


def _lab_check(args: argparse.Namespace, ctx) -> int:
    from lab.store.period_checks import check_db    # lazy: see the module docstring
    from limits.readings import readings

    start, end = _period(args, ctx)
    rd = readings(ctx.config)
    with ctx.connect("owner") as conn:
        res = check_db(conn, start, end, store=args.store, non_detect=args.non_detect, readings=rd)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print_check(res, village_tz(ctx))
    if not any(p["required"] for p in res["permits"]) and not res["violations"] and not any(s["snc"] for s in res["snc"]):
        print("no lab violations, permit needs or significant noncompliance")
    return 0


def _lab_list(args: argparse.Namespace, ctx) -> int:
    from lab.store.current import LISTED, list_results   # lazy: see the module docstring

    start, end = _period(args, ctx)
    with ctx.connect("owner") as conn:
        rows = list_results(conn, start, end, args.site)
    if args.json:
        print(json.dumps([dict(zip(LISTED, r)) for r in rows], indent=2, default=lambda x: x.isoformat()))
        return 0
    for r in rows:
        ver = f"  (version {r[7]} by {r[8]})" if r[7] > 1 else ""
        print(f"{r[0]:<16} {r[1]:<12} {r[2].astimezone(timezone.utc):%Y-%m-%d %H:%M}Z {r[4]:<5} "
              f"{r[5]}{r[6]:g} mg/l{ver}")
    return 0


def _lab_composites(args: argparse.Namespace, ctx) -> int:
    from lab.store.period_checks import composites   # lazy: see the module docstring

    start, end = _period(args, ctx)
    with ctx.connect("owner") as conn:
        res = composites(conn, start, end, relink=args.relink)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for c in res:
        if "note" in c:
            print(f"{c['site']:<16} {c['sample']:<12} {c['note']}")
            continue
        loads = ", ".join(f"{a} {x['mg_l']:g} mg/l = {x['pounds']:.1f} lb" for a, x in c["analytes"].items())
        print(f"{c['site']:<16} {c['sample']:<12} {c['volume_gal']:,.0f} gal "
              f"({c['coverage'] * 100:.0f} % covered): {loads}")
    return 0


def _os_actor():
    from foundation.actor import Actor

    return Actor.os_user()


def _bill_day(text: str | None, what: str = "--on"):
    from datetime import date

    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-04-10, got {text!r}") from None


@contextlib.contextmanager
def _how_to_correct():
    """A quarter billed already: the refusal says how the command line corrects it."""
    from lab.bill_runs import AlreadyBilled

    try:
        yield
    except AlreadyBilled as e:
        raise InputError(f"{e} (sewerwatch bills draft --quarter Q --rates FILE --correct REASON)") from None


def _village_today(ctx):
    from datetime import datetime

    from foundation.moments import village_zone

    return datetime.now(village_zone(ctx.config)).date()


def _bill_money(x: float) -> str:
    return f"${x:,.2f}"


def _bills_draft(args: argparse.Namespace, ctx) -> int:
    from lab import bill_runs   # lazy
    from lab.documents.bill_page import summary, write_bills
    from lab.documents.pdf import letterhead

    with ctx.connect("owner") as conn, _how_to_correct():
        r = bill_runs.draft_quarter(conn, args.quarter, args.rates, non_detect=args.non_detect,
                                    on=_bill_day(args.on) or _village_today(ctx), actor=_os_actor(),
                                    correction=args.correct)
    if args.out:
        head = letterhead(ctx.config)
        write_bills([{**b, "village": head.village} for b in r["bills"]], args.out, head)
    if args.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    print(f"bill run {r['id']}: {r['quarter']} drafted, {len(r['bills'])} bills"
          + (f", a correction ({r['correction']})" if r["correction"] else ""))
    for b in r["bills"]:
        print("  " + summary(b) + _correction_words(b, r))
    for x in r["blocking"]:
        print(f"  cannot be issued: {x}")
    print(f"review them (sewerwatch bills show {r['id']}), then: sewerwatch bills issue {r['id']}")
    return 0


def _correction_words(b: dict, r: dict) -> str:
    """How a bill of a correction run stands to the bill it replaces."""
    if not r.get("correction"):
        return ""
    c = b.get("correction")
    if b.get("first_bill"):
        return "  (its first bill of the quarter)"
    if not c:
        return "  (unchanged: the bill issued stands)"
    words = "a credit of " + _bill_money(-c["difference"]) if c["difference"] < 0 else _bill_money(c["difference"]) + " more"
    return f"  (replaces bill {c['bill']} of {_bill_money(c['total_dollars'])}: {words})"


def _bills_show(args: argparse.Namespace, ctx) -> int:
    from lab import bill_runs   # lazy
    from lab.documents.bill_page import summary

    with ctx.connect("owner") as conn:
        r = bill_runs.run(conn, args.run)
    if args.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    print(f"bill run {r['id']}: {r['quarter']}, {r['state']}, drafted {r['drafted_at']:%Y-%m-%d %H:%M} by "
          f"{r['drafted_by']} from {r['rates_name']}" + (f", issued {r['issued_on']} by {r['issued_by']}"
                                                          if r["issued_on"] else ""))
    for b in r["bills"]:
        print("  " + summary(b) + _correction_words(b, r))
        for c in b["charges"]:
            print(f"      {c['charge']:<40} {_bill_money(c['dollars']):>12}  {c['citation']}")
    return 0


def _bills_issue(args: argparse.Namespace, ctx) -> int:
    from lab import bill_runs   # lazy
    from lab.documents.bill_page import write_bills
    from lab.documents.pdf import letterhead

    head = letterhead(ctx.config)
    on = _bill_day(args.on) or _village_today(ctx)
    with ctx.connect("owner") as conn, _how_to_correct():
        r = bill_runs.issue_run(conn, args.run, on, actor=_os_actor())
    paths = write_bills([{**b["detail"], "village": head.village} for b in r["issued"]], args.out, head)
    total = sum(b["total_dollars"] for b in r["issued"])
    print(f"bill run {r['id']}: {r['quarter']} issued {on}: {len(r['issued'])} bills, {_bill_money(total)}; "
          f"wrote {len(paths)} files to {args.out}")
    for b in r["issued"]:
        if b["detail"].get("correction"):
            print(f"  bill {b['id']} ({b['site']}) {_correction_words(b['detail'], r).strip()[1:-1]}")
    return 0


def _bills_list(args: argparse.Namespace, ctx) -> int:
    from lab import bill_runs   # lazy

    with ctx.connect("owner") as conn:
        rows = (bill_runs.issued_bills(conn, args.quarter.upper() if args.quarter else None) if args.issued
                else bill_runs.list_runs(conn, args.quarter.upper() if args.quarter else None))
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k not in ("detail", "rates_text")} for r in rows],
                         indent=2, default=str))
        return 0
    for r in rows:
        if args.issued:
            paid = (f"paid {r['paid_on']}" + (f", late charge {_bill_money(r['late_dollars'])} ({r['late_days']} days)"
                                              if r["late_dollars"] else "")) if r["paid_on"] else "not paid"
            fix = (f"  replaced by bill {r['superseded_by']}" if r["superseded_by"] else
                   f"  corrects bill {r['supersedes']}" if r["supersedes"] else "")
            print(f"bill {r['id']:<5} {r['quarter']} {r['site']:<14} {_bill_money(r['total_dollars']):>12}  "
                  f"issued {r['detail']['issued']}  {paid}{fix}")
        else:
            print(f"run {r['id']:<5} {r['quarter']} {r['state']:<10} {r['count']} bills "
                  f"{_bill_money(r['total_dollars']):>12}  drafted {r['drafted_at']:%Y-%m-%d} by {r['drafted_by']}")
    if not rows:
        print("no bills issued" if args.issued else "no bill runs")
    return 0


def _bills_pay(args: argparse.Namespace, ctx) -> int:
    from lab import bill_runs   # lazy

    with ctx.connect("owner") as conn:
        b = bill_runs.record_payment(conn, args.bill, _bill_day(args.on), today=_village_today(ctx),
                                     dollars=args.dollars, actor=_os_actor())
    late = (f"late charge {_bill_money(b['late_dollars'])} ({b['late_days']} days past the grace period)"
            if b["late_dollars"] else "no late charge")
    print(f"bill {b['id']} ({b['site']}, {b['quarter']}, {_bill_money(b['total_dollars'])}): paid {b['paid_on']}; {late}")
    return 0


def _bill(args: argparse.Namespace, ctx) -> int:
    # lazy (see the module docstring): matplotlib alone takes about half a second to import
    from lab import bill_runs
    from lab.billing import build_bills, quarter_bounds
    from lab.charges import surcharged
    from lab.documents.bill_page import summary, write_bills
    from lab.documents.pdf import letterhead
    from lab.readers.rates import read_non_detect_policy, read_rates

    quarter_bounds(args.quarter, timezone.utc)  # validate before connecting
    # rates per pound only where a surcharge is in force (a city without one gives none)
    read_rates(args.rates, required=any(surcharged(p) for p in {ctx.config.pack, *(s.pack for s in ctx.config.sites)}))
    head = letterhead(ctx.config)
    non_detect = args.non_detect or read_non_detect_policy(args.rates) or "zero"
    on = _bill_day(args.on) or _village_today(ctx)
    with ctx.connect("owner") as conn, _how_to_correct():
        if args.draft:   # a preview: nothing stored
            bills = build_bills(conn, args.quarter.upper(), args.rates, issued=on, non_detect=non_detect, draft=True)
        else:            # the bill run of bills draft + bills issue, in one step
            bills = [b["detail"] for b in bill_runs.bill_quarter(conn, args.quarter, args.rates, on,
                                                                 non_detect=non_detect, actor=_os_actor())["issued"]]
    for b in bills:
        b["village"] = head.village
    paths = write_bills(bills, args.out, head)
    if args.json:
        print(json.dumps(bills, indent=2))
    else:
        for b in bills:
            print(summary(b))
        print(f"wrote {len(paths)} files to {args.out}" + (" (drafts: nothing issued or stored)" if args.draft else ""))
    return 0
