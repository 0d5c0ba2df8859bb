"""The grease program's enforcement and blockages in the office: on an establishment's page,
its findings with the step the grease guide proposes and a form to issue it (roles that may
issue notices), the notices issued with their PDFs as issued, and the sewer segment it drains
to; the sewer crew's blockages with the hot spots (``/grease/blockages``) and a form to
record one. Each action calls the function the command line calls
(:func:`enforcement.grease_notices.issue`: ``sewerwatch fog notices issue``;
:func:`fog.blockages.add_blockage`: ``fog blockage add``; :func:`fog.blockages.set_segment`:
``fog segment``), once per form (:mod:`web.forms`). Staff only.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import authz, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
ISSUE = {authz.OPT: "notices.issue"}
RECORD = {authz.OPT: "grease.record"}
Q = FromQuery[str | None]
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such page")


def _guide():
    from enforcement.grease_guide import load

    return load()


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(str(text).strip())
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-12-31, got {text!r}") from None


@post("/grease/{establishment_id:int}/notices", opt=ISSUE, sync_to_thread=True, status_code=303)
def issue_notice(request: Request, establishment_id: FromPath[int], data: Form) -> Redirect | Template:
    """The notice the guide proposes for one finding: :func:`enforcement.grease_notices.issue`."""
    from enforcement import grease_notices
    from fog.rules import for_pack
    from web.pages.fog import _establishment_context

    _staff(request)
    office = request.app.state.office
    as_of_text = str(data.get("as_of", "")).strip()[:10]

    def work(conn, actor):
        n = grease_notices.issue(conn, establishment=establishment_id, key=str(data.get("finding", ""))[:200],
                                 step=str(data.get("step", ""))[:60], as_of=_day(as_of_text, "as of"),
                                 today=office.today(), actor=actor, letterhead=office.letterhead,
                                 pack=office.cfg.utility.pack, rules=for_pack(office.cfg.utility.pack), guide=_guide())
        return {"location": f"/grease/{establishment_id}?as_of={as_of_text}&issued={n['number']}#notices",
                "number": n["number"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.notice", work))
    except InputError as exc:
        return Template("fog_establishment.html", status_code=409, context=_establishment_context(
            request, establishment_id, as_of_text or None, problem=str(exc)))


@get("/grease/notices/{notice_id:int}/pdf", opt=VIEW, sync_to_thread=True)
def notice_pdf(request: Request, notice_id: FromPath[int]) -> Response:
    """A grease notice's PDF as it was issued (the stored bytes)."""
    from enforcement import grease_notices

    _staff(request)
    try:
        n, pdf = request.app.state.office.read(lambda conn: grease_notices.pdf(conn, notice_id))
    except InputError:
        raise NotFoundException("no such notice") from None
    return download(pdf, f"{n['number']}.pdf", "application/pdf")


def _notice(request: Request, notice_id: int) -> dict:
    from enforcement import grease_notices

    try:
        return request.app.state.office.read(lambda conn: grease_notices.pdf(conn, notice_id))[0]
    except InputError:
        raise NotFoundException("no such notice") from None


def _refused(request: Request, n: dict, exc: InputError) -> Template:
    from web.pages.fog import _establishment_context

    return Template("fog_establishment.html", status_code=409, context=_establishment_context(
        request, n["establishment_id"], None, problem=str(exc)))


@post("/grease/notices/{notice_id:int}/respond", opt=ISSUE, sync_to_thread=True, status_code=303)
def record_response(request: Request, notice_id: FromPath[int], data: Form) -> Redirect | Template:
    """The establishment's response to a notice: :func:`enforcement.grease_responses.respond`."""
    from enforcement import grease_responses

    _staff(request)
    office, n = request.app.state.office, _notice(request, notice_id)

    def work(conn, actor):
        grease_responses.respond(conn, n["number"], _day(str(data.get("received", ""))[:10], "received on"),
                                 str(data.get("note", ""))[:2000], actor, office.today())
        return {"location": f"/grease/{n['establishment_id']}?answered={n['number']}#notices", "number": n["number"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.notice-response", work))
    except InputError as exc:
        return _refused(request, n, exc)


@post("/grease/notices/{notice_id:int}/escalate", opt=ISSUE, sync_to_thread=True, status_code=303)
def escalate_notice(request: Request, notice_id: FromPath[int], data: Form) -> Redirect | Template:
    """The guide's next step for a notice unanswered by its deadline or answered inadequately:
    :func:`enforcement.grease_responses.escalate`."""
    from enforcement import grease_responses
    from fog.rules import for_pack

    _staff(request)
    office, n = request.app.state.office, _notice(request, notice_id)

    def work(conn, actor):
        _, new = grease_responses.escalate(
            conn, n["number"], on=office.today(), note=str(data.get("note", ""))[:2000], actor=actor,
            today=office.today(), letterhead=office.letterhead, pack=office.cfg.utility.pack,
            rules=for_pack(office.cfg.utility.pack), guide=_guide())
        return {"location": f"/grease/{n['establishment_id']}?escalated={new['number']}#notices",
                "number": new["number"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.notice-escalate", work))
    except InputError as exc:
        return _refused(request, n, exc)


@post("/grease/{establishment_id:int}/segment", opt=RECORD, sync_to_thread=True, status_code=303)
def set_segment(request: Request, establishment_id: FromPath[int], data: Form) -> Redirect | Template:
    """The sewer segment the establishment drains to: :func:`fog.blockages.set_segment`."""
    from fog import blockages
    from web.pages.fog import _establishment_context, _licence

    _staff(request)
    licence = _licence(request, establishment_id)
    segment = str(data.get("segment", "")).strip()[:200]

    def work(conn, actor):
        r = blockages.set_segment(conn, licence, segment, actor)
        return {"location": f"/grease/{establishment_id}?segment=saved#segment", "segment": r["segment"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.segment", work))
    except InputError as exc:
        return Template("fog_establishment.html", status_code=400, context=_establishment_context(
            request, establishment_id, None, problem=str(exc)))


def _blockages_context(request: Request, since: str | None, until: str | None, **more) -> dict:
    from fog import blockages

    office = request.app.state.office
    end = _day(until, "until") if until else office.today()
    start = _day(since, "since") if since else end - timedelta(days=365)
    rows, spots = office.read(lambda conn: (blockages.blockages(conn, start, end), blockages.hot_spots(conn, start, end)))
    typed = more.pop("typed", None) or {"date": office.today().isoformat()}
    return {"account": request.state.account, "nav": "grease", "since": start, "until": end, "blockages": rows,
            "spots": spots, "typed": typed, **more}


@get("/grease/blockages", opt=VIEW, sync_to_thread=True, name="grease_blockages")
def blockages_page(request: Request, since: Q = None, until: Q = None, saved: Q = None, again: Q = None) -> Template:
    """The blockages of a period (default: the year to today) and the hot spots they make."""
    _staff(request)
    return Template("fog_blockages.html", context=_blockages_context(request, since, until, saved=saved,
                                                                      again=bool(again)))


@post("/grease/blockages/record", opt=RECORD, sync_to_thread=True, status_code=303)
def add_blockage(request: Request, data: Form) -> Redirect | Template:
    """A blockage the crew found: :func:`fog.blockages.add_blockage`."""
    from fog import blockages

    _staff(request)
    office = request.app.state.office
    rec = {k: str(data.get(k, "")).strip()[:1000] for k in blockages.FIELDS}

    def work(conn, actor):
        b = blockages.add_blockage(conn, rec, actor, office.today(), source="office")
        return {"location": f"/grease/blockages?saved={b['location']}#blockages", "id": b["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.blockage", work))
    except InputError as exc:
        return Template("fog_blockages.html", status_code=400, context=_blockages_context(
            request, None, None, typed=rec, problem=str(exc)))


ROUTES = [issue_notice, notice_pdf, record_response, escalate_notice, set_segment, blockages_page, add_blockage]
