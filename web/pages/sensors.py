"""Sensors and dead letters: sensor health; the dead letters with their
reasons, one shown whole, and replayed after a config fix by :func:`ingest.deadletters.replay`,
the function ``sewerwatch deadletters replay`` calls."""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Template

from foundation.errors import InputError
from web import authz
from web.queries import sensors as sensors_q

VIEW = {authz.OPT: "view"}
Q = FromQuery[str | None]
STATES = ("pending", "replayed", "all")


@get("/sensors", opt=VIEW, sync_to_thread=True, name="sensors")
def sensors_page(request: Request) -> Template:
    office = request.app.state.office
    data = office.read(sensors_q.health)
    account = request.state.account
    if account.kind != "staff":      # the portal's accounts see their own site's sensors only
        data["sensors"] = [s for s in data["sensors"] if s["site_id"] == account.site_id]
    return Template("sensors.html", context={"account": account, "nav": "sensors", **data})


def _filters(source, reason, state, since, ids=()):
    from ingest import deadletters as dl
    try:
        since_dt = dl.parse_since(since) if since else None
    except InputError:
        since_dt = None
    return dl.Filters(ids=tuple(ids), source=source or None, since=since_dt, reason=reason or None,
                      state=state if state in STATES else "pending", limit=200)


@get("/deadletters", opt=VIEW, sync_to_thread=True, name="deadletters")
def deadletters_page(request: Request, source: Q = None, reason: Q = None,
                     status: Annotated[str | None, QueryParameter(name="state")] = None, since: Q = None) -> Template:
    from ingest import deadletters as dl

    office = request.app.state.office
    f = _filters(source, reason, status, since)
    data = office.read(lambda conn: dl.listing(conn, f))
    return Template("deadletters.html", context={
        "account": request.state.account, "nav": "deadletters", **data, "outcomes": None,
        "filters": {"source": source or "", "reason": reason or "", "state": f.state, "since": since or ""},
        "states": STATES})


@get("/deadletters/{letter_id:int}", opt=VIEW, sync_to_thread=True)
def deadletter_page(request: Request, letter_id: FromPath[int]) -> Template:
    from ingest import deadletters as dl

    office = request.app.state.office
    try:
        d = office.read(lambda conn: dl.one(conn, letter_id))
    except InputError:
        raise NotFoundException(f"no dead letter {letter_id}") from None
    kind, shown = dl.payload_text(d["payload"])
    return Template("deadletter.html", context={"account": request.state.account, "nav": "deadletters", "d": d,
                                                "payload_kind": kind, "payload": shown})


@post("/deadletters/replay", opt={authz.OPT: "deadletters.replay"}, sync_to_thread=True, status_code=200)
def replay(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Template:
    """Replay the dead letters the form names (ids, or the filters shown), as the account."""
    from ingest import deadletters as dl

    office = request.app.state.office
    ids = [int(x) for x in str(data.get("ids", "")).replace(",", " ").split() if x.isdigit()][:1000]
    f = _filters(data.get("source"), data.get("reason"), "pending", data.get("since"), ids)
    dry = data.get("dry_run") == "1"
    outcomes = office.act(request.state.account, dl.replay, office.cfg, f, dry)
    listing = office.read(lambda conn: dl.listing(conn, _filters(data.get("source"), data.get("reason"), "pending",
                                                                   data.get("since"))))
    return Template("deadletters.html", context={
        "account": request.state.account, "nav": "deadletters", **listing,
        "outcomes": [(o, o.line(dry)) for o in outcomes], "dry_run": dry,
        "filters": {"source": data.get("source") or "", "reason": data.get("reason") or "", "state": "pending",
                    "since": data.get("since") or ""}, "states": STATES})


ROUTES = [sensors_page, deadletters_page, deadletter_page, replay]
