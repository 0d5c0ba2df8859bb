"""The office as the shell serves it: the same application from ``sewerwatch run`` (its
supervised component ``web``) and from ``sewerwatch web`` alone."""

from __future__ import annotations

from pathlib import Path

from alerts.ackpage import AckPage
from alerts.links import AckLinks
from foundation import secrets
from foundation.paths import RUN_STATUS_FILE
from web.office import Office, timezone_of
from web.queries.health import read_status_file
from web.server import WebServer


def office_server(cfg, owner_url: str, state_dir: Path, *, status_source=None, links: AckLinks | None = None,
                  tz: str | None = None) -> WebServer:
    """The office of ``cfg`` (``cfg.web`` its ``[web]``), with the acknowledgement page
    mounted at ``/ack/<token>``.

    Parameters
    ----------
    status_source : callable, optional
        The live status of ``run`` (inside ``run``: its pipeline's); default: ``run``'s
        status file in ``state_dir`` (``sewerwatch web`` on the same machine).
    links : alerts.links.AckLinks, optional
        The links the alert manager makes (default: made from ``[web]`` and the key in the
        state folder's ``secrets.json``, the same ones).
    """
    keys = secrets.load_or_create(Path(state_dir))["keys"]
    opts = cfg.web
    if links is None:
        links = AckLinks(keys["ack_links"], opts.link_base, opts.link_lifetime_h * 3600.0)
    page = AckPage(opts, links, owner_url, tz=tz or timezone_of(cfg), utility=cfg.name)
    if status_source is None:
        path = Path(state_dir) / RUN_STATUS_FILE
        status_source = lambda: read_status_file(path)   # noqa: E731
    office = Office(cfg, opts, owner_url, state_dir=state_dir, status_source=status_source, ack_page=page,
                    invite_key=keys["portal_invites"])
    office.feed_key = keys["calendar_feeds"]
    return WebServer(office, keys["web_csrf"])
