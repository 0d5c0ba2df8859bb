"""An industrial user's page (issue 24 item 5)."""

from __future__ import annotations

from datetime import datetime, timezone

from litestar import Request, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Template
from typing import Annotated
from markupsafe import Markup

from web import authz, chart
from web.queries import site as site_q

VIEW = {authz.OPT: "view"}
Q = FromQuery[str | None]


@get("/sites/{key:str}", opt=VIEW, sync_to_thread=True, name="site")
def site_page(request: Request, key: FromPath[str], span: Annotated[str | None, QueryParameter(name="range")] = None,
              since: Q = None, until: Q = None) -> Template:
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
    grafana = None
    if office.opts.grafana_url:
        grafana = (f"{office.opts.grafana_url.rstrip('/')}/d/sewerwatch-site?var-site={key}"
                   f"&from={int(t0.timestamp() * 1000)}&to={int(t1.timestamp() * 1000)}")
    devices_cfg = [d for d in office.cfg.devices if d.site == key]
    site["contacts"] = next((s.contacts for s in office.cfg.sites if s.id == key), None) or ()
    return Template("site.html", context={
        "account": account, "nav": "today", "site": site, "permit": permit, "renewal": renewal, "charts": charts,
        "range": chosen, "since": since or "", "until": until or "", "t0": t0, "t1": t1, "grafana": grafana,
        "devices_cfg": devices_cfg, "now": now})


ROUTES = [site_page]
