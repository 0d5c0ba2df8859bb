"""A grease inspection in the office: the form on an establishment's page
(``/grease/<id>/inspect``, made for a phone at 390 px) records the device's checks and the
kitchen's best management practices through :func:`fog.inspections.record`, once per form
(:mod:`web.forms`); the establishment's page then lists the inspections, and a 25 % reading
reached is among its findings (:func:`fog.inspections.add_to`). A device found missing (none at
all, or one on record not there) is recorded from the same page's form through
:func:`fog.missing_devices.record` (``sewerwatch fog missing add``). Staff who record field work
(``field.record``: the inspector, the coordinator, the superintendent).
A GET and a POST never share a path (see :mod:`web.pages.portal`).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import authz, forms
from web.pages.fog import _rules, _staff

INSPECT = {authz.OPT: "field.record"}
FIELDS = ("device", "date", "baffles", "cover", "fog_depth_in", "solids_depth_in", "scraping", "strainers",
          "training_records", "notes")


def _form(request: Request, establishment_id: int, *, status: int = 200, typed: dict | None = None,
          problem: str | None = None) -> Template:
    from fog import inspections, store

    _staff(request)
    office = request.app.state.office
    try:
        e = office.read(lambda conn: store.establishment(conn, _rules(request), office.today(), establishment_id))
    except InputError:
        raise NotFoundException("no such establishment") from None
    return Template("fog_inspection_form.html", status_code=status, context={
        "account": request.state.account, "nav": "grease", "e": e, "problem": problem,
        "typed": typed or {"date": office.today().isoformat()}, "baffles": inspections.BAFFLES,
        "covers": inspections.COVER, "practices": inspections.PRACTICES, "rules": _rules(request)})


@get("/grease/{establishment_id:int}/inspect", opt=INSPECT, sync_to_thread=True)
def inspection_form(request: Request, establishment_id: FromPath[int]) -> Template:
    return _form(request, establishment_id)


@post("/grease/{establishment_id:int}/inspections", opt=INSPECT, sync_to_thread=True, status_code=303)
def record_inspection(request: Request, establishment_id: FromPath[int],
                      data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A grease inspection recorded: :func:`fog.inspections.record`."""
    from fog import inspections

    _staff(request)
    office = request.app.state.office
    typed = {k: str(data.get(k, "") or "").strip()[:2000] for k in FIELDS}

    def work(conn, actor):
        i = inspections.record(conn, establishment_id, typed, actor, office.today())
        return {"location": f"/grease/{establishment_id}?inspected={i['id']}#inspections", "inspection": i["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.inspection", work))
    except InputError as exc:
        return _form(request, establishment_id, status=400, typed=typed, problem=str(exc))


@post("/grease/{establishment_id:int}/missing", opt=INSPECT, sync_to_thread=True, status_code=303)
def record_missing(request: Request, establishment_id: FromPath[int],
                   data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A device found missing: :func:`fog.missing_devices.record`."""
    from fog import missing_devices
    from web.pages.fog import _establishment_context

    _staff(request)
    office = request.app.state.office
    typed = {k: str(data.get(k, "") or "").strip()[:2000] for k in ("device", "date", "notes")}

    def work(conn, actor):
        m = missing_devices.record(conn, _rules(request), establishment_id, found_on=typed["date"],
                                   device=typed["device"], notes=typed["notes"], actor=actor, today=office.today(),
                                   source="office")
        return {"location": f"/grease/{establishment_id}?missing={m['id']}#findings", "missing": m["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.missing", work))
    except InputError as exc:
        if "no establishment" in str(exc):
            raise NotFoundException("no such establishment") from None
        return Template("fog_establishment.html", status_code=400, context=_establishment_context(
            request, establishment_id, None, missing_typed=typed, missing_problem=str(exc)))


ROUTES = [inspection_form, record_inspection, record_missing]
