"""The staff's accounts, for the superintendent (``accounts.manage``): every account of the
office with its role and state; an account added (the first password typed twice, the person
changes it later with the superintendent); a role changed, an account disabled or enabled,
a password reset. Each calls the function ``sewerwatch users add|role|disable|enable|
reset-password`` calls (:mod:`identity.accounts`), once per form (:func:`web.forms.once`), as the
signed-in account (the audit trail names it). The portal's people have their own page
(:mod:`web.pages.portal_people`)."""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from identity import accounts, roles
from web import authz, forms

MANAGE = {authz.OPT: "accounts.manage"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
#: What each change is called in the audit trail's sense and on the page.
CHANGES = ("role", "disable", "enable", "reset-password", "totp-on", "totp-off")


def _page(request: Request, *, status: int = 200, problem: str | None = None, values: dict | None = None,
          done: str | None = None, again: bool = False, totp: dict | None = None) -> Template:
    office = request.app.state.office
    staff = [a for a in office.read(accounts.list_accounts) if a.kind == "staff"]
    return Template("accounts.html", status_code=status, context={
        "account": request.state.account, "nav": "accounts", "staff": staff, "role_names": roles.ROLES,
        "role_words": roles.ROLE_WORDS, "problem": problem, "values": values or {}, "done": done, "again": again,
        "totp": totp})


def _passwords(data: dict) -> str:
    one, two = str(data.get("password", "")), str(data.get("password2", ""))
    if one != two:
        raise InputError("the two passwords differ: type the same one twice")
    return one


@get("/accounts", opt=MANAGE, sync_to_thread=True, name="accounts")
def accounts_page(request: Request, done: FromQuery[str | None] = None, again: FromQuery[str | None] = None) -> Template:
    return _page(request, done=done, again=again == "1")


@post("/accounts/add", opt=MANAGE, sync_to_thread=True, status_code=200)
def add(request: Request, data: Form) -> Redirect | Template:
    """``sewerwatch users add NAME --name ... --role ...`` in a form."""
    values = {k: str(data.get(k, "")).strip()[:200] for k in ("username", "full_name", "role")}

    def work(conn, actor):
        acc = accounts.add(conn, values["username"], values["full_name"], values["role"], _passwords(data),
                           actor=actor)
        return {"location": f"/accounts?done=added-{acc.username}", "account": acc.id}
    try:
        return forms.redirect(request, forms.once(request, data, "accounts.add", work))
    except InputError as exc:
        return _page(request, status=400, problem=str(exc), values=values)


@post("/accounts/{username:str}/change", opt=MANAGE, sync_to_thread=True, status_code=200)
def change(request: Request, username: FromPath[str], data: Form) -> Redirect | Template:
    """A role (``role``), ``disable``, ``enable`` or ``reset-password`` (``password`` twice)."""
    what = str(data.get("change", "")).strip()
    shown: dict = {}

    def work(conn, actor):
        if what == "role":
            accounts.set_role(conn, username, str(data.get("role", "")).strip(), actor=actor)
        elif what == "disable":
            accounts.disable(conn, username, actor=actor)
        elif what == "enable":
            accounts.enable(conn, username, actor=actor)
        elif what == "reset-password":
            accounts.reset_password(conn, username, _passwords(data), actor=actor)
        elif what == "totp-on":               # the key is shown once, on this answer (never stored elsewhere)
            _acc, shown["uri"] = accounts.totp_enable(conn, username, actor=actor)
        elif what == "totp-off":
            accounts.totp_disable(conn, username, actor=actor)
        else:
            raise InputError(f"unknown change {what!r} (changes: {', '.join(CHANGES)})")
        return {"location": f"/accounts?done={what}-{username}#acct-{username}"}
    try:
        done = forms.once(request, data, f"accounts.{what}", work)
    except InputError as exc:
        return _page(request, status=400, problem=f"{username}: {exc}")
    if "uri" in shown:
        return _page(request, done=f"totp-on-{username}", totp={"username": username, "uri": shown["uri"],
                                                                "qr": _qr(shown["uri"])})
    return forms.redirect(request, done)


def _qr(uri: str):
    """The ``otpauth://`` URI as an SVG QR code for an authenticator app (segno)."""
    import segno
    from markupsafe import Markup
    return Markup(segno.make(uri, error="m").svg_inline(scale=4, border=2, title="The second factor's key"))


ROUTES = [accounts_page, add, change]
