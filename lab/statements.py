"""Statements of account: what each industrial user was billed, paid and owes on a chosen
date, and the program's receivables (every user's balance by age) on one page.

An account on a day ``as_of`` counts only what had happened by then:

- **bills** issued on or before ``as_of`` (a bill's date is the one printed on it);
- **credits and further charges**: a corrected bill issued on or before ``as_of`` replaces
  the one before it (:mod:`lab.bill_runs`); the account shows the difference on the corrected
  bill's date, a credit when lower. A quarter paid and then corrected downward leaves a
  credit on the account: the balance goes below zero and the statement says "credit";
- **payments** made on or before ``as_of``: the one recorded with the bill
  (``sewerwatch bills pay``, ``bills.paid_dollars``) and those of the table ``payments``
  (parts of a bill, the bank's files: :mod:`lab.payments`), each counted on the quarter's
  bill in force whatever bill number of that quarter it was paid on;
- **late charges** as the program records them: with a payment made after the grace period
  of the village's ``[late_charge]`` (palmyra-wi, 003_44f871d49a02d8f5.txt §13.46(8): 3 % of
  a statement not paid within 20 days; :func:`lab.charges.late_charge`). An unpaid bill past
  its due date accrues nothing on the statement: the statement says what its ordinance adds
  once it is paid.

**Aging.** What is unpaid on each quarter's bill on ``as_of``, by the days from the due date
of the bill in force (its payment terms; a bill without them is due on its date): *current*
(``as_of`` before the due date), *0–30* (0 to 30 days past the due date, the due date
itself included), *31–60*, *61–90*, *over 90*. A quarter overpaid (a corrected bill lower
than what was paid) is a credit, not aged. The balance is the aged amounts less the credits.
"""

from __future__ import annotations

from datetime import date

from foundation.errors import InputError
from identity.contacts import addressee
from lab.charges import late_terms
from lab.formulas.money import cents

#: The aging buckets in order: key, words, lowest and highest days past the due date
#: (``None``: open-ended).
BUCKETS = (("current", "current", None, -1), ("0-30", "0–30 days", 0, 30), ("31-60", "31–60 days", 31, 60),
           ("61-90", "61–90 days", 61, 90), ("over-90", "over 90 days", 91, None))


def bucket(days_past_due: int) -> str:
    """The aging bucket of an amount ``days_past_due`` [days] past its due date (negative:
    not yet due)."""
    for key, _, low, high in BUCKETS:
        if (low is None or days_past_due >= low) and (high is None or days_past_due <= high):
            return key
    raise AssertionError(days_past_due)


def bills_of(conn, site: str | None) -> list[dict]:
    """Every bill issued (replaced ones too) of ``site`` (None: of every site), with its
    date ``issued``, ``due`` date, ``total`` [$] and the payment recorded with it (``paid``,
    ``late`` [$])."""
    rows = conn.execute(
        "SELECT b.id, s.key, s.name, s.pack, b.period, b.total_dollars::float8, b.detail->>'issued', "
        "b.detail->'payment'->>'due', b.supersedes, b.paid_on, coalesce(b.paid_dollars, 0)::float8, "
        "coalesce(b.late_dollars, 0)::float8 FROM bills b JOIN sites s ON s.id = b.site_id "
        "WHERE (%s::text IS NULL OR s.key = %s) ORDER BY s.key, b.period, b.id", (site, site)).fetchall()
    keys = ("id", "site", "name", "pack", "quarter", "total", "issued", "due", "supersedes", "paid_on", "paid",
            "late")
    out = []
    for r in rows:
        b = dict(zip(keys, r))
        b["issued"] = date.fromisoformat(b["issued"])
        b["due"] = date.fromisoformat(b["due"]) if b["due"] else b["issued"]
        out.append(b)
    return out


def payments_of(conn, site: str | None) -> list[dict]:
    """The payments of the table ``payments`` on the bills of ``site`` (None: every site)."""
    rows = conn.execute(
        "SELECT p.id, p.bill_id, p.paid_on, p.dollars::float8, p.reference, p.late_dollars::float8, p.import_id "
        "FROM payments p JOIN bills b ON b.id = p.bill_id JOIN sites s ON s.id = b.site_id "
        "WHERE (%s::text IS NULL OR s.key = %s) ORDER BY p.paid_on, p.id", (site, site)).fetchall()
    return [dict(zip(("id", "bill", "paid_on", "dollars", "reference", "late", "import_id"), r)) for r in rows]


def chains(bills: list[dict]) -> dict[int, int]:
    """Each bill's id -> the id of the first bill of its quarter (the one a corrected bill,
    however many times corrected, goes back to)."""
    by_id = {b["id"]: b for b in bills}
    root = {}
    for b in bills:
        x = b
        while x["supersedes"] is not None and x["supersedes"] in by_id:
            x = by_id[x["supersedes"]]
        root[b["id"]] = x["id"]
    return root


def _late_words(pack: str) -> str | None:
    late = late_terms(pack)
    if late is None:
        return None
    provision, terms = late
    return f"{terms.terms()} ({provision.citation}); the late charge is added when the payment is recorded"


def _account(site: dict, bills: list[dict], payments: list[dict], as_of: date) -> dict:
    """The account of one site on ``as_of`` from all its bills and payments (see the module
    docstring)."""
    bills = [b for b in bills if b["issued"] <= as_of]
    root = chains(bills)
    by_id = {b["id"]: b for b in bills}
    entries: list[dict] = []
    quarters: dict[int, dict] = {}
    for b in sorted(bills, key=lambda b: (b["issued"], b["id"])):
        q = quarters.setdefault(root[b["id"]], {"quarter": b["quarter"], "bills": [], "paid": 0.0, "late": 0.0})
        before = by_id.get(b["supersedes"]) if b["supersedes"] is not None else None
        if before is None:
            entries.append({"date": b["issued"], "kind": "bill", "bill": b["id"], "quarter": b["quarter"],
                            "words": f"bill {b['id']}, {b['quarter']}", "dollars": b["total"]})
        else:
            diff = cents(b["total"] - before["total"])
            entries.append({"date": b["issued"], "kind": "credit" if diff < 0 else "charge", "bill": b["id"],
                            "quarter": b["quarter"], "dollars": diff,
                            "words": f"corrected bill {b['id']}, {b['quarter']}, replaces bill {before['id']} "
                                     f"({_money(before['total'])} to {_money(b['total'])}): "
                                     + ("credit" if diff < 0 else "further charge" if diff > 0 else "no change")})
        q["bills"].append(b)
        if b["paid_on"] is not None and b["paid_on"] <= as_of:
            if b["paid"]:
                entries.append({"date": b["paid_on"], "kind": "payment", "bill": b["id"], "quarter": b["quarter"],
                                "words": f"payment on bill {b['id']}", "dollars": -b["paid"]})
                q["paid"] += b["paid"]
            if b["late"]:
                entries.append({"date": b["paid_on"], "kind": "late charge", "bill": b["id"],
                                "quarter": b["quarter"], "words": f"late charge on bill {b['id']}",
                                "dollars": b["late"]})
                q["late"] += b["late"]
    for p in payments:
        if p["bill"] not in by_id or p["paid_on"] > as_of:
            continue
        q = quarters[root[p["bill"]]]
        b = by_id[p["bill"]]
        entries.append({"date": p["paid_on"], "kind": "payment", "bill": p["bill"], "quarter": b["quarter"],
                        "words": f"payment on bill {p['bill']} ({p['reference']})", "dollars": -p["dollars"]})
        q["paid"] += p["dollars"]
        if p["late"]:
            entries.append({"date": p["paid_on"], "kind": "late charge", "bill": p["bill"], "quarter": b["quarter"],
                            "words": f"late charge on bill {p['bill']}", "dollars": p["late"]})
            q["late"] += p["late"]
    order = {"bill": 0, "charge": 1, "credit": 1, "late charge": 2, "payment": 3}
    entries.sort(key=lambda e: (e["date"], order[e["kind"]], e["bill"]))
    running = 0.0
    for e in entries:
        running = cents(running + e["dollars"])
        e["balance"] = running
        e["date"] = e["date"].isoformat()
    aging = {k: 0.0 for k, *_ in BUCKETS}
    credit = 0.0
    lines = []
    for q in sorted(quarters.values(), key=lambda q: q["bills"][0]["issued"]):
        now = q["bills"][-1]                               # the bill in force on as_of
        owed = cents(now["total"] + q["late"] - q["paid"])
        days = (as_of - now["due"]).days
        line = {"quarter": q["quarter"], "bill": now["id"], "issued": now["issued"].isoformat(),
                "due": now["due"].isoformat(), "billed": now["total"], "late": cents(q["late"]),
                "paid": cents(q["paid"]), "owed": owed, "days_past_due": days if owed > 0 else None,
                "bucket": None, "replaced": [b["id"] for b in q["bills"][:-1]]}
        if owed > 0:
            line["bucket"] = bucket(days)
            aging[line["bucket"]] = cents(aging[line["bucket"]] + owed)
        elif owed < 0:
            credit = cents(credit - owed)
        lines.append(line)
    balance = cents(sum(aging.values()) - credit)
    return {"site": site["key"], "name": site["name"], "pack": site["pack"], "as_of": as_of.isoformat(),
            "entries": entries, "quarters": lines, "aging": aging, "credit": credit, "balance": balance,
            "late_terms": _late_words(site["pack"])}


def _money(x: float) -> str:
    return f"-${-x:,.2f}" if x < 0 else f"${x:,.2f}"


def _sites(conn, site: str | None = None) -> list[dict]:
    rows = conn.execute("SELECT key, name, pack FROM sites WHERE (%s::text IS NULL OR key = %s) ORDER BY key",
                        (site, site)).fetchall()
    return [dict(zip(("key", "name", "pack"), r)) for r in rows]


def statement(conn, site: str, as_of: date) -> dict:
    """The statement of account of ``site`` on ``as_of``.

    Returns
    -------
    dict
        ``site``, ``name``, ``as_of`` (ISO); ``entries``: bills, credits and further
        charges (corrected bills), payments and late charges in date order, each with
        ``dollars`` [$] (a payment or credit below zero) and the running ``balance`` [$];
        ``quarters``: each quarter's bill in force with ``billed``, ``late``, ``paid``,
        ``owed`` [$], ``due``, ``days_past_due`` [days] and its aging ``bucket``; ``aging``:
        bucket -> unpaid [$] (:data:`BUCKETS`); ``credit`` [$]; ``balance`` [$] (below zero:
        a credit); ``late_terms``: the ordinance's late charge in words, or None.

    Raises
    ------
    InputError
        ``site`` not a site of the program.
    """
    found = _sites(conn, site)
    if not found:
        known = ", ".join(s["key"] for s in _sites(conn)) or "none"
        raise InputError(f"statement: no industrial user '{site}' (users: {known})")
    s = _account(found[0], bills_of(conn, site), payments_of(conn, site), as_of)
    # mailed to the billing contact at the billing address (the office's address book)
    s["mail_to"] = addressee(conn, site, "billing", "billing").as_json()
    return s


def receivables(conn, as_of: date) -> dict:
    """Every user's balance and aging on ``as_of``, and the program's totals.

    Returns
    -------
    dict
        ``as_of``; ``accounts``: per site ``site``, ``name``, ``aging`` (bucket -> [$]),
        ``credit`` [$], ``balance`` [$]; ``totals``: the same sums over all sites.
    """
    bills, payments = bills_of(conn, None), payments_of(conn, None)
    accounts = []
    for s in _sites(conn):
        a = _account(s, [b for b in bills if b["site"] == s["key"]], [p for p in payments if p["bill"] in
                     {b["id"] for b in bills if b["site"] == s["key"]}], as_of)
        accounts.append({k: a[k] for k in ("site", "name", "aging", "credit", "balance")})
    totals = {"aging": {k: cents(sum(a["aging"][k] for a in accounts)) for k, *_ in BUCKETS},
              "credit": cents(sum(a["credit"] for a in accounts)),
              "balance": cents(sum(a["balance"] for a in accounts))}
    return {"as_of": as_of.isoformat(), "accounts": accounts, "totals": totals}


def owed(conn, bill_id: int) -> dict:
    """What is owed on the quarter of bill ``bill_id`` with every bill and payment recorded:
    the bill in force (``bill``), ``owed`` [$], ``late`` [$] recorded so far, ``due``,
    ``issued`` and ``pack``; ``replaced_by``: the bill in force when ``bill_id`` is one it
    replaced."""
    row = conn.execute("SELECT s.key FROM bills b JOIN sites s ON s.id = b.site_id WHERE b.id = %s",
                       (bill_id,)).fetchone()
    if row is None:
        raise InputError(f"no bill {bill_id}")
    site = _sites(conn, row[0])[0]
    bills = bills_of(conn, row[0])
    # every bill and payment recorded, whatever its date: what is owed now
    a = _account(site, bills, payments_of(conn, row[0]), date.max)
    root = chains(bills)
    q = next(x for x in a["quarters"] if root[x["bill"]] == root[bill_id])
    return {"bill": q["bill"], "owed": q["owed"], "late": q["late"], "due": date.fromisoformat(q["due"]),
            "issued": date.fromisoformat(q["issued"]), "pack": site["pack"], "site": site["key"],
            "quarter": q["quarter"], "total": q["billed"], "paid": q["paid"],
            "replaced_by": q["bill"] if q["bill"] != bill_id else None}
