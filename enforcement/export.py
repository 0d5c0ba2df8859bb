"""The program's export of one year (``sewerwatch export --year YYYY DIR``): a folder a state
auditor or a successor system reads without sewerwatch.

Every table of the database as ``<table>.csv`` (PostgreSQL's CSV with a header line) and
``<table>.parquet`` (typed columns, times in UTC), ``README.md`` naming each table's columns,
types and the rows it holds (those of the year by the table's time column, in the village's
calendar; all rows of the tables without one), ``manifest.json`` with each file's size and
SHA-256 and ``SHA256SUMS`` (``sha256sum -c SHA256SUMS`` checks the folder). The documents of
the year are there as their files: the reports industrial users signed (the bytes signed, the
copy of record, the attachments), the notices issued and the bills of the year's quarters as
PDFs, drawn by the functions the office serves them with. Password hashes and second-factor
secrets are left out; so are the tables that only coordinate the running program (leases,
sign-in counters).

``sewerwatch export`` and the Reports page's download (:func:`zip_folder` of the folder) both
call :func:`export_year`.
"""

from __future__ import annotations

import hashlib
import json
import time
import zipfile
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from psycopg import sql
from psycopg.pq import TransactionStatus

from foundation.errors import InputError
from foundation.moments import midnight, village_zone
from foundation.paths import MIGRATIONS_DIR, file_sha256

#: A table's time column, the first of these it has (the time the row's fact happened).
TIME_COLUMNS = ("time", "minute", "at", "collected", "occurred", "start_time", "period_start", "taken_at",
                "performed_at", "visited_at", "signed_at", "issued_on", "drafted_on", "opened_at", "received_at",
                "uploaded_at", "started_at", "window_start", "invited_at", "drafted_at", "entered_at",
                "recorded_at", "created_at", "applied_at")
#: Tables exported whole whatever their times: what the year's rows refer to.
WHOLE = ("sites", "sensors", "permits", "instruments", "rate_versions", "web_accounts", "schema_migrations",
         "alert_uids")
#: Tables of the running program's coordination, not of the record.
LEFT_OUT = ("run_lease", "web_signin_failures", "ack_links_used", "web_form_submissions", "maintenance_state",
            "web_calendar_feeds")
#: Columns never exported.
SECRET_COLUMNS = ("password_hash", "totp_secret")
#: PostgreSQL type -> Arrow type (anything else as text).
ARROW = {"smallint": pa.int16(), "integer": pa.int32(), "bigint": pa.int64(), "real": pa.float32(),
         "double precision": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
         "timestamp with time zone": pa.timestamp("us", tz="UTC"), "timestamp without time zone": pa.timestamp("us"),
         "bytea": pa.binary(), "text": pa.string(), "character varying": pa.string()}
BATCH = 50_000


def column_notes() -> dict[tuple[str, str], str]:
    """(table, column) -> the comment its migration gives it (``name type ..., -- what it is``),
    read from the migration files in version order (a later file's comment wins)."""
    import re

    create = re.compile(r"^\s*CREATE TABLE (?:IF NOT EXISTS )?(\w+)\s*\(", re.I)
    column = re.compile(r"^\s+(\w+)\s+\w[^-]*--\s*(.+?)\s*$")
    added = re.compile(r"ALTER TABLE (?:IF EXISTS )?(\w+)\s+ADD COLUMN (?:IF NOT EXISTS )?(\w+)[^-]*--\s*(.+?)\s*$", re.I)
    notes: dict[tuple[str, str], str] = {}
    for path in sorted(MIGRATIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        table = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if (c := create.match(line)):
                table = c.group(1)
            elif table and line.lstrip().startswith(")"):
                table = None
            elif table and (c := column.match(line)) and c.group(1).upper() not in ("UNIQUE", "PRIMARY", "CHECK"):
                notes[(table, c.group(1))] = c.group(2)
            elif (c := added.search(line)):
                notes[(c.group(1), c.group(2))] = c.group(3)
    return notes


def _tables(conn) -> list[tuple[str, list[tuple[str, str, str | None]]]]:
    rows = conn.execute(
        "SELECT c.table_name, c.column_name, c.data_type, col_description(format('%I', c.table_name)::regclass, "
        "c.ordinal_position) FROM information_schema.columns c JOIN information_schema.tables t "
        "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
        "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
        "ORDER BY c.table_name, c.ordinal_position").fetchall()
    out: dict[str, list] = {}
    notes = column_notes()
    for table, column, dtype, comment in rows:
        if table not in LEFT_OUT and column not in SECRET_COLUMNS:
            out.setdefault(table, []).append((column, dtype, comment or notes.get((table, column))))
    return sorted(out.items())


def export_year(conn, cfg, year: int, folder: Path, log=lambda msg: None) -> dict:
    """Write the year's export into ``folder`` (new or empty).

    Every table is read in one read-only snapshot (``REPEATABLE READ``), so the files agree
    with each other while ``run`` goes on writing; the connection's session is left as it was.

    Parameters
    ----------
    conn : psycopg.Connection
        The owner's connection.
    year : int
        The calendar year, in the village's time zone.
    folder : Path
        A new or empty folder.
    log : callable, optional
        Told each table's rows as it is written.

    Returns
    -------
    dict
        ``dir``, ``tables`` (count), ``rows`` (all tables), ``documents`` (files of the
        documents), ``manifest`` (its path).

    Raises
    ------
    foundation.errors.InputError
        For a year outside 1970-2999 or a folder that is not empty.
    """
    if not 1970 <= year <= 2999:
        raise InputError(f"year: expected one such as 2026 (1970 to 2999), got {year}")
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InputError(f"{folder}: not an empty folder; give a new or empty one")
    folder.mkdir(parents=True, exist_ok=True)
    idle = conn.info.transaction_status == TransactionStatus.IDLE
    with conn.transaction():
        if idle:                      # a transaction of its own (not a savepoint in the caller's)
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute("SET LOCAL TIME ZONE 'UTC'")
        return _write(conn, cfg, year, folder, log)


def _write(conn, cfg, year: int, folder: Path, log) -> dict:
    tz = village_zone(cfg)
    start, end = midnight(date(year, 1, 1), tz), midnight(date(year + 1, 1, 1), tz)
    files, readme, total = {}, [], 0
    for table, columns in _tables(conn):
        names = [c for c, _, _ in columns]
        types = {c: t for c, t, _ in columns}
        tcol = None if table in WHOLE else next((c for c in TIME_COLUMNS if c in names), None)
        where, params = sql.SQL(""), ()
        if tcol:
            lo, hi = (start.date(), end.date()) if types[tcol] == "date" else (start, end)
            where, params = sql.SQL(" WHERE {} >= %s AND {} < %s").format(
                sql.Identifier(tcol), sql.Identifier(tcol)), (lo, hi)
        select = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(map(sql.Identifier, names)),
                                                     sql.Identifier(table)) + where
        order = sql.SQL(" ORDER BY {}").format(sql.Identifier(tcol)) if tcol else sql.SQL("")
        csv_path, pq_path = folder / f"{table}.csv", folder / f"{table}.parquet"
        copy_sql = sql.SQL("COPY ({}) TO STDOUT WITH (FORMAT csv, HEADER true)").format(select + order)
        with open(csv_path, "wb") as f, conn.cursor() as cur, cur.copy(copy_sql, params) as copy:
            for block in copy:
                f.write(block)
        n = _parquet(conn, select + order, params, columns, pq_path)
        total += n
        for p in (csv_path, pq_path):
            files[p.name] = {"bytes": p.stat().st_size, "sha256": file_sha256(p), "rows": n}
        readme.append(_describe(table, columns, tcol, n))
        log(f"{table}: {n:,} rows")
    docs = _documents(conn, folder, start, end)
    docs.update(_issued(conn, cfg, folder, start, end))
    files.update(docs)
    head = (f"# The sewer use program's records of {year}\n\n"
            f"Written {datetime.now(tz):%Y-%m-%d %H:%M %Z} by sewerwatch for {cfg.utility.name}. Each table is "
            "here twice: as CSV (a header line, then one row a line; times in UTC with their offset, empty "
            "fields are no value) and as Parquet (the same columns, typed). Rows of the year are those whose "
            f"time column falls in {year} on the village's calendar ({tz.key}); tables of what those rows refer to "
            "(sites, sensors, permits, instruments, rates, accounts) are whole. Password hashes and "
            "second-factor secrets are not exported. `manifest.json` gives every file's size and SHA-256; "
            "`sha256sum -c SHA256SUMS` checks them all. The files of the reports industrial users signed "
            "in the year are in `documents/submission-<id>/`: `<number>.signed` (the bytes the signature "
            "covers), `<number>.pdf` (the copy of record) and the attached files, each with the SHA-256 "
            "stored when it was signed (`portal_submissions.sha256`, `pdf_sha256`, "
            "`portal_submission_files.sha256`). The notices issued in the year are in `documents/notices/` "
            "(`<number>.pdf`) and the bills of the year's quarters in `documents/bills/` "
            "(`bill-<id>-<quarter>-<site>.pdf`), drawn from their stored documents as the office shows them; "
            "a notice's entry in the manifest also gives `sha256_at_issue`, the SHA-256 of the PDF recorded "
            "when it was issued (`notices.pdf_sha256`).\n\n")
    (folder / "README.md").write_text(head + "\n".join(readme))
    files["README.md"] = {"bytes": (folder / "README.md").stat().st_size, "sha256": file_sha256(folder / "README.md")}
    manifest = {"year": year, "timezone": tz.key, "written_at": time.time(), "utility": cfg.utility.name,
                "files": files}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (folder / "SHA256SUMS").write_text("".join(f"{v['sha256']}  {k}\n" for k, v in sorted(files.items())))
    return {"dir": str(folder), "tables": len(readme), "rows": total, "documents": len(docs),
            "manifest": str(folder / "manifest.json")}


def _issued(conn, cfg, folder: Path, start: datetime, end: datetime) -> dict:
    """The PDFs of the notices issued in the year and of the bills of its quarters, each made
    by the function the office serves it with (:func:`enforcement.documents.notice_page.render`,
    :func:`lab.documents.bill_page.render_pdf`): the same stored document, the same bytes."""
    from enforcement.documents.notice_page import file_name, render
    from lab import bill_runs
    from lab.documents.bill_page import render_pdf
    from lab.documents.pdf import letterhead

    out = {}
    rows = conn.execute("SELECT number, document, issued_on, pdf_sha256 FROM notices WHERE issued_on >= %s "
                        "AND issued_on < %s ORDER BY issued_on, number", (start.date(), end.date())).fetchall()
    for number, document, issued_on, at_issue in rows:
        pdf = render(document, issued_on)[1]
        rel = Path("documents") / "notices" / file_name(document, issued_on)
        out[str(rel)] = {**_put(folder, rel, pdf), "sha256_at_issue": at_issue}
    head = letterhead(cfg)
    ids = [r[0] for r in conn.execute("SELECT id FROM bills WHERE period_start >= %s AND period_start < %s "
                                      "ORDER BY period_start, id", (start, end))]
    for bill_id in ids:
        b = bill_runs.bill(conn, bill_id)
        if not (b["detail"] or {}).get("issued"):
            continue                # a row without its document (entered by hand): its figures are in bills.csv
        rel = Path("documents") / "bills" / f"bill-{bill_id}-{b['quarter']}-{b['site']}.pdf"
        out[str(rel)] = _put(folder, rel, render_pdf(b["detail"], head))
    return out


def _put(folder: Path, rel: Path, blob: bytes) -> dict:
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    (folder / rel).write_bytes(blob)
    return {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}


def zip_folder(folder: Path, target: Path) -> Path:
    """The export ``folder`` as one zip file ``target`` (its files under the folder's name),
    for the Reports page's download; returns ``target``."""
    folder, target = Path(folder), Path(target)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, Path(folder.name) / p.relative_to(folder))
    return target


def _documents(conn, folder: Path, start: datetime, end: datetime) -> dict:
    """The signed submissions' files of the year, each checked against its stored SHA-256.

    Raises
    ------
    foundation.errors.DatabaseError
        When a stored file's bytes no longer match the hash recorded when it was signed.
    """
    from foundation.errors import DatabaseError

    out = {}
    subs = conn.execute("SELECT id, number, document, sha256, pdf, pdf_sha256 FROM portal_submissions "
                        "WHERE signed_at >= %s AND signed_at < %s ORDER BY id", (start, end)).fetchall()
    for sub, number, document, digest, pdf, pdf_digest in subs:
        for suffix, blob, want in (("signed", document, digest), ("pdf", pdf, pdf_digest)):
            blob = bytes(blob)
            if hashlib.sha256(blob).hexdigest() != want:
                raise DatabaseError(f"submission {number}: its {suffix} bytes do not match the SHA-256 recorded "
                                    "when it was signed")
            rel = Path("documents") / f"submission-{sub}" / (f"{number}.pdf" if suffix == "pdf" else
                                                            f"{number}.signed")
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(blob)
            out[str(rel)] = {"bytes": len(blob), "sha256": want}
    rows = conn.execute(
        "SELECT f.submission_id, f.position, f.name, f.sha256, f.content FROM portal_submission_files f "
        "JOIN portal_submissions s ON s.id = f.submission_id WHERE s.signed_at >= %s AND s.signed_at < %s "
        "ORDER BY f.submission_id, f.position", (start, end))
    for sub, pos, name, digest, content in rows:
        content = bytes(content)
        if hashlib.sha256(content).hexdigest() != digest:
            raise DatabaseError(f"submission {sub}, file {name!r}: its bytes do not match the SHA-256 recorded "
                                "when it was signed")
        rel = Path("documents") / f"submission-{sub}" / f"{pos:02d}-{Path(name).name or 'file'}"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content)
        out[str(rel)] = {"bytes": len(content), "sha256": digest}
    return out


def _parquet(conn, query, params, columns, path: Path) -> int:
    schema = pa.schema([(c, ARROW.get(t, pa.string())) for c, t, _ in columns])
    text = {c for c, t, _ in columns if t not in ARROW}
    n = 0
    with pq.ParquetWriter(path, schema) as w, conn.cursor(name=f"export_{path.stem}") as cur:
        cur.itersize = BATCH
        cur.execute(query, params)
        while True:
            rows = cur.fetchmany(BATCH)
            if not rows:
                break
            cols = list(zip(*rows))
            arrays = [pa.array([_text(v) for v in vals] if c in text else list(vals), type=schema.field(c).type)
                      for (c, _, _), vals in zip(columns, cols)]
            w.write_table(pa.Table.from_arrays(arrays, schema=schema))
            n += len(rows)
    if n == 0:
        with pq.ParquetWriter(path, schema):
            pass
    return n


def _text(v):
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (dict, list)):
        return json.dumps(v, default=str)
    return str(v)


def _describe(table: str, columns, tcol: str | None, n: int) -> str:
    rows = f"the rows whose `{tcol}` falls in the year" if tcol else "all rows"
    lines = [f"## {table}\n", f"{n:,} rows ({rows}). Files: `{table}.csv`, `{table}.parquet`.\n",
             "| column | type | meaning |", "|---|---|---|"]
    lines += [f"| {c} | {t} | {(d or '').replace('|', '/').replace(chr(10), ' ')} |" for c, t, d in columns]
    return "\n".join(lines) + "\n"
