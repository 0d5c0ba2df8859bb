"""A grease hauler's pages in the portal: its home (the devices it was hired for and its own
pump-out reports), the pump-out report form, and each report with the findings about it.

Every route names :data:`identity.roles.HAULER` (accounts of kind ``grease-hauler`` only:
an industrial user's account and staff are refused), and every object is checked against the
account's own hauler: a report of another hauler, or a device it was not hired for, is "not
found" (:func:`web.authz.own_hauler`). The handlers call :mod:`fog.haulers`; a report is
stored by :func:`fog.store.add_pumpout`, what ``sewerwatch fog pumpout add`` and the office's
form call, once per form (:func:`web.forms.once`). A GET and a POST never share a path (see
:mod:`web.pages.portal`).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from identity import roles
from web import authz, forms

HAULER = {authz.OPT: roles.HAULER}
FORM = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
KINDS = ("too late", "overdue", "over capacity", "unregistered hauler")


def _rules(request: Request):
    from fog.rules import for_pack

    return for_pack(request.app.state.office.cfg.utility.pack)


def _mine(conn, account):
    from fog import haulers

    authz.own_hauler(account, account.hauler_id)
    return haulers.hauler(conn, account.hauler_id)


@get("/portal/grease", opt=HAULER, sync_to_thread=True, name="portal-grease")
def home(request: Request) -> Template:
    from fog import haulers

    account = request.state.account

    def read(conn):
        return _mine(conn, account), haulers.devices(conn, account.hauler_id), haulers.reports(conn, account.hauler_id)
    h, devices, reports = request.app.state.office.read(read)
    return Template("hauler_home.html", context={"account": account, "nav": "hauler", "hauler": h,
                                                 "devices": devices, "reports": reports})


def _form(request: Request, *, status: int = 200, typed: dict | None = None, problem: str | None = None) -> Template:
    from fog import haulers

    account, office = request.state.account, request.app.state.office

    def read(conn):
        return _mine(conn, account), haulers.devices(conn, account.hauler_id)
    h, devices = office.read(read)
    typed = typed or {"date": office.today().isoformat(), "device": request.query_params.get("device", "")}
    return Template("hauler_report_form.html", status_code=status, context={
        "account": account, "nav": "hauler-report", "hauler": h, "devices": devices, "typed": typed,
        "problem": problem, "today": office.today()})


@get("/portal/grease/report", opt=HAULER, sync_to_thread=True)
def report_form(request: Request) -> Template:
    return _form(request)


@post("/portal/grease/reports", opt=HAULER, sync_to_thread=True, status_code=303)
def file_report(request: Request, data: FORM) -> Redirect | Template:
    """A pump-out reported by the hauler: :func:`fog.haulers.file_report`."""
    from fog import haulers

    account, office = request.state.account, request.app.state.office
    typed = {k: str(data.get(k, "") or "").strip()[:200] for k in ("device", *haulers.FIELDS)}
    hired = office.read(lambda conn: {d["device_id"] for d in haulers.devices(conn, account.hauler_id)})
    if typed["device"] and (not typed["device"].isdigit() or int(typed["device"]) not in hired):
        raise NotFoundException("no such device")       # another's device: says nothing of it
    today = office.today()

    def work(conn, actor):
        p = haulers.file_report(conn, account.hauler_id, typed["device"], typed, actor, today)
        return {"location": f"/portal/grease/reports/{p['id']}?done=filed", "pumpout": p["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.portal-report", work))
    except InputError as exc:
        return _form(request, status=400, typed=typed, problem=str(exc))


def report_context(request: Request, pumpout_id: int, **more) -> dict:
    """What the page of the hauler's own report ``pumpout_id`` shows (its photos among it);
    "not found" when it is not the hauler's."""
    from ereport.grease_photos import MAX_PHOTOS, photos
    from fog import haulers

    account, office = request.state.account, request.app.state.office
    rules = _rules(request)

    def read(conn):
        return (_mine(conn, account), haulers.report(conn, rules, account.hauler_id, pumpout_id, office.today()),
                photos(conn, [pumpout_id]).get(pumpout_id, []))
    h, p, pics = office.read(read)
    if p is None:
        raise NotFoundException("no such report")
    return {"account": account, "nav": "hauler", "hauler": h, "p": p, "bases": {k: rules.basis(k) for k in KINDS},
            "photos": pics, "max_photos": MAX_PHOTOS, "max_mb": office.cfg.field.photo_max_bytes / 1048576, **more}


@get("/portal/grease/reports/{pumpout_id:int}", opt=HAULER, sync_to_thread=True)
def report_page(request: Request, pumpout_id: FromPath[int], done: FromQuery[str | None] = None,
                again: FromQuery[str | None] = None) -> Template:
    return Template("hauler_report.html", context=report_context(request, pumpout_id, done=done,
                                                                 again=bool(again)))


ROUTES = [home, report_form, file_report, report_page]
