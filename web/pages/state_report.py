"""The state's electronic report in the office: the ICIS-NPDES XML (a year not over only as a
draft, marked as one), the checklist of what the state's reviewer will question, and the
recorded publication of the year's list of users in significant noncompliance (the newspaper,
the day, the printed page).

Every rule is the package's (:mod:`enforcement.state_report`, :mod:`enforcement.publication`,
:mod:`enforcement.icis`); the publication form calls :func:`enforcement.publication.record`, the
function ``sewerwatch report publish`` calls, once per form (:mod:`web.forms`), as the
signed-in account. The XML's author is the signed-in account's name.
"""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import authz, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
ACT = {authz.OPT: "notices.issue"}
#: The largest publication form: the page at its bound and the fields [bytes].
FORM_MAX = 21 << 20


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such page")


def _settings(office):
    from enforcement.settings import settings

    return settings(office.cfg)


def _annual(office, y: int) -> dict:
    from enforcement.annual import annual_report

    st = _settings(office)
    return office.read(lambda conn: annual_report(conn, y, st.snc_periods, office.utility, st, program=st.program))


def _year(text: str) -> int:
    if not text.isdigit() or not 1990 <= int(text) <= 2200:
        raise NotFoundException(f"no year {text}")
    return int(text)


def reports_context(office, y: int, lst: dict) -> dict:
    """What the Reports page shows of the state's report for year ``y``: whether the year is
    over (``year_state``, and the draft's note), the publications recorded of its list."""
    from enforcement import publication, state_report

    tz = ZoneInfo(office.tz)
    state = state_report.year_state(y, tz)
    pubs = office.read(lambda conn: publication.publications(conn, y))
    published = {s for p in pubs for s in p["sites"]}
    return {"year_state": state, "draft_note": state_report.draft_note(y, tz) if state == "open" else None,
            "icis_file": _icis_name(y, state == "open"), "publications": pubs,
            "unpublished": [u for u in lst["users"] if u["site"] not in published],
            "submitter_id": _settings(office).program.submitter_id}


def _icis_name(y: int, draft: bool) -> str:
    return f"icis-{y}{'-draft' if draft else ''}.xml"


def icis_xml(request: Request, y: int, draft: bool) -> Response:
    """The year's XML (``/reports/icis-2026.xml``; ``icis-2026-draft.xml`` for a year not
    over): the header's author is the signed-in account, the year's state the package's."""
    from enforcement import icis, state_report

    office = request.app.state.office
    st = _settings(office)
    note = state_report.check_year(y, ZoneInfo(office.tz), draft)
    if draft and note is None:
        raise InputError(f"{y} is over: its summary is no draft (download icis-{y}.xml)")
    who = state_report.submitter(st.program, office.utility, request.state.account.full_name)
    xml = icis.checked_xml(_annual(office, y), who, draft=note)
    return download(xml, icis.file_name(y, draft=bool(note)), "application/xml")


@get("/reports/{year:str}/checklist", opt=VIEW, sync_to_thread=True)
def checklist_page(request: Request, year: FromPath[str]) -> Template:
    """What the state's reviewer will question in the year's summary, each with its user and
    the page that settles it."""
    from enforcement import state_report

    _staff(request)
    office = request.app.state.office
    y = _year(year)
    items = state_report.checklist(_annual(office, y))
    state = state_report.year_state(y, ZoneInfo(office.tz))
    return Template("state_checklist.html", context={
        "account": request.state.account, "nav": "reports", "year": y, "items": items,
        "checks": state_report.CHECKS, "year_state": state, "icis_file": _icis_name(y, state == "open")})


def _page_file(value) -> UploadFile | None:
    items = value if isinstance(value, list) else [value]
    files = [f for f in items if isinstance(f, UploadFile) and f.filename]
    return files[0] if files else None


@post("/reports/{year:str}/publications", opt=ACT, sync_to_thread=True, status_code=303,
      request_max_body_size=FORM_MAX)
def record_publication(request: Request, year: FromPath[str],
                       data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect:
    """Record the publication the form describes (once per form)."""
    from enforcement import publication
    from enforcement.annual import snc_list
    from foundation import moments

    _staff(request)
    office = request.app.state.office
    y = _year(year)
    st = _settings(office)
    f = _page_file(data.get("page"))
    if f is None:
        raise InputError("the page: choose the PDF or the photo of the printed page")
    content = f.file.read(publication.PAGE_MAX + 1)
    on = moments.day(str(data.get("published_on") or "").strip(), "the day it appeared")
    named = data.get("sites")
    sites = [str(s) for s in (named if isinstance(named, list) else [named]) if s] if named is not None else []

    def work(conn, actor):
        listed = [u["site"] for u in snc_list(conn, y, st.snc_periods, st)["users"]]
        p = publication.record(conn, y, str(data.get("newspaper") or ""), on, content, f.filename, sites,
                               listed=listed, actor=actor, today=office.today())
        return {"location": f"/reports?year={y}&published={p['id']}#publication-h", "publication": p["id"]}

    return forms.redirect(request, forms.once(request, data, "report.publish", work))


@get("/reports/publications/{publication_id:int}", opt=VIEW, sync_to_thread=True)
def publication_page(request: Request, publication_id: FromPath[int]) -> Response:
    """The printed page of a recorded publication, as it was uploaded."""
    from enforcement import publication

    _staff(request)
    office = request.app.state.office
    try:
        kind, name, content, _year_of = office.read(lambda conn: publication.page(conn, publication_id))
    except InputError:
        raise NotFoundException("no such publication") from None
    safe = "".join(c for c in name if c.isalnum() or c in "._- ") or "page"
    return download(content, safe, kind, attachment=False)


ROUTES = [checklist_page, record_publication, publication_page]
