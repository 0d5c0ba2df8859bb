"""Letters previewed, issued and kept as issued; a PDF brought back from the word processor.

:func:`preview` renders a kind's template (the one in force, or a text being edited) for an
industrial user, nothing stored. :func:`issue` numbers the letter (``LTR-2026-001``) and keeps
it as issued (``letters``, migration 0310): what the template was given, the rendered HTML,
the template's text and its SHA-256, the PDF and its SHA-256, who issued it and when, and an
``audit_log`` row. A letter of the same kind to the same user about the same subject
(:mod:`enforcement.letters.kinds` says what that is per kind) is refused the second time,
naming the letter that exists.

A letter edited outside (the DOCX, :mod:`enforcement.letters.docx`) comes back as a PDF
(:func:`replace_pdf`): checked as a PDF by its bytes and read by poppler, kept in
``letter_pdfs`` with who brought it and when; the program's first PDF stays in ``letters``.
:func:`issued_document` gives the PDF in force (the latest brought back, else the program's).
"""

from __future__ import annotations

import hashlib
import json
from datetime import date

from foundation.actor import Actor
from foundation.errors import InputError
from enforcement.letters import kinds as kd
from enforcement.letters import rendering
from enforcement.letters.templates import Template, template, title_of

#: The numbers' prefix.
PREFIX = "LTR"
#: The largest PDF brought back [bytes] (a letter of a few pages with a scanned signature).
PDF_MAX = 20 * 1024 * 1024
#: Whom a letter is addressed to: the address book's role (identity.contacts.ROLES) and address kind.
TO_ROLE, TO_ADDRESS = "representative", "mailing"
_COLS = ("id", "number", "kind", "title", "site_id", "subject_key", "subject", "issued_on", "template_sha256",
         "template_source", "pdf_sha256", "issued_by", "issued_at")


def _site(conn, site_key: str) -> tuple[int, str, str]:
    from identity.contacts import site_of

    sid, name = site_of(conn, str(site_key or "").strip())
    return sid, str(site_key).strip(), name


def _head(cfg):
    from lab.documents.pdf import letterhead

    return letterhead(cfg)


def context(conn, cfg, kind: str, site_key: str, today: date, *, number: str | None = None, notice: str | None = None,
            month: str | None = None, about: str | None = None, preview: bool = False) -> tuple[dict, kd.Subject]:
    """What a letter's template is given (:mod:`enforcement.letters.kinds`) and its subject.

    In a preview a kind that takes ``about`` gets words standing for it when none are typed.
    """
    from foundation.moments import village_zone
    from identity.contacts import addressee
    from lab.documents.addressee import block_html
    import html

    sid, key, name = _site(conn, site_key)
    tz = str(village_zone(cfg))
    permit = kd.permit_of(conn, key, today)
    if preview and not (about or "").strip() and kind not in kd.FROM_NOTICE and kind not in (
            "sampling-reminder", "permit-renewal-reminder"):
        about = kd.sample_about(kind)
    subj = kd.subject(conn, kind, site_id=sid, site_key=key, today=today, tz=tz, permit=permit, notice=notice,
                      month=month, about=about)
    head = _head(cfg)
    to = addressee(conn, key, TO_ROLE, TO_ADDRESS).as_json()
    ctx = {"letterhead": {"village": head.village, "lines": list(head.lines), "signed_by": head.signed_by or "",
                          "signer_title": head.signer_title or ""},
           "date": kd.in_words(today), "issued_on": today.isoformat(), "number": number or "PREVIEW",
           "user": {"key": key, "name": name}, "to": to,
           "addressee": rendering.as_markup(block_html(to, html.escape(name))),
           "permit": permit, "subject": subj.words, "about": subj.extra.get("about", ""), **subj.extra}
    return ctx, subj


def _stored(ctx: dict) -> dict:
    """The context as kept (JSON; drawn HTML as text)."""
    return json.loads(json.dumps(ctx, default=str))


def render(conn, cfg, tpl: Template, site_key: str, today: date, *, text: str | None = None,
           number: str | None = None, **needs) -> tuple[str, bytes, dict, kd.Subject]:
    """(whole HTML, PDF, context, subject) of a letter from ``tpl`` (or ``text`` being edited)."""
    ctx, subj = context(conn, cfg, tpl.kind, site_key, today, number=number, preview=number is None, **needs)
    title = title_of(tpl.kind, text) if text is not None else tpl.title
    body = rendering.render_body(tpl.kind, tpl.text if text is None else text.replace("\r\n", "\n"), ctx)
    whole = rendering.whole_html(f"{title}" + (f" {number}" if number else ""), body, _head(cfg), today, number)
    return whole, rendering.pdf_of(whole, today), ctx, subj


def preview(conn, cfg, kind: str, site_key: str, today: date, *, text: str | None = None, **needs) -> dict:
    """A letter of ``kind`` for ``site_key`` as it would be issued today, nothing stored:
    ``html``, ``pdf``, ``title``, ``subject``."""
    tpl = template(conn, cfg, kind)
    whole, pdf, _, subj = render(conn, cfg, tpl, site_key, today, text=text, **needs)
    return {"html": whole, "pdf": pdf, "title": tpl.title if text is None else title_of(kind, text),
            "subject": subj.words}


def _number(conn, year: int) -> str:
    n = conn.execute("SELECT count(*) FROM letters WHERE number LIKE %s", (f"{PREFIX}-{year}-%",)).fetchone()[0]
    return f"{PREFIX}-{year}-{n + 1:03d}"


def _refusal(row) -> str:
    number, title, issued_on, by = row
    return f"{title} {number} about this was issued already, on {issued_on.isoformat()} by {by}: nothing issued"


def issue(conn, cfg, kind: str, site_key: str, today: date, *, actor: Actor, notice: str | None = None,
          month: str | None = None, about: str | None = None) -> dict:
    """Issue a letter of ``kind`` to ``site_key``, dated ``today`` (the village's day).

    Returns
    -------
    dict
        The letter's row (:func:`letter`).

    Raises
    ------
    InputError
        What the kind needs missing; the template's error (one line, its line named); a letter
        of the kind to the user about the same subject issued already (naming it).
    """
    tpl = template(conn, cfg, kind)
    sid, key, _ = _site(conn, site_key)
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('letters'))")     # numbers in order, one issue at a time
    _, subj = context(conn, cfg, tpl.kind, key, today, notice=notice, month=month, about=about)
    prev = conn.execute("SELECT number, title, issued_on, issued_by FROM letters WHERE kind = %s AND site_id = %s "
                        "AND subject_key = %s", (tpl.kind, sid, subj.key)).fetchone()
    if prev is not None:
        raise InputError(_refusal(prev))
    number = _number(conn, today.year)
    whole, pdf, ctx, subj = render(conn, cfg, tpl, key, today, number=number, notice=notice, month=month, about=about)
    sha = hashlib.sha256(pdf).hexdigest()
    row = conn.execute(
        "INSERT INTO letters (number, kind, title, site_id, subject_key, subject, issued_on, context, html, "
        "template_text, template_sha256, template_source, pdf, pdf_sha256, issued_by) VALUES (%s, %s, %s, %s, %s, %s, "
        "%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (number, tpl.kind, tpl.title, sid, subj.key, subj.words, today, json.dumps(_stored(ctx)), whole, tpl.text,
         tpl.sha256, tpl.source, pdf, sha, actor.audit_name)).fetchone()
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, "letter.issue", f"letter:{number}",
                  json.dumps({"kind": tpl.kind, "site": key, "subject": subj.words, "template_sha256": tpl.sha256,
                              "template_source": tpl.source, "pdf_sha256": sha, "via": actor.via})))
    return letter(conn, row[0])


def _where(ref) -> tuple[str, object]:
    if isinstance(ref, int):
        return "l.id = %s", ref
    return "l.number = %s", str(ref).strip().upper()


def letter(conn, ref) -> dict:
    """A letter (by number or id) with its user, ``html``, ``context``, ``template_text`` and
    ``replacements`` (the PDFs brought back, newest first, without their bytes).

    Raises
    ------
    InputError
        No such letter.
    """
    where, arg = _where(ref)
    row = conn.execute(f"SELECT {', '.join('l.' + c for c in _COLS)}, s.key, s.name, l.html, l.context, "
                       f"l.template_text FROM letters l JOIN sites s ON s.id = l.site_id WHERE {where}",
                       (arg,)).fetchone()
    if row is None:
        raise InputError(f"no letter {ref!r} (sewerwatch letters list shows them)")
    out = dict(zip(_COLS + ("site", "site_name", "html", "context", "template_text"), row))
    out["replacements"] = [dict(zip(("id", "pdf_sha256", "filename", "note", "replaced_by", "replaced_at"), r))
                           for r in conn.execute("SELECT id, pdf_sha256, filename, note, replaced_by, replaced_at "
                                                 "FROM letter_pdfs WHERE letter_id = %s ORDER BY id DESC",
                                                 (out["id"],)).fetchall()]
    return out


def letters(conn, site_key: str | None = None, year: int | None = None) -> list[dict]:
    """The letters issued (of one user, of one year), newest first."""
    rows = conn.execute(
        f"SELECT {', '.join('l.' + c for c in _COLS)}, s.key, s.name, "
        "(SELECT count(*) FROM letter_pdfs p WHERE p.letter_id = l.id) FROM letters l JOIN sites s ON s.id = l.site_id "
        "WHERE (%s::text IS NULL OR s.key = %s) AND (%s::int IS NULL OR extract(year FROM l.issued_on) = %s) "
        "ORDER BY l.issued_on DESC, l.id DESC", (site_key, site_key, year, year)).fetchall()
    return [dict(zip(_COLS + ("site", "site_name", "replaced"), r)) for r in rows]


def pdf(conn, ref, *, first: bool = False) -> tuple[dict, bytes]:
    """A letter and its PDF in force: the latest brought back, else the program's as issued
    (``first``: the program's, always)."""
    lt = letter(conn, ref)
    row = None if first else conn.execute("SELECT pdf FROM letter_pdfs WHERE letter_id = %s ORDER BY id DESC LIMIT 1",
                                          (lt["id"],)).fetchone()
    if row is None:
        row = conn.execute("SELECT pdf FROM letters WHERE id = %s", (lt["id"],)).fetchone()
    return lt, bytes(row[0])


def check_pdf(data: bytes, what: str) -> None:
    """A PDF by its bytes: its header, its end, and poppler reads it.

    Raises
    ------
    InputError
        Naming ``what`` (the file) and what is wrong.
    """
    from lab.documents.pdf import page_count

    if not data:
        raise InputError(f"{what}: the file is empty")
    if len(data) > PDF_MAX:
        raise InputError(f"{what}: larger than {PDF_MAX // (1024 * 1024)} MB")
    if not data.startswith(b"%PDF-") or b"%%EOF" not in data[-2048:]:
        raise InputError(f"{what}: not a PDF (a PDF file begins with %PDF- and ends with %%EOF)")
    try:
        if page_count(data) < 1:
            raise InputError(f"{what}: a PDF without pages")
    except Exception as exc:  # noqa: BLE001 - poppler's failure, said in words
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{what}: the PDF cannot be read (damaged?)") from None


def replace_pdf(conn, ref, data: bytes, filename: str, *, actor: Actor, note: str | None = None) -> dict:
    """Keep ``data`` (a PDF edited outside) as the letter's issued PDF; the program's first
    PDF and every earlier one stay. Returns the letter (:func:`letter`).

    Raises
    ------
    InputError
        Not a PDF (:func:`check_pdf`); the same bytes as the PDF in force.
    """
    name = (str(filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip() or "letter.pdf")[:120]
    check_pdf(data, name)
    lt = letter(conn, ref)
    conn.execute("SELECT id FROM letters WHERE id = %s FOR UPDATE", (lt["id"],))
    sha = hashlib.sha256(data).hexdigest()
    _, current = pdf(conn, lt["id"])
    if hashlib.sha256(current).hexdigest() == sha:
        raise InputError(f"{name}: the same file as the PDF of {lt['number']} in force: nothing replaced")
    conn.execute("INSERT INTO letter_pdfs (letter_id, pdf, pdf_sha256, filename, note, replaced_by) "
                 "VALUES (%s, %s, %s, %s, %s, %s)", (lt["id"], data, sha, name, (note or "").strip() or None,
                                                     actor.audit_name))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, "letter.replace-pdf", f"letter:{lt['number']}",
                  json.dumps({"filename": name, "pdf_sha256": sha, "first_pdf_sha256": lt["pdf_sha256"],
                              "via": actor.via})))
    return letter(conn, lt["id"])


def issued_document(conn, letter_id: int) -> dict:
    """What the mailing of a letter needs: ``site`` (the user's id), ``title``, ``number``,
    ``pdf`` (the PDF in force: the replacement brought back, else the program's as issued)
    and ``contact_role`` (whom it goes to, in the address book's words)."""
    from identity.contacts import ROLES

    lt, data = pdf(conn, int(letter_id))
    return {"site": lt["site_id"], "title": lt["title"], "number": lt["number"], "pdf": data,
            "contact_role": ROLES[TO_ROLE]}
