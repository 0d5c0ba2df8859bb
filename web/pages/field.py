"""A sensor's page for the technician at the manhole: its maintenance window
started and ended in two taps on a phone (the sensor in the list, then the reason's button),
its instrument, its calibrations and the calibration form.

Every action calls the package function the command line calls (:mod:`field.windows`,
:func:`enforcement.fieldwork.record_calibration`) through :func:`web.forms.once`, so a double
tap or the back button acts once; each needs ``field.record`` (inspectors, the
superintendent and the coordinator). An industrial user's account sees its own site's sensors
only (:func:`web.authz.require_site`) and acts on none.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import authz, forms

VIEW = {authz.OPT: "view"}
RECORD = {authz.OPT: "field.record"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]


def _sensor(conn, site: str, name: str, account):
    from field.common import sensor
    try:
        s = sensor(conn, f"{site}/{name}")
    except InputError:
        raise NotFoundException(f"no sensor {site}/{name}") from None
    authz.require_site(account, s.site_id)
    return s


def _page_data(conn, site: str, name: str, account, cfg) -> dict:
    from field import calibrations, instruments, windows
    s = _sensor(conn, site, name, account)
    ws = [w for w in windows.list_windows(conn, site=s.site) if w["sensor_id"] in (None, s.id)]
    open_w = [w for w in ws if w["open"] and w["approval"] != "rejected"]
    cals = calibrations.list_calibrations(conn, sensor_id=s.id)
    due = [d for d in calibrations.schedule(conn, _today(cfg, s.pack), cfg) if d.sensor_id == s.id]
    return {"s": s, "open_windows": open_w, "windows": list(reversed(ws))[:10], "calibrations": list(reversed(cals))[:10],
            "instrument": instruments.current(conn, s.id), "due": due[0] if due else None,
            "line": calibrations.line}


def _today(cfg, pack: str):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from limits.packs import load_pack
    return datetime.now(ZoneInfo(cfg.timezone or load_pack(pack).timezone)).date()


@get("/sensors/{site:str}/{name:str}", opt=VIEW, sync_to_thread=True, name="sensor")
def sensor_page(request: Request, site: FromPath[str], name: FromPath[str], again: FromQuery[str | None] = None,
                done: FromQuery[str | None] = None) -> Template:
    from field import windows
    office = request.app.state.office
    account = request.state.account
    data = office.read(lambda conn: _page_data(conn, site, name, account, office.cfg))
    return Template("field_sensor.html", context={
        "account": account, "nav": "sensors", **data, "reasons": windows.REASONS, "again": again == "1",
        "done": done, "may_record": authz.may(account, "field.record") and account.kind == "staff"})


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such sensor")


@post("/sensors/{site:str}/{name:str}/maintenance", opt=RECORD, sync_to_thread=True, status_code=200)
def maintenance(request: Request, site: FromPath[str], name: FromPath[str], data: Form) -> Redirect | Template:
    """Start a window (``reason``: the button tapped) or end one (``end``: its id)."""
    from field import windows
    _staff(request)
    office = request.app.state.office
    settings = windows.Settings.of(office.cfg)
    back = f"/sensors/{site}/{name}"

    def work(conn, actor):
        s = _sensor(conn, site, name, request.state.account)
        if str(data.get("end", "")).strip():
            wid = str(data["end"]).strip()
            if not wid.isdigit():
                raise InputError(f"end: not a window number: {wid!r}")
            w = windows.close_window(conn, int(wid), actor=actor)
            if w["sensor_id"] not in (None, s.id) or w["site_id"] != s.site_id:
                raise InputError(f"maintenance window {wid} is not of {s.key}")
            return {"location": f"{back}?done=ended-{w['id']}", "window": w["id"]}
        reason = str(data.get("reason", "")).strip()
        [w] = windows.open_window(conn, site, [name], reason=reason, actor=actor, settings=settings)
        return {"location": f"{back}?done=started-{w['id']}", "window": w["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "field.maintenance", work))
    except InputError as exc:
        account = request.state.account
        page = office.read(lambda conn: _page_data(conn, site, name, account, office.cfg))
        return Template("field_sensor.html", status_code=400, context={
            "account": account, "nav": "sensors", **page, "reasons": windows.REASONS, "again": False, "done": None,
            "problem": str(exc), "may_record": True})


@get("/sensors/{site:str}/{name:str}/calibration", opt=RECORD, sync_to_thread=True)
def calibration_form(request: Request, site: FromPath[str], name: FromPath[str]) -> Template:
    _staff(request)
    office = request.app.state.office
    s = office.read(lambda conn: _sensor(conn, site, name, request.state.account))
    return Template("field_calibration.html", context={"account": request.state.account, "nav": "sensors", "s": s,
                                                        "values": {}, "problem": None})


def _number(data: dict, key: str, what: str) -> float | None:
    text = str(data.get(key, "")).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{what}: not a number: {text!r}") from None


# (a path of its own: with the form's GET, both run in threads, on one path Litestar 2.25
# answered the GET with a 500 here, a coroutine returned unawaited)
@post("/sensors/{site:str}/{name:str}/calibrations", opt=RECORD, sync_to_thread=True, status_code=200)
def calibration_record(request: Request, site: FromPath[str], name: FromPath[str],
                       data: Form) -> Redirect | Template:
    """Record a calibration as ``sewerwatch calibrations record`` does (one per form)."""
    from enforcement import fieldwork
    from field import calibrations
    _staff(request)
    office = request.app.state.office
    account = request.state.account

    def parsed(s):
        buffers = []
        for i in range(3):
            nominal = _number(data, f"buffer{i}_nominal", f"buffer {i + 1}: value")
            found = _number(data, f"buffer{i}_found", f"buffer {i + 1}: as found")
            left = _number(data, f"buffer{i}_left", f"buffer {i + 1}: as left")
            if nominal is None and found is None and left is None:
                continue
            if nominal is None or left is None:
                raise InputError(f"buffer {i + 1}: give its value and the reading as left")
            buffers.append(calibrations.parse_buffer(f"{nominal}:{'' if found is None else found}:{left}"))
        return {"buffers": buffers, "slope_pct": _number(data, "slope", "slope"),
                "offset_mv": _number(data, "offset", "offset"),
                "temperature": _number(data, "temperature", "temperature"),
                "reference": _number(data, "reference", "reference"), "meter": _number(data, "meter", "meter"),
                "technician": str(data.get("technician", "")).strip() or None,
                "note": str(data.get("note", "")).strip() or None}

    def work(conn, actor):
        s = _sensor(conn, site, name, account)
        c = fieldwork.record_calibration(conn, s.key, actor=actor, cfg=office.cfg, **parsed(s))
        return {"location": f"/sensors/{site}/{name}?done=calibration-{c['id']}", "calibration": c["id"],
                "result": c["result"]}
    try:
        return forms.redirect(request, forms.once(request, data, "field.calibration", work))
    except InputError as exc:
        s = office.read(lambda conn: _sensor(conn, site, name, account))
        return Template("field_calibration.html", status_code=400, context={
            "account": account, "nav": "sensors", "s": s, "values": dict(data), "problem": str(exc)})


ROUTES = [sensor_page, maintenance, calibration_form, calibration_record]
