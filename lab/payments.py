"""Payments from the bank's file: previewed, then recorded once, each matched to its bill by
the bill's number; nothing lost.

**The file** (CSV, UTF-8, a header row; other columns are ignored)::

    date,amount,reference
    2026-07-20,100.00,BILL 12 LAKESIDE PLATING
    07/21/2026,"$1,250.00",12

``date``: the day paid, ISO (``2026-07-20``) or the bank's ``MM/DD/YYYY``; ``amount``:
dollars, a ``$`` and thousands commas allowed, above zero; ``reference``: the bill's number
as printed on it, alone (``12``) or after the word "bill" (``BILL 12``, ``Bill #12``,
``bill no. 12``).

**The preview** (:func:`stage`) keeps the file as it came (table ``payment_imports``,
migration 0240) and says of each row whether it is *matched* (the bill, its user and
quarter, what was owed) or not, with the reason, one line each: a row that cannot be read
(which column, what was found), *unknown bill number*, *date in the future* (after the
village's today: a payment is recorded once it is made), *before the bill's date*,
*duplicate of a payment already recorded* (the same quarter's bill, day and amount: recorded
already, or earlier in the file), *amount over what is owed* (the bill in force with the
late charges less what was paid, counting the file's earlier rows). A row paying a bill that
a corrected bill replaced counts on the corrected bill, and says so.

**Recording** (:func:`record`) checks every row again (something may have been recorded
since the preview) and records only the matched rows in ``payments``, with the late charge
the ordinance adds where the payment comes after the grace period and none was recorded on
that quarter yet (:func:`lab.charges.late_charge` on what was owed, palmyra-wi
003_44f871d49a02d8f5.txt §13.46(8)); every other row goes to ``dead_letters`` (source
``bank-payments``, topic ``bank file <id>, <file>:<line>``, the row as it was, the reason).
A file is recorded once: the same bytes again are refused, naming the import that recorded
them.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from datetime import date, datetime

from foundation.actor import Actor
from foundation.errors import InputError
from lab.charges import late_charge, late_terms
from lab.formulas.money import cents
from lab.statements import bills_of, chains, payments_of

#: ``dead_letters.source`` of the rows not recorded.
SOURCE = "bank-payments"
#: Largest bank file taken [bytes].
MAX_BYTES = 2 * 1024 * 1024
COLUMNS = ("date", "amount", "reference")
_BILL = re.compile(r"^\s*(?:bill\s*(?:no\.?|number|#)?\s*)?#?\s*(\d{1,12})\b", re.I)
_ANY_BILL = re.compile(r"\bbill\s*(?:no\.?|number|#)?\s*#?\s*(\d{1,12})\b", re.I)
COLS = ("id", "filename", "sha256", "preview", "state", "staged_by", "staged_at", "recorded_by", "recorded_at",
        "report")


class RecordedAlready(InputError):
    """The same bank file recorded before (the message names that import)."""


def _day(text: str) -> date:
    text = text.strip()
    for fmt in ("%Y-%m-%d", "%m/%d/%Y"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    raise ValueError(f"date: expected a day such as 2026-07-20 or 07/20/2026, got {text!r}")


def _amount(text: str) -> float:
    t = text.replace("$", "").replace(",", "").strip()
    try:
        x = float(t)
    except ValueError:
        raise ValueError(f"amount: expected dollars such as 1250.00, got {text!r}") from None
    if not 0 < x < 1e9 or x != x:
        raise ValueError(f"amount: expected dollars above zero, got {text!r}")
    return cents(x)


def bill_number(reference: str) -> int | None:
    """The bill's number a bank reference holds (``12``, ``BILL 12 ...``, ``... bill #12``), or None."""
    m = _BILL.match(reference) or _ANY_BILL.search(reference)
    return int(m.group(1)) if m else None


def read_rows(data: bytes, name: str) -> list[dict]:
    """The file's rows: ``line``, ``raw`` (the row as it was) and ``date``, ``amount``,
    ``reference`` as given (strings).

    Raises
    ------
    InputError
        Not UTF-8 text, too large, or a header without the columns (naming the file).
    """
    if len(data) > MAX_BYTES:
        raise InputError(f"{name}: larger than {MAX_BYTES // 1024 // 1024} MB: not a bank file of payments")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text: the bank file is a CSV file") from None
    lines = text.splitlines()
    reader = csv.reader(lines)
    header = next(reader, None)
    if not header:
        raise InputError(f"{name}: empty: expected a header row with the columns date, amount, reference")
    cols = [h.strip().lower() for h in header]
    missing = [c for c in COLUMNS if c not in cols]
    if missing:
        raise InputError(f"{name}: line 1: no column {', '.join(missing)} (expected the columns date, amount, "
                         f"reference; found {', '.join(cols) or 'none'})")
    at = {c: cols.index(c) for c in COLUMNS}
    rows = []
    for n, row in enumerate(reader, start=2):
        if not any(x.strip() for x in row):
            continue
        rows.append({"line": n, "raw": lines[n - 1] if n - 1 < len(lines) else ",".join(row),
                     **{c: (row[i] if i < len(row) else "") for c, i in at.items()}})
    return rows


def check(conn, rows: list[dict], today: date) -> list[dict]:
    """Each row matched or not (see the module docstring); nothing stored.

    Returns
    -------
    list of dict
        Per row ``line``, ``raw``, ``paid_on``, ``dollars`` [$], ``reference``, ``bill``
        (the bill in force it counts on), ``site`` and its ``name``, ``quarter``, ``owed`` [$] before it,
        ``late_dollars`` [$] (the late charge recorded with it), ``matched`` and ``reason``
        (why not matched; a note for a matched row paying a replaced bill's number).
    """
    bills = bills_of(conn, None)
    by_id = {b["id"]: b for b in bills}
    root = chains(bills)
    in_force = {}                                  # chain -> the bill in force now (the last issued)
    for b in sorted(bills, key=lambda b: (b["issued"], b["id"])):
        in_force[root[b["id"]]] = b
    paid = {c: 0.0 for c in in_force}
    late = {c: 0.0 for c in in_force}
    seen: dict[tuple, str] = {}
    for b in bills:
        c = root[b["id"]]
        if b["paid_on"] is not None:
            paid[c] += b["paid"]
            late[c] += b["late"]
            seen.setdefault((c, b["paid_on"], cents(b["paid"])), f"paid on bill {b['id']} on {b['paid_on']}")
    for p in payments_of(conn, None):
        c = root[p["bill"]]
        paid[c] += p["dollars"]
        late[c] += p["late"]
        seen.setdefault((c, p["paid_on"], cents(p["dollars"])),
                        f"payment {p['id']} on bill {p['bill']} on {p['paid_on']}"
                        + (f", bank file {p['import_id']}" if p["import_id"] else ""))
    out = []
    for r in rows:
        o = {"line": r["line"], "raw": r["raw"], "reference": r["reference"].strip(), "paid_on": None,
             "dollars": None, "bill": None, "site": None, "name": None, "quarter": None, "owed": None,
             "late_dollars": 0.0, "matched": False, "reason": None}
        out.append(o)
        try:
            day, dollars = _day(r["date"]), _amount(r["amount"])
        except ValueError as e:
            o["reason"] = str(e)
            continue
        o["paid_on"], o["dollars"] = day.isoformat(), dollars
        number = bill_number(r["reference"])
        if number is None:
            o["reason"] = f"unknown bill number: the reference {o['reference']!r} holds no bill number"
            continue
        if number not in by_id:
            o["reason"] = f"unknown bill number: no bill {number}"
            continue
        c = root[number]
        now = in_force[c]
        o.update(bill=now["id"], site=now["site"], name=now["name"], quarter=now["quarter"])
        if day > today:
            o["reason"] = f"date in the future: {day} is after today ({today}): a payment is recorded once it is made"
            continue
        if day < by_id[number]["issued"]:
            o["reason"] = f"before the bill's date: {day} is before bill {number} of {by_id[number]['issued']}"
            continue
        if (c, day, dollars) in seen:
            o["reason"] = f"duplicate of a payment already recorded: {seen[(c, day, dollars)]}"
            continue
        owed = cents(now["total"] + late[c] - paid[c])
        lc = 0.0
        if late[c] == 0 and owed > 0 and late_terms(now["pack"]) is not None and day >= now["issued"]:
            lc = late_charge(now["pack"], owed, now["issued"], day).dollars
        o["owed"] = cents(owed + lc)
        if dollars > o["owed"] + 0.004:
            o["reason"] = (f"amount over what is owed: ${dollars:,.2f} paid, ${max(o['owed'], 0):,.2f} owed on bill "
                           f"{now['id']} ({now['name']}, {now['quarter']})")
            continue
        o["matched"], o["late_dollars"] = True, lc
        if number != now["id"]:
            o["reason"] = f"bill {number} was replaced by the corrected bill {now['id']}: counted on it"
        paid[c] += dollars
        late[c] += lc
        seen[(c, day, dollars)] = f"line {r['line']} of this file"
    return out


def _summary(rows: list[dict]) -> dict:
    good = [r for r in rows if r["matched"]]
    return {"rows": rows, "matched": len(good), "unmatched": len(rows) - len(good),
            "dollars": cents(sum(r["dollars"] for r in good))}


def _recorded(conn, sha: str) -> dict | None:
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM payment_imports WHERE sha256 = %s AND state = 'recorded'",
                       (sha,)).fetchone()
    return dict(zip(COLS, row)) if row else None


def _already(name: str, done: dict) -> str:
    rep = done["report"] or {}
    return (f"{name}: this bank file was recorded already as bank file {done['id']} ({done['filename']}) on "
            f"{done['recorded_at']:%Y-%m-%d} by {done['recorded_by']}: {rep.get('matched', 0)} payments "
            f"(${rep.get('dollars', 0):,.2f}) recorded, {rep.get('unmatched', 0)} rows not matched; "
            "nothing was recorded now")


def stage(conn, filename: str, data: bytes, today: date, *, actor: Actor) -> dict:
    """Keep a bank file with its preview; nothing of it is recorded yet.

    Returns
    -------
    dict
        The import (``id``, ``filename``, ``state``) with ``preview``: ``rows`` (:func:`check`),
        ``matched``, ``unmatched`` and ``dollars`` [$] matched.

    Raises
    ------
    RecordedAlready
        The same bytes were recorded before (naming that import and what it recorded).
    InputError
        A file that is not a bank file of payments.
    """
    name = filename.rsplit("/", 1)[-1][-120:] or "bank file"
    sha = hashlib.sha256(data).hexdigest()
    done = _recorded(conn, sha)
    if done:
        raise RecordedAlready(_already(name, done))
    preview = _summary(check(conn, read_rows(data, name), today))
    with conn.transaction():
        iid = conn.execute("INSERT INTO payment_imports (filename, sha256, data, preview, staged_by) "
                           "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                           (name, sha, data, json.dumps(preview), actor.audit_name)).fetchone()[0]
    return bank_file(conn, iid)


def bank_file(conn, import_id: int) -> dict:
    """A bank file staged or recorded: its row with ``preview`` and, once recorded, ``report``."""
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM payment_imports WHERE id = %s", (import_id,)).fetchone()
    if row is None:
        raise InputError(f"no bank file {import_id}")
    return dict(zip(COLS, row))


def record(conn, import_id: int, today: date, *, actor: Actor) -> dict:
    """Record a staged bank file's matched rows (checked again now), the others into
    ``dead_letters`` with their reasons; return the import with its ``report``.

    Raises
    ------
    RecordedAlready
        This import, or another of the same bytes, was recorded already.
    """
    with conn.transaction():
        row = conn.execute("SELECT state, filename, sha256, data FROM payment_imports WHERE id = %s FOR UPDATE",
                           (import_id,)).fetchone()
        if row is None:
            raise InputError(f"no bank file {import_id}")
        state, name, sha, data = row
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch.payments'))")
        done = _recorded(conn, sha)
        if done:
            raise RecordedAlready(_already(name, done))
        if state != "staged":
            raise InputError(f"bank file {import_id} ({name}) is {state}: nothing was recorded")
        report = _summary(check(conn, read_rows(bytes(data), name), today))
        for r in report["rows"]:
            if r["matched"]:
                conn.execute("INSERT INTO payments (bill_id, paid_on, dollars, reference, late_days, late_dollars, "
                             "import_id, line, recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                             (r["bill"], r["paid_on"], r["dollars"], r["reference"][:200], _late_days(conn, r),
                              r["late_dollars"], import_id, r["line"], actor.audit_name))
            else:
                conn.execute("INSERT INTO dead_letters (source, topic, payload, reason, detail) "
                             "VALUES (%s, %s, %s, %s, %s)",
                             (SOURCE, f"bank file {import_id}, {name}:{r['line']}", r["raw"].encode("utf-8"),
                              r["reason"], json.dumps({"file": name, "import": import_id, "line": r["line"],
                                                       "actor": actor.audit_name})))
        conn.execute("UPDATE payment_imports SET state = 'recorded', recorded_by = %s, recorded_at = now(), "
                     "report = %s WHERE id = %s", (actor.audit_name, json.dumps(report), import_id))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'payments.imported', %s, %s)",
                     (actor.audit_name, f"bank-file:{import_id}",
                      json.dumps({"file": name, "matched": report["matched"], "unmatched": report["unmatched"],
                                  "dollars": report["dollars"], "via": actor.via})))
    return bank_file(conn, import_id)


def _late_days(conn, r: dict) -> int:
    if not r["late_dollars"]:
        return 0
    pack, issued = conn.execute("SELECT s.pack, b.detail->>'issued' FROM bills b JOIN sites s ON s.id = b.site_id "
                                "WHERE b.id = %s", (r["bill"],)).fetchone()
    return late_charge(pack, 0.0, date.fromisoformat(issued), date.fromisoformat(r["paid_on"])).days_late
