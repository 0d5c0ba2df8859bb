"""Lab files uploaded for review before they are imported (table
``lab_uploads``, migration 0151).

An upload keeps the file's bytes as they came and its preview: every row checked exactly as
``lab import`` checks it (:func:`lab.store.results.import_lab_file` with ``dry_run``: the
database too, nothing stored), each row that cannot be used with its line number and reason,
the first good rows with what each becomes, and the violations the results would bring.
:func:`commit` then imports it with the same function ``lab import --check`` calls, once: its
state goes from ``staged`` to ``imported`` in the import's own transaction, so a second
commit, however it comes, imports nothing and returns the first one's report. Rows typed
into a form become a CSV in the import's own format (:func:`rows_csv`) and take the same
path. The office and the industrial users' portal (``only_sites``: its own site) use these.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json

from foundation.actor import Actor
from foundation.errors import InputError
from lab.readers.labcsv import OPTIONAL, REQUIRED
from lab.store.results import import_lab_file

#: Good rows a preview lists (the counts cover them all).
PREVIEW_ROWS = 200
#: The columns of a file made from typed rows.
TYPED_COLUMNS = (*REQUIRED, *OPTIONAL, "sample_type", "laboratory", "method")

COLS = ("id", "filename", "sha256", "size_bytes", "correct", "site_id", "uploaded_by", "uploaded_at", "preview",
        "state", "done_by", "done_at", "report")


def _name(upload_id: int, filename: str) -> str:
    """What the rows of an upload are reported and kept as (``dead_letters.topic``: ``<this>:<line>``)."""
    return f"upload {upload_id} ({filename})"


def _audit_name(actor) -> tuple[str, str]:
    if isinstance(actor, Actor):
        return actor.audit_name, actor.via
    return str(actor), "cli"


def stage(conn, filename: str, data: bytes, *, actor: Actor, correct: bool = False,
          only_sites: set[str] | None = None, site_id: int | None = None, tz=None) -> dict:
    """Keep an uploaded lab file with its preview; nothing of it is imported yet.

    ``site_id``: an industrial user's own upload (the portal): only rows of its site can be
    used, now and at :func:`commit` (``only_sites`` narrows further).

    Returns
    -------
    dict
        ``id`` and ``preview`` (:meth:`lab.store.results.ImportReport.as_json`).

    Raises
    ------
    InputError
        The file as a whole cannot be used (empty, missing columns, a header that is not UTF-8).
    """
    if not data:
        raise InputError(f"{filename}: the file is empty (expected header {','.join(REQUIRED + OPTIONAL)})")
    who, via = _audit_name(actor)
    if site_id is not None and only_sites is None:
        key = conn.execute("SELECT key FROM sites WHERE id = %s", (site_id,)).fetchone()
        only_sites = {key[0]} if key else set()
    with conn.transaction():
        uid = conn.execute(
            "INSERT INTO lab_uploads (filename, sha256, data, size_bytes, correct, site_id, uploaded_by, preview) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, '{}') RETURNING id",
            (filename, hashlib.sha256(data).hexdigest(), data, len(data), correct, site_id, who)).fetchone()[0]
        preview = import_lab_file(conn, _name(uid, filename), data=data, actor=actor, correct=correct, tz=tz,
                                  dry_run=True, check=True, keep_rows=PREVIEW_ROWS, only_sites=only_sites).as_json()
        conn.execute("UPDATE lab_uploads SET preview = %s WHERE id = %s", (json.dumps(preview, default=str), uid))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'lab.upload', %s, %s)",
                     (who, f"lab_upload:{uid}", json.dumps({"file": filename, "bytes": len(data), "via": via,
                                                            "good": preview["stored"] + preview["corrected"]
                                                            + preview["unchanged"], "bad": preview["bad"]})))
    return {"id": uid, "preview": preview}


def get(conn, upload_id: int) -> dict | None:
    """One upload (without its bytes), or None."""
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM lab_uploads WHERE id = %s", (upload_id,)).fetchone()
    return None if row is None else dict(zip(COLS, row))


def recent(conn, limit: int = 20, site_id: int | None = None) -> list[dict]:
    """The latest uploads, newest first (one site's with ``site_id``)."""
    rows = conn.execute(f"SELECT {', '.join(COLS)} FROM lab_uploads WHERE (%s::int IS NULL OR site_id = %s) "
                        "ORDER BY id DESC LIMIT %s", (site_id, site_id, limit)).fetchall()
    return [dict(zip(COLS, r)) for r in rows]


def commit(conn, upload_id: int, *, actor: Actor, only_sites: set[str] | None = None, tz=None) -> dict:
    """Import a staged upload (``lab import --check`` of its bytes), once.

    Returns
    -------
    dict
        ``id``, ``report`` (the import's, with the violations found in its months) and
        ``already``: True when it had been imported before (nothing was done now), with
        ``by`` and ``at``.

    Raises
    ------
    InputError
        No such upload, or it was discarded.
    """
    who, _via = _audit_name(actor)
    with conn.transaction():
        row = conn.execute("SELECT u.filename, u.data, u.correct, u.state, u.done_by, u.done_at, u.report, s.key "
                           "FROM lab_uploads u LEFT JOIN sites s ON s.id = u.site_id WHERE u.id = %s FOR UPDATE OF u",
                           (upload_id,)).fetchone()
        if row is None:
            raise InputError(f"no lab upload {upload_id}")
        filename, data, correct, state, done_by, done_at, report, own_site = row
        if own_site is not None:           # an industrial user's own upload: its own site's rows only
            only_sites = {own_site} if only_sites is None else only_sites & {own_site}
        if state == "imported":
            return {"id": upload_id, "report": report, "already": True, "by": done_by, "at": done_at.isoformat()}
        if state == "discarded":
            raise InputError(f"lab upload {upload_id} ({filename}) was discarded by {done_by}: upload the file again")
        rep = import_lab_file(conn, _name(upload_id, filename), data=bytes(data), actor=actor, correct=correct,
                              tz=tz, check=True, only_sites=only_sites).as_json()
        conn.execute("UPDATE lab_uploads SET state = 'imported', done_by = %s, done_at = now(), report = %s "
                     "WHERE id = %s", (who, json.dumps(rep, default=str), upload_id))
    return {"id": upload_id, "report": json.loads(json.dumps(rep, default=str)), "already": False}


def discard(conn, upload_id: int, *, actor: Actor) -> dict:
    """Set a staged upload aside without importing it (its bytes are kept)."""
    who, via = _audit_name(actor)
    with conn.transaction():
        row = conn.execute("SELECT state FROM lab_uploads WHERE id = %s FOR UPDATE", (upload_id,)).fetchone()
        if row is None:
            raise InputError(f"no lab upload {upload_id}")
        if row[0] != "staged":
            return {"id": upload_id, "state": row[0], "already": True}
        conn.execute("UPDATE lab_uploads SET state = 'discarded', done_by = %s, done_at = now() WHERE id = %s",
                     (who, upload_id))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'lab.discard', %s, %s)",
                     (who, f"lab_upload:{upload_id}", json.dumps({"via": via})))
    return {"id": upload_id, "state": "discarded", "already": False}


def rows_csv(rows: list[dict]) -> bytes:
    """Rows typed into a form (dicts of :data:`TYPED_COLUMNS`) as a lab CSV in the import's
    format, so they are checked and stored as any file is; row ``n`` of the form (from 1) is
    line ``n + 1`` of the file (a blank row is a blank line, which the reader passes over)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(TYPED_COLUMNS)
    n = 0
    for r in rows:
        vals = [str(r.get(c) or "").strip() for c in TYPED_COLUMNS]
        if not any(vals[:6]):
            buf.write("\n")          # a blank line keeps line = row of the form + 1
            continue
        w.writerow(vals)
        n += 1
    if n == 0:
        raise InputError("no result was entered: fill in at least one row (sample, site, date, analyte, value, unit)")
    return buf.getvalue().encode("utf-8")

