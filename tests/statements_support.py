"""The statements' village: three quarters billed on known days to the round village's two
users (tests/web_round.py), payments in full and in part, a paid quarter corrected downward,
and the bank's file of payments with a row of every kind; the aging worked out by hand
(:func:`expected`) from the bills' totals and the ordinance's terms (palmyra-wi
003_44f871d49a02d8f5.txt §13.46(8): due 20 days after the bill's date, 3 % added if not paid
within them). Steps through the command line's ``main`` in process."""

from __future__ import annotations

import re
from datetime import date, timedelta

import web_round
from enforcement_support import run

#: The corrected rates' use charge [$/1,000 gal] (the bills issued used 6.37).
CORRECTED_USE = "6.00"
#: quarter -> (the bills' date, its due date: 20 days later)
DATES = {"2025Q4": (date(2026, 1, 12), date(2026, 2, 1)), "2026Q1": (date(2026, 4, 10), date(2026, 4, 30)),
         "2026Q2": (date(2026, 7, 10), date(2026, 7, 30))}
#: the corrected 2026Q1 bills' date and due date
CORRECTED = (date(2026, 5, 5), date(2026, 5, 25))


def files(tmp) -> None:
    (tmp / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    (tmp / "corrected.toml").write_text(web_round.RATES.replace("6.37", CORRECTED_USE), encoding="utf-8")


def ok(tmp, db, *args) -> str:
    r = run(tmp, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def bill_quarter(tmp, db, quarter: str, on: date, rates: str = "rates.toml", correct: str | None = None) -> None:
    more = ("--correct", correct) if correct else ()
    out = ok(tmp, db, "bills", "draft", "--quarter", quarter, "--rates", rates, "--on", on.isoformat(), *more)
    rid = re.match(r"bill run (\d+):", out).group(1)
    ok(tmp, db, "bills", "issue", rid, "--on", on.isoformat(), "--out", str(tmp / "bills"))


def issued(tmp, db) -> dict:
    """(site, quarter, 'first' or 'now') -> (bill id, total [$]) from ``bills list --issued``."""
    out = {}
    for line in ok(tmp, db, "bills", "list", "--issued").splitlines():
        m = re.match(r"bill (\d+)\s+(\S+) (\S+)\s+\$([\d,]+\.\d\d)", line)
        if not m:
            continue
        bid, quarter, site, total = int(m.group(1)), m.group(2), m.group(3), float(m.group(4).replace(",", ""))
        if "corrects bill" in line:
            out[(site, quarter, "now")] = (bid, total)
        else:
            out[(site, quarter, "first")] = (bid, total)
            out.setdefault((site, quarter, "now"), (bid, total))
    return out


def seed_bills(tmp, db) -> dict:
    """The three quarters billed, the payments recorded one by one, 2026Q1 corrected; the
    bills (:func:`issued`)."""
    files(tmp)
    bill_quarter(tmp, db, "2025Q4", DATES["2025Q4"][0])
    b = issued(tmp, db)
    ok(tmp, db, "bills", "pay", str(b[("plating", "2025Q4", "first")][0]), "--on", "2026-01-25", "--dollars", "300")
    bill_quarter(tmp, db, "2026Q1", DATES["2026Q1"][0])
    b = issued(tmp, db)
    ok(tmp, db, "bills", "pay", str(b[("plating", "2026Q1", "first")][0]), "--on", "2026-04-20")   # in full
    bill_quarter(tmp, db, "2026Q1", CORRECTED[0], "corrected.toml",
                 "the sewer use charge was billed at last year's rate")
    bill_quarter(tmp, db, "2026Q2", DATES["2026Q2"][0])
    return issued(tmp, db)


def bank_csv(b: dict, today: date) -> str:
    """The bank's file: three payments to match and one row of each reason not to."""
    p4, p1, p2 = (b[("plating", q, "first")][0] for q in ("2025Q4", "2026Q1", "2026Q2"))
    c2, t2c = b[("candy", "2026Q2", "now")]
    later = (today + timedelta(days=3)).isoformat()
    return ("Date,Amount,Reference,Memo\n"
            f"2026-02-20,200.00,BILL {p4} LAKESIDE PLATING,ach\n"
            f"2026-07-20,100.00,Bill #{p2} Lakeside,check 1043\n"
            "2026-07-21,50.00,BILL 99999,ach\n"
            f"2026-07-22,\"$1,000,000.00\",BILL {p2},wire\n"
            f"{later},10.00,BILL {p2},ach\n"
            f"01/25/2026,300.00,{p4},check 1001\n"
            f"2026-07-25,{t2c:.2f},BILL {c2} SWEET CREEK,ach\n"
            f"2026-03-01,10.00,BILL {p1},ach\n")


def cents(x: float) -> float:
    from decimal import ROUND_HALF_UP, Decimal

    return float(Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def expected(b: dict, as_of: date) -> dict:
    """By hand: site -> {bucket: dollars, 'credit', 'balance'} on ``as_of`` (the buckets
    not listed are $0.00), after the bank file is recorded."""
    t = {k: v[1] for k, v in b.items()}
    out = {}
    # plating: 2025Q4 paid $300 on time (2026-01-25), $200 on 2026-02-20: 39 days after its
    # date, past the 20 days, so 3 % of the $ still owed is added then
    late4 = cents(0.03 * (t[("plating", "2025Q4", "first")] - 300))
    pl: dict = {}
    if as_of >= date(2026, 1, 12):
        owed = t[("plating", "2025Q4", "first")] - (300 if as_of >= date(2026, 1, 25) else 0)
        if as_of >= date(2026, 2, 20):
            owed += late4 - 200
        pl[_bucket((as_of - DATES["2025Q4"][1]).days)] = cents(owed)
    credit = 0.0
    if date(2026, 4, 10) <= as_of < CORRECTED[0]:
        owed = 0.0 if as_of >= date(2026, 4, 20) else t[("plating", "2026Q1", "first")]
        if owed:
            pl[_bucket((as_of - DATES["2026Q1"][1]).days)] = owed
    elif as_of >= CORRECTED[0]:            # paid in full, then corrected downward: a credit
        credit = cents(t[("plating", "2026Q1", "first")] - t[("plating", "2026Q1", "now")])
    if as_of >= date(2026, 7, 10):
        owed = cents(t[("plating", "2026Q2", "first")] - (100 if as_of >= date(2026, 7, 20) else 0))
        k = _bucket((as_of - DATES["2026Q2"][1]).days)
        pl[k] = cents(pl.get(k, 0) + owed)
    pl["credit"] = credit
    pl["balance"] = cents(sum(v for k, v in pl.items() if k != "credit") - credit)
    out["plating"] = pl
    ca: dict = {}
    if as_of >= date(2026, 1, 12):
        ca[_bucket((as_of - DATES["2025Q4"][1]).days)] = t[("candy", "2025Q4", "first")]
    if date(2026, 4, 10) <= as_of < CORRECTED[0]:
        k = _bucket((as_of - DATES["2026Q1"][1]).days)
        ca[k] = cents(ca.get(k, 0) + t[("candy", "2026Q1", "first")])
    elif as_of >= CORRECTED[0]:
        k = _bucket((as_of - CORRECTED[1]).days)
        ca[k] = cents(ca.get(k, 0) + t[("candy", "2026Q1", "now")])
    if date(2026, 7, 10) <= as_of < date(2026, 7, 25):
        k = _bucket((as_of - DATES["2026Q2"][1]).days)
        ca[k] = cents(ca.get(k, 0) + t[("candy", "2026Q2", "now")])
    ca["credit"] = 0.0
    ca["balance"] = cents(sum(v for k, v in ca.items() if k != "credit"))
    out["candy"] = ca
    return out


def _bucket(days: int) -> str:
    """By hand: the days past the due date as the aging's column."""
    if days < 0:
        return "current"
    if days <= 30:
        return "0-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "over-90"
