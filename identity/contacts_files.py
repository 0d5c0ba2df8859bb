"""The address book's CSV file kept, previewed, then saved once: what the office's *Import
contacts* page and ``sewerwatch contacts import FILE --commit`` both call.

:func:`stage` keeps the file as it came (table ``contact_imports``, migration 0340) with its
preview (:func:`identity.contacts_import.preview`: what each row would do, or why it cannot
be used); nothing of it is saved yet. :func:`save` saves it once: every row is checked again
(someone may have changed the book since the preview) by
:func:`identity.contacts_import.commit`, which saves the usable rows and puts the others in
``dead_letters`` with their reasons; the report of what was done is kept with the file. A
file is saved once: the same bytes again (the same import, or another upload of the same
file) are refused with :class:`SavedAlready`, whose one line names the file that saved them
and what it did. The rows in are the rows added, changed, unchanged and not used.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timezone
from zoneinfo import ZoneInfo

from foundation.actor import Actor
from foundation.errors import InputError
from identity import contacts_import

#: The columns of ``contact_imports`` read back (all but the bytes).
COLS = ("id", "filename", "sha256", "preview", "state", "staged_by", "staged_at", "saved_by", "saved_at", "report")
#: Longest file name kept [characters].
NAME_MAX = 120


class SavedAlready(InputError):
    """The same contacts file was saved before (the message names that file, when, by whom
    and what it did); nothing was done now."""


def _name(filename: str) -> str:
    return (filename or "").replace("\\", "/").rsplit("/", 1)[-1][-NAME_MAX:] or "contacts file"


def _saved(conn, sha: str) -> dict | None:
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM contact_imports WHERE sha256 = %s AND state = 'saved'",
                       (sha,)).fetchone()
    return dict(zip(COLS, row)) if row else None


def already(name: str, done: dict, tz: str | ZoneInfo | None = None) -> str:
    """The one line refusing ``name``, the bytes ``done`` (a saved import) saved already; its
    time in the zone ``tz`` (the village's), UTC without."""
    rep = done["report"] or {}
    at = done["saved_at"].astimezone(ZoneInfo(tz) if isinstance(tz, str) else tz or timezone.utc)
    return (f"{name}: this file was saved already as contacts file {done['id']} ({done['filename']}) on "
            f"{at:%Y-%m-%d %H:%M %Z} by {done['saved_by']}: {rep.get('add', 0)} added, {rep.get('change', 0)} "
            f"changed, {rep.get('unchanged', 0)} unchanged, {rep.get('dead', 0)} not used; nothing was saved now")


def stage(conn, filename: str, data: bytes, *, actor: Actor, tz: str | ZoneInfo | None = None) -> dict:
    """Keep a contacts file with its preview; nothing of it is saved in the book yet.

    Parameters
    ----------
    filename : str
        The file's name as given (a folder before it is dropped).
    data : bytes
        The file's bytes (at most :data:`identity.contacts_import.MAX_BYTES` [bytes]).
    actor : Actor
        Who uploads it (the signed-in account, or the operating-system user).
    tz : str or ZoneInfo, optional
        The village's time zone, in which a refusal writes when the file was saved (UTC without).

    Returns
    -------
    dict
        The import (:func:`contact_file`), ``state`` ``'staged'``, with ``preview``: ``rows``
        (each ``line``, ``site``, ``entry``, ``action``, ``reason``) and the counts ``add``,
        ``change``, ``unchanged``, ``dead``, ``total``.

    Raises
    ------
    SavedAlready
        The same bytes were saved before (naming that file and what it did).
    InputError
        A file that is not a contacts file (not UTF-8, too large, no ``site`` or ``entry`` column).
    """
    name = _name(filename)
    sha = hashlib.sha256(data).hexdigest()
    done = _saved(conn, sha)
    if done:
        raise SavedAlready(already(name, done, tz))
    preview = contacts_import.preview(conn, name, data)
    with conn.transaction():
        iid = conn.execute("INSERT INTO contact_imports (filename, sha256, data, preview, staged_by) "
                           "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                           (name, sha, data, json.dumps(preview, default=str), actor.audit_name)).fetchone()[0]
    return contact_file(conn, iid)


def contact_file(conn, import_id: int) -> dict:
    """A contacts file staged or saved: ``id``, ``filename``, ``sha256``, ``state``,
    ``staged_by``, ``staged_at``, ``saved_by``, ``saved_at``, ``preview`` and, once saved,
    ``report`` (the same shape: what was done).

    Raises
    ------
    InputError
        No contacts file ``import_id``.
    """
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM contact_imports WHERE id = %s", (import_id,)).fetchone()
    if row is None:
        raise InputError(f"no contacts file {import_id}")
    return dict(zip(COLS, row))


def recent(conn, limit: int = 10) -> list[dict]:
    """The last ``limit`` contacts files, newest first (as :func:`contact_file`, without the rows:
    ``counts`` holds the report's, else the preview's, numbers)."""
    rows = conn.execute(
        "SELECT id, filename, state, staged_by, staged_at, saved_by, saved_at, coalesce(report, preview) "
        "- 'rows' FROM contact_imports ORDER BY id DESC LIMIT %s", (limit,)).fetchall()
    keys = ("id", "filename", "state", "staged_by", "staged_at", "saved_by", "saved_at", "counts")
    return [dict(zip(keys, r)) for r in rows]


def save(conn, import_id: int, *, actor: Actor, tz: str | ZoneInfo | None = None) -> dict:
    """Save a staged contacts file: its usable rows (checked again now) into the book, the
    others into ``dead_letters`` with their reasons (:func:`identity.contacts_import.commit`);
    the report kept with it, ``state`` ``'saved'``. One transaction. ``actor`` and ``tz`` as
    for :func:`stage`.

    Returns
    -------
    dict
        The import (:func:`contact_file`) with ``report``: ``rows`` and the counts ``add``,
        ``change``, ``unchanged``, ``dead`` and ``total`` (``total`` = the sum of the four).

    Raises
    ------
    SavedAlready
        This file, or another upload of the same bytes, was saved already: the one line names
        it (number, name, when, by whom, what it did); nothing is done now.
    InputError
        No contacts file ``import_id``.
    """
    with conn.transaction():
        row = conn.execute("SELECT state, filename, sha256, data FROM contact_imports WHERE id = %s FOR UPDATE",
                           (import_id,)).fetchone()
        if row is None:
            raise InputError(f"no contacts file {import_id}")
        state, name, sha, data = row
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-contacts-import'))")
        done = _saved(conn, sha)
        if done:
            raise SavedAlready(already(name, done, tz))
        if state != "staged":
            raise InputError(f"contacts file {import_id} ({name}) is {state}: nothing was saved")
        report = contacts_import.commit(conn, name, bytes(data), actor=actor, import_id=import_id)
        conn.execute("UPDATE contact_imports SET state = 'saved', saved_by = %s, saved_at = now(), report = %s "
                     "WHERE id = %s", (actor.audit_name, json.dumps(report, default=str), import_id))
    return contact_file(conn, import_id)
