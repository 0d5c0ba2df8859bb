"""CLI of the state's electronic report: ``sewerwatch report icis`` (with ``--draft``,
``--check``) and ``sewerwatch report publish`` (the SNC list's publication in a newspaper).

:func:`register` adds the parsers to ``sewerwatch report``; each handler is ``func(args, ctx)``
and returns the exit code, calling the package functions the office calls
(:mod:`enforcement.state_report`, :mod:`enforcement.publication`, :mod:`enforcement.icis`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from foundation import moments
from foundation.errors import InputError


def register(rp) -> None:
    """Add ``icis`` and ``publish`` to the subparsers ``rp`` of ``sewerwatch report``."""
    q = rp.add_parser("icis", help="the year as EPA's ICIS-NPDES pretreatment performance summary (XML, schema 5.8)",
                      description="The annual report's figures as an ICIS-NPDES PretreatmentPerformanceSummary "
                      "submission (schema 5.8, 40 CFR Part 127), checked against EPA's schema before it is written. "
                      "Needs the POTW's own NPDES permit number and the user id of the utility's EPA CDX account in "
                      "the configuration (the enforcement program's part); its author is the staff account of the "
                      "operating-system user, or the one --by names. A year not over in the village is refused "
                      "unless --draft, and a draft says so in its file name and inside the file.")
    q.add_argument("--year", required=True)
    q.add_argument("--out", default=".", metavar="DIR")
    q.add_argument("--replace", action="store_true", help="a replacement of a summary sent before (transaction R)")
    q.add_argument("--draft", action="store_true", help="a year not over: write a draft, marked as one")
    q.add_argument("--by", default=None, metavar="ACCOUNT",
                   help="the staff account preparing it (default: the one named like the operating-system user)")
    q.add_argument("--check", action="store_true", help="only list what the state's reviewer will question "
                   "(users in SNC without an enforcement action, significant users without a permit in force, not "
                   "sampled by the village, not inspected; penalties without the day collected); writes nothing")
    q.add_argument("--json", action="store_true", help="with --check: print JSON instead of text")
    q.set_defaults(func=_report_icis)

    q = rp.add_parser("publish", help="record the newspaper's publication of the year's list of users in SNC",
                      description="Record that the year's list of users in significant noncompliance was published "
                      "(40 CFR 403.8(f)(2)(viii): annually, in a newspaper of general circulation): the newspaper, "
                      "the day, the printed page as a PDF or a photo, and the users it named (default: every user "
                      "on the list). The state's report counts the significant users a recorded publication named.")
    q.add_argument("--year", required=True, help="the year whose list it is")
    q.add_argument("--newspaper", required=True)
    q.add_argument("--on", required=True, help="the day it appeared (a date)")
    q.add_argument("--page", required=True, metavar="FILE", help="the printed page: a PDF, JPEG or PNG")
    q.add_argument("--site", action="append", default=None, help="a user it named (repeat; default: all listed)")
    q.add_argument("--by", default=None, help="who records it (default: $USER)")
    q.set_defaults(func=_report_publish)


def _year(text: str) -> int:
    from enforcement.periods import year_period   # lazy

    return int(year_period(text).name)


def _annual(ctx, conn, year: int) -> dict:
    from enforcement.annual import annual_report
    from enforcement.settings import settings

    st = settings(ctx.config)
    return annual_report(conn, year, st.snc_periods, ctx.config.name, st, program=st.program)


def _office_base(ctx) -> str:
    web = getattr(ctx.config, "web", None)
    return (web.public_url.rstrip("/") if web is not None and web.public_url else "")


def _report_icis(args, ctx) -> int:
    import getpass

    from enforcement import icis, state_report   # lazy
    from enforcement.settings import settings

    year = _year(args.year)
    st = settings(ctx.config)
    tz = moments.village_zone(ctx.config)
    with ctx.connect("owner") as conn:
        if args.check:
            items = state_report.checklist(_annual(ctx, conn, year))
            if args.json:
                print(json.dumps(items, indent=2))
            else:
                print(state_report.checklist_text(items, year, _office_base(ctx)))
            return 0
        draft = state_report.check_year(year, tz, args.draft)
        if not st.program.npdes_permit:
            raise InputError("[enforcement.program] npdes_permit is not set: the state's report is keyed by the POTW's "
                             "NPDES permit (9 characters, e.g. WI0020231)")
        author = state_report.staff_author(conn, args.by or getpass.getuser())
        who = state_report.submitter(st.program, ctx.config.name, author)
        rep = _annual(ctx, conn, year)
    path = icis.write(rep, who, args.out, transaction="R" if args.replace else "N", draft=draft)
    ps = rep["performance_summary"]
    print(f"wrote {path}: ICIS-NPDES {icis.VERSION} pretreatment performance summary {ps['start']} to {ps['end']}"
          f"{' (DRAFT: ' + draft + ')' if draft else ''}, permit {ps['permit']}, submitted as {who.id} "
          f"({who.organization}) by {who.author}, {len(ps['elements'])} figures (valid against EPA's schema)")
    for e in ps["elements"]:
        print(f"  {e['element']:<40} {e['value']!s:>8}  {e['words']}")
    items = state_report.checklist(rep)
    if items:
        print(f"{len(items)} thing{'s' if len(items) != 1 else ''} the state's reviewer will question "
              f"(sewerwatch report icis --check --year {year})", file=sys.stderr)
    return 0


def _report_publish(args, ctx) -> int:
    from enforcement import publication   # lazy
    from enforcement.annual import snc_list
    from enforcement.notices import who
    from enforcement.settings import settings

    year = _year(args.year)
    on = moments.day(args.on, "--on")
    path = Path(args.page)
    if not path.is_file():
        raise InputError(f"--page: no file {path}")
    st = settings(ctx.config)
    from datetime import datetime

    today = datetime.now(moments.village_zone(ctx.config)).date()
    with ctx.connect("owner") as conn:
        listed = [u["site"] for u in snc_list(conn, year, st.snc_periods, st)["users"]]
        p = publication.record(conn, year, args.newspaper, on, path.read_bytes(), path.name, args.site,
                               listed=listed, actor=who(args.by), today=today)
    print(f"recorded: the {year} list of users in significant noncompliance published in {p['newspaper']} on "
          f"{p['published_on']}, naming {', '.join(p['names'])} (page {p['page_name']}, {p['bytes']:,} bytes)")
    return 0
