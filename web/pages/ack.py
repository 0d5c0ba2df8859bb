"""The acknowledgement link (``alerts.ackpage``), mounted in the office: no session (the
token is the capability), no CSRF cookie (there is no session to ride on); the page's own
rate limit per client address."""

from __future__ import annotations

from litestar import Request, Response, get, post
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

from alerts.ackpage import BODY_MAX
from identity import roles
from web import authz

PUBLIC = {authz.OPT: roles.PUBLIC}


def _reply(reply) -> Response:
    return Response(reply.html, status_code=reply.status, media_type="text/html", headers=reply.headers)


def _client(request: Request, page) -> str:
    """The client for the page's rate limit, by the page's own trusted proxies."""
    peer = request.client.host if request.client else None
    return page.client_of(peer, request.headers.getall("x-forwarded-for", []))


def _page(request: Request):
    page = request.app.state.office.ack_page
    if page is None:
        raise NotFoundException("acknowledgement links need [web] in the config")
    return page


@get("/ack/{token:str}", opt=PUBLIC)
async def ack_get(request: Request, token: FromPath[str]) -> Response:
    page = _page(request)
    return _reply(await page.get(token, _client(request, page)))


@post("/ack/{token:str}", opt=PUBLIC, request_max_body_size=BODY_MAX, status_code=200)
async def ack_post(request: Request, token: FromPath[str]) -> Response:
    page = _page(request)
    form = await request.form()
    return _reply(await page.post(token, {k: form.get(k) or "" for k in ("name", "note")}, _client(request, page)))


ROUTES = [ack_get, ack_post]
