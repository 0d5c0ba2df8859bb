"""The office's "Send reminders" page of the grease program (``/grease/reminders``): the devices
coming due within the window (the program's ``reminder_days`` unless the form asks another),
who gets which reminder and who has no address (:func:`fog.reminders.plan`), the form that
sends them through :func:`fog.reminders.send` (what ``sewerwatch fog reminders send`` calls)
once per form (:mod:`web.forms`), and the reminders sent lately (:func:`fog.reminders.sent`).
Staff who may record the program's reports (``grease.record``) send; every staff role reads.
A GET and a POST never share a path (see :mod:`web.pages.portal`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import forms
from web.pages.fog import RECORD, VIEW, _rules, _staff

Q = FromQuery[str | None]
#: How many of the reminders sent the page lists, newest first.
LOG_ROWS = 50


def _context(request: Request, ahead: str | None, **more) -> dict:
    from fog import reminders

    office, rules = request.app.state.office, _rules(request)
    today = office.today()
    problem = more.pop("problem", None)
    try:
        window = reminders._ahead(rules, ahead or None)
    except InputError as exc:          # a window typed wrong: said, and the program's shown
        problem, window = problem or str(exc), rules.reminder_days
    planned = office.read(lambda conn: reminders.plan(conn, rules, today, window))
    log = office.read(lambda conn: reminders.sent(conn))[:LOG_ROWS]
    return {"account": request.state.account, "nav": "grease", "today": today, "ahead": window,
            "until": today + timedelta(days=window), "rules": rules, "planned": planned,
            "to_send": [m for m in planned if m.to and not m.sent_at], "log": log,
            "mail_ready": office.mailer.configured, "problem": problem, **more}


@get("/grease/reminders", opt=VIEW, sync_to_thread=True, name="grease-reminders")
def reminders_page(request: Request, ahead: Q = None, sent: Q = None, skipped: Q = None, none: Q = None,
                   failed: Q = None, again: Q = None) -> Template:
    _staff(request)
    done = None if sent is None else {"sent": sent, "skipped": skipped or "0", "none": none or "0",
                                      "failed": failed or "0"}
    return Template("fog_reminders.html", context=_context(request, ahead, done=done, again=bool(again)))


@post("/grease/reminders/send", opt=RECORD, sync_to_thread=True, status_code=303)
def send_reminders(request: Request,
                   data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """The reminders mailed: :func:`fog.reminders.send`."""
    from fog import reminders

    _staff(request)
    office, rules = request.app.state.office, _rules(request)
    ahead = str(data.get("ahead", "")).strip()[:10] or None

    def work(conn, actor):
        if not office.mailer.configured:
            raise InputError("no mail server is set up for the office: nothing was sent (ask whoever keeps "
                             "sewerwatch running to set the mail address in the configuration)")
        out = reminders.send(conn, rules, office.today(), office.mailer, actor, utility=office.cfg.name,
                             ahead_days=ahead)
        return {"location": f"/grease/reminders?ahead={out.ahead_days}&sent={len(out.sent)}&skipped="
                            f"{len(out.skipped)}&none={len(out.no_address)}&failed={len(out.failed)}#outcome",
                "sent": len(out.sent)}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.reminders", work))
    except InputError as exc:
        return Template("fog_reminders.html", status_code=400, context=_context(request, None, problem=str(exc)))


ROUTES = [reminders_page, send_reminders]
