"""CLI: ``sewerwatch bills statement SITE --as-of DATE [--pdf FILE]``, ``sewerwatch bills
receivables --as-of DATE`` (:mod:`lab.statements`) and ``sewerwatch bills import-payments
FILE [--record]`` (:mod:`lab.payments`), added to ``sewerwatch bills`` by :func:`register`.
The work is imported lazily inside each handler.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from foundation.errors import InputError

#: ``import-payments``' exit status when some rows were not matched (kept as dead letters).
UNMATCHED_EXIT = 4


def register(bs) -> None:
    """Add the statement, receivables and import-payments actions to the ``bills`` parser ``bs``."""
    q = bs.add_parser("statement", help="an industrial user's statement of account on a day",
                      description="Bills, credits and further charges of corrected bills, payments, late charges "
                      "and the balance on the day, with what is unpaid aged by days past each bill's due date "
                      "(current, 0-30, 31-60, 61-90, over 90).")
    q.add_argument("site", help="the industrial user (its id, as in the config's sites)")
    q.add_argument("--as-of", required=True, metavar="DATE", help="the statement's date (ISO date)")
    q.add_argument("--pdf", default=None, metavar="FILE", help="also write the statement as a PDF, with the "
                   "utility's letterhead")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_statement)
    q = bs.add_parser("receivables", help="every user's balance and aging on a day, with the totals")
    q.add_argument("--as-of", required=True, metavar="DATE", help="the day (ISO date)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_receivables)
    q = bs.add_parser("import-payments", help="the bank's file of payments, matched by bill number",
                      description="Preview the bank's CSV file (columns date, amount, reference holding the bill's "
                      "number): each row matched to its bill, or not with the reason (unknown bill number, amount "
                      "over what is owed, date in the future, duplicate of a payment already recorded). With "
                      "--record the matched rows are recorded and the others kept with their reasons; a file "
                      f"recorded once is refused the second time. Exit {UNMATCHED_EXIT} when some rows were not "
                      "matched.")
    q.add_argument("file", metavar="FILE.csv")
    q.add_argument("--record", action="store_true", help="record the matched payments (default: preview only)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_import_payments)


def _day(text: str, what: str):
    from datetime import date

    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-08-15, got {text!r}") from None


def _money(x: float) -> str:
    return f"-${-x:,.2f}" if x < 0 else f"${x:,.2f}"


def _statement(args: argparse.Namespace, ctx) -> int:
    from lab import statements
    from lab.documents.pdf import letterhead
    from lab.documents.statement_page import balance_words, write_statement

    with ctx.connect("owner") as conn:
        s = statements.statement(conn, args.site, _day(args.as_of, "--as-of"))
    if args.pdf:
        write_statement(s, letterhead(ctx.config), args.pdf)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"statement of {s['name']} ({s['site']}) as of {s['as_of']}: {balance_words(s)}")
    print("  aging: " + ", ".join(f"{words} {_money(s['aging'][k])}" for k, words, *_ in statements.BUCKETS)
          + f"; credit {_money(s['credit'])}; balance {_money(s['balance'])}")
    for q in s["quarters"]:
        age = ("credit" if q["owed"] < 0 else "paid" if q["owed"] == 0 else
               "not yet due" if q["bucket"] == "current" else f"{q['days_past_due']} days past due")
        print(f"  {q['quarter']} bill {q['bill']:<5} due {q['due']}  billed {_money(q['billed'])}  "
              f"late {_money(q['late'])}  paid {_money(q['paid'])}  owed {_money(q['owed'])}  {age}")
    for e in s["entries"]:
        print(f"  {e['date']}  {e['words']:<70} {_money(e['dollars']):>12} {_money(e['balance']):>12}")
    if args.pdf:
        print(f"wrote {args.pdf}")
    return 0


def _receivables(args: argparse.Namespace, ctx) -> int:
    from lab import statements

    with ctx.connect("owner") as conn:
        r = statements.receivables(conn, _day(args.as_of, "--as-of"))
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    keys = [k for k, *_ in statements.BUCKETS]
    print(f"receivables as of {r['as_of']}")
    print(f"  {'user':<16}" + "".join(f"{w:>14}" for _, w, *_ in statements.BUCKETS) + f"{'credit':>12}{'balance':>14}")
    for a in r["accounts"] + [{"site": "total", **r["totals"]}]:
        print(f"  {a['site']:<16}" + "".join(f"{_money(a['aging'][k]):>14}" for k in keys)
              + f"{_money(a['credit']):>12}{_money(a['balance']):>14}")
    return 0


def _import_payments(args: argparse.Namespace, ctx) -> int:
    from datetime import datetime

    from foundation.actor import Actor
    from foundation.moments import village_zone
    from lab import payments

    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"{args.file}: cannot read it ({e.strerror})") from None
    today = datetime.now(village_zone(ctx.config)).date()
    actor = Actor.os_user()
    with ctx.connect("owner") as conn:
        f = payments.stage(conn, path.name, data, today, actor=actor)
        if args.record:
            f = payments.record(conn, f["id"], today, actor=actor)
    rep = f["report"] if args.record else f["preview"]
    if args.json:
        print(json.dumps({k: v for k, v in f.items() if k not in ("staged_at", "recorded_at")}, indent=2,
                         default=str))
    else:
        print(f"bank file {f['id']} ({f['filename']}): {rep['matched']} matched ({_money(rep['dollars'])}), "
              f"{rep['unmatched']} not matched" + ("; recorded" if args.record else "; preview, nothing recorded "
                                                  "(--record records the matched)"))
        for r in rep["rows"]:
            if r["matched"]:
                late = f", late charge {_money(r['late_dollars'])}" if r["late_dollars"] else ""
                note = f" ({r['reason']})" if r["reason"] else ""
                print(f"  line {r['line']}: matched: {r['paid_on']} {_money(r['dollars'])} on bill {r['bill']} "
                      f"({r['site']}, {r['quarter']}){late}{note}")
            else:
                print(f"  line {r['line']}: not matched: {r['reason']}")
    return UNMATCHED_EXIT if rep["unmatched"] else 0
