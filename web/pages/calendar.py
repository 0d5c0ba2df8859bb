"""The compliance calendar: a month or a list of what the program owes and is
owed (:func:`enforcement.calendar.entries`, the function ``sewerwatch calendar`` calls),
filtered by user; each account's iCalendar feed (:func:`enforcement.calendar.ical`, the
``icalendar`` library) at an address carrying a revocable token (:mod:`web.feeds`)."""

from __future__ import annotations

import calendar as cal_mod
from datetime import date, datetime, timedelta, timezone
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from identity import roles
from web import authz, feeds, forms

VIEW = {authz.OPT: "view"}
FEED = {authz.OPT: "calendar.feed"}
Q = FromQuery[str | None]
#: The feed covers this many days before today and after it.
FEED_BEFORE_DAYS, FEED_AFTER_DAYS = 92, 400
#: The list view's span [months].
LIST_MONTHS = 3


def _settings(office):
    from enforcement.settings import settings
    return settings(office.cfg)


def _entries(office, first: date, end: date, site: str | None):
    from enforcement import calendar
    from fog.rules import for_pack

    st = _settings(office)
    now = datetime.now(timezone.utc)
    return office.read(lambda conn: calendar.entries(conn, first, end, now, site=site, snc_periods=st.snc_periods,
                                                     annual_report_due=st.annual_report_due,
                                                     significant=st.program.significant_users,
                                                     grease=for_pack(office.cfg.utility.pack)))


def _month(text: str | None, today: date) -> date:
    try:
        y, m = (int(x) for x in (text or "").split("-"))
        return date(y, m, 1)
    except ValueError:
        return today.replace(day=1)


@get("/calendar", opt=VIEW, sync_to_thread=True, name="calendar")
def calendar_page(request: Request, month: Q = None, site: Q = None, view: Q = None, made: Q = None) -> Template:
    from enforcement.calendar import KIND_WORDS, KINDS, month_range
    from enforcement.periods import add_months

    office = request.app.state.office
    account = request.state.account
    today = office.today()
    first = _month(month, today)
    view = "list" if view == "list" else "month"
    if view == "month":
        start, end = month_range(first.year, first.month)
    else:
        start, end = first, add_months(first, LIST_MONTHS)
    sites = office.read(lambda conn: conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall())
    site = site if site in dict(sites) else None
    items = _entries(office, start, end, site)
    by_day: dict[date, list] = {}
    for e in items:
        by_day.setdefault(e.day, []).append(e)
    weeks = cal_mod.Calendar(firstweekday=0).monthdatescalendar(first.year, first.month) if view == "month" else []
    feed = office.read(lambda conn: feeds.of(conn, account, office.feed_key))
    return Template("calendar.html", context={
        "account": account, "nav": "calendar", "view": view, "first": first, "last_day": end - timedelta(days=1),
        "today": today,
        "weeks": weeks, "by_day": by_day, "items": items, "sites": sites, "site": site or "",
        "prev": add_months(first, -1).strftime("%Y-%m"), "next": add_months(first, 1).strftime("%Y-%m"),
        "kinds": KINDS, "kind_words": KIND_WORDS, "feed": feed, "made": bool(made),
        "feed_url": (office.opts.public_url or "").rstrip("/") or str(request.base_url).rstrip("/"),
        "may_feed": roles.may(account.role, "calendar.feed")})


@post("/calendar/feed", opt=FEED, sync_to_thread=True, status_code=303)
def make_feed(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    """A new feed address for the signed-in account (the old one stops working)."""
    account = request.state.account

    def work(conn, actor):
        feeds.make(conn, account, actor=actor)
        return {"location": "/calendar?made=1#feed"}

    return forms.redirect(request, forms.once(request, data, "calendar.feed", work))


@post("/calendar/feed/revoke", opt=FEED, sync_to_thread=True, status_code=303)
def revoke_feed(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    account = request.state.account

    def work(conn, actor):
        feeds.revoke(conn, account, actor=actor)
        return {"location": "/calendar#feed"}

    return forms.redirect(request, forms.once(request, data, "calendar.feed.revoke", work))


@get("/calendar/feed/{token:str}", opt={authz.OPT: roles.PUBLIC}, sync_to_thread=True)
def feed(request: Request, token: FromPath[str]) -> Response:
    """The account's calendar as iCalendar (no session: the token in the address is the key)."""
    from enforcement.calendar import ical

    office = request.app.state.office
    token = token.removesuffix(".ics")
    account = office.read(lambda conn: feeds.account_of(conn, token, office.feed_key))
    if account is None or account.kind != "staff":
        raise NotFoundException("no such calendar")
    today = office.today()
    items = _entries(office, today - timedelta(days=FEED_BEFORE_DAYS), today + timedelta(days=FEED_AFTER_DAYS), None)
    body = ical(items, office.utility, now=datetime.now(timezone.utc))
    return Response(body, media_type="text/calendar; charset=utf-8",
                    headers={"content-disposition": 'inline; filename="sewerwatch.ics"'})


ROUTES = [calendar_page, make_feed, revoke_feed, feed]
