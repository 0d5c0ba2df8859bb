"""The coordinator's review queue: what industrial users signed and
submitted, each shown as its copy of record with its hash checked again; accept (results enter
the record and are judged), reject with the reason, and for an accepted permit application
the permit version made through ``sewerwatch permit import``'s function. ``portal.review``."""

from __future__ import annotations

import json
from typing import Annotated

from litestar import Request, Response, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from ereport import record
from foundation.errors import InputError
from web import authz
from web.pages.portal import _file

REVIEW = {authz.OPT: "portal.review"}
FORM = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
#: Longest permit file taken from the form [characters].
PERMIT_MAX = 200_000


@get("/review", opt=REVIEW, sync_to_thread=True, name="review")
def queue_page(request: Request) -> Template:
    office = request.app.state.office
    waiting, done = office.read(lambda conn: (record.queue(conn), record.queue(conn, ("accepted", "rejected",
                                                                                     "superseded"))[-30:][::-1]))
    return Template("review_queue.html", context={"account": request.state.account, "nav": "review",
                                                   "waiting": waiting, "done": done})


def _page(request: Request, submission_id: int, *, status: int = 200, error: str | None = None,
          flash: str | None = None, permit_text: str | None = None) -> Template:
    office = request.app.state.office

    def read(conn):
        s = record.get(conn, submission_id)
        if s is None:
            raise NotFoundException("no such submission")
        doc = json.loads(record.document(conn, s.id))
        toml = None
        if s.kind == "permit-application" and s.state == "accepted":
            toml = permit_text or record.permit_toml(conn, s.id)
        return s, doc, record.files(conn, s.id), record.events(conn, s.id), record.verify(conn, s.id), toml
    s, doc, files, events, verified, toml = office.read(read)
    return Template("portal_submission.html", status_code=status, context={
        "account": request.state.account, "nav": "review", "sub": s, "doc": doc, "files": files, "events": events,
        "verified": verified, "staff": True, "error": error, "done": flash, "permit_toml": toml})


@get("/review/{submission_id:int}", opt=REVIEW, sync_to_thread=True)
def submission_page(request: Request, submission_id: FromPath[int]) -> Template:
    return _page(request, submission_id, flash=request.query_params.get("done"))


@get("/review/{submission_id:int}/pdf", opt=REVIEW, sync_to_thread=True)
def submission_pdf(request: Request, submission_id: FromPath[int]) -> Response:
    office = request.app.state.office
    s = office.read(lambda conn: record.get(conn, submission_id))
    if s is None:
        raise NotFoundException("no such submission")
    return _file({"name": f"{s.number}.pdf", "media_type": "application/pdf"},
                 office.read(lambda conn: record.pdf(conn, s.id)))


@get("/review/{submission_id:int}/files/{position:int}", opt=REVIEW, sync_to_thread=True)
def submission_file(request: Request, submission_id: FromPath[int], position: FromPath[int]) -> Response:
    found = request.app.state.office.read(lambda conn: record.file_content(conn, submission_id, position))
    if found is None:
        raise NotFoundException("no such file")
    return _file(found[0], found[1])


@post("/review/{submission_id:int}/accept", opt=REVIEW, sync_to_thread=True, status_code=303)
def accept(request: Request, submission_id: FromPath[int]) -> Redirect | Template:
    office, account = request.app.state.office, request.state.account
    if office.read(lambda conn: record.get(conn, submission_id)) is None:
        raise NotFoundException("no such submission")
    try:
        office.act(account, record.review, submission_id, "accept", imports=office.imports, mailer=office.mailer,
                   utility=office.utility)
    except InputError as exc:
        return _page(request, submission_id, status=409, error=str(exc))
    return Redirect(office.url(f"/review/{submission_id}?done=accepted"), status_code=303)


@post("/review/{submission_id:int}/reject", opt=REVIEW, sync_to_thread=True, status_code=303)
def reject(request: Request, submission_id: FromPath[int], data: FORM) -> Redirect | Template:
    office, account = request.app.state.office, request.state.account
    if office.read(lambda conn: record.get(conn, submission_id)) is None:
        raise NotFoundException("no such submission")
    try:
        office.act(account, record.review, submission_id, "reject", reason=str(data.get("reason", ""))[:2000],
                   imports=office.imports, mailer=office.mailer, utility=office.utility)
    except InputError as exc:
        return _page(request, submission_id, status=400 if "reason" in str(exc) else 409, error=str(exc))
    return Redirect(office.url(f"/review/{submission_id}?done=rejected"), status_code=303)


@post("/review/{submission_id:int}/permit", opt=REVIEW, sync_to_thread=True, status_code=303)
def make_permit(request: Request, submission_id: FromPath[int], data: FORM) -> Redirect | Template:
    office, account = request.app.state.office, request.state.account
    if office.read(lambda conn: record.get(conn, submission_id)) is None:
        raise NotFoundException("no such submission")
    text = str(data.get("permit", ""))[:PERMIT_MAX]
    try:
        out = office.act(account, record.make_permit, submission_id, text)
    except InputError as exc:
        return _page(request, submission_id, status=400, error=str(exc), permit_text=text)
    return Redirect(office.url(f"/review/{submission_id}?done=permit-{out['number']}-v{out['version']}"),
                    status_code=303)


ROUTES = [queue_page, submission_page, submission_pdf, submission_file, accept, reject, make_permit]
