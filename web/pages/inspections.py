"""Inspections of industrial users in the office: the visit form an
inspector fills on a phone at the user's premises (the checklist of the pack or
``[[field.checklist]]``, each item ok, deficient or not applicable with a note; whether
samples were taken; the representative; a grab pH or temperature; photos from the phone's
camera), the visits, and their photos.

The form calls :func:`enforcement.fieldwork.record_inspection`, the function ``sewerwatch
inspections record`` calls (a deficient item is a finding), through :func:`web.forms.once`.
Photos are checked and re-encoded by :func:`field.photos.clean` (by their own bytes, never the
file name or the type the browser claims; at most ``[field] photo_max_bytes``), stored in the
database, and served only at ``/inspections/photos/<id>`` to the utility's staff
(an industrial user's account gets "not found"), never from a folder of files. Staff only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import authz, forms

VIEW = {authz.OPT: "view"}
RECORD = {authz.OPT: "field.record"}
#: The largest form the office takes: photos at their bound, a few of them [bytes].
FORM_MAX = 64 << 20
#: Photos one visit's form takes.
MAX_PHOTOS = 6


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such page")


def _sites(conn) -> list[tuple[str, str]]:
    return conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall()


@get("/inspections", opt=VIEW, sync_to_thread=True, name="inspections")
def inspections_page(request: Request) -> Template:
    from field import inspections
    _staff(request)
    office = request.app.state.office
    rows = office.read(lambda conn: list(reversed(inspections.list_inspections(conn)))[:100])
    return Template("inspections.html", context={"account": request.state.account, "nav": "inspections",
                                                 "inspections": rows,
                                                 "may_record": authz.may(request.state.account, "field.record"),
                                                 "sites": office.read(_sites)})


def _form_context(request: Request, site: str, values: dict, problem: str | None) -> dict:
    from field import inspections
    office = request.app.state.office
    sites = office.read(_sites)
    if site not in {k for k, _ in sites}:
        raise NotFoundException(f"no industrial user {site!r}")
    items = office.read(lambda conn: inspections.checklist(conn, site, office.cfg))
    return {"account": request.state.account, "nav": "inspections", "site": site, "site_name": dict(sites)[site],
            "items": items, "values": values, "problem": problem, "kinds": inspections.KINDS,
            "answers": inspections.ANSWERS, "max_mb": office.cfg.field.photo_max_bytes / 1048576,
            "now_local": datetime.now(ZoneInfo(office.tz)).strftime("%Y-%m-%dT%H:%M")}


@get("/inspections/new", opt=RECORD, sync_to_thread=True)
def inspection_form(request: Request, site: FromQuery[str]) -> Template:
    _staff(request)
    return Template("inspection_form.html", context=_form_context(request, site, {}, None))


def _files(value) -> list[UploadFile]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [f for f in items if isinstance(f, UploadFile) and f.filename]


def _visited(text: str | None, tz: str) -> datetime | None:
    """The form's date and time of the visit (``2026-12-04T10:30``, the village's local time),
    or None (now) when left empty; whether it may be is the package's to say."""
    text = str(text or "").strip()
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        raise InputError(f"date of the visit: expected a date and time such as 2026-12-04 10:30, got {text[:40]!r}") \
            from None
    return t if t.tzinfo else t.replace(tzinfo=ZoneInfo(tz))


def _number(data: dict, key: str, what: str) -> float | None:
    text = str(data.get(key) or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{what}: not a number: {text!r}") from None


# (a path of its own: a GET and a POST both run in threads on one path, Litestar 2.25 answered
# the GET with a 500 here, a coroutine returned unawaited)
@post("/inspections/visits", opt=RECORD, sync_to_thread=True, status_code=200, request_max_body_size=FORM_MAX)
def record_inspection(request: Request,
                      data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
                      ) -> Redirect | Template:
    """Record the visit the form describes, with its photos (once per form)."""
    from enforcement import fieldwork
    from field import inspections
    _staff(request)
    office = request.app.state.office
    site = str(data.get("site") or "")
    values = {k: v for k, v in data.items() if isinstance(v, str)}
    try:
        photos = _files(data.get("photos"))
        if len(photos) > MAX_PHOTOS:
            raise InputError(f"{len(photos)} photos: at most {MAX_PHOTOS} a visit (add the rest to the visit "
                             "afterwards)")
        files = [(f.file.read(office.cfg.field.photo_max_bytes + 1), None) for f in photos]
        items = office.read(lambda conn: inspections.checklist(conn, site, office.cfg))
        answers = [{"item": c["item"], "answer": str(data.get(f"item{n}") or "n/a"),
                    "note": str(data.get(f"note{n}") or "")} for n, c in enumerate(items, start=1)]
        readings = {k: v for k, v in (("ph", _number(data, "ph", "grab pH")),
                                      ("temperature", _number(data, "temperature", "grab temperature"))) if v is not None}

        visited = _visited(data.get("visited"), office.tz)

        def work(conn, actor):
            ins = fieldwork.record_inspection(
                conn, site, actor=actor, cfg=office.cfg, answers=answers, kind=str(data.get("kind") or "routine"),
                visited_at=visited,
                sampled=str(data.get("sampled") or "") == "1",
                representative=str(data.get("representative") or "") or None,
                findings=str(data.get("findings") or "") or None, readings=readings, photo_files=files)
            return {"location": f"/inspections/{ins['id']}", "inspection": ins["id"],
                    "findings": ins.get("findings_recorded", [])}
        return forms.redirect(request, forms.once(request, data, "field.inspection", work))
    except InputError as exc:
        if site not in {k for k, _ in office.read(_sites)}:
            raise
        return Template("inspection_form.html", status_code=400, context=_form_context(
            request, site, values, f"{exc} Nothing was recorded; choose the photos again."))


@get("/inspections/{inspection_id:int}", opt=VIEW, sync_to_thread=True)
def inspection_page(request: Request, inspection_id: FromPath[int], again: FromQuery[str | None] = None) -> Template:
    from field import inspections
    _staff(request)
    office = request.app.state.office
    try:
        ins = office.read(lambda conn: inspections.inspection(conn, inspection_id))
    except InputError:
        raise NotFoundException(f"no inspection {inspection_id}") from None
    return Template("inspection.html", context={"account": request.state.account, "nav": "inspections", "i": ins,
                                                "again": again == "1"})


@get("/inspections/photos/{photo_id:int}", opt=VIEW, sync_to_thread=True)
def photo(request: Request, photo_id: FromPath[int]) -> Response:
    """A stored photo, to the utility's staff only; never cached by a shared cache."""
    from field import inspections
    _staff(request)
    office = request.app.state.office
    try:
        p = office.read(lambda conn: inspections.photo(conn, photo_id))
    except InputError:
        raise NotFoundException(f"no photo {photo_id}") from None
    authz.require_site(request.state.account, p["site_id"])
    ext = "jpg" if p["media_type"] == "image/jpeg" else "png"
    return Response(p["content"], media_type=p["media_type"], headers={
        "Content-Disposition": f'inline; filename="inspection-{p["inspection_id"]}-photo-{photo_id}.{ext}"',
        "Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"})


ROUTES = [inspections_page, inspection_form, record_inspection, inspection_page, photo]
