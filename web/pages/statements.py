"""Statements of account in the office: the program's receivables on one page (every user's
balance and its aging on a chosen day, with the totals), each user's statement with its PDF
(:mod:`lab.statements`, the functions ``sewerwatch bills receivables`` and ``bills statement``
call), and the bank's file of payments: uploaded, previewed row by row, then recorded once
(:mod:`lab.payments`, as ``sewerwatch bills import-payments``). Reading takes ``view``;
recording a bank file takes ``payments.record`` (the clerk, the superintendent, the
coordinator).
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import authz, formats, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
RECORD = {authz.OPT: "payments.record"}
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]


def _as_of(request: Request):
    office = request.app.state.office
    return formats.form_date(request.query_params.get("as_of"), "as of", office.today())


@get("/bills/receivables", opt=VIEW, sync_to_thread=True, name="receivables")
def receivables_page(request: Request) -> Template:
    from lab import statements

    office = request.app.state.office
    as_of = _as_of(request)
    r = office.read(lambda conn: statements.receivables(conn, as_of))
    return Template("receivables.html", context={
        "account": request.state.account, "nav": "bills", "r": r, "buckets": statements.BUCKETS,
        "today": office.today().isoformat()})


def _statement(office, site: str, as_of) -> dict:
    from lab import statements

    try:
        return office.read(lambda conn: statements.statement(conn, site, as_of))
    except InputError:
        raise NotFoundException(f"no industrial user {site}") from None


@get("/bills/statements/{site:str}", opt=VIEW, sync_to_thread=True)
def statement_page(request: Request, site: FromPath[str]) -> Template:
    from lab import statements
    from lab.documents.statement_page import balance_words

    office = request.app.state.office
    s = _statement(office, site, _as_of(request))
    return Template("statement.html", context={
        "account": request.state.account, "nav": "bills", "s": s, "buckets": statements.BUCKETS,
        "balance_words": balance_words(s)})


@get("/bills/statements/{site:str}/pdf", opt=VIEW, sync_to_thread=True)
def statement_pdf(request: Request, site: FromPath[str]) -> Response:
    """The statement's PDF with the utility's letterhead (drawn each time: a payment recorded
    since changes it)."""
    from lab.documents.pdf import letterhead
    from lab.documents.statement_page import write_statement

    office = request.app.state.office
    s = _statement(office, site, _as_of(request))
    return download(write_statement(s, letterhead(office.cfg)), f"statement-{s['site']}-{s['as_of']}.pdf",
                    "application/pdf")


@post("/bills/payments", opt=RECORD, sync_to_thread=True, status_code=303,
      request_max_body_size=2 * 1024 * 1024 + 65536)
def upload(request: Request, data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
           ) -> Redirect:
    """Keep the bank's file with its preview (:func:`lab.payments.stage`); nothing recorded yet."""
    from lab import payments

    office = request.app.state.office
    file = data.get("file")
    if not isinstance(file, UploadFile) or not file.filename:
        raise InputError("bank file: choose the bank's CSV file of payments")
    content = file.file.read(payments.MAX_BYTES + 1)

    def work(conn, actor):
        f = payments.stage(conn, file.filename, content, office.today(), actor=actor)
        return {"location": f"/bills/payments/{f['id']}", "file": f["id"]}

    return forms.redirect(request, forms.once(request, data, "payments.stage", work))


def _file(office, import_id: int) -> dict:
    from lab import payments

    try:
        return office.read(lambda conn: payments.bank_file(conn, import_id))
    except InputError:
        raise NotFoundException(f"no bank file {import_id}") from None


@get("/bills/payments/{import_id:int}", opt=VIEW, sync_to_thread=True)
def file_page(request: Request, import_id: FromPath[int]) -> Template:
    office = request.app.state.office
    f = _file(office, import_id)
    return Template("payments_file.html", context={
        "account": request.state.account, "nav": "bills", "f": f,
        "rep": f["report"] if f["state"] == "recorded" else f["preview"], "today": office.today().isoformat(),
        "done": request.query_params.get("done"), "again": request.query_params.get("again")})


@post("/bills/payments/{import_id:int}/record", opt=RECORD, sync_to_thread=True, status_code=303)
def record(request: Request, import_id: FromPath[int], data: Form) -> Redirect:
    """Record the matched rows (:func:`lab.payments.record`: checked again, the others kept
    with their reasons; a file recorded already refused)."""
    from lab import payments

    office = request.app.state.office

    def work(conn, actor):
        f = payments.record(conn, import_id, office.today(), actor=actor)
        return {"location": f"/bills/payments/{import_id}?done=recorded", "matched": f["report"]["matched"]}

    return forms.redirect(request, forms.once(request, data, "payments.record", work))


ROUTES = [receivables_page, statement_page, statement_pdf, upload, file_page, record]
