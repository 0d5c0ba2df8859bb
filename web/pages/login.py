"""Signing in and out: the password, then (for an account with it) the TOTP code."""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromQuery
from litestar.response import Redirect, Template
from typing import Annotated

from identity import accounts, roles
from web import authz, sessions

PUBLIC = {authz.OPT: roles.PUBLIC}
Q = FromQuery[str | None]


def _next(target: str | None) -> str:
    """Where to go after signing in: a path of this office only (never another site)."""
    if not target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


def landing(account, target: str) -> str:
    """Where an account goes after signing in: the portal's people to the portal, staff to the
    office (neither to the other's pages)."""
    portal = target == "/portal" or target.startswith("/portal/")
    hauling = target == "/portal/grease" or target.startswith("/portal/grease/")
    if account.kind == "grease-hauler":
        return target if hauling else "/portal/grease"
    if account.kind == "grease-establishment":
        kitchen = target == "/portal/kitchen" or target.startswith("/portal/kitchen/")
        return target if kitchen else "/portal/kitchen"
    if account.kind == "industrial-user":
        return target if portal and not hauling else "/portal"
    return "/" if portal else target


def _words(why: str | None, office) -> str | None:
    if not why or why not in sessions.WHY:
        return None
    return sessions.WHY[why].format(idle=f"{office.opts.session_idle_min:g}", max=f"{office.opts.session_max_h:g}")


def routes(rate_limit) -> list:
    """The sign-in routes (the form's POST behind Litestar's rate limit)."""

    @get("/login", opt=PUBLIC, name="login")
    async def login_form(request: Request, next: Q = None, why: Q = None) -> Template:
        office = request.app.state.office
        return Template("login.html", context={"next": _next(next), "message": _words(why, office), "error": None,
                                               "username": "", "account": None, "nav": None})

    @post("/login", opt=PUBLIC, middleware=[rate_limit.middleware], status_code=200)
    async def login(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
                    ) -> Template | Redirect:
        office = request.app.state.office
        opts = office.opts
        username = str(data.get("username", "")).strip().lower()[:64]
        password = str(data.get("password", ""))[: accounts.PASSWORD_MAX + 1]
        target = _next(data.get("next"))
        client = request.scope["state"].get("client", "")
        res = await anyio.to_thread.run_sync(lambda: office.read(lambda conn: accounts.authenticate(
            conn, username, password, client=client, lockout_after=opts.lockout_after, lockout_min=opts.lockout_min)))
        if res.outcome == "ok":
            office.stats["signed_in"] += 1
            await sessions.sign_in(request, res.account)
            return sessions.new_csrf_token(Redirect(office.url(landing(res.account, target)), status_code=303))
        if res.outcome == "second-factor":
            await sessions.pending_second_factor(request, res.account)
            return sessions.new_csrf_token(Redirect(office.url(f"/login/code?next={target}"), status_code=303))
        office.stats["refused_sign_ins"] += 1
        return Template("login.html", status_code=401 if res.outcome == "refused" else 403, context={
            "next": target, "error": res.message, "message": None, "username": username, "account": None, "nav": None})

    @get("/login/code", opt=PUBLIC)
    async def code_form(request: Request, next: Q = None) -> Template | Redirect:
        if sessions.pending_account_id(request) is None:
            return Redirect(request.app.state.office.url("/login"), status_code=303)
        return Template("login_code.html", context={"next": _next(next), "error": None, "account": None, "nav": None})

    @post("/login/code", opt=PUBLIC, middleware=[rate_limit.middleware], status_code=200)
    async def code(request: Request, data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
                   ) -> Template | Redirect:
        office = request.app.state.office
        opts = office.opts
        pending = sessions.pending_account_id(request)
        target = _next(data.get("next"))
        if pending is None:
            return Redirect(office.url("/login?why=signed-out"), status_code=303)
        client = request.scope["state"].get("client", "")
        res = await anyio.to_thread.run_sync(lambda: office.read(lambda conn: accounts.second_factor(
            conn, pending, str(data.get("code", ""))[:12], client=client, lockout_after=opts.lockout_after,
            lockout_min=opts.lockout_min)))
        if res.outcome == "ok":
            office.stats["signed_in"] += 1
            await sessions.sign_in(request, res.account)
            return sessions.new_csrf_token(Redirect(office.url(landing(res.account, target)), status_code=303))
        office.stats["refused_sign_ins"] += 1
        if res.outcome in ("locked", "disabled"):
            sessions.sign_out(request)
            return Template("login.html", status_code=403, context={
                "next": target, "error": res.message, "message": None, "username": "", "account": None, "nav": None})
        return Template("login_code.html", status_code=401, context={"next": target, "error": res.message,
                                                                      "account": None, "nav": None})

    @post("/logout", opt={authz.OPT: "view"}, status_code=303)
    async def logout(request: Request) -> Redirect:
        office = request.app.state.office
        account = request.state.account
        client = request.scope["state"].get("client", "")
        await anyio.to_thread.run_sync(lambda: office.read(lambda conn: accounts.signed_out(
            conn, account, client, "signed out")))
        sessions.sign_out(request)
        return Redirect(office.url("/login?why=signed-out"), status_code=303)

    return [login_form, login, code_form, code, logout]
