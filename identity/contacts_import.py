"""The address book from a CSV file: previewed, then committed; nothing lost.

**The file** (UTF-8, a header row; other columns are ignored)::

    site,entry,name,title,phone,email,street,city,state,zip
    plating,representative; emergency,Dana Reyes,Plant owner,608-555-0101,dana@plating.example,,,,
    plating,mailing address,,,,,"PO Box 12",Palmyra,WI,53156

``site``: the industrial user's id; ``entry``: the person's roles (one or more of
``representative``, ``plant-manager``, ``billing``, ``emergency``, or their words,
``authorised representative``..., separated by ``;``) with ``name`` and any of ``title``,
``phone``, ``email``; or an address (``facility address``, ``mailing address``, ``billing
address``) with ``street``, ``city``, ``state`` and ``zip``.

A person already in the book (the same user and e-mail address, else the same name) gets a
new version where the row differs, nothing where it is the same; a new one is added. An
address likewise. :func:`preview` says what each row would do, or why it cannot be used
(``<file> line <n>, column <c>: ...``), and writes nothing; :func:`commit` checks every row
again, saves the usable ones through :mod:`identity.contacts` (versions, audit rows) and puts
each other row in ``dead_letters`` (source ``contacts-import``) with its reason, so the rows
in are the rows saved, unchanged and dead. Committing the same rows twice changes nothing the
second time (every row is then unchanged). The office and ``sewerwatch contacts import
--commit`` do not call :func:`commit` directly: they keep the file first and save it once
(:mod:`identity.contacts_files`: the same file saved again is refused, naming what it did).
"""

from __future__ import annotations

import csv
import io
import json

from foundation.actor import Actor
from foundation.errors import InputError
from identity import contacts as book

#: ``dead_letters.source`` of the rows not used.
SOURCE = "contacts-import"
#: Largest file taken [bytes].
MAX_BYTES = 1024 * 1024
REQUIRED = ("site", "entry")
COLUMNS = ("site", "entry", "name", "title", "phone", "email", "street", "city", "state", "zip")
#: column -> the address field it fills
_ADDRESS_COLUMNS = {"street": "street", "city": "city", "state": "state", "zip": "postal_code"}
_ADDRESS_ENTRIES = {f"{k} address": k for k in book.ADDRESS_KINDS} | {f"{k}-address": k for k in book.ADDRESS_KINDS}


def read_rows(data: bytes, name: str) -> list[dict]:
    """The rows of the file, each with its ``line`` and ``raw`` text; one-line errors for a
    file that is not a contacts CSV."""
    if len(data) > MAX_BYTES:
        raise InputError(f"{name}: larger than {MAX_BYTES // 1024} KiB: not a contacts file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text))
    head = [h.strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED if c not in head]
    if missing:
        raise InputError(f"{name} line 1: the header lacks the column {', '.join(missing)} "
                         f"(columns: {','.join(COLUMNS)})")
    reader.fieldnames = head
    raw_lines = text.splitlines()
    rows = []
    for r in reader:
        line = reader.line_num
        rows.append({"line": line, "raw": raw_lines[line - 1] if 0 < line <= len(raw_lines) else "",
                     **{c: (r.get(c) or "").strip() for c in COLUMNS}})
    return rows


def _where(name: str, line: int, column: str) -> str:
    return f"{name} line {line}, column {column}"


def _check_row(conn, r: dict, name: str, sites: dict) -> dict:
    """What row ``r`` says, checked: ``{"kind": "address"|"contact", ...}``; InputError naming
    the line and column otherwise."""
    def col(column, fn):
        try:
            return fn()
        except InputError as exc:
            said = str(exc).split(": ", 1)[-1]
            raise InputError(f"{_where(name, r['line'], column)}: {said}") from None
    site = r["site"]
    if site not in sites:
        raise InputError(f"{_where(name, r['line'], 'site')}: no industrial user {site!r} "
                         f"(users: {', '.join(sorted(sites)) or 'none'})")
    entry = r["entry"].lower()
    if entry in _ADDRESS_ENTRIES:
        a = {}
        for column, f in _ADDRESS_COLUMNS.items():     # each column checked alone, so its error names it
            a[f] = col(column, lambda column=column, f=f: book.check_address(
                {"street": "x", "city": "x", "state": "WI", "postal_code": "00000", f: r[column]})[f])
        return {"kind": "address", "site": site, "address": _ADDRESS_ENTRIES[entry], "values": a}
    roles = col("entry", lambda: book.check_roles(r["entry"], "entry"))
    v = {"roles": roles,
         "full_name": col("name", lambda: book._text(r["name"], "name", required=True)),
         "title": col("title", lambda: book._text(r["title"], "title")),
         "phone": col("phone", lambda: book.check_phone(r["phone"])),
         "email": col("email", lambda: book.check_email(r["email"]))}
    return {"kind": "contact", "site": site, "values": v}


def _plan(conn, rows: list[dict], name: str) -> list[dict]:
    """Each row with ``action`` (``add``, ``change``, ``unchanged`` or ``dead``), ``reason`` and
    what it names (``contact``: the number of the person it changes)."""
    sites = {k: i for k, i in conn.execute("SELECT key, id FROM sites").fetchall()}
    people = {k: book.contacts_of(conn, k) for k in sites}
    addrs: dict[str, dict] = {}
    seen: dict[tuple, int] = {}
    out = []
    for r in rows:
        o = {"line": r["line"], "raw": r["raw"], "site": r["site"], "entry": r["entry"], "action": "dead",
             "reason": None}
        try:
            c = _check_row(conn, r, name, sites)
        except InputError as exc:
            o["reason"] = str(exc)
            out.append(o)
            continue
        o["checked"] = c
        if c["kind"] == "address":
            key = ("address", c["site"], c["address"])
            if c["site"] not in addrs:
                addrs[c["site"]] = book.addresses_of(conn, c["site"])
            now = addrs[c["site"]].get(c["address"])
            same = now is not None and all(now[k] == c["values"][k] for k in book.ADDRESS_FIELDS)
            o["action"] = "unchanged" if same else "change" if now else "add"
        else:
            v = c["values"]
            email = (v["email"] or "").lower()
            key = ("person", c["site"], email or v["full_name"].lower())
            match = next((p for p in people[c["site"]] if email and (p["email"] or "").lower() == email), None) or \
                next((p for p in people[c["site"]] if not email and p["full_name"].lower() == v["full_name"].lower()),
                     None)
            if match is None:
                o["action"] = "add"
            else:
                o["contact"] = match["id"]
                same = all(match[k] == v[k] for k in book.CONTACT_FIELDS)
                o["action"] = "unchanged" if same else "change"
        if key in seen:
            o["action"], o["reason"] = "dead", (f"{_where(name, r['line'], 'entry')}: the same "
                                                f"{'address' if key[0] == 'address' else 'person'} as line {seen[key]} "
                                                "of this file: one row each")
        else:
            seen[key] = r["line"]
        out.append(o)
    return out


def _summary(rows: list[dict]) -> dict:
    count = {a: sum(1 for r in rows if r["action"] == a) for a in ("add", "change", "unchanged", "dead")}
    for r in rows:
        r.pop("checked", None)
    return {"rows": rows, **count, "total": len(rows)}


def preview(conn, filename: str, data: bytes) -> dict:
    """What committing the file would do, row by row; nothing is written.

    Returns
    -------
    dict
        ``rows`` (each ``line``, ``site``, ``entry``, ``action``, ``reason``), the counts
        ``add``, ``change``, ``unchanged``, ``dead`` and ``total``.
    """
    name = filename.rsplit("/", 1)[-1] or "contacts file"
    return _summary(_plan(conn, read_rows(data, name), name))


def commit(conn, filename: str, data: bytes, *, actor: Actor, import_id: int | None = None) -> dict:
    """Save the file's usable rows (checked again now) and put the others in
    ``dead_letters`` with their reasons; one transaction. Returns :func:`preview`'s counts
    of what was done. ``import_id``: the contacts file kept in the database that the rows
    come from (:func:`identity.contacts_files.save`), named in the dead letters and the audit
    row."""
    name = filename.rsplit("/", 1)[-1] or "contacts file"
    rows = read_rows(data, name)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-contacts-import'))")
        plan = _plan(conn, rows, name)
        for o in plan:
            c = o.get("checked")
            try:
                if o["action"] in ("add", "change") and c["kind"] == "address":
                    book.set_address(conn, c["site"], c["address"], c["values"], actor=actor,
                                     note=f"from {name} line {o['line']}")
                elif o["action"] == "add":
                    o["contact"] = book.add_contact(conn, c["site"], c["values"], actor=actor,
                                                    note=f"from {name} line {o['line']}")["id"]
                elif o["action"] == "change":
                    book.edit_contact(conn, o["contact"], c["values"], actor=actor, note=f"from {name} line {o['line']}")
            except InputError as exc:
                o["action"], o["reason"] = "dead", f"{_where(name, o['line'], 'entry')}: {exc}"
            if o["action"] == "dead":
                conn.execute("INSERT INTO dead_letters (source, topic, payload, reason, detail) VALUES (%s, %s, %s, %s, %s)",
                             (SOURCE, f"{name}:{o['line']}", o["raw"].encode("utf-8"), o["reason"],
                              json.dumps({"file": name, "import": import_id, "line": o["line"],
                                          "actor": actor.audit_name})))
        report = _summary(plan)
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'contacts.import', %s, %s)",
                     (actor.audit_name, f"file:{name}", json.dumps({k: report[k] for k in
                                                                    ("add", "change", "unchanged", "dead", "total")}
                                                                   | {"via": actor.via, "import": import_id})))
    return report
