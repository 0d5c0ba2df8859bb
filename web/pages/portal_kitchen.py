"""An establishment's pages in the portal (``/portal/kitchen``): the pump-outs reported for its
own devices, each with the hauler's photos, to confirm or to dispute with a reason
(:func:`fog.verdicts.give`, once per form, :mod:`web.forms`).

Every route names :data:`identity.roles.ESTABLISHMENT` (accounts of kind
``grease-establishment`` only) and every object is checked against the account's own
establishment: another's report or photo is "not found" (:func:`web.authz.own_establishment`).
A GET and a POST never share a path (see :mod:`web.pages.portal`).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from identity import roles
from web import authz, forms

KITCHEN = {authz.OPT: roles.ESTABLISHMENT}
FORM = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
Q = FromQuery[str | None]


def _context(request: Request, **more) -> dict:
    from ereport.grease_photos import photos
    from fog import verdicts

    account = request.state.account
    authz.own_establishment(account, account.establishment_id)

    def read(conn):
        found = verdicts.reports(conn, account.establishment_id)
        return (verdicts.establishment(conn, account.establishment_id), found,
                photos(conn, [p["id"] for p in found]))
    e, found, pics = request.app.state.office.read(read)
    return {"account": account, "nav": "kitchen", "e": e, "reports": found, "photos": pics,
            "disputed": sum(1 for p in found if p["verdict"] == "disputed"), **more}


@get("/portal/kitchen", opt=KITCHEN, sync_to_thread=True, name="portal-kitchen")
def home(request: Request, done: Q = None, manifest: Q = None, again: Q = None) -> Template:
    return Template("kitchen_home.html", context=_context(request, done=done, manifest=manifest,
                                                          again=bool(again)))


def _verdict(request: Request, pumpout_id: int, data: dict, verdict: str) -> Redirect | Template:
    from fog import verdicts

    account = request.state.account
    authz.own_establishment(account, account.establishment_id)
    mine = request.app.state.office.read(lambda conn: conn.execute(
        "SELECT d.establishment_id FROM fog_pumpouts p JOIN fog_devices d ON d.id = p.device_id WHERE p.id = %s",
        (pumpout_id,)).fetchone())
    if mine is None or mine[0] != account.establishment_id:
        raise NotFoundException("no such report")
    reason = str(data.get("reason", "") or "")[:verdicts.REASON_MAX + 1]

    def work(conn, actor):
        v = verdicts.give(conn, account.establishment_id, pumpout_id, verdict, reason, actor)
        return {"location": f"/portal/kitchen?done={verdict}&manifest={v['manifest']}#report-{pumpout_id}",
                "verdict": verdict}
    try:
        return forms.redirect(request, forms.once(request, data, f"grease.{verdict}", work))
    except InputError as exc:
        return Template("kitchen_home.html", status_code=400,
                        context=_context(request, problem=str(exc), problem_at=pumpout_id))


@post("/portal/kitchen/reports/{pumpout_id:int}/confirm", opt=KITCHEN, sync_to_thread=True, status_code=303)
def confirm(request: Request, pumpout_id: FromPath[int], data: FORM) -> Redirect | Template:
    """The establishment confirms a report: :func:`fog.verdicts.give`."""
    return _verdict(request, pumpout_id, data, "confirmed")


@post("/portal/kitchen/reports/{pumpout_id:int}/dispute", opt=KITCHEN, sync_to_thread=True, status_code=303)
def dispute(request: Request, pumpout_id: FromPath[int], data: FORM) -> Redirect | Template:
    """The establishment disputes a report, with its reason: :func:`fog.verdicts.give`."""
    return _verdict(request, pumpout_id, data, "disputed")


@get("/portal/kitchen/photos/{photo_id:int}", opt=KITCHEN, sync_to_thread=True)
def photo(request: Request, photo_id: FromPath[int]) -> Response:
    """A photo of a pump-out of the establishment's own device."""
    from ereport import grease_photos
    from web.pages.grease_photos import serve

    p = request.app.state.office.read(lambda conn: grease_photos.photo(conn, photo_id))
    if p is None or p["establishment_id"] != request.state.account.establishment_id:
        raise NotFoundException("no such photo")
    return serve(p, photo_id)


ROUTES = [home, confirm, dispute, photo]
