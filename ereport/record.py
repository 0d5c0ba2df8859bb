"""Signing, the copy of record, the receipt and the coordinator's review (40 CFR 3.2000,
CROMERR: :mod:`ereport.certification`).

Signing (:func:`sign`) binds the signature to the report: the document signed is canonical
JSON (sorted keys, UTF-8) holding the user, the kind and what it answers, every field with its
label and value, the results read from the lab CSV, each file's name, type, size and SHA-256,
the certification of 40 CFR 403.6(a)(2)(ii) in its words, the signer (account, name, position,
e-mail address) and the time; its SHA-256 is the report's hash. The signatory enters the
password and a TOTP code again (:func:`identity.accounts.reauthenticate`). One transaction stores
the document, its hash, the files, the report rendered as PDF (WeasyPrint, the bills' and
notices' page) and the event ``submitted`` in tables that refuse UPDATE and DELETE (migration
0170), marks the draft submitted, and records what it answers through enforcement's own
functions: a notice's response (:func:`enforcement.notices.respond`, as ``sewerwatch notice
response``), a report owed received (:func:`enforcement.reports.receive`, as ``sewerwatch
user-reports receive``) at the instant of signing, so SNC (F) and (G) see it. The receipt
(number, signer, time, hash) is then mailed to the signatory; its outcome is an event too.

Review: :func:`review`, the one function of the review page and of ``sewerwatch portal
accept|reject``: :func:`accept` (self-monitoring results through the lab import, judged like
the utility's own: :func:`lab.store.results.import_lab_file` with ``check``) or :func:`reject`
with the reason, committed, then the outcome mailed to the signatory; a correction is a new
submission naming the one it supersedes, never an edit.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ereport import certification, drafts, labcheck
from ereport.mail import MailError
from foundation.actor import Actor
from foundation.errors import InputError
from identity import accounts
from lab.ordinance import pack_timezone
from limits import words
from limits.statements import of_violation

# WeasyPrint tells every step of every PDF at INFO: not for the office's log
logging.getLogger("weasyprint.progress").setLevel(logging.WARNING)

#: The document format's version (in the document, so a reader knows how to read it).
FORMAT = 1
STATES = ("submitted", "accepted", "rejected", "superseded")


#: Why a signature was refused (:class:`SigningRefused`): the draft or what it names is not the
#: signer's; it was signed meanwhile or changed since it was shown; the account may not sign;
#: the password or code was wrong; the report is not ready or the box not ticked.
REFUSALS = ("not-found", "conflict", "forbidden", "credentials", "invalid")


class SigningRefused(Exception):
    """The signature was not made; the text says why (in words for the page), ``why`` which of
    :data:`REFUSALS` it is (the page answers with its status)."""

    def __init__(self, text: str, why: str = "invalid"):
        super().__init__(text)
        self.why = why


@dataclass
class Submission:
    id: int
    number: str
    site_id: int
    site_key: str
    site_name: str
    kind: str
    title: str
    target: str | None
    supersedes: int | None
    sha256: str
    signer_name: str
    signer_title: str | None
    signer_email: str
    signer_username: str
    signed_at: datetime
    pdf_sha256: str
    review: str | None
    review_reason: str | None
    review_by: str | None
    review_at: datetime | None
    superseded_by: str | None
    supersedes_number: str | None

    @property
    def state(self) -> str:
        if self.review == "accepted":
            return "accepted"
        if self.superseded_by:
            return "superseded"
        return self.review or "submitted"


_SELECT = """
SELECT p.id, p.number, p.site_id, s.key, s.name, p.kind, p.title, p.target, p.supersedes, p.sha256, p.signer_name,
       p.signer_title, p.signer_email, p.signer_username, p.signed_at, p.pdf_sha256,
       r.event, r.reason, r.actor, r.at,
       (SELECT n.number FROM portal_submissions n WHERE n.supersedes = p.id),
       (SELECT o.number FROM portal_submissions o WHERE o.id = p.supersedes)
FROM portal_submissions p JOIN sites s ON s.id = p.site_id
LEFT JOIN LATERAL (SELECT event, reason, actor, at FROM portal_events e WHERE e.submission_id = p.id
                   AND e.event IN ('accepted', 'rejected') ORDER BY e.id DESC LIMIT 1) r ON true
"""


def get(conn, submission_id: int) -> Submission | None:
    row = conn.execute(_SELECT + " WHERE p.id = %s", (submission_id,)).fetchone()
    return None if row is None else Submission(*row)


def by_number(conn, number: str) -> Submission | None:
    row = conn.execute(_SELECT + " WHERE p.number = %s", (number,)).fetchone()
    return None if row is None else Submission(*row)


def of_site(conn, site_id: int) -> list[Submission]:
    return [Submission(*r) for r in conn.execute(_SELECT + " WHERE p.site_id = %s ORDER BY p.id DESC",
                                                 (site_id,)).fetchall()]


def queue(conn, states: tuple[str, ...] = ("submitted",)) -> list[Submission]:
    """Submissions in ``states`` (the coordinator's review queue: awaiting review), oldest first."""
    rows = [Submission(*r) for r in conn.execute(_SELECT + " ORDER BY p.id").fetchall()]
    return [s for s in rows if s.state in states]


def document(conn, submission_id: int) -> bytes:
    return bytes(conn.execute("SELECT document FROM portal_submissions WHERE id = %s", (submission_id,)).fetchone()[0])


def pdf(conn, submission_id: int) -> bytes:
    return bytes(conn.execute("SELECT pdf FROM portal_submissions WHERE id = %s", (submission_id,)).fetchone()[0])


def files(conn, submission_id: int) -> list[dict]:
    rows = conn.execute("SELECT position, role, name, media_type, size, sha256 FROM portal_submission_files "
                        "WHERE submission_id = %s ORDER BY position", (submission_id,)).fetchall()
    return [dict(zip(("position", "role", "name", "media_type", "size", "sha256"), r)) for r in rows]


def file_content(conn, submission_id: int, position: int) -> tuple[dict, bytes] | None:
    row = conn.execute("SELECT position, role, name, media_type, size, sha256, content FROM portal_submission_files "
                       "WHERE submission_id = %s AND position = %s", (submission_id, position)).fetchone()
    if row is None:
        return None
    return dict(zip(("position", "role", "name", "media_type", "size", "sha256"), row[:-1])), bytes(row[-1])


def events(conn, submission_id: int) -> list[dict]:
    rows = conn.execute("SELECT at, actor, event, reason, detail FROM portal_events WHERE submission_id = %s "
                        "ORDER BY id", (submission_id,)).fetchall()
    return [dict(zip(("at", "actor", "event", "reason", "detail"), r)) for r in rows]


def verify(conn, submission_id: int) -> dict:
    """The stored bytes hashed again: ``document`` and ``pdf`` and each file, True where the
    hash matches the one stored (and, for the document, the one mailed in the receipt)."""
    row = conn.execute("SELECT document, sha256, pdf, pdf_sha256 FROM portal_submissions WHERE id = %s",
                       (submission_id,)).fetchone()
    doc = json.loads(bytes(row[0]))
    out = {"document": hashlib.sha256(bytes(row[0])).hexdigest() == row[1],
           "pdf": hashlib.sha256(bytes(row[2])).hexdigest() == row[3], "files": []}
    named = {f["position"]: f["sha256"] for f in doc.get("files", [])}
    for pos, sha, content in conn.execute("SELECT position, sha256, content FROM portal_submission_files WHERE "
                                          "submission_id = %s ORDER BY position", (submission_id,)).fetchall():
        actual = hashlib.sha256(bytes(content)).hexdigest()
        out["files"].append(actual == sha == named.get(pos))
    out["all"] = out["document"] and out["pdf"] and all(out["files"])
    return out


def _event(conn, submission_id: int, actor: str, event: str, reason: str | None = None, detail: dict | None = None):
    conn.execute("INSERT INTO portal_events (submission_id, actor, event, reason, detail) VALUES (%s, %s, %s, %s, %s)",
                 (submission_id, actor, event, reason, json.dumps(detail or {}, default=str)))


def _number(conn, kind: str, year: int) -> str:
    prefix = f"{drafts.PREFIX[kind]}-{year}-"
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-portal-number'))")
    n = conn.execute("SELECT count(*) FROM portal_submissions WHERE number LIKE %s", (prefix + "%",)).fetchone()[0]
    return f"{prefix}{n + 1:03d}"


def canonical(doc: dict) -> bytes:
    """The bytes signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")


def _fields(kind: str, data: dict) -> list[dict]:
    return [{"key": f.key, "label": f.label, "value": str(data.get(f.key, "") or ""),
             **({"cites": f.cite} if f.cite else {})} for f in drafts.FIELDS[kind]]


def sign(conn, draft_id: int, account, password: str, code: str, *, reviewed: str, confirmed: bool, client: str,
         lockout_after: int, lockout_min: float, utility: str, letterhead, tz: str) -> Submission:
    """Sign and submit a draft as ``account`` (a signatory of the draft's site).

    Parameters
    ----------
    reviewed : str
        :func:`ereport.drafts.digest` of the draft as the sign page showed it.
    confirmed : bool
        The box "I have reviewed ... and certify" ticked.

    Raises
    ------
    SigningRefused
        Not a signatory, the draft changed since it was shown, not ready, the box not ticked,
        the password or code wrong (also counted towards the lockout).
    """
    draft = drafts.get(conn, draft_id)
    if draft is None or account.kind != "industrial-user" or draft.site_id != account.site_id:
        raise SigningRefused("There is no such draft.", "not-found")
    if draft.submitted_as is not None:
        raise SigningRefused("This draft was signed and submitted already.", "conflict")
    if not account.signatory:
        raise SigningRefused("Only an authorised signatory of your company can sign (40 CFR 403.12(l)). Your "
                             "draft is kept; a signatory can sign it.", "forbidden")
    if account.subscriber_agreement_on is None or not account.totp:
        raise SigningRefused("Your account cannot sign yet: the utility has no subscriber agreement of yours on "
                             "record, or the second factor is not set up.", "forbidden")
    if reviewed != drafts.digest(draft):
        raise SigningRefused("The draft changed after this page was shown (someone edited it or uploaded a file). "
                             "Nothing was signed: review it again.", "conflict")
    if not confirmed:
        raise SigningRefused("Tick the box to say you have reviewed the report and make the certification. "
                             "Nothing was signed.")
    site = _site(conn, draft.site_id)
    files = drafts.files_of(conn, draft)
    chk = drafts.check(conn, site, draft, files)
    if not chk.ready:
        raise SigningRefused("The report is not ready to sign: " + "; ".join(chk.problems or ["no results"]))
    auth = accounts.reauthenticate(conn, account.id, password, code, client=client, lockout_after=lockout_after,
                                   lockout_min=lockout_min)
    if auth.outcome != "ok":
        raise SigningRefused(auth.message, "credentials" if auth.outcome == "refused" else "forbidden")
    step = int(auth.message)
    signer = auth.account
    if draft.kind == "self-monitoring" and not any(f.role == "lab-csv" for f in files):
        made = drafts.results_csv(site["key"], draft, files)
        from ereport.uploads import Upload
        files = files + [Upload("lab-csv", made[1], "text/csv", made[0])]
    signed_at = datetime.now(timezone.utc).replace(microsecond=0)
    with conn.transaction():
        number = _number(conn, draft.kind, signed_at.astimezone(pack_timezone(site["pack"])).year)
        supersedes = None
        if draft.supersedes is not None:
            old = get(conn, draft.supersedes)
            if old is None or old.site_id != draft.site_id:
                raise SigningRefused("The report this corrects is not yours.", "not-found")
            if old.superseded_by:
                raise SigningRefused(f"{old.number} was corrected already by {old.superseded_by}: correct that one.",
                                     "conflict")
            supersedes = old.number
        doc = {
            "format": f"sewerwatch portal submission {FORMAT}", "number": number, "kind": draft.kind,
            "title": draft.title, "utility": utility, "industrial_user": {"id": site["key"], "name": site["name"]},
            "answers": draft.target, "supersedes": supersedes,
            "fields": _fields(draft.kind, draft.data),
            "files": [{"position": i + 1, "role": f.role, "name": f.name, "media_type": f.media_type, "size": f.size,
                       "sha256": f.sha256} for i, f in enumerate(files)],
            "certification": {"statement": certification.CERTIFICATION, "cites": certification.CERTIFICATION_CITATION},
            "signer": {"account": signer.username, "name": signer.full_name, "position": signer.title,
                       "email": signer.email},
            "signed_at": signed_at.isoformat(),
        }
        if chk.lab is not None:
            doc["results"] = [{"line": r.line, "sample_id": r.sample_id, "collected": r.collected.isoformat(),
                               "analyte": r.analyte, "value": r.value, "unit": r.unit, "qualifier": r.qualifier,
                               "value_mg_l": r.value_mg_l} for r in chk.lab.rows]
        body = canonical(doc)
        sha = hashlib.sha256(body).hexdigest()
        rendered = render_pdf(doc, sha, letterhead, tz)
        sid = conn.execute(
            "INSERT INTO portal_submissions (number, site_id, kind, title, target, supersedes, document, sha256, "
            "certification, signer_id, signer_username, signer_name, signer_title, signer_email, signed_at, client, "
            "totp_step, pdf, pdf_sha256) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s) RETURNING id",
            (number, draft.site_id, draft.kind, draft.title, draft.target, draft.supersedes, body, sha,
             certification.CERTIFICATION, signer.id, signer.username, signer.full_name, signer.title, signer.email,
             signed_at, client, step, rendered, hashlib.sha256(rendered).hexdigest())).fetchone()[0]
        for i, f in enumerate(files):
            conn.execute("INSERT INTO portal_submission_files (submission_id, position, role, name, media_type, size, "
                         "sha256, content) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                         (sid, i + 1, f.role, f.name, f.media_type, f.size, f.sha256, f.content))
        answered = _record_receipt(conn, draft, number, sha, signer, signed_at, site)
        _event(conn, sid, signer.username, "submitted", None, {"via": "web", "client": client, "answered": answered,
                                                               "supersedes": supersedes})
        if conn.execute("UPDATE portal_drafts SET submitted_as = %s, updated_at = now() WHERE id = %s AND "
                        "submitted_as IS NULL", (sid, draft.id)).rowcount != 1:     # signed meanwhile, by another
            raise SigningRefused("This draft was signed and submitted already.", "conflict")
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'portal-submitted', %s, %s)",
                     (signer.username, f"submission:{number}", json.dumps({"via": "web", "sha256": sha,
                                                                           "site": site["key"], "kind": draft.kind})))
    return get(conn, sid)


def _site(conn, site_id: int) -> dict:
    row = conn.execute("SELECT id, key, name, pack FROM sites WHERE id = %s", (site_id,)).fetchone()
    return dict(zip(("id", "key", "name", "pack"), row))


def _record_receipt(conn, draft, number: str, sha: str, signer, signed_at: datetime, site: dict) -> str | None:
    """What the submission answers, recorded through enforcement's functions (the CLI's)."""
    from enforcement import notices, reports

    if not draft.target:
        return None
    what, _, ref = draft.target.partition(":")
    day = signed_at.astimezone(pack_timezone(site["pack"])).date()
    note = f"{number} through the portal, signed by {signer.full_name}, SHA-256 {sha}"
    if what == "notice":
        n = notices.notice(conn, ref)
        if n["site"] != site["key"]:
            raise SigningRefused("That notice is not yours.", "not-found")
        if n["state"] == "issued":
            notices.respond(conn, n["number"], day, by=signer.username, note=note)
            return f"notice {n['number']}: response received {day.isoformat()}"
        return f"notice {n['number']} ({n['state']}): a further response"
    if what == "report":
        r = reports.report(conn, int(ref))
        if r["site"] != site["key"]:
            raise SigningRefused("That report is not yours.", "not-found")
        if r["received_on"] is None:
            reports.receive(conn, int(ref), day, by=signer.username, note=note, at=signed_at)
            return f"report {ref}: received {day.isoformat()}"
        return f"report {ref}: received already on {r['received_on']}"
    return None


def receipt_text(sub: Submission, utility: str, tz: str) -> tuple[str, str]:
    """The receipt's subject and body (40 CFR 3.2000(b)(5)(vi))."""
    from foundation.display import local
    subject = f"{utility}: receipt for {sub.number}"
    body = (f"{utility} received this electronic document through its industrial users' portal:\n\n"
            f"  Document:   {sub.number}, {sub.title}\n"
            f"  From:       {sub.site_name}\n"
            f"  Signed by:  {sub.signer_name}{', ' + sub.signer_title if sub.signer_title else ''} "
            f"(account {sub.signer_username})\n"
            f"  Received:   {local(sub.signed_at, tz)} ({sub.signed_at.isoformat()})\n"
            f"  SHA-256:    {sub.sha256}\n\n"
            "The SHA-256 is the fingerprint of the exact document signed: the copy of record the utility keeps "
            "has the same one. If you did not sign this document, tell the utility at once.\n")
    return subject, body


def mail_receipt(conn, sub: Submission, mailer, utility: str, tz: str) -> bool:
    """Mail the receipt to the signatory; the outcome is an event of the record."""
    subject, body = receipt_text(sub, utility, tz)
    try:
        mailer.send(sub.signer_email, subject, body)
    except (MailError, InputError) as exc:
        _event(conn, sub.id, "sewerwatch", "receipt-failed", str(exc)[:500], {"to": sub.signer_email})
        return False
    _event(conn, sub.id, "sewerwatch", "receipt-mailed", None, {"to": sub.signer_email, "sha256": sub.sha256})
    return True


def mail_outcome(conn, sub: Submission, mailer, utility: str) -> str | None:
    """Tell the signatory the review's outcome (accepted, or returned with the reason); the
    outcome of the mail is an event of the record. Returns None when mailed, else why not."""
    returned = sub.state == "rejected"
    subject = f"{utility}: {sub.number} {'returned to you' if returned else 'accepted'}"
    body = (f"{utility} has reviewed {sub.number} ({sub.title}, signed by {sub.signer_name}, SHA-256 {sub.sha256}):\n\n"
            + (f"It was returned to you. The reason:\n\n  {sub.review_reason}\n\nCorrect it in the portal: a "
               "correction is a new submission that supersedes this one.\n" if returned else
               "It was accepted into the utility's record.\n"))
    try:
        mailer.send(sub.signer_email, subject, body)
    except (MailError, InputError) as exc:
        _event(conn, sub.id, "sewerwatch", "outcome-failed", str(exc)[:500], {"to": sub.signer_email})
        return str(exc)[:500]
    _event(conn, sub.id, "sewerwatch", "outcome-mailed", None, {"to": sub.signer_email, "state": sub.state})
    return None


def render_pdf(doc: dict, sha: str, letterhead, tz: str) -> bytes:
    """The report as people read it: every field with its label, the results, the files with
    their SHA-256, the certification and the signature block with the document's SHA-256."""
    from foundation.display import local
    from lab.documents.pdf import document as page, write_pdf

    e = html.escape
    rows = "".join(f"<tr><th>{e(f['label'])}</th><td>{e(f['value']) or '—'}</td></tr>" for f in doc["fields"])
    results = ""
    if doc.get("results"):
        results = ("<h2>Results</h2><table><thead><tr><th>Line</th><th>Sample</th><th>Collected</th><th>Analyte</th>"
                   "<th>Value</th></tr></thead><tbody>" + "".join(
                       f"<tr><td>{r['line']}</td><td>{e(r['sample_id'])}</td><td>{e(local(r['collected'], tz))}"
                       f"</td><td>{e(r['analyte'])}</td><td>{e(r['qualifier'] or '')}{r['value']:g} {e(r['unit'])}</td></tr>"
                       for r in doc["results"]) + "</tbody></table>")
    listed = "".join(f"<tr><td>{f['position']}</td><td>{e(f['name'])}</td><td>{e(f['media_type'])}, {f['size']:,} bytes"
                     f"</td><td class='hash'>{f['sha256']}</td></tr>" for f in doc["files"])
    s = doc["signer"]
    body = (f"<h1>{e(doc['title'])}</h1><p><strong>{e(doc['number'])}</strong> · {e(doc['industrial_user']['name'])} "
            f"({e(doc['industrial_user']['id'])})" + (f" · answers {e(doc['answers'])}" if doc.get("answers") else "")
            + (f" · supersedes {e(doc['supersedes'])}" if doc.get("supersedes") else "") + "</p>"
            f"<table>{rows}</table>{results}"
            + (f"<h2>Files</h2><table><thead><tr><th>#</th><th>Name</th><th>Type</th><th>SHA-256</th></tr></thead>"
               f"<tbody>{listed}</tbody></table>" if listed else "")
            + f"<h2>Certification</h2><p>{e(doc['certification']['statement'])}</p>"
              f"<p class='small'>{e(doc['certification']['cites'])}</p>"
              f"<h2>Signature</h2><p>Signed electronically by {e(s['name'])}"
            + (f", {e(s['position'])}" if s.get("position") else "")
            + f" (account {e(s['account'])}, {e(s['email'] or '')}) at {e(local(doc['signed_at'], tz))}.</p>"
              f"<p>SHA-256 of the document signed: <span class='hash'>{sha}</span></p>")
    css = ("<style>table{border-collapse:collapse;width:100%;margin:6pt 0}th,td{border:0.5pt solid #999;padding:3pt;"
           "text-align:left;vertical-align:top;font-size:9pt}.hash{font-family:monospace;font-size:7.5pt;"
           "word-break:break-all}</style>")
    signed = datetime.fromisoformat(doc["signed_at"]).date()
    return write_pdf(page(doc["title"], css + body, letterhead, issued=signed, footer=doc["number"]), issued=signed)


# -- the coordinator's review -------------------------------------------------------------

def _reviewable(conn, submission_id: int) -> Submission:
    """The submission, awaiting review; two reviewers at once: the second waits, then finds it
    reviewed (an advisory lock: the record's rows refuse UPDATE, so no row lock is taken)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-portal-review'), %s::int)", (submission_id,))
    sub = get(conn, submission_id)
    if sub is None:
        raise InputError(f"no submission {submission_id}")
    if sub.state != "submitted":
        raise InputError(f"{sub.number} is {sub.state}{' by ' + sub.superseded_by if sub.superseded_by else ''}: "
                         "only a submission awaiting review can be accepted or rejected")
    return sub


def reject(conn, submission_id: int, reason: str, *, actor: Actor) -> Submission:
    """Return a submission to the user with ``reason`` (it stays in the record, rejected)."""
    reason = " ".join(str(reason or "").split())[:2000]
    if not reason:
        raise InputError("a rejection needs the reason (the user reads it)")
    with conn.transaction():
        sub = _reviewable(conn, submission_id)
        _event(conn, sub.id, actor.audit_name, "rejected", reason, {"via": actor.via, "by": actor.display})
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'portal-rejected', %s, %s)",
                     (actor.audit_name, f"submission:{sub.number}", json.dumps({"via": actor.via, "reason": reason})))
    return get(conn, submission_id)


def accept(conn, submission_id: int, *, actor: Actor, imports: Path) -> tuple[Submission, dict]:
    """Accept a submission. Self-monitoring results enter the record as the user's own through
    the lab import (``sewerwatch lab import --check``'s function, :func:`labcheck.store`; the
    file the signatory signed), and the months they fall in are judged against the permit and
    the ordinance like the utility's (violations stored). Returns what was done."""
    done: dict = {}
    with conn.transaction():
        sub = _reviewable(conn, submission_id)
        if sub.kind == "self-monitoring":
            csvs = [f for f in files(conn, sub.id) if f["role"] == "lab-csv"]
            content = file_content(conn, sub.id, csvs[-1]["position"])[1]
            site = _site(conn, sub.site_id)
            found = labcheck.check(conn, site["key"], site["pack"], content)
            if found.error or found.bad:
                why = found.error or "; ".join(f"line {b.line}: {b.reason}" for b in found.bad[:5])
                raise InputError(f"{sub.number} cannot be imported as it stands ({why}): reject it with the reason")
            rep = labcheck.store(conn, content, sub.number, f"{actor.audit_name} (accepted {sub.number})", imports,
                                 site["key"], sub.id)
            judged = rep.checked or {"violations": [], "stored": 0, "start": None, "end": None}
            done = {"import": {k: v for k, v in rep.as_json().items() if k != "checked"},
                    "violations_found": len(judged["violations"]), "violations_stored": judged["stored"],
                    "judged": [judged["start"], judged["end"]],
                    "rules": sorted({v["rule"] for v in judged["violations"]}),
                    "limits": limits_in_words(judged["violations"])}
        _event(conn, sub.id, actor.audit_name, "accepted", None, {"via": actor.via, "by": actor.display, **done})
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'portal-accepted', %s, %s)",
                     (actor.audit_name, f"submission:{sub.number}", json.dumps({"via": actor.via, **done}, default=str)))
    return get(conn, submission_id), done


def limits_in_words(violations: list[dict]) -> list[str]:
    """The limits the accepted results broke, as the user reads them: the analyte by name, the
    limit as the ordinance or permit states it for the sample's type, and its citation
    ("Copper: exceeding 4 mg/l in a grab sample (Exampleford Town Code Sec. 40-12(a))");
    one line a limit, in the order of the rules' ids. The ids stay in ``rules`` for the
    audit log and the CLI."""
    first: dict[str, dict] = {}
    for v in violations:
        first.setdefault(v["rule"], v)
    out = []
    for rule in sorted(first):
        v = first[rule]
        cite = f" ({v['citation']})" if v.get("citation") else ""
        out.append(f"{words.analyte_name(v.get('parameter'))}: {of_violation(v)}{cite}")
    return out


#: The coordinator's decisions on a submission (:func:`review`).
DECISIONS = ("accept", "reject")


@dataclass
class Review:
    """What a review did: the submission as it now stands, what accepting it stored (the lab
    import's report, the violations found), and why the signatory was not told by mail
    (None: mailed)."""

    submission: Submission
    done: dict
    mail_error: str | None


def review(conn, submission_id: int, decision: str, *, actor: Actor, reason: str | None = None, imports: Path,
           mailer, utility: str) -> Review:
    """The coordinator's decision on a submission awaiting review: the one function of the
    review page's Accept and Reject and of ``sewerwatch portal accept|reject``.

    The decision (:func:`accept` or :func:`reject`) is committed first, then the signatory is
    told by mail (:func:`mail_outcome`), so no mail announces a decision that was not stored.

    Parameters
    ----------
    conn : psycopg.Connection
        Owner role. An autocommit connection, or one whose open transaction may be committed
        here (the decision is committed before the mail).
    decision : str
        ``accept`` or ``reject``.
    reason : str, optional
        A rejection's reason (needed: the user reads it).
    imports : Path
        The state folder's ``portal-imports`` (the files accepted results were imported from).
    mailer : ereport.mail.Mailer
    utility : str
        The utility's name (the mail's subject).
    """
    if decision not in DECISIONS:
        raise InputError(f"decision: {decision!r}: one of {', '.join(DECISIONS)}")
    if decision == "accept":
        sub, done = accept(conn, submission_id, actor=actor, imports=imports)
    else:
        sub, done = reject(conn, submission_id, reason or "", actor=actor), {}
    if not conn.autocommit:
        conn.commit()
    return Review(sub, done, mail_outcome(conn, sub, mailer, utility))


def correction(conn, submission_id: int, account) -> drafts.Draft:
    """A new draft correcting submission ``submission_id`` of the account's own site: its
    fields and files copied; signed, it supersedes the old one."""
    sub = get(conn, submission_id)
    if sub is None or sub.site_id != account.site_id:
        raise InputError("no such submission")
    if sub.superseded_by:
        raise InputError(f"{sub.number} was corrected already by {sub.superseded_by}")
    doc = json.loads(document(conn, submission_id))
    data = {f["key"]: f["value"] for f in doc["fields"]}
    with conn.transaction():
        d = drafts.create(conn, sub.site_id, account.id, sub.kind, sub.target, sub.id, data)
        for f in files(conn, submission_id):
            if f["role"] == "lab-csv" and f["name"] == "results-entered.csv":
                continue
            meta, content = file_content(conn, submission_id, f["position"])
            from ereport.uploads import Upload
            drafts.add_upload(conn, d, Upload(meta["role"], meta["name"], meta["media_type"], content), account.id)
    return drafts.get(conn, d.id)


# -- a permit application becomes a permit version ---------------------------------------

def permit_toml(conn, submission_id: int) -> str:
    """A permit file to start from for an accepted application: the site's current permit
    with the application's flows, the term renewed for a year (§13.54(4)), or a skeleton."""
    from limits.permit_store import current_permits

    sub = get(conn, submission_id)
    doc = json.loads(document(conn, submission_id))
    values = {f["key"]: f["value"] for f in doc["fields"]}
    site = _site(conn, sub.site_id)
    cur = current_permits(conn).get(site["key"])
    avg = values.get("average_daily_gpd") or "0"
    peak = values.get("peak_flow_gpm") or ""
    today = datetime.now(timezone.utc).date()
    lines = [f"# From application {sub.number} of {site['name']} (signed {sub.signed_at:%Y-%m-%d}, SHA-256 {sub.sha256}).",
             "# Village of Palmyra Code §13.54(3): the conditions; §13.54(4): one year, renewed year to year.",
             f'number = "{cur.number if cur else "PERMIT-NUMBER"}"', f'site = "{site["key"]}"', f'pack = "{site["pack"]}"',
             f"issued = {today.isoformat()}", f"effective = {today.isoformat()}",
             f"expires = {today.replace(year=today.year + 1).isoformat()}",
             'issued_by = "Approving Authority"', "", "[flow]",
             f"average_daily_gpd = {float(avg):g}" if _num(avg) else "average_daily_gpd = 0",
             f"maximum_daily_gpd = {float(peak) * 1440:g}   # the application's peak {peak} gpm over a day"
             if _num(peak) else "maximum_daily_gpd = 0"]
    if cur is not None:
        raw = conn.execute("SELECT document FROM permits_current WHERE number = %s", (cur.number,)).fetchone()[0]
        for lim in raw.get("limits", []):
            lines += ["", "[[limits]]"] + [f"{k} = {json.dumps(v)}" for k, v in lim.items() if v is not None]
        for mon in raw.get("monitoring", []):
            lines += ["", "[[monitoring]]"] + [f"{k} = {_toml(v)}" for k, v in mon.items() if v is not None]
    return "\n".join(lines) + "\n"


def _num(text) -> bool:
    try:
        float(text)
        return True
    except (TypeError, ValueError):
        return False


def _toml(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)


def make_permit(conn, submission_id: int, toml_text: str, *, actor: Actor) -> dict:
    """The permit version made from an accepted application, through ``sewerwatch permit
    import``'s function (:func:`limits.permit_store.import_permit`)."""
    import tomllib

    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import parse_permit

    sub = get(conn, submission_id)
    if sub is None or sub.kind != "permit-application":
        raise InputError("no such application")
    if sub.state != "accepted":
        raise InputError(f"{sub.number} is {sub.state}: accept it first")
    try:
        data = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"the permit: {exc}") from None
    site = _site(conn, sub.site_id)
    if data.get("site") != site["key"]:
        raise InputError(f"the permit: site: this application is {site['key']}'s, the permit says {data.get('site')!r}")
    permit = parse_permit(data, f"permit from {sub.number}", load_pack(site["pack"]))
    with conn.transaction():
        out = import_permit(conn, permit, actor=actor.audit_name, reason=f"from application {sub.number}")
        _event(conn, sub.id, actor.audit_name, "permit-made", None, {"via": actor.via, "permit": out["number"],
                                                                    "version": out["version"], "status": out["status"]})
    return out
