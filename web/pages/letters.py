"""The Letters pages: the kinds of letter (the program's or the utility's, and when changed), a
kind's template edited and previewed, a letter issued, its page with its PDF, its DOCX and a
PDF brought back from the word processor.

Everyone on staff reads them (``view``); saving a template, previewing an edit, issuing and
bringing a PDF back take ``letters.write`` (the coordinator, the superintendent). Each action
calls :mod:`enforcement.letters`, the functions ``sewerwatch letters`` calls, as the
signed-in account, once per form (:func:`web.forms.once`); a save names the version it was
loaded from (a conflict otherwise, the text typed kept in the form). A portal account never
reaches these pages (the guard: staff only).
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from foundation.errors import Conflict, InputError
from web import authz, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
WRITE = {authz.OPT: "letters.write"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
#: The largest upload of a letter's PDF [bytes] (the package checks its own limit too).
UPLOAD_MAX = 21 * 1024 * 1024
_NEEDS = ("notice", "month", "about")


def _needs(data: dict) -> dict:
    return {k: (str(data.get(k) or "").strip()[:300] or None) for k in _NEEDS}


def _sites(conn) -> list[tuple[str, str]]:
    return conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall()


def _not_found(fn):
    try:
        return fn()
    except InputError:
        raise NotFoundException("no such letter") from None


@get("/letters", opt=VIEW, sync_to_thread=True, name="letters")
def letters_page(request: Request, site: FromQuery[str | None] = None) -> Template:
    return _letters(request, site=site)


def _letters(request: Request, *, site: str | None = None, status: int = 200, problem: str | None = None,
             form: dict | None = None) -> Template:
    from enforcement import letters as lt
    from enforcement.letters.kinds import needs

    office = request.app.state.office

    def read(conn):
        return lt.kinds(conn, office.cfg), lt.letters(conn), _sites(conn)
    ks, issued, sites = office.read(read)
    return Template("letters.html", status_code=status, context={
        "account": request.state.account, "nav": "letters", "kinds": ks, "letters": issued, "sites": sites,
        "needs": {t.kind: needs(t.kind) for t in ks}, "site": (form or {}).get("site") or site, "form": form or {},
        "problem": problem, "may_write": authz.may(request.state.account, "letters.write")})


def _edit(request: Request, kind: str, *, status: int = 200, problem: str | None = None, form: dict | None = None,
          pages: list[str] | None = None, done: str | None = None) -> Template:
    from enforcement.letters import templates
    from enforcement.letters.kinds import needs

    office = request.app.state.office

    def read(conn):
        return templates.template(conn, office.cfg, kind), templates.versions(conn, kind), _sites(conn)
    try:
        tpl, versions, sites = office.read(read)
    except InputError:
        raise NotFoundException("no such kind of letter") from None
    f = form or {}
    return Template("letters_template.html", status_code=status, context={
        "account": request.state.account, "nav": "letters", "t": tpl, "versions": versions, "sites": sites,
        "text": f.get("text", tpl.text), "version": f.get("version", tpl.version),
        "loaded": f.get("loaded", tpl.sha256), "form": f, "needs": needs(kind), "problem": problem, "pages": pages or [],
        "done": done or request.query_params.get("done"), "again": request.query_params.get("again") == "1",
        "folder": templates.folder(office.cfg) is not None,
        "may_write": authz.may(request.state.account, "letters.write")})


@get("/letters/templates/{kind:str}", opt=VIEW, sync_to_thread=True)
def template_page(request: Request, kind: FromPath[str]) -> Template:
    return _edit(request, kind)


@post("/letters/templates/{kind:str}/edit", opt=WRITE, sync_to_thread=True, status_code=200)
def template_post(request: Request, kind: FromPath[str], data: Form) -> Response | Redirect | Template:
    """Preview (pictures of the pages, or the PDF) or save the text of the form."""
    from enforcement.letters import issuing, templates

    office = request.app.state.office
    text = str(data.get("text") or "")
    form = {"text": text, "version": str(data.get(forms.VERSION_FIELD) or "0"), "loaded": str(data.get("loaded") or ""),
            "site": str(data.get("site") or ""), **_needs(data)}
    do = str(data.get("do") or "preview")
    try:
        if do == "save":
            def work(conn, actor):
                t = templates.save(conn, office.cfg, kind, text, expected_version=forms.base_version(data),
                                   loaded_sha256=form["loaded"], actor=actor)
                return {"location": f"/letters/templates/{kind}?done=saved", "version": t.version}
            return forms.redirect(request, forms.once(request, data, "letters.template.save", work))
        p = office.read(lambda conn: issuing.preview(conn, office.cfg, kind, form["site"], office.today(), text=text,
                                                    **{k: form[k] for k in _NEEDS}))
    except Conflict as exc:
        return _edit(request, kind, status=forms.CONFLICT, problem=" ".join(forms.conflict_lines(exc, office.tz)),
                     form=form)
    except InputError as exc:
        return _edit(request, kind, status=400, problem=str(exc), form=form)
    if do == "pdf":
        return download(p["pdf"], f"preview-{kind}.pdf", "application/pdf", attachment=False)
    pages = ["data:image/png;base64," + base64.b64encode(png).decode() for png in issuing.rendering.pngs_of(p["pdf"])]
    return _edit(request, kind, form=form, pages=pages)


@post("/letters/issue", opt=WRITE, sync_to_thread=True, status_code=200)
def issue(request: Request, data: Form) -> Redirect | Template:
    from enforcement import letters as lt

    office = request.app.state.office
    form = {"kind": str(data.get("kind") or ""), "site": str(data.get("site") or ""), **_needs(data)}

    def work(conn, actor):
        got = lt.issue(conn, office.cfg, form["kind"], form["site"], office.today(), actor=actor,
                       **{k: form[k] for k in _NEEDS})
        return {"location": f"/letters/{got['id']}?done=issued", "number": got["number"]}
    try:
        return forms.redirect(request, forms.once(request, data, "letters.issue", work))
    except InputError as exc:
        return _letters(request, status=400, problem=str(exc), form=form)


def _letter(request: Request, letter_id: int, *, status: int = 200, problem: str | None = None) -> Template:
    from enforcement import letters as lt

    from ereport.mailing.batches import sendings_of

    office = request.app.state.office
    got = office.read(lambda conn: _not_found(lambda: lt.letter(conn, letter_id)))
    sent = office.read(lambda conn: sendings_of(conn, "letter", letter_id))
    return Template("letter.html", status_code=status, context={
        "account": request.state.account, "nav": "letters", "l": got, "problem": problem,
        "sendings": sent, "mail_ref": f"letter:{letter_id}",
        "done": request.query_params.get("done"), "again": request.query_params.get("again") == "1",
        "may_write": authz.may(request.state.account, "letters.write")})


@get("/letters/{letter_id:int}", opt=VIEW, sync_to_thread=True)
def letter_page(request: Request, letter_id: FromPath[int]) -> Template:
    return _letter(request, letter_id)


@get("/letters/{letter_id:int}/pdf", opt=VIEW, sync_to_thread=True)
def letter_pdf(request: Request, letter_id: FromPath[int], first: FromQuery[int] = 0) -> Response:
    from enforcement import letters as lt

    got, data = request.app.state.office.read(lambda conn: _not_found(lambda: lt.pdf(conn, letter_id,
                                                                                    first=bool(first))))
    return download(data, f"{got['number']}{'-first' if first else ''}.pdf", "application/pdf", attachment=False)


@get("/letters/{letter_id:int}/letter.docx", opt=VIEW, sync_to_thread=True)
def letter_docx(request: Request, letter_id: FromPath[int]) -> Response:
    from enforcement import letters as lt
    from enforcement.letters import docx

    got = request.app.state.office.read(lambda conn: _not_found(lambda: lt.letter(conn, letter_id)))
    return download(docx.render(got), docx.filename(got["number"]),
                    "application/vnd.openxmlformats-officedocument.wordprocessingml.document")


@post("/letters/{letter_id:int}/replace-pdf", opt=WRITE, sync_to_thread=True, status_code=200, request_max_body_size=UPLOAD_MAX)
def replace_pdf(request: Request, letter_id: FromPath[int],
                data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect | Template:
    """The letter's PDF edited outside, brought back (:func:`enforcement.letters.replace_pdf`)."""
    from enforcement import letters as lt
    from enforcement.letters.issuing import PDF_MAX

    f = data.get("pdf")
    values = {k: v for k, v in data.items() if isinstance(v, str)}
    try:
        if not isinstance(f, UploadFile) or not f.filename:
            raise InputError("PDF: choose the letter's PDF to upload")
        content = f.file.read(PDF_MAX + 1)

        def work(conn, actor):
            lt.replace_pdf(conn, letter_id, content, f.filename, actor=actor, note=values.get("note"))
            return {"location": f"/letters/{letter_id}?done=replaced"}
        return forms.redirect(request, forms.once(request, values, "letters.replace-pdf", work))
    except InputError as exc:
        return _letter(request, letter_id, status=400, problem=str(exc))


ROUTES = [letters_page, template_page, template_post, issue, letter_page, letter_pdf, letter_docx, replace_pdf]
