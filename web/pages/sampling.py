"""Sampling events in the office: a month's events planned from the schedule (the calendar's
button and this page's, :func:`enforcement.sampling_plan.plan_month`, the function ``sewerwatch
sampling plan`` calls), the month's events, one event with what the laboratory returned
(missing, not planned, held too long: :mod:`lab.sampling.events`) and its chain-of-custody
form as PDF (:mod:`lab.sampling.custody`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from web import authz, forms

VIEW = {authz.OPT: "view"}
PLAN = {authz.OPT: "sampling.plan"}
Q = FromQuery[str | None]


@get("/sampling", opt=VIEW, sync_to_thread=True, name="sampling")
def sampling_page(request: Request, month: Q = None, planned: Q = None, again: Q = None) -> Template:
    from enforcement.periods import add_months
    from enforcement.sampling_plan import month_of
    from foundation import moments
    from lab.sampling import events
    from foundation.errors import InputError

    office = request.app.state.office
    tz = ZoneInfo(office.tz)
    try:
        first = month_of(month) if month else office.today().replace(day=1)
    except InputError:
        first = office.today().replace(day=1)
    a, b = moments.midnight(first, tz), moments.midnight(add_months(first, 1), tz)
    evs = office.read(lambda conn: events.listing(conn, a, b))
    sites = office.read(lambda conn: conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall())
    today = office.today()
    days = [first + timedelta(days=i) for i in range((add_months(first, 1) - first).days)]
    return Template("sampling.html", context={
        "sites": sites, "days": [d for d in days if d >= today], "analytes": [(a, events.analyte_name(a)) for a in events.COMMON],
        "account": request.state.account, "nav": "calendar", "first": first, "events": evs,
        "month": first.strftime("%Y-%m"), "prev": add_months(first, -1).strftime("%Y-%m"),
        "next": add_months(first, 1).strftime("%Y-%m"), "planned": planned, "again": bool(again),
        "samplers": events.SAMPLERS, "types": events.SAMPLE_TYPES, "states": events.STATES})


@post("/sampling/plan", opt=PLAN, sync_to_thread=True, status_code=303)
def plan(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    """Plan the month's events the schedule owes (refused, naming them, when planned already)."""
    from enforcement.sampling_plan import plan_month

    month = str(data.get("month", ""))

    def work(conn, actor):
        p = plan_month(conn, month, datetime.now(timezone.utc), actor=actor.audit_name)
        return {"location": f"/sampling?month={p.month}&planned={len(p.created)}", "created": len(p.created)}

    return forms.redirect(request, forms.once(request, data, "sampling.plan", work))


@post("/sampling/add", opt=PLAN, sync_to_thread=True, status_code=303)
def add(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    """Plan one event by hand (``sampling add``)."""
    from foundation import moments
    from lab.sampling import events

    office = request.app.state.office
    chosen = data.get("parameters")
    params = [str(p) for p in (chosen if isinstance(chosen, list) else [chosen]) if p]

    def work(conn, actor):
        at = moments.instant(f"{data.get('day') or ''}T{data.get('time') or '09:00'}", "planned day and time",
                             ZoneInfo(office.tz))
        ev = events.create(conn, str(data.get("site") or ""), at, params, sample_type=str(data.get("type") or "grab"),
                           sampler=str(data.get("by") or "user"), point=str(data.get("point") or "").strip() or None,
                           laboratory=str(data.get("lab") or "").strip() or None, actor=actor.audit_name)
        return {"location": f"/sampling/{ev.sample_key}"}

    return forms.redirect(request, forms.once(request, data, "sampling.add", work))


@get("/sampling/{key:str}", opt=VIEW, sync_to_thread=True)
def event_page(request: Request, key: FromPath[str]) -> Template:
    from lab.sampling import events
    from lab.sampling.methods import method

    office = request.app.state.office
    ev = office.read(lambda conn: events.show(conn, key))
    return Template("sampling_event.html", context={
        "account": request.state.account, "nav": "calendar", "ev": ev,
        "methods": {p: method(p) for p in ev.parameters}, "names": {p: events.analyte_name(p) for p in ev.parameters},
        "samplers": events.SAMPLERS, "types": events.SAMPLE_TYPES, "states": events.STATES,
        "analyte_name": events.analyte_name})


@get("/sampling/{key:str}/custody.pdf", opt=VIEW, sync_to_thread=True)
def custody_pdf(request: Request, key: FromPath[str]) -> Response:
    from lab.documents.pdf import letterhead
    from lab.sampling import custody, events

    office = request.app.state.office
    ev = office.read(lambda conn: events.show(conn, key))
    body = custody.render_pdf(ev, letterhead(office.cfg), office.today())
    return Response(body, media_type="application/pdf",
                    headers={"content-disposition": f'inline; filename="custody-{ev.sample_key}.pdf"'})


ROUTES = [sampling_page, plan, add, event_page, custody_pdf]
