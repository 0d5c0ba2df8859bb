"""What a user prepares before a signatory signs it: a draft of one kind,
its form's fields, its uploads; and the check of each kind (what must be there, and for
self-monitoring results the same check as ``sewerwatch lab import``,
:mod:`ereport.labcheck`).

Kinds:

* ``self-monitoring``: results typed into the form or the lab's CSV uploaded, and the lab's
  PDF report; optionally answering a report owed (``user_reports``, its id).
* ``notice-response``: the answer to a notice of violation (cause, corrective action, dates).
* ``accidental-discharge``: the report Palmyra §13.49 requires ("shall immediately report
  such discharge to the Approving Authority"), answering the report owed from the alert.
* ``permit-application``: the application of Palmyra §13.54(2)(a)-(i), new or a renewal.

Every field has its label (a copy of record labels what each value means: 40 CFR 3.3).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime

from ereport import labcheck
from ereport.uploads import Upload
from foundation.errors import InputError

KINDS = ("self-monitoring", "notice-response", "accidental-discharge", "permit-application")
KIND_WORDS = {"self-monitoring": "Self-monitoring report", "notice-response": "Response to a notice of violation",
              "accidental-discharge": "Accidental-discharge report (§13.49)",
              "permit-application": "Wastewater discharge permit application (§13.54(2))"}
#: The prefix of each kind's submission numbers.
PREFIX = {"self-monitoring": "SMR", "notice-response": "NR", "accidental-discharge": "ADR",
          "permit-application": "PA"}
#: Longest text of one field [characters].
TEXT_MAX = 4000
#: Most result rows typed into the form (a larger report is an uploaded CSV).
FORM_ROWS_MAX = 60


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    kind: str = "text"          # text | long | date | number | datetime
    required: bool = True
    cite: str = ""


#: The fields of each kind, in the order the form and the copy of record show them.
FIELDS: dict[str, tuple[Field, ...]] = {
    "self-monitoring": (
        Field("period_start", "Period from", "date", False),
        Field("period_end", "Period to", "date", False),
        Field("note", "Remarks", "long", False),
    ),
    "notice-response": (
        Field("cause", "Cause of the violation", "long"),
        Field("corrective_action", "Corrective action taken or planned", "long"),
        Field("completed_on", "Corrective action completed on (or planned for)", "date"),
        Field("prevention", "Steps to prevent it happening again", "long", False),
        Field("contact", "Contact for questions (name, telephone)", "text", False),
    ),
    "accidental-discharge": (
        Field("began_at", "Discharge began (local time)", "datetime", cite="§13.49"),
        Field("ended_at", "Discharge ended (local time)", "datetime", False),
        Field("substances", "What was discharged (substances, concentrations)", "long"),
        Field("volume_gal", "Estimated volume [gallons]", "number", False),
        Field("cause", "Cause", "long"),
        Field("actions", "Actions taken to stop it and reduce its effect", "long"),
        Field("prevention", "Steps to prevent a recurrence", "long", False),
    ),
    "permit-application": (
        Field("applicant_name", "(a) Name of applicant", cite="§13.54(2)(a)"),
        Field("address", "(a) Address", "long", cite="§13.54(2)(a)"),
        Field("sic", "(a) Standard industrial classification number", cite="§13.54(2)(a)"),
        Field("average_daily_gpd", "(b) Average daily volume of wastewater to be discharged [gallons/day]", "number",
              cite="§13.54(2)(b)"),
        Field("constituents", "(c) Wastewater constituents and characteristics, and the method that determined them",
              "long", cite="§13.54(2)(c)"),
        Field("time_duration", "(d) Time and duration of discharge", "long", cite="§13.54(2)(d)"),
        Field("average_flow_gpm", "(e) Average wastewater flow rate [gpm]", "number", cite="§13.54(2)(e)"),
        Field("peak_flow_gpm", "(e) Peak wastewater flow rate [gpm]", "number", cite="§13.54(2)(e)"),
        Field("flow_variations", "(e) Daily, monthly and seasonal variations", "long", False, cite="§13.54(2)(e)"),
        Field("plans_note", "(f) Site, floor, mechanical and plumbing plans (attach them below; note here)", "long",
              False, cite="§13.54(2)(f)"),
        Field("activities", "(g) Activities, facilities and plant processes, with all materials which are, or "
              "could be, discharged", "long", cite="§13.54(2)(g)"),
        Field("products", "(h) Each product by type, amount and rate of production", "long", cite="§13.54(2)(h)"),
        Field("employees", "(i) Number and type of employees", "long", cite="§13.54(2)(i)"),
        Field("hours", "(i) Hours of work", "text", cite="§13.54(2)(i)"),
        Field("other", "(j) Other information", "long", False, cite="§13.54(2)(j)"),
    ),
}


@dataclass
class Draft:
    id: int
    site_id: int
    kind: str
    target: str | None
    supersedes: int | None
    data: dict
    created_by: int
    created_at: datetime
    updated_at: datetime
    submitted_as: int | None
    uploads: list = field(default_factory=list)     # rows of portal_uploads without content

    @property
    def title(self) -> str:
        return KIND_WORDS[self.kind] + (f" ({self.target.split(':', 1)[1]})" if self.target else "")


_COLS = ("id", "site_id", "kind", "target", "supersedes", "data", "created_by", "created_at", "updated_at",
         "submitted_as")
UPLOAD_COLS = ("id", "role", "name", "media_type", "size", "sha256", "uploaded_at")


def create(conn, site_id: int, account_id: int, kind: str, target: str | None = None,
           supersedes: int | None = None, data: dict | None = None) -> Draft:
    if kind not in KINDS:
        raise InputError(f"unknown kind of report {kind!r}")
    did = conn.execute("INSERT INTO portal_drafts (site_id, kind, target, supersedes, data, created_by) VALUES "
                       "(%s, %s, %s, %s, %s, %s) RETURNING id",
                       (site_id, kind, target, supersedes, json.dumps(data or {}), account_id)).fetchone()[0]
    return get(conn, did)


def get(conn, draft_id: int) -> Draft | None:
    row = conn.execute(f"SELECT {', '.join(_COLS)} FROM portal_drafts WHERE id = %s", (draft_id,)).fetchone()
    if row is None:
        return None
    d = Draft(*row)
    d.uploads = [dict(zip(UPLOAD_COLS, r)) for r in conn.execute(
        f"SELECT {', '.join(UPLOAD_COLS)} FROM portal_uploads WHERE draft_id = %s ORDER BY id", (draft_id,)).fetchall()]
    return d


def open_drafts(conn, site_id: int) -> list[Draft]:
    ids = [r[0] for r in conn.execute("SELECT id FROM portal_drafts WHERE site_id = %s AND submitted_as IS NULL "
                                      "ORDER BY updated_at DESC", (site_id,)).fetchall()]
    return [get(conn, i) for i in ids]


def clean_data(kind: str, form: dict) -> dict:
    """The draft's fields from a form (each cut to :data:`TEXT_MAX`); for self-monitoring the
    result rows typed in (``r<n>_<column>``)."""
    out = {}
    for f in FIELDS[kind]:
        out[f.key] = str(form.get(f.key, "") or "").replace("\r\n", "\n").strip()[:TEXT_MAX]
    if kind == "self-monitoring":
        rows = []
        for n in range(FORM_ROWS_MAX):
            row = {c: str(form.get(f"r{n}_{c}", "") or "").strip()[:200] for c in labcheck.FORM_COLUMNS if c != "site"}
            if any(row.values()):
                rows.append(row)
        out["rows"] = rows
    return out


def update(conn, draft: Draft, data: dict) -> Draft:
    if draft.submitted_as is not None:
        raise InputError("this draft was submitted already: a correction is a new report")
    conn.execute("UPDATE portal_drafts SET data = %s, updated_at = now() WHERE id = %s",
                 (json.dumps(data), draft.id))
    return get(conn, draft.id)


def add_upload(conn, draft: Draft, upload: Upload, account_id: int) -> Draft:
    """Keep an upload with the draft; a new lab CSV or lab report replaces the earlier one."""
    if draft.submitted_as is not None:
        raise InputError("this draft was submitted already: a correction is a new report")
    with conn.transaction():
        if upload.role in ("lab-csv", "lab-report"):
            conn.execute("DELETE FROM portal_uploads WHERE draft_id = %s AND role = %s", (draft.id, upload.role))
        conn.execute("INSERT INTO portal_uploads (draft_id, role, name, media_type, size, sha256, content, uploaded_by) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                     (draft.id, upload.role, upload.name, upload.media_type, upload.size, upload.sha256,
                      upload.content, account_id))
        conn.execute("UPDATE portal_drafts SET updated_at = now() WHERE id = %s", (draft.id,))
    return get(conn, draft.id)


def remove_upload(conn, draft: Draft, upload_id: int) -> Draft:
    if draft.submitted_as is not None:
        raise InputError("this draft was submitted already")
    conn.execute("DELETE FROM portal_uploads WHERE draft_id = %s AND id = %s", (draft.id, upload_id))
    return get(conn, draft.id)


def upload_content(conn, draft_id: int, upload_id: int) -> tuple[dict, bytes] | None:
    row = conn.execute(f"SELECT {', '.join(UPLOAD_COLS)}, content FROM portal_uploads WHERE draft_id = %s AND id = %s",
                       (draft_id, upload_id)).fetchone()
    return None if row is None else (dict(zip(UPLOAD_COLS, row[:-1])), bytes(row[-1]))


def files_of(conn, draft: Draft) -> list[Upload]:
    """The draft's files with their bytes (what a signature covers)."""
    rows = conn.execute("SELECT role, name, media_type, content FROM portal_uploads WHERE draft_id = %s ORDER BY id",
                        (draft.id,)).fetchall()
    return [Upload(r[0], r[1], r[2], bytes(r[3])) for r in rows]


def results_csv(site_key: str, draft: Draft, files: list[Upload]) -> tuple[bytes, str] | None:
    """The lab CSV a self-monitoring draft reports: the uploaded one, else one made of the rows
    typed in; with its name. None when there is neither."""
    up = [f for f in files if f.role == "lab-csv"]
    if up:
        return up[-1].content, up[-1].name
    rows = draft.data.get("rows") or []
    if rows:
        return labcheck.form_csv(site_key, rows), "results-entered.csv"
    return None


@dataclass
class Check:
    """What stands between a draft and its signature."""

    problems: list[str] = field(default_factory=list)
    lab: labcheck.LabCheck | None = None

    @property
    def ready(self) -> bool:
        return not self.problems and (self.lab is None or self.lab.usable)


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def check(conn, site: dict, draft: Draft, files: list[Upload]) -> Check:
    """What must be done before ``draft`` can be signed (every problem in words)."""
    out = Check()
    for f in FIELDS[draft.kind]:
        v = str(draft.data.get(f.key, "") or "")
        if not v:
            if f.required:
                out.problems.append(f"{f.label}: needed")
            continue
        if f.kind == "date":
            try:
                date.fromisoformat(v)
            except ValueError:
                out.problems.append(f"{f.label}: a date (YYYY-MM-DD), got {v[:40]!r}")
        elif f.kind == "datetime":
            try:
                datetime.fromisoformat(v)
            except ValueError:
                out.problems.append(f"{f.label}: a date and time (YYYY-MM-DD HH:MM), got {v[:40]!r}")
        elif f.kind == "number" and (_number(v) is None or _number(v) < 0):
            out.problems.append(f"{f.label}: a number of zero or more, got {v[:40]!r}")
    if draft.kind == "self-monitoring":
        found = results_csv(site["key"], draft, files)
        if found is None:
            out.problems.append("Results: enter them in the form or upload the lab's CSV")
        else:
            out.lab = labcheck.check(conn, site["key"], site["pack"], found[0], found[1])
            if out.lab.error:
                out.problems.append(f"Results: {out.lab.error}")
            elif out.lab.bad:
                n = len(out.lab.bad)
                out.problems.append(f"Results: {n} row{'s' if n != 1 else ''} cannot be used (below); fix the file "
                                    "and upload it again")
            elif not out.lab.rows:
                out.problems.append("Results: the file has no result rows")
    if draft.kind == "permit-application" and not any(f.role == "attachment" for f in files) \
            and not draft.data.get("plans_note"):
        out.problems.append("(f) Plans: attach the plans, or say in the note where the utility has them")
    return out


def digest(draft: Draft) -> str:
    """A fingerprint of the draft as shown (its fields and its files' SHA-256): the sign page
    carries it, and a draft changed since then is not signed (40 CFR 3.2000(b)(5)(iii))."""
    body = json.dumps({"data": draft.data, "files": [u["sha256"] for u in draft.uploads], "kind": draft.kind,
                       "target": draft.target, "supersedes": draft.supersedes}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()
