"""The alerts page: alerts filtered by site, rule, state and date, each with
its evidence; acknowledging one with a note (here, on Today, or on its own page) calls
:func:`alerts.store.acknowledge`, the function ``sewerwatch alerts ack`` calls."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Template

from web import authz
from web.queries import alerts as alerts_q

VIEW = {authz.OPT: "view"}
Q = FromQuery[str | None]
#: Longest note [characters] (as the acknowledgement page).
NOTE_MAX = 2000


def _day(text: str | None, tz: str, end: bool = False) -> datetime | None:
    if not text:
        return None
    try:
        d = date.fromisoformat(text)
    except ValueError:
        return None
    if end:
        d += timedelta(days=1)
    return datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(tz))


@get("/alerts", opt=VIEW, sync_to_thread=True, name="alerts")
def alerts_page(request: Request, site: Q = None, rule: Q = None,
                status: Annotated[str | None, QueryParameter(name="state")] = None, since: Q = None,
                until: Q = None) -> Template:
    office = request.app.state.office
    account = request.state.account
    f = alerts_q.Filters(site=site or None, rule=rule or None, state=status or "open",
                         since=_day(since, office.tz), until=_day(until, office.tz, end=True))
    rows, choices = office.read(lambda conn: (alerts_q.listing(conn, f), alerts_q.choices(conn)))
    rows = [r for r in rows if account.kind == "staff" or r["site_id"] == account.site_id]
    views = [alerts_q.view(r, office.tz) for r in rows]
    return Template("alerts.html", context={
        "account": account, "nav": "alerts", "alerts": views, "choices": choices,
        "filters": {"site": site or "", "rule": rule or "", "state": f.state, "since": since or "", "until": until or ""},
        "states": alerts_q.STATES})


@get("/alerts/{alert_id:int}", opt=VIEW, sync_to_thread=True)
def alert_page(request: Request, alert_id: FromPath[int]) -> Template:
    office = request.app.state.office
    row = office.read(lambda conn: alerts_q.one(conn, alert_id))
    if row is None:
        raise NotFoundException(f"no alert #{alert_id}")
    authz.require_site(request.state.account, row["site_id"])
    return Template("alert.html", context={"account": request.state.account, "nav": "alerts",
                                           "alert": alerts_q.view(row, office.tz), "notifications": row["notifications"]})


@post("/alerts/{alert_id:int}/acknowledge", opt={authz.OPT: "alerts.acknowledge"}, sync_to_thread=True,
      status_code=303)
def acknowledge(request: Request, alert_id: FromPath[int],
                data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """Acknowledge with a note, as the signed-in account (:func:`alerts.store.acknowledge`)."""
    from alerts import store

    office = request.app.state.office
    account = request.state.account
    note = str(data.get("note", "")).strip()[:NOTE_MAX] or None
    back = data.get("back") if data.get("back") in ("today", "alerts", "alert") else "alert"
    row = office.read(lambda conn: alerts_q.one(conn, alert_id))
    if row is None:
        raise NotFoundException(f"no alert #{alert_id}")
    authz.require_site(account, row["site_id"])
    before = office.act(account, store.acknowledge, alert_id, account.full_name, note)
    if before is not None and before[1] is not None:
        row = office.read(lambda conn: alerts_q.one(conn, alert_id))
        return Template("alert.html", status_code=409, context={
            "account": account, "nav": "alerts", "alert": alerts_q.view(row, office.tz),
            "notifications": row["notifications"],
            "flash_warn": f"Alert #{alert_id} had already been acknowledged by {before[1]}: nothing was changed."})
    target = {"today": f"/?done=ack-{alert_id}#alerts", "alerts": f"/alerts?done=ack-{alert_id}",
              "alert": f"/alerts/{alert_id}?done=ack"}[back]
    return Redirect(office.url(target), status_code=303)


ROUTES = [alerts_page, alert_page, acknowledge]
