"""A user's lab results checked the way ``sewerwatch lab import`` checks them, before anything
is stored (issue 27 item 3), and stored through the same import once the coordinator accepts
them.

The check is the import itself, rolled back: :func:`lab.store.results.import_lab_file` runs
inside a transaction that is never committed, so every refusal the import would make (a bad
value, unit or date, a result given twice, a sample already stored with another time, a
value that differs from a stored one) is found here with its line and reason, and nothing —
no result, no dead letter, no audit row — stays. Before it, each row must name the user's
own site: the reader is given that one site, so a row of another user is refused as an
unknown site (and says nothing about other sites).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from foundation.errors import InputError
from lab.ordinance import pack_timezone
from lab.readers.labcsv import BadRow, LabReader, LabRow

#: The columns of a CSV made from results entered in the form (the lab CSV's own header).
FORM_COLUMNS = ("sample_id", "site", "collected", "analyte", "value", "unit", "qualifier", "laboratory", "method")


@dataclass
class LabCheck:
    """What a lab CSV holds for the portal: the usable rows and those that are not, each with
    its line and reason (the header is line 1)."""

    rows: list[LabRow] = field(default_factory=list)
    bad: list[BadRow] = field(default_factory=list)
    error: str | None = None          # the file as a whole cannot be read (its header)

    @property
    def usable(self) -> bool:
        return self.error is None and not self.bad and bool(self.rows)


def form_csv(site_key: str, rows: list[dict]) -> bytes:
    """The lab CSV of results typed into the form (one row each; empty rows left out)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(FORM_COLUMNS)
    for r in rows:
        if not any(str(r.get(c) or "").strip() for c in FORM_COLUMNS if c != "site"):
            continue
        w.writerow([site_key if c == "site" else str(r.get(c) or "").strip() for c in FORM_COLUMNS])
    return out.getvalue().encode("utf-8")


class _Rollback(Exception):
    pass


def check(conn, site_key: str, pack: str, content: bytes, name: str = "results.csv") -> LabCheck:
    """Check ``content`` (a lab CSV) for ``site_key``: the rows usable and those not."""
    result = LabCheck()
    with _tempfile(content) as path:
        try:
            reader = LabReader(path, sites={site_key}, site_tz={site_key: pack_timezone(pack)})
        except InputError as exc:
            result.error = str(exc).replace(str(path), name)
            return result
        try:
            for item in reader:
                (result.bad if isinstance(item, BadRow) else result.rows).append(item)
        finally:
            reader.close()
        if result.bad:
            return result
        result.bad = dry_import(conn, path)
    result.rows = [r for r in result.rows if r.line not in {b.line for b in result.bad}]
    return result


def dry_import(conn, path) -> list[BadRow]:
    """The rows :func:`lab.store.results.import_lab_file` would refuse, found by importing and
    rolling the whole import back."""
    from lab.store.results import import_lab_file

    bad: list[BadRow] = []
    try:
        with conn.transaction(force_rollback=True):
            report = import_lab_file(conn, path, actor="portal check")
            bad = list(report.bad)
    except InputError as exc:
        bad = [BadRow(1, str(exc), "")]
    return bad


def store(conn, content: bytes, number: str, actor: str, folder: Path) -> dict:
    """Import accepted results (``sewerwatch lab import``'s function). The file imported is kept
    as ``<folder>/<number>.csv`` (the state folder's ``portal-imports``), so each result's
    source names the submission and a file that exists (the copy of record keeps the original)."""
    from lab.store.results import import_lab_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{number}.csv"
    path.write_bytes(content)
    report = import_lab_file(conn, path, actor=actor)
    return report.as_json()


class _tempfile:
    """``content`` in a private temporary file (the lab reader reads files), removed after."""

    def __init__(self, content: bytes, name: str = "results.csv"):
        self.content, self.name = content, name

    def __enter__(self) -> Path:
        self.dir = tempfile.mkdtemp(prefix="sewerwatch-portal-")
        os.chmod(self.dir, 0o700)
        self.path = Path(self.dir) / self.name
        self.path.write_bytes(self.content)
        return self.path

    def __exit__(self, *exc):
        try:
            self.path.unlink()
            os.rmdir(self.dir)
        except OSError:
            pass
        return False
