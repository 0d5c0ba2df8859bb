"""Maintenance windows in the office: the ones open, the ones awaiting a
second person's approval and the last 30 days' (``/maintenance``); a window opened after the
fact over readings already judged approved or rejected with a note.

Approve and Reject call :func:`field.windows.approve` and :func:`field.windows.reject`, what
``sewerwatch maintenance approve|reject ID`` calls, through :func:`web.forms.once` (a double
click decides once), with ``field.approve`` (the superintendent and the coordinator). The
package function refuses whoever opened the window: its one-line reason is the page's error.
Everyone on the staff sees the page (an auditor's question: which readings were kept from
judging, and who said so).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import authz, forms

VIEW = {authz.OPT: "view"}
APPROVE = {authz.OPT: "field.approve"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
#: How far back the page lists windows [days].
RECENT_DAYS = 30


def _data(conn) -> dict:
    from field import windows
    since = datetime.now(timezone.utc) - timedelta(days=RECENT_DAYS)
    recent = list(reversed(windows.list_windows(conn, since=since)))
    return {"open_windows": [w for w in recent if w["open"] and w["approval"] != "rejected"],
            "pending": windows.pending(conn), "recent": recent, "days": RECENT_DAYS}


def _page(request: Request, *, again: bool = False, done: str | None = None, problem: str | None = None,
          status: int = 200) -> Template:
    office = request.app.state.office
    account = request.state.account
    return Template("maintenance.html", status_code=status, context={
        "account": account, "nav": "maintenance", **office.read(_data), "again": again, "done": done,
        "problem": problem, "may_decide": authz.may(account, "field.approve")})


@get("/maintenance", opt=VIEW, sync_to_thread=True, name="maintenance")
def maintenance_page(request: Request, again: FromQuery[str | None] = None,
                     done: FromQuery[str | None] = None) -> Template:
    return _page(request, again=again == "1", done=done)


@post("/maintenance/{window_id:int}/decision", opt=APPROVE, sync_to_thread=True, status_code=200)
def decide(request: Request, window_id: FromPath[int], data: Form) -> Redirect | Template:
    """Approve (``decision=approve``) or reject (``decision=reject``) a window awaiting a second
    person, with the ``note`` typed."""
    from field import windows
    decision = str(data.get("decision", "")).strip()
    note = str(data.get("note", "")).strip() or None

    def work(conn, actor):
        if decision not in ("approve", "reject"):
            raise InputError(f"decision: expected approve or reject, got {decision!r}")
        fn = windows.approve if decision == "approve" else windows.reject
        w = fn(conn, window_id, actor=actor, note=note)
        return {"location": f"/maintenance?done={w['approval']}-{w['id']}", "window": w["id"],
                "approval": w["approval"]}
    try:
        return forms.redirect(request, forms.once(request, data, "field.approve", work))
    except InputError as exc:
        return _page(request, problem=str(exc), status=400)


ROUTES = [maintenance_page, decide]
