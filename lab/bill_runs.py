"""A quarter's bills drafted, reviewed, issued, and paid: the steps the
clerk takes, the same functions for ``sewerwatch bills`` and the office.

- :func:`draft_quarter` computes every user's bill for the quarter as a draft
  (:func:`lab.billing.build_bills` with ``draft=True``: the same computation as ``sewerwatch
  bill --draft``, the preview that stores nothing) and stores it as a *bill run* (migration
  0156) with the rates file's text as it was, so the draft can be reviewed bill by bill: the metered volume and its coverage, the
  lab results used, the charges with their citations. A new draft of the quarter supersedes
  the one before.
- :func:`issue_run` issues the quarter: the bills computed again for the issue date from the
  same rates (the payment terms count from it) and stored in ``bills``. When they differ from
  the draft in anything the clerk reviewed (volume, results, charges, total: a lab result
  corrected meanwhile), nothing is issued and the quarter must be drafted again; a bill whose
  volume is unknown stops the issue as ``sewerwatch bill`` does.
- One bill per site and period: a quarter billed already is refused, a draft as an issue,
  naming the runs and bills in force (:func:`already_billed`), unless the clerk drafts a
  *corrected bill* with its reason: each user's bill that differs from the one in force
  replaces it when issued (``bills.superseded_by``; both kept, the corrected one shows both
  amounts and the difference, a credit when lower) and only the bill in force counts in a
  user's account. Migration 0181 holds the rule in the database too (a partial unique index),
  so no other path stores a second bill. :func:`bill_quarter` drafts and issues in one step
  (``sewerwatch bill``) through the same functions.
- :func:`record_payment` records the day a bill was paid and the late charge the ordinance
  adds for it (:func:`lab.charges.late_charge`, the pack's ``[late_charge]``: palmyra-wi
  §13.46(8), 3 % of a statement not paid within 20 days); a day after the village's today or
  before the bill's date is refused, naming the field.

Each step writes an ``audit_log`` row naming who acted (:class:`foundation.actor.Actor`)
and through which face; issuing and paying lock their rows, so a second click waits for
the first and is then refused.
"""

from __future__ import annotations

import json
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path

from psycopg.errors import UniqueViolation

from foundation.actor import Actor
from foundation.errors import InputError
from lab.billing import build_bills, quarter_bounds
from lab.charges import late_charge
from lab.formulas.money import cents
from lab.ordinance import pack_timezone
from lab.readers.rates import read_non_detect_policy, read_rates
from lab import statements

RUN_COLS = ("id", "quarter", "state", "rates_name", "rates_text", "non_detect", "drafted_at", "drafted_by",
            "issued_on", "issued_at", "issued_by", "correction")
BILL_COLS = ("id", "site", "site_name", "pack", "quarter", "issued_at", "total_dollars", "detail", "run_id",
             "paid_on", "paid_dollars", "late_days", "late_dollars", "superseded_by", "superseded_at", "supersedes")
#: What a reviewed draft and the issued bill must agree on.
REVIEWED = ("volume_mg", "volume_known", "total_dollars")


def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def _money(x: float) -> str:
    return f"${x:,.2f}"


class AlreadyBilled(InputError):
    """A second bill of a quarter billed already (:func:`already_billed` says which)."""


def in_force(conn, quarter: str) -> list[dict]:
    """The bills of ``quarter`` in force: one per site at most (migration 0181), a corrected
    bill in place of the one it replaced."""
    return _bills(conn, "b.period = %s AND b.superseded_by IS NULL", (quarter,))


def already_billed(quarter: str, bills: list[dict]) -> str:
    """Why a second bill of ``quarter`` is refused, naming the runs and bills that stand."""
    runs = sorted({b["run_id"] for b in bills if b["run_id"] is not None})
    said = ", ".join(f"{b['id']} ({b['site_name']}, {_money(b['total_dollars'])})" for b in bills)
    issued = sorted({b["detail"]["issued"] for b in bills})
    where = (f" by bill run {', '.join(map(str, runs))}" if runs else ",") + f" issued {', '.join(issued)}"
    return (f"{quarter} is billed already{where}: bill{'s' if len(bills) > 1 else ''} {said}; a second bill "
            "of the quarter is refused: issue a corrected bill, with its reason, to replace them")


def _corrections(quarter: str, bills: list[dict], standing: list[dict], reason: str) -> None:
    """Mark each of ``bills`` that differs from the bill in force (``standing``) as its
    correction: both amounts and the difference (negative: a credit) [$]; a user without a
    bill of the quarter yet (added since) gets its first (``first_bill``)."""
    old = {b["site"]: b for b in standing}
    for b in bills:
        o = old.get(b["site"])
        if o is None:
            b["first_bill"] = True
        elif _reviewed(o["detail"]) != _reviewed(b):
            b["correction"] = {"bill": o["id"], "run": o["run_id"], "issued": o["detail"]["issued"],
                               "total_dollars": o["total_dollars"],
                               "difference": cents(b["total_dollars"] - o["total_dollars"]),
                               "paid_on": str(o["paid_on"]) if o["paid_on"] else None, "reason": reason}
    if not any(b.get("correction") or b.get("first_bill") for b in bills):
        raise InputError(f"{quarter}: nothing to correct: the bills computed now are the ones issued (bills "
                         f"{', '.join(str(b['id']) for b in standing)})")


def draft_quarter(conn, quarter: str, rates_path: str | Path | None = None, *, non_detect: str | None = None,
                  on: date | None = None, actor: Actor, name: str | None = None,
                  correction: str | None = None) -> dict:
    """Draft every user's bill for ``quarter`` from the stored rates in effect on its first
    day (:func:`lab.store.rates.quarter_file`; a rates file ``rates_path`` given is saved as
    that version first, ``name`` its name as sent); store the run (the earlier draft of the
    quarter superseded); return it with its bills, which name the rates version.

    A quarter already billed is refused (:func:`already_billed`) unless ``correction`` gives
    the reason of a corrected bill: then each user's bill that differs from the one in force
    is drafted as its correction (``correction``: the bill it replaces, both amounts, the
    difference [$]); when none differs the draft is refused, nothing to correct. Refused
    before anything is stored, the rates file given included.
    """
    from lab.store.rates import quarter_file

    quarter = quarter.strip().upper()
    quarter_bounds(quarter, timezone.utc)            # one-line error for a bad quarter
    reason = _reason(correction)
    standing = in_force(conn, quarter)
    if standing and reason is None:
        raise AlreadyBilled(already_billed(quarter, standing))
    if reason is not None and not standing:
        raise InputError(f"correction: {quarter} has not been billed yet, so there is no bill to correct: "
                         "draft the quarter without a correction")
    with quarter_file(conn, quarter, rates_path, name=name, actor=actor) as (path, label):
        return _draft(conn, quarter, path, non_detect=non_detect, on=on, actor=actor, name=label, reason=reason,
                      standing=standing)


def _draft(conn, quarter: str, rates_path: Path, *, non_detect: str | None, on: date | None, actor: Actor,
           name: str, reason: str | None, standing: list[dict]) -> dict:
    read_rates(rates_path)                           # and for a bad rates file
    text = Path(rates_path).read_text(encoding="utf-8-sig")
    nd = non_detect or read_non_detect_policy(rates_path) or "zero"
    on = on or datetime.now(timezone.utc).date()
    bills = build_bills(conn, quarter, str(rates_path), issued=on, non_detect=nd, draft=True, source=name)
    if reason is not None:
        _corrections(quarter, bills, standing, reason)
    with conn.transaction():
        rid = _store_run(conn, quarter, name, text, nd, bills, actor, reason)
    return run(conn, rid)


def _reason(correction: str | None) -> str | None:
    if correction is None:
        return None
    reason = " ".join(str(correction).split())
    if not reason:
        raise InputError("correction: give the reason of the corrected bill (what was wrong in the bill issued)")
    if len(reason) > 500:
        raise InputError(f"correction: the reason is {len(reason)} characters long, at most 500")
    return reason


def _store_run(conn, quarter: str, name: str, text: str, nd: str, bills: list[dict], actor: Actor,
               correction: str | None) -> int:
    """Store a drafted run of ``bills`` (inside the caller's transaction); its id."""
    sites = dict(conn.execute("SELECT key, id FROM sites").fetchall())
    superseded = [r[0] for r in conn.execute(
        "UPDATE bill_runs SET state = 'superseded' WHERE quarter = %s AND state = 'drafted' RETURNING id",
        (quarter,)).fetchall()]
    rid = conn.execute("INSERT INTO bill_runs (quarter, rates_name, rates_text, non_detect, drafted_by, correction) "
                       "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                       (quarter, name, text, nd, actor.audit_name, correction)).fetchone()[0]
    for b in bills:
        conn.execute("INSERT INTO bill_run_items (run_id, site_id, bill) VALUES (%s, %s, %s)",
                     (rid, sites[b["site"]], json.dumps(b)))
    _audit(conn, actor, "bill-run.drafted", f"bill-run:{rid}",
           {"quarter": quarter, "rates": name, "bills": len(bills), "superseded": superseded,
            "correction": correction,
            "total_dollars": round(sum(b["total_dollars"] for b in bills if b["volume_known"]), 2)})
    return rid


def run(conn, run_id: int) -> dict:
    """A bill run with its bills (``bills``: the drafts, by site; ``issued``: the bills
    issued from it)."""
    row = conn.execute(f"SELECT {', '.join(RUN_COLS)} FROM bill_runs WHERE id = %s", (run_id,)).fetchone()
    if row is None:
        raise InputError(f"no bill run {run_id} (sewerwatch bills list shows them)")
    r = dict(zip(RUN_COLS, row))
    r["bills"] = [b for (b,) in conn.execute(
        "SELECT i.bill FROM bill_run_items i JOIN sites s ON s.id = i.site_id WHERE i.run_id = %s ORDER BY s.key",
        (run_id,)).fetchall()]
    r["issued"] = _bills(conn, "b.run_id = %s", (run_id,))
    r["blocking"] = [f"{b['site']}: volume unknown ({b['volume_missing']})" for b in r["bills"] if not b["volume_known"]]
    return r


def list_runs(conn, quarter: str | None = None) -> list[dict]:
    rows = conn.execute(f"SELECT {', '.join(RUN_COLS)} FROM bill_runs WHERE (%s::text IS NULL OR quarter = %s) "
                        "ORDER BY id DESC", (quarter, quarter)).fetchall()
    out = []
    for row in rows:
        r = dict(zip(RUN_COLS, row))
        r["count"], r["total_dollars"] = conn.execute(
            "SELECT count(*), coalesce(sum((bill->>'total_dollars')::numeric), 0)::float8 FROM bill_run_items "
            "WHERE run_id = %s", (r["id"],)).fetchone()
        out.append(r)
    return out


def _reviewed(b: dict) -> dict:
    """What the clerk reviewed of a bill (the dates and payment terms aside)."""
    return {**{k: b.get(k) for k in REVIEWED},
            "charges": [(c["charge"], c["citation"], c["dollars"]) for c in b["charges"]],
            "results": [(r["sample"], r["analyte"], r["mg_l"], r["non_detect"]) for r in b["results"]]}


def issue_run(conn, run_id: int, issued_on: date, *, actor: Actor) -> dict:
    """Issue the bills of a drafted run on ``issued_on`` (see the module docstring); return
    the run with its issued bills. A run of a quarter billed meanwhile is refused
    (:func:`already_billed`); a correction is refused when the bills in force changed since
    its draft."""
    try:
        with conn.transaction():
            row = conn.execute("SELECT state, quarter FROM bill_runs WHERE id = %s FOR UPDATE", (run_id,)).fetchone()
            if row is None:
                raise InputError(f"no bill run {run_id} (sewerwatch bills list shows them)")
            state, quarter = row
            if state != "drafted":
                raise InputError(f"bill run {run_id} ({quarter}) is {state}: only a draft is issued"
                                 + (" (draft the quarter again)" if state == "superseded" else ""))
            _lock_quarter(conn, quarter)
            r = run(conn, run_id)
            if r["blocking"]:
                raise InputError(f"bill run {run_id} ({quarter}): not issued, " + "; ".join(r["blocking"])
                                 + ": give bill.volume_mg.<site> [MG] in the rates file and draft the quarter again")
            standing = in_force(conn, quarter)
            if r["correction"] is None and standing:
                raise AlreadyBilled(f"bill run {run_id}: not issued: " + already_billed(quarter, standing))
            replaced = {b["site"]: (b.get("correction") or {}).get("bill") for b in r["bills"]
                        if b.get("correction") or b.get("first_bill")}
            now = {b["site"]: b["id"] for b in standing}
            if r["correction"] is not None and any(now.get(k) != v for k, v in replaced.items()):
                raise InputError(f"bill run {run_id} ({quarter}): not issued: the bills in force changed since this "
                                 "correction was drafted: draft the correction again and review it")
            with tempfile.TemporaryDirectory(prefix="sewerwatch-rates-") as tmp:
                path = Path(tmp) / Path(r["rates_name"]).name
                path.write_text(r["rates_text"], encoding="utf-8")
                fresh = build_bills(conn, quarter, str(path), issued=issued_on,
                                    non_detect=r["non_detect"], source=r["rates_name"])
            drafted = {b["site"]: _reviewed(b) for b in r["bills"]}
            changed = [b["site"] for b in fresh if drafted.get(b["site"]) != _reviewed(b)]
            if changed or set(drafted) != {b["site"] for b in fresh}:
                raise InputError(f"bill run {run_id} ({quarter}): not issued: the bills of "
                                 f"{', '.join(changed) or 'the users'} differ from the draft reviewed (lab results or "
                                 "volumes changed since): draft the quarter again and review it")
            if r["correction"] is not None:
                by_site = {b["site"]: b for b in r["bills"]}
                fresh = [{**b, **{k: by_site[b["site"]][k] for k in ("correction", "first_bill")
                                   if by_site[b["site"]].get(k)}} for b in fresh if b["site"] in replaced]
            _issue(conn, run_id, quarter, fresh, issued_on, actor)
    except UniqueViolation:
        # another path issued the quarter between our check and our insert: the index refused it
        raise AlreadyBilled(f"bill run {run_id}: not issued: "
                            + already_billed(quarter, in_force(conn, quarter))) from None
    return run(conn, run_id)


def _lock_quarter(conn, quarter: str) -> None:
    """One issue of a quarter at a time (until the transaction ends)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch.bills:' || %s))", (quarter,))


def _issue(conn, run_id: int, quarter: str, bills: list[dict], issued_on: date, actor: Actor) -> None:
    """Store ``bills`` as issued by run ``run_id`` (inside the caller's transaction): a bill
    with a ``correction`` replaces the bill it names, which stays in the record."""
    sites = dict(conn.execute("SELECT key, id FROM sites").fetchall())
    for b in bills:
        old = (b.get("correction") or {}).get("bill")
        b["id"] = conn.execute("SELECT nextval(pg_get_serial_sequence('bills', 'id'))").fetchone()[0]
        if old is not None:
            done = conn.execute("UPDATE bills SET superseded_by = %s, superseded_at = now() "
                                "WHERE id = %s AND superseded_by IS NULL", (b["id"], old)).rowcount
            if done != 1:
                raise InputError(f"bill {old} was replaced already: draft the correction again")
        conn.execute(
            "INSERT INTO bills (id, site_id, period, period_start, period_end, total_dollars, detail, run_id, "
            "supersedes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (b["id"], sites[b["site"]], quarter, b["period_start"], b["period_end"], b["total_dollars"],
             json.dumps(b), run_id, old))
    conn.execute("UPDATE bill_runs SET state = 'issued', issued_on = %s, issued_at = now(), issued_by = %s "
                 "WHERE id = %s", (issued_on, actor.audit_name, run_id))
    _audit(conn, actor, "bill-run.issued", f"bill-run:{run_id}",
           {"quarter": quarter, "issued_on": issued_on.isoformat(), "bills": [b["id"] for b in bills],
            "replaced": [b["correction"]["bill"] for b in bills if b.get("correction")],
            "total_dollars": round(sum(b["total_dollars"] for b in bills), 2)})


def bill_quarter(conn, quarter: str, rates_path: str | Path, issued_on: date, *, non_detect: str | None = None,
                 actor: Actor) -> dict:
    """Draft and issue ``quarter`` in one step (``sewerwatch bill``): the same bill run as
    :func:`draft_quarter` then :func:`issue_run`, refused alike when the quarter is billed
    already or a volume is unknown (nothing stored then); return the run."""
    quarter = quarter.strip().upper()
    quarter_bounds(quarter, timezone.utc)
    standing = in_force(conn, quarter)
    if standing:
        raise AlreadyBilled(already_billed(quarter, standing))
    text = Path(rates_path).read_text(encoding="utf-8-sig")
    nd = non_detect or read_non_detect_policy(rates_path) or "zero"
    # raises, naming each site, when a volume is unknown
    bills = build_bills(conn, quarter, str(rates_path), issued=issued_on, non_detect=nd)
    try:
        with conn.transaction():
            _lock_quarter(conn, quarter)
            standing = in_force(conn, quarter)
            if standing:
                raise AlreadyBilled(already_billed(quarter, standing))
            rid = _store_run(conn, quarter, str(rates_path), text, nd, [{**b, "draft": True} for b in bills], actor,
                             None)
            _issue(conn, rid, quarter, bills, issued_on, actor)
    except UniqueViolation:
        raise AlreadyBilled(already_billed(quarter, in_force(conn, quarter))) from None
    return run(conn, rid)


def _bills(conn, where: str, params=()) -> list[dict]:
    rows = conn.execute(
        "SELECT b.id, s.key, s.name, s.pack, b.period, b.issued_at, b.total_dollars::float8, b.detail, b.run_id, "
        "b.paid_on, b.paid_dollars::float8, b.late_days, b.late_dollars::float8, b.superseded_by, b.superseded_at, "
        f"b.supersedes FROM bills b JOIN sites s ON s.id = b.site_id WHERE {where} ORDER BY b.period, s.key, b.id",
        params).fetchall()
    return [dict(zip(BILL_COLS, r)) for r in rows]


def bill(conn, bill_id: int) -> dict:
    """An issued bill: its row and its whole document (``detail``); ``replaced``: the bill
    it replaced (a corrected bill), ``replaced_by``: the corrected bill that replaced it;
    ``payments``: its payments from the bank's files (:mod:`lab.payments`)."""
    rows = _bills(conn, "b.id = %s", (bill_id,))
    if not rows:
        raise InputError(f"no bill {bill_id} (sewerwatch bills list --issued shows them)")
    b = rows[0]
    b["replaced"] = _bills(conn, "b.id = %s", (b["supersedes"],))[0] if b["supersedes"] else None
    b["replaced_by"] = _bills(conn, "b.id = %s", (b["superseded_by"],))[0] if b["superseded_by"] else None
    b["payments"] = [dict(zip(("id", "paid_on", "dollars", "reference", "late_dollars", "import_id"), r)) for r in
                     conn.execute("SELECT id, paid_on, dollars::float8, reference, late_dollars::float8, import_id "
                                  "FROM payments WHERE bill_id = %s ORDER BY paid_on, id", (bill_id,)).fetchall()]
    return b


def issued_bills(conn, quarter: str | None = None, site: str | None = None, *, replaced: bool = True) -> list[dict]:
    """The bills issued (``replaced=False``: only those in force, as a user's account counts them)."""
    return _bills(conn, "(%s::text IS NULL OR b.period = %s) AND (%s::text IS NULL OR s.key = %s)"
                  + ("" if replaced else " AND b.superseded_by IS NULL"), (quarter, quarter, site, site))


def record_payment(conn, bill_id: int, paid_on: date, *, today: date | None = None, dollars: float | None = None,
                   actor: Actor) -> dict:
    """Record that bill ``bill_id`` was paid on ``paid_on`` (``dollars``: the amount paid,
    default the bill's total) and the late charge its ordinance adds; return the bill.

    Refused, naming the field: a day after ``today`` (the village's today; default today in
    the bill's village's time zone: a payment not yet made), a day before the bill's date (a
    statement is payable "from and after the date of the statement", palmyra-wi,
    003_44f871d49a02d8f5.txt §13.46(8), and the late charge counts from it), a bill replaced
    by a corrected one, a bill recorded paid already; where parts were paid from the bank's
    files (:mod:`lab.payments`) or on the bill a corrected one replaced, an amount over what is
    left (the default: what is left).
    """
    with conn.transaction():
        if conn.execute("SELECT 1 FROM bills WHERE id = %s FOR UPDATE", (bill_id,)).fetchone() is None:
            raise InputError(f"no bill {bill_id} (sewerwatch bills list --issued shows them)")
        b = bill(conn, bill_id)
        if b["superseded_by"] is not None:
            raise InputError(f"bill {bill_id} ({b['site_name']}, {b['quarter']}) was replaced by the corrected bill "
                             f"{b['superseded_by']}: record the payment on that one")
        if b["paid_on"] is not None:
            raise InputError(f"bill {bill_id} ({b['site']}, {b['quarter']}) was recorded paid on {b['paid_on']} "
                             "already: nothing was changed")
        today = today or datetime.now(pack_timezone(b["pack"])).date()
        billed = date.fromisoformat(b["detail"]["issued"])
        if paid_on > today:
            raise InputError(f"paid on: {paid_on} is after today ({today}): a payment is recorded once it is made")
        if paid_on < billed:
            raise InputError(f"paid on: {paid_on} is before the bill's date ({billed}): a bill is paid after it is "
                             "issued")
        if dollars is not None and (isinstance(dollars, bool) or not 0 <= float(dollars) < 1e9):
            raise InputError(f"paid: expected dollars, 0 or more, got {dollars!r}")
        amount = b["total_dollars"]
        owed = statements.owed(conn, bill_id)
        if owed["paid"]:     # parts paid already (bank files, a bill it replaced): what is left is the default
            amount = owed["owed"]
            if amount <= 0 or (dollars is not None and float(dollars) > amount + 0.004):
                raise InputError(f"paid: bill {bill_id} ({b['site']}, {b['quarter']}) has ${max(amount, 0):,.2f} "
                                 "left to pay after the payments recorded on its quarter: nothing was changed")
        late = late_charge(b["pack"], amount, billed, paid_on) if b["detail"].get("payment") else None
        if owed["late"]:     # a late charge is added to a quarter once (lab.statements)
            late = None
        conn.execute("UPDATE bills SET paid_on = %s, paid_dollars = %s, late_days = %s, late_dollars = %s "
                     "WHERE id = %s", (paid_on, amount if dollars is None else round(float(dollars), 2),
                                      late.days_late if late else 0, late.dollars if late else 0.0, bill_id))
        _audit(conn, actor, "bill.paid", f"bill:{bill_id}",
               {"paid_on": paid_on.isoformat(), "dollars": amount if dollars is None else dollars,
                "late_days": late.days_late if late else 0, "late_dollars": late.dollars if late else 0.0,
                "citation": late.citation if late else None})
    return bill(conn, bill_id)
