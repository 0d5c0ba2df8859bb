"""A user's lab results checked the way ``sewerwatch lab import`` checks them, before anything
is stored, and stored and judged through the same import once the coordinator accepts
them.

The check is ``lab import --dry-run`` itself: :func:`lab.store.results.import_lab_file` with
``dry_run`` (every row checked as the import checks it, against the database too, in a
transaction rolled back), so every refusal the import would make (a bad value, unit or date,
a result given twice, a sample already stored with another time, a value that differs from a
stored one) is found here with its line and reason, and nothing (no result, no dead letter,
no audit row) stays. ``only_sites`` is the user's own site: a row naming another user is
refused as an unknown site (and says nothing about other sites). The rows themselves (for the
document signed) are read by the import's reader.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from foundation.errors import InputError
from lab.ordinance import pack_timezone
from lab.readers.labcsv import BadRow, LabReader, LabRow
from lab.store.results import ImportReport, import_lab_file

#: The columns of a CSV made from results entered in the form (the lab CSV's own header).
#: the form's columns; ``sample_type`` (grab or composite, default grab) decides which of the
#: limits by sample type judge the result (limits/sample_types.py)
FORM_COLUMNS = ("sample_id", "site", "collected", "analyte", "value", "unit", "qualifier", "sample_type", "laboratory",
                "method")


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


def check(conn, site_key: str, pack: str, content: bytes, name: str = "results.csv") -> LabCheck:
    """Check ``content`` (a lab CSV) for ``site_key``: the rows usable and those not."""

    result = LabCheck()
    try:
        report = import_lab_file(conn, name, data=content, actor="portal check", dry_run=True, only_sites={site_key})
    except InputError as exc:                # the file as a whole (its header, its encoding)
        result.error = str(exc)
        return result
    result.bad = list(report.bad)
    refused = {b.line for b in result.bad}
    from limits.packs import load_pack      # the pack's own analytes too, as the import reads them
    reader = LabReader(name, sites={site_key}, site_tz={site_key: pack_timezone(pack)}, cross_checks=False,
                       analytes=tuple(load_pack(pack).analytes) if pack else (), data=content)
    try:
        result.rows = [r for r in reader if not isinstance(r, BadRow) and r.line not in refused]
    finally:
        reader.close()
    return result


def store(conn, content: bytes, number: str, actor: str, folder: Path, site_key: str, submission: int) -> ImportReport:
    """Import accepted results and judge them (``sewerwatch lab import --check``'s function:
    rows of ``site_key`` only, the samples marked as submission ``submission``'s, the months
    they fall in judged and the violations stored, ``report.checked``). The file imported is
    kept as ``<folder>/<number>.csv`` (the state folder's ``portal-imports``), so each result's
    source names the submission and a file that exists (the copy of record keeps the original)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{number}.csv"
    path.write_bytes(content)
    return import_lab_file(conn, path, actor=actor, only_sites={site_key}, submission=submission, check=True)
