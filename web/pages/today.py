"""The Today page: every industrial user's live state, the open alerts
(acknowledged in place), what is due this week, the grease devices overdue or coming due
(:func:`fog.store.due`), and banners naming what is wrong. The page
refreshes its live part itself every :data:`REFRESH_S` seconds (``static/js/live.js``
fetching ``/today/live``), so what it shows is at most a few seconds old while ``run`` is up;
every value shows its age, and a failed refresh says so on the page.
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import datetime, timezone

from litestar import Request, get
from litestar.params import FromQuery
from litestar.response import Template

from web import authz
from web.office import DatabaseDown, Office
from web.queries import health
from web.queries import today as today_q

log = logging.getLogger("sewerwatch.web")

#: How often the page fetches its live part [s] (what it shows is at most this old, plus the
#: page's own time).
REFRESH_S = 2.0
#: How long a read of Today's state is served to the viewers who ask after it began [s]: half
#: the refresh interval, so a viewer's page is never more than a refresh behind the database,
#: and many viewers cost the database one read a second (an office write is seen at once).
KEEP_S = REFRESH_S / 2
#: Above this many open alerts, Today shows each in one line (its page has the evidence).
ALERTS_FULL_MAX = 6
#: What is due changes by the day: read again after this long [s]; permits likewise.
DUE_TTL_S = 60.0
#: Today lists at most this many grease devices (overdue first); the Grease page has them all.
GREASE_MAX = 12

VIEW = {authz.OPT: "view"}


def _permits(office: Office):
    from limits.permit_store import current_permits
    return office.cached("permits", DUE_TTL_S, lambda: office.read(current_permits))


def _due(office: Office):
    """What enforcement lists as due (the same function as ``sewerwatch due``), a minute old at most."""
    from enforcement.due import due_items
    from enforcement.guide import load_guide
    from enforcement.settings import settings

    def make():
        st = settings(office.cfg)
        guide = load_guide(st.guide)
        return office.read(lambda conn: due_items(conn, datetime.now(timezone.utc), st, guide))
    return office.cached("due", DUE_TTL_S, make)


def _grease(office: Office) -> dict:
    """The grease devices overdue or due within the program's reminder window (the same
    function as ``sewerwatch fog due --within``), a minute old at most: ``rows`` (most overdue
    first), ``within`` [days], ``overdue`` [count]."""
    from fog import store
    from fog.rules import for_pack

    rules = for_pack(office.cfg.utility.pack)

    def make():
        today = office.today()
        rows = office.read(lambda conn: store.due(conn, rules, today, rules.reminder_days))
        rows.sort(key=lambda r: (-r["overdue_days"], r["due_on"], r["name"].lower()))
        return {"rows": rows, "within": rules.reminder_days, "overdue": sum(1 for r in rows if r["overdue_days"])}
    return office.cached("grease-due", DUE_TTL_S, make)


def gather(office: Office, card=None) -> dict:
    """The page's data and its banners; the database down is a banner, not an error page.
    ``card``: the template's card of a user, made as each user is judged
    (:func:`web.queries.today.read`)."""
    db_error, data, extra, grease = None, None, [], None
    try:
        permits = _permits(office)
        try:
            due = _due(office)
        except DatabaseDown:
            raise
        except Exception as exc:  # noqa: BLE001 - the rest of the page is still worth showing
            log.warning("office: what is due could not be listed: %s: %s", type(exc).__name__, exc)
            extra.append({"tone": "warn", "title": "What is due could not be listed",
                          "text": f"{type(exc).__name__}: {exc}. 'sewerwatch due' shows it on the command line."})
            due = []
        try:
            grease = _grease(office)
        except DatabaseDown:
            raise
        except Exception as exc:  # noqa: BLE001 - the rest of the page is still worth showing
            log.warning("office: the grease devices due could not be listed: %s: %s", type(exc).__name__, exc)
            extra.append({"tone": "warn", "title": "The grease devices due could not be listed",
                          "text": f"{type(exc).__name__}: {exc}. 'sewerwatch fog due' shows them on the command line."})
            grease = None
        # the users, their episodes, alerts and devices on a second connection, while the
        # first streams the sensors' last values (the costliest query) and arranges them
        known = office.read_meanwhile(lambda conn: today_q.program(conn, permits, office.tz))
        try:
            data = office.read(lambda conn: today_q.read(conn, permits=permits, due=due, base=office.prefix,
                                                         known=known, card=card))
        finally:
            with contextlib.suppress(Exception):
                known.result()  # waited for, never left running (its error was read's, if read asked)
    except DatabaseDown as exc:
        db_error = str(exc)
    banners = health.banners(db_error=db_error, run=office.run_status(), today=data) + extra
    return {"today": data, "banners": banners, "generated": time.time(), "refresh_s": REFRESH_S,
            "alerts_full_max": ALERTS_FULL_MAX, "grease": grease, "grease_max": GREASE_MAX}


def shared_gather(office: Office, request: Request) -> dict:
    """:func:`gather`, one read for every viewer whose request arrives while it is made
    (:meth:`web.office.Office.shared`): what the page shows is the same for every staff account
    (the alerts' buttons are drawn by role from it), so many viewers refreshing together cost
    the database one read; a read is served for :data:`KEEP_S` after it began (the state read
    once per refresh interval at most, however many watch). A copy, for the page to add its own
    to."""
    return dict(office.shared("today", lambda: gather(office, _card(request)), keep_s=KEEP_S))


@get("/", opt=VIEW, sync_to_thread=True, name="today")
def today_page(request: Request, done: FromQuery[str | None] = None) -> Template:
    office = request.app.state.office
    ctx = shared_gather(office, request)
    ctx.update(account=request.state.account, nav="today", flash=_flash(done))
    return Template("today.html", context=ctx, status_code=200 if ctx["today"] is not None else 503)


@get("/today/live", opt={**VIEW, "passive": True}, sync_to_thread=True)
def today_live(request: Request) -> Template:
    """The live part of the page alone (the refresh; not a click for the idle timer)."""
    office = request.app.state.office
    ctx = shared_gather(office, request)
    ctx.update(account=request.state.account)
    return Template("today_live.html", context=ctx, status_code=200 if ctx["today"] is not None else 503)


def _card(request: Request):
    """The template's card of a user (``_site_card.html``), for :func:`gather` to make each as
    its user is judged, while the database still reads the rest."""
    return request.app.template_engine.engine.get_template("_site_card.html").module.site_card


def _flash(done: str | None) -> str | None:
    if done and done.startswith("ack-") and done[4:].isdigit():
        return f"Alert #{done[4:]} is acknowledged: its escalation stops."
    return None


ROUTES = [today_page, today_live]
