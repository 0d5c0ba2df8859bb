"""Mailing in the office: batches of issued notices and bills made from a choice, reviewed
(who gets what by e-mail, who on paper, who has no address on file), sent once, each sending
with its outcome; the paper list as a page and as PDFs. Each action is
:mod:`ereport.mailing`'s function, the one ``sewerwatch mail batch new|send|paper`` calls, as
the signed-in account. Reading takes ``view``; making and sending a batch ``mail.send`` (the
clerk, the coordinator, the superintendent).

Sending is done in the request (a batch of some fifty messages to the utility's own mail
server takes seconds); each sending is committed as it goes, and a second click is refused
by the batch itself (it is sent once), naming when it was sent.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Response, Template

from ereport.mail import MailError
from ereport.mailing import batches, paper
from ereport.mailing import send as sending
from foundation.errors import InputError
from web import authz, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
MAIL = {authz.OPT: "mail.send"}
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]


@get("/mail", opt=VIEW, sync_to_thread=True, name="mailing")
def mail_page(request: Request) -> Template:
    from lab import bill_runs

    office = request.app.state.office
    found, runs = office.read(lambda conn: (batches.list_batches(conn), bill_runs.list_runs(conn)))
    return Template("mail_batches.html", context={
        "account": request.state.account, "nav": "mail", "batches": found,
        "runs": [r for r in runs if r.get("state") == "issued"], "kinds": batches.KINDS,
        "chosen_run": request.query_params.get("bill_run"), "chosen": request.query_params.get("document") or ""})


@post("/mail/batches", opt=MAIL, sync_to_thread=True, status_code=303)
def make(request: Request, data: Form) -> Redirect:
    """Make a batch (:func:`ereport.mailing.batches.make`, as ``sewerwatch mail batch new``)."""
    choice = str(data.get("choice", ""))
    run = str(data.get("bill_run", "")).strip()
    docs = [x for x in str(data.get("documents", "")).replace(",", " ").split() if x]
    if choice == "run" and not run.isdigit():
        raise InputError("bill run: choose one")
    if choice == "documents" and not docs:
        raise InputError("documents: name at least one, such as bill:12")
    resend = docs if choice == "documents" and data.get("resend") else []

    def work(conn, actor):
        b = batches.make(conn, actor=actor, unsent=choice == "unsent", bill_run=int(run) if choice == "run" else None,
                         documents=[] if resend or choice != "documents" else docs, resend=resend,
                         reason=str(data.get("reason", ""))[:300] or None)
        return {"location": f"/mail/batches/{b['id']}?done=made", "batch": b["id"]}

    if choice not in ("unsent", "run", "documents"):
        raise InputError("choice: every document not yet sent, a bill run, or documents by number")
    return forms.redirect(request, forms.once(request, data, "mail.batch", work))


def _batch(office, batch_id: int) -> dict:
    try:
        return office.read(lambda conn: batches.batch(conn, batch_id))
    except InputError:
        raise NotFoundException(f"no mail batch {batch_id}") from None


def _batch_page(request: Request, batch_id: int, *, status: int = 200, problem: str | None = None) -> Template:
    office = request.app.state.office
    return Template("mail_batch.html", status_code=status, context={
        "account": request.state.account, "nav": "mail", "b": _batch(office, batch_id), "problem": problem,
        "done": request.query_params.get("done"), "again": request.query_params.get("again")})


@get("/mail/batches/{batch_id:int}", opt=VIEW, sync_to_thread=True)
def batch_page(request: Request, batch_id: FromPath[int]) -> Template:
    return _batch_page(request, batch_id)


@post("/mail/batches/{batch_id:int}/send", opt=MAIL, sync_to_thread=True, status_code=303)
def send(request: Request, batch_id: FromPath[int], data: Form) -> Redirect | Template:
    """Send the batch (:func:`ereport.mailing.send.send`, as ``sewerwatch mail batch send``)."""
    office = request.app.state.office
    _batch(office, batch_id)
    try:
        office.act(request.state.account, sending.send, batch_id, mail_url=office.opts.mail_url, cfg=office.cfg)
    except batches.AlreadySent as exc:
        return _batch_page(request, batch_id, status=409, problem=str(exc))
    except MailError as exc:
        return _batch_page(request, batch_id, status=503, problem=f"{exc}. Nothing was sent.")
    return Redirect(office.url(f"/mail/batches/{batch_id}?done=sent"), status_code=303)


@get("/mail/batches/{batch_id:int}/paper", opt=VIEW, sync_to_thread=True)
def paper_page(request: Request, batch_id: FromPath[int]) -> Template:
    office = request.app.state.office
    _batch(office, batch_id)
    p = office.read(lambda conn: paper.paper_list(conn, batch_id))
    return Template("mail_paper.html", context={"account": request.state.account, "nav": "mail", "p": p,
                                                "b": p["batch"]})


@get("/mail/batches/{batch_id:int}/paper.pdf", opt=VIEW, sync_to_thread=True)
def paper_pdf(request: Request, batch_id: FromPath[int]) -> Response:
    office = request.app.state.office
    _batch(office, batch_id)
    pdf = office.read(lambda conn: paper.list_pdf(conn, batch_id, office.cfg, office.today()))
    return download(pdf, f"paper-list-{batch_id}.pdf", "application/pdf")


@get("/mail/batches/{batch_id:int}/print.pdf", opt=VIEW, sync_to_thread=True)
def print_pdf(request: Request, batch_id: FromPath[int]) -> Response:
    office = request.app.state.office
    _batch(office, batch_id)
    pdf = office.read(lambda conn: paper.print_pdf(conn, batch_id, office.cfg, office.today()))
    return download(pdf, f"paper-documents-{batch_id}.pdf", "application/pdf")


#: Largest file of notifications taken [bytes].
BOUNCES_MAX = 10 * 1024 * 1024


@post("/mail/bounces", opt=MAIL, sync_to_thread=True, status_code=200, request_max_body_size=BOUNCES_MAX + 65536)
def bounces_upload(request: Request, data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
                   ) -> Template:
    """Read the delivery-status notifications of the files sent (a mailbox or ``.eml`` files:
    :func:`ereport.mailing.bounces.import_bounces`, as ``sewerwatch mail bounces``). Reading a
    notification twice marks nothing twice."""
    import re
    import tempfile
    from pathlib import Path

    from ereport.mailing import bounces
    from litestar.datastructures import UploadFile

    office = request.app.state.office
    given = data.get("files")
    files = [f for f in (given if isinstance(given, list) else [given]) if isinstance(f, UploadFile) and f.filename]
    if not files:
        raise InputError("returned mail: choose the mailbox file or the .eml files the mail server sent back")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for n, f in enumerate(files, 1):
            name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(f.filename).name)[:80] or f"file-{n}"
            path = Path(tmp) / f"{n}" / name
            path.parent.mkdir()
            path.write_bytes(f.file.read(BOUNCES_MAX + 1)[:BOUNCES_MAX])
            paths.append(path)
        result = office.act(request.state.account, bounces.import_bounces, paths)
    return Template("mail_bounces.html", context={"account": request.state.account, "nav": "mail", "r": result})


ROUTES = [mail_page, make, batch_page, send, paper_page, paper_pdf, print_pdf, bounces_upload]
