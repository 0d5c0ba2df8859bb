"""An industrial user's page, and its maintenance window for the whole
site: started in two taps (the user on Today, then the reason's button) and
ended in one, through :func:`field.windows.open_window` with no sensors named and
:func:`field.windows.close_window` (what ``sewerwatch maintenance start SITE`` and ``end``
call), once per form (:func:`web.forms.once`), with ``field.record``."""

from __future__ import annotations

from datetime import datetime, timezone

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Template
from typing import Annotated
from markupsafe import Markup

from foundation.errors import InputError
from web import authz, chart, forms
from web.queries import site as site_q
from web.queries import today as today_q

VIEW = {authz.OPT: "view"}
RECORD = {authz.OPT: "field.record"}
Q = FromQuery[str | None]
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]


@get("/sites/{key:str}", opt=VIEW, sync_to_thread=True, name="site")
def site_page(request: Request, key: FromPath[str], span: Annotated[str | None, QueryParameter(name="range")] = None,
              since: Q = None, until: Q = None, again: Q = None, done: Q = None) -> Template:
    return _page(request, key, span, since, until, again=again == "1", done=done)


def _page(request: Request, key: str, span: str | None = None, since: str | None = None, until: str | None = None, *,
          again: bool = False, done: str | None = None, problem: str | None = None, status: int = 200) -> Template:
    from field import windows
    office = request.app.state.office
    account = request.state.account
    now = datetime.now(timezone.utc)
    t0, t1, chosen = site_q.parse_range(span, since, until, office.tz, now)

    def read(conn):
        site = site_q.profile(conn, key)
        if site is None:
            return None, None, []
        authz.require_site(account, site["id"])
        permit = site_q.permit_of(conn, key)
        site["windows"] = [w for w in windows.list_windows(conn, site=key, open_only=True)
                           if w["approval"] != "rejected"]
        return site, permit, site_q.series(conn, site, permit, t0, t1)

    site, permit, series = office.read(read)
    if site is None:
        raise NotFoundException(f"no industrial user {key!r}")
    charts = [(s, Markup(chart.svg(ser, t0.timestamp(), t1.timestamp(), office.tz,
                                   f"{s['name']} ({s['parameter']}) of {site['name']}")))
              for s, ser in series]
    renewal = None
    if permit is not None:
        from limits.permits import renewal as renewal_of
        renewal = renewal_of(permit, now.date())
    permit_state = today_q.PERMIT_STATE_WORDS.get(renewal.state, "") if renewal is not None else ""
    grafana = None
    if office.opts.grafana_url:
        grafana = (f"{office.opts.grafana_url.rstrip('/')}/d/sewerwatch-site?var-site={key}"
                   f"&from={int(t0.timestamp() * 1000)}&to={int(t1.timestamp() * 1000)}")
    devices_cfg = [d for d in office.cfg.devices if d.site == key]
    site["contacts"] = next((s.contacts for s in office.cfg.sites if s.id == key), None) or ()
    return Template("site.html", context={
        "account": account, "nav": "today", "site": site, "permit": permit, "renewal": renewal, "permit_state": permit_state,
        "may_edit_permits": authz.may(account, "permits.edit"), "charts": charts,
        "range": chosen, "since": since or "", "until": until or "", "t0": t0, "t1": t1, "grafana": grafana,
        "devices_cfg": devices_cfg, "now": now, "reasons": windows.REASONS, "again": again, "done": done,
        "problem": problem, "may_record": authz.may(account, "field.record"),
        "site_window": next((w for w in site["windows"] if w["sensor_id"] is None), None),
        "sensor_windows": [w for w in site["windows"] if w["sensor_id"] is not None]}, status_code=status)


@post("/sites/{key:str}/maintenance", opt=RECORD, sync_to_thread=True, status_code=200)
def site_maintenance(request: Request, key: FromPath[str], data: Form) -> Redirect | Template:
    """Start a window on every sensor of the site (``reason``: the button tapped) or end one
    (``end``: its id), as ``sewerwatch maintenance start SITE`` / ``end ID`` do."""
    from field import windows
    office = request.app.state.office
    settings = windows.Settings.of(office.cfg)
    back = f"/sites/{key}"

    def work(conn, actor):
        site = site_q.profile(conn, key)
        if site is None:
            raise NotFoundException(f"no industrial user {key!r}")
        authz.require_site(request.state.account, site["id"])
        if str(data.get("end", "")).strip():
            wid = str(data["end"]).strip()
            if not wid.isdigit():
                raise InputError(f"end: not a window number: {wid!r}")
            w = windows.window(conn, int(wid))
            if w["site_id"] != site["id"] or w["sensor_id"] is not None:
                raise InputError(f"maintenance window {wid} is not a window of the whole site {key}")
            w = windows.close_window(conn, int(wid), actor=actor)
            return {"location": f"{back}?done=ended-{w['id']}#maintenance", "window": w["id"]}
        reason = str(data.get("reason", "")).strip()
        [w] = windows.open_window(conn, key, None, reason=reason, actor=actor, settings=settings)
        return {"location": f"{back}?done=started-{w['id']}#maintenance", "window": w["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "field.site-maintenance", work))
    except InputError as exc:
        return _page(request, key, problem=str(exc), status=400)


ROUTES = [site_page, site_maintenance]
