"""The guide at ``/help``: the files of the site :mod:`web.guide` builds, served as they are
(public, like the sign-in page: the guide holds no village's data), a folder's address
redirected to end with a slash (its page's links are relative to it), and a page saying why
when the guide cannot be served here."""

from __future__ import annotations

import asyncio

from litestar import Request, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import File, Redirect, Response, Template

from identity import roles
from web import authz, guide

PUBLIC = {authz.OPT: roles.PUBLIC}


def _guide(request: Request) -> guide.Guide:
    office = request.app.state.office
    if getattr(office, "guide", None) is None:
        office.guide = guide.Guide(office.state_dir)
    return office.guide


@get([guide.PATH, guide.PATH + "/{path:path}"], opt=PUBLIC, include_in_schema=False)
async def guide_file(request: Request, path: FromPath[str | None] = None) -> Response:
    """A file of the guide (its first visit builds it, off the event loop: a few seconds)."""
    office = request.app.state.office
    # Litestar's routing drops a trailing slash (``/help/`` is ``/help``): the address as sent says
    raw = request.scope.get("raw_path", b"").decode("latin-1").split("?", 1)[0]
    path = path or ""
    if raw.endswith("/") and not path.endswith("/"):
        path += "/"
    if not path:
        return Redirect(office.url(guide.PATH + "/"), status_code=303)
    try:
        found, slash = await asyncio.to_thread(_guide(request).file, path)
    except guide.Unavailable as exc:
        return Template("error.html", status_code=503, context={
            "title": "The guide is not available here", "status": 503, "nav": None,
            "account": getattr(request.state, "account", None),
            "lines": [str(exc), "The office itself works as before."]})
    if slash:
        return Redirect(office.url(guide.PATH + "/" + path.lstrip("/") + "/"), status_code=303)
    if found is None:
        raise NotFoundException()
    return File(found, media_type=guide.media_type(found), content_disposition_type="inline", filename=found.name)


ROUTES = [guide_file]
