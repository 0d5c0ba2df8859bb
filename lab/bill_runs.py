"""A quarter's bills drafted, reviewed, issued, and paid (issue 25 item 6): the steps the
clerk takes, the same functions for ``sewerwatch bills`` and the office.

- :func:`draft_quarter` computes every user's bill for the quarter as a draft
  (:func:`lab.billing.build_bills` with ``draft=True``: the same computation as ``sewerwatch
  bill --draft``) and stores it as a *bill run* (migration 0156) with the rates file's text as
  it was, so the draft can be reviewed bill by bill: the metered volume and its coverage, the
  lab results used, the charges with their citations. A new draft of the quarter supersedes
  the one before.
- :func:`issue_run` issues the quarter: the bills computed again for the issue date from the
  same rates (the payment terms count from it) and stored in ``bills``. When they differ from
  the draft in anything the clerk reviewed (volume, results, charges, total: a lab result
  corrected meanwhile), nothing is issued and the quarter must be drafted again; a bill whose
  volume is unknown stops the issue as ``sewerwatch bill`` does.
- :func:`record_payment` records the day a bill was paid and the late charge the ordinance
  adds for it (:func:`lab.charges.late_charge`, the pack's ``[late_charge]``: palmyra-wi
  §13.46(8), 3 % of a statement not paid within 20 days).

Each step writes an ``audit_log`` row naming who acted (:class:`foundation.actor.Actor`)
and through which face; issuing and paying lock their rows, so a second click waits for
the first and is then refused.
"""

from __future__ import annotations

import json
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path

from foundation.actor import Actor
from foundation.errors import InputError
from lab.billing import build_bills, quarter_bounds
from lab.charges import late_charge
from lab.readers.rates import read_non_detect_policy, read_rates

RUN_COLS = ("id", "quarter", "state", "rates_name", "rates_text", "non_detect", "drafted_at", "drafted_by",
            "issued_on", "issued_at", "issued_by")
BILL_COLS = ("id", "site", "site_name", "pack", "quarter", "issued_at", "total_dollars", "detail", "run_id",
             "paid_on", "paid_dollars", "late_days", "late_dollars")
#: What a reviewed draft and the issued bill must agree on.
REVIEWED = ("volume_mg", "volume_known", "total_dollars")


def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def draft_quarter(conn, quarter: str, rates_path: str | Path | None = None, *, non_detect: str | None = None,
                  on: date | None = None, actor: Actor, name: str | None = None) -> dict:
    """Draft every user's bill for ``quarter`` from the stored rates in effect on its first
    day (:func:`lab.store.rates.quarter_file`; a rates file ``rates_path`` given is saved as
    that version first, ``name`` its name as sent); store the run (the earlier draft of the
    quarter superseded); return it with its bills, which name the rates version."""
    from lab.store.rates import quarter_file

    quarter = quarter.strip().upper()
    quarter_bounds(quarter, timezone.utc)            # one-line error for a bad quarter
    with quarter_file(conn, quarter, rates_path, name=name, actor=actor) as (path, label):
        return _draft(conn, quarter, path, non_detect=non_detect, on=on, actor=actor, name=label)


def _draft(conn, quarter: str, rates_path: Path, *, non_detect: str | None, on: date | None, actor: Actor,
           name: str) -> dict:
    read_rates(rates_path)                           # and for a bad rates file
    text = Path(rates_path).read_text(encoding="utf-8-sig")
    nd = non_detect or read_non_detect_policy(rates_path) or "zero"
    on = on or datetime.now(timezone.utc).date()
    bills = build_bills(conn, quarter, str(rates_path), issued=on, store=False, non_detect=nd, draft=True, source=name)
    sites = dict(conn.execute("SELECT key, id FROM sites").fetchall())
    with conn.transaction():
        superseded = [r[0] for r in conn.execute(
            "UPDATE bill_runs SET state = 'superseded' WHERE quarter = %s AND state = 'drafted' RETURNING id",
            (quarter,)).fetchall()]
        rid = conn.execute("INSERT INTO bill_runs (quarter, rates_name, rates_text, non_detect, drafted_by) "
                           "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                           (quarter, name, text, nd, actor.audit_name)).fetchone()[0]
        for b in bills:
            conn.execute("INSERT INTO bill_run_items (run_id, site_id, bill) VALUES (%s, %s, %s)",
                         (rid, sites[b["site"]], json.dumps(b)))
        _audit(conn, actor, "bill-run.drafted", f"bill-run:{rid}",
               {"quarter": quarter, "rates": name, "bills": len(bills), "superseded": superseded,
                "total_dollars": round(sum(b["total_dollars"] for b in bills if b["volume_known"]), 2)})
    return run(conn, rid)


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
    the run with its issued bills."""
    with conn.transaction():
        row = conn.execute("SELECT state, quarter FROM bill_runs WHERE id = %s FOR UPDATE", (run_id,)).fetchone()
        if row is None:
            raise InputError(f"no bill run {run_id} (sewerwatch bills list shows them)")
        state, quarter = row
        if state != "drafted":
            raise InputError(f"bill run {run_id} ({quarter}) is {state}: only a draft is issued"
                             + (" (draft the quarter again)" if state == "superseded" else ""))
        r = run(conn, run_id)
        if r["blocking"]:
            raise InputError(f"bill run {run_id} ({quarter}): not issued, " + "; ".join(r["blocking"])
                             + ": give bill.volume_mg.<site> [MG] in the rates file and draft the quarter again")
        with tempfile.TemporaryDirectory(prefix="sewerwatch-rates-") as tmp:
            path = Path(tmp) / Path(r["rates_name"]).name
            path.write_text(r["rates_text"], encoding="utf-8")
            fresh = build_bills(conn, quarter, str(path), issued=issued_on, store=False, non_detect=r["non_detect"],
                                source=r["rates_name"])
        drafted = {b["site"]: _reviewed(b) for b in r["bills"]}
        changed = [b["site"] for b in fresh if drafted.get(b["site"]) != _reviewed(b)]
        if changed or set(drafted) != {b["site"] for b in fresh}:
            raise InputError(f"bill run {run_id} ({quarter}): not issued: the bills of "
                             f"{', '.join(changed) or 'the users'} differ from the draft reviewed (lab results or "
                             "volumes changed since): draft the quarter again and review it")
        sites = [dict(zip(("id", "key"), x)) for x in conn.execute("SELECT id, key FROM sites ORDER BY key").fetchall()]
        by_key = {b["site"]: b for b in fresh}
        for s in sites:
            b = by_key[s["key"]]
            b["id"] = conn.execute(
                "INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail, run_id) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (s["id"], quarter, b["period_start"], b["period_end"], b["total_dollars"], json.dumps(b),
                 run_id)).fetchone()[0]
        conn.execute("UPDATE bill_runs SET state = 'issued', issued_on = %s, issued_at = now(), issued_by = %s "
                     "WHERE id = %s", (issued_on, actor.audit_name, run_id))
        _audit(conn, actor, "bill-run.issued", f"bill-run:{run_id}",
               {"quarter": quarter, "issued_on": issued_on.isoformat(), "bills": [b["id"] for b in fresh],
                "total_dollars": round(sum(b["total_dollars"] for b in fresh), 2)})
    return run(conn, run_id)


def _bills(conn, where: str, params=()) -> list[dict]:
    rows = conn.execute(
        "SELECT b.id, s.key, s.name, s.pack, b.period, b.issued_at, b.total_dollars::float8, b.detail, b.run_id, "
        f"b.paid_on, b.paid_dollars::float8, b.late_days, b.late_dollars::float8 FROM bills b JOIN sites s "
        f"ON s.id = b.site_id WHERE {where} ORDER BY b.period, s.key, b.id", params).fetchall()
    return [dict(zip(BILL_COLS, r)) for r in rows]


def bill(conn, bill_id: int) -> dict:
    """An issued bill: its row and its whole document (``detail``)."""
    rows = _bills(conn, "b.id = %s", (bill_id,))
    if not rows:
        raise InputError(f"no bill {bill_id} (sewerwatch bills list --issued shows them)")
    return rows[0]


def issued_bills(conn, quarter: str | None = None, site: str | None = None) -> list[dict]:
    return _bills(conn, "(%s::text IS NULL OR b.period = %s) AND (%s::text IS NULL OR s.key = %s)",
                  (quarter, quarter, site, site))


def record_payment(conn, bill_id: int, paid_on: date, *, dollars: float | None = None, actor: Actor) -> dict:
    """Record that bill ``bill_id`` was paid on ``paid_on`` (``dollars``: the amount paid,
    default the bill's total) and the late charge its ordinance adds; return the bill."""
    with conn.transaction():
        if conn.execute("SELECT 1 FROM bills WHERE id = %s FOR UPDATE", (bill_id,)).fetchone() is None:
            raise InputError(f"no bill {bill_id} (sewerwatch bills list --issued shows them)")
        b = bill(conn, bill_id)
        if b["paid_on"] is not None:
            raise InputError(f"bill {bill_id} ({b['site']}, {b['quarter']}) was recorded paid on {b['paid_on']} "
                             "already: nothing was changed")
        billed = date.fromisoformat(b["detail"]["issued"])
        if dollars is not None and (isinstance(dollars, bool) or not 0 <= float(dollars) < 1e9):
            raise InputError(f"paid: expected dollars, 0 or more, got {dollars!r}")
        amount = b["total_dollars"]
        late = None
        if b["detail"].get("payment"):
            late = late_charge(b["pack"], amount, billed, paid_on)
        elif paid_on < billed:
            raise InputError(f"paid {paid_on} is before the bill's date {billed}")
        conn.execute("UPDATE bills SET paid_on = %s, paid_dollars = %s, late_days = %s, late_dollars = %s "
                     "WHERE id = %s", (paid_on, amount if dollars is None else round(float(dollars), 2),
                                      late.days_late if late else 0, late.dollars if late else 0.0, bill_id))
        _audit(conn, actor, "bill.paid", f"bill:{bill_id}",
               {"paid_on": paid_on.isoformat(), "dollars": amount if dollars is None else dollars,
                "late_days": late.days_late if late else 0, "late_dollars": late.dollars if late else 0.0,
                "citation": late.citation if late else None})
    return bill(conn, bill_id)
