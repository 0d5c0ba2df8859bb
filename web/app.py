"""The office's Litestar application: one base layout, the pages of each area, the
acknowledgement link, static files; sessions, CSRF and the sign-in rate limit from Litestar
.

Order of a request: :class:`Edge` (the client's address behind trusted proxies, safety
headers on every response, the access log with link tokens withheld) -> Litestar's session
middleware -> Litestar's CSRF middleware (every POST but the acknowledgement link's, whose
token is its own capability and which has no session to ride on) -> :func:`web.authz.guard`
(the session's account, and its role's permission for the route) -> the page. Errors are
pages that say what to do (:func:`error_page`), never a traceback.
"""

from __future__ import annotations

import logging
import re
import secrets as _random
import time
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from jinja2 import Template as Template_
from litestar import Litestar, Request, Response
from litestar.config.csrf import CSRFConfig
from litestar.exceptions import HTTPException, NotAuthorizedException
from litestar.middleware.rate_limit import RateLimitConfig
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.static_files import create_static_files_router
from litestar.stores.memory import MemoryStore
from litestar.template.config import TemplateConfig

from alerts.links import PATH as ACK_PATH
from alerts.links import redact
from foundation.clients import client_address, networks
from foundation.errors import InputError
from identity import roles
from limits import words
from web import authz, formats, forms, guide, sessions
from web.office import DatabaseDown, Office
from web.pages import (ack, alerts, bills, enforcement, lab, login, permits, portal, portal_grease, portal_people, review, sensors,
                       sites, today)
from web.pages import accounts as accounts_page
from web.pages import help as help_page
from web.pages import calendar as calendar_page
from web.pages import contacts as contacts_page
from web.pages import contacts_import as contacts_import_page
from web.pages import mailing as mailing_page
from web.pages import field as field_pages
from web.pages import fog as fog_pages
from web.pages import fog_notices as fog_notice_pages
from web.pages import fog_inspections, fog_reminders, grease_photos, portal_kitchen
from web.pages import inspections as inspection_pages
from web.pages import instruments as instrument_pages
from web.pages import maintenance as maintenance_pages
from web.pages import rates as rates_page
from web.pages import sampling as sampling_page
from web.pages import letters as letters_page
from web.pages import records as records_page
from web.pages import state_report as state_report_pages
from web.pages import statements as statements_page

log = logging.getLogger("sewerwatch.web")
access_log = logging.getLogger("sewerwatch.web.access")

HERE = Path(__file__).resolve().parent
#: Paths whose successful GETs the access log keeps at debug level (refreshes, static files).
QUIET_PATHS = ("/today/live", "/static/")
#: A calendar feed's address carries its token (web/feeds.py): the logs never show it.
_FEED_TOKEN = re.compile(r"(/calendar/feed/)[^/?#\s]+")


def withheld(text: str) -> str:
    """``text`` with the acknowledgement links' and the calendar feeds' tokens withheld."""
    return _FEED_TOKEN.sub(r"\1(withheld)", redact(text))


#: Largest request body [bytes] the office takes (forms; uploads name their own).
BODY_MAX = 1 << 20

#: Sent with every response: never cached, never framed, no referrer (the acknowledgement
#: links carry a token), nothing loaded from elsewhere (plant networks are often isolated,
#: and it keeps injected markup inert).
HEADERS = {
    b"cache-control": b"no-store",
    b"referrer-policy": b"no-referrer",
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    b"content-security-policy": (b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
}


class Edge:
    """The outermost ASGI layer: the client's address, the headers, the access log."""

    def __init__(self, app, office: Office):
        self.app, self.office = app, office
        self.nets = networks(office.opts.trusted_proxies)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        peer = scope.get("client")[0] if scope.get("client") else None
        xff = [v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"x-forwarded-for"]
        client = client_address(peer, xff, self.nets)
        scope.setdefault("state", {})["client"] = client
        started = time.perf_counter()
        status = [0]
        self.office.stats["requests"] += 1
        ack_path = scope["path"].startswith(ACK_PATH)
        guide_path = scope["path"] == guide.PATH or scope["path"].startswith(guide.PATH + "/")
        built = getattr(self.office, "guide", None)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in HEADERS]
                headers += list(HEADERS.items())
                if ack_path:   # the link's page has its own style sheet inline (it is a page of alerts/)
                    headers = [(k, v.replace(b"style-src 'self'", b"style-src 'unsafe-inline'"))
                               if k == b"content-security-policy" else (k, v) for k, v in headers]
                elif guide_path and built is not None and built.csp:   # the guide's theme: its inline scripts by hash
                    headers = [(k, built.csp.encode() if k == b"content-security-policy" else v) for k, v in headers]
                message = {**message, "headers": headers}
            await send(message)

        writes = scope["method"] not in ("GET", "HEAD")
        if writes:
            self.office.wrote()          # no read begun before a write is shared after it
        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            took = time.perf_counter() - started
            if writes:
                self.office.wrote()      # nor one begun while it wrote
            path = scope["path"] + (("?" + scope["query_string"].decode("latin-1")) if scope.get("query_string") else "")
            self.office.timings.append((scope["method"], scope["path"], status[0], took))
            # the Today page's own refreshes (every 2 s a browser) and static files only at debug level
            quiet = scope["method"] == "GET" and status[0] < 400 and scope["path"].startswith(QUIET_PATHS)
            access_log.log(logging.DEBUG if quiet else logging.INFO, '%s "%s %s" %d %.1f ms', client, scope["method"],
                           withheld(path), status[0], took * 1000.0)


class _Page(Template_):
    """A template that refuses a page's context naming one of the layout's own helpers: a
    page's ``base`` (a version number) once replaced the link prefix, so the permit form
    posted to a path that does not exist and its style sheet did not load."""

    def new_context(self, vars=None, shared=False, locals=None):
        clash = [] if shared else sorted(set(vars or ()) & set(OWN_GLOBALS))   # shared: an include's own
        if clash:
            raise RuntimeError(f"template {self.name}: its context names the layout's own {', '.join(clash)}")
        if not shared:          # the page's "How do I …?": its section of the guide, by the page drawn
            vars = {**(vars or {}), "guide_link": guide.link(self.name, (vars or {}).get("account"))}
        return super().new_context(vars, shared, locals)


#: The helpers every template has; a page's context may not name them.
OWN_GLOBALS = ("utility", "tz", "may", "roles", "base", "grafana_url", "form_key", "version_field", "is_portal", "guide_link")


def templates(office: Office) -> Environment:
    """The office's Jinja2 environment (autoescaped) with its helpers."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html", "svg"]),
                      trim_blocks=True, lstrip_blocks=True, auto_reload=False)   # templates change with a release
    tz = office.tz
    env.globals.update(utility=office.utility, tz=tz, may=authz.may, roles=roles, base=office.prefix,
                       grafana_url=office.opts.grafana_url, form_key=forms.key_field, version_field=forms.version_field,
                       is_portal=lambda a: a is not None and a.kind == "industrial-user")
    assert set(OWN_GLOBALS) - {"guide_link"} <= set(env.globals)   # the guide's link: per page (_Page)
    env.template_class = _Page
    env.filters.update(local=lambda t, **k: formats.local(t, tz, **k), iso=lambda t: formats.iso_local(t, tz),
                       age=formats.age, num=formats.num, short=formats.short, unit=formats.unit, duration=formats.duration,
                       day_before=formats.day_before, rule_name=words.rule_name, analyte=words.analyte_name,
                       term=words.term, pack_name=words.pack_name, file_name=formats.file_name, term_days=formats.term_days,
                       by_name=lambda codes: sorted(((words.analyte_name(c), c) for c in codes), key=lambda x: x[0].lower()))
    return env


def error_page(request: Request, exc: Exception) -> Response:
    """Every error as a page that says what to do (never a traceback)."""
    office: Office = request.app.state.office
    path = request.url.path
    if isinstance(exc, authz.SignInNeeded) or (isinstance(exc, NotAuthorizedException) and not path.startswith(ACK_PATH)):
        why = str(exc.detail) if isinstance(exc, HTTPException) else ""
        code = next((k for k, words in sessions.WHY.items() if why == k), "")
        target = path + ("?" + request.url.query if request.url.query else "")
        if request.headers.get("x-sewerwatch-live"):
            return Response({"signed_out": True, "why": code}, status_code=401)
        return Redirect(office.url(f"/login?next={_quote(target)}" + (f"&why={code}" if code else "")),
                        status_code=303)
    if isinstance(exc, DatabaseDown):
        status, title = 503, "The database cannot be reached"
        lines = [f"{exc}.", "Nothing was changed. This page tries again when you reload it; sewerwatch run keeps "
                 "alerting from memory meanwhile."]
    elif isinstance(exc, InputError):      # refused by the package function: its one line says why
        status, title = 400, "That could not be used"
        lines = [str(exc), "Nothing was changed. Go back, correct it and send it again."]
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        if path.startswith(ACK_PATH) and office.ack_page is not None:
            reply = office.ack_page.refused(status, _reason(status))
            return Response(reply.html, status_code=reply.status, media_type="text/html", headers=reply.headers)
        title, lines = _http_words(request, exc)
    else:
        status = 500
        ref = _random.token_hex(4)
        office.stats["errors"] += 1
        log.error("office: %s %s failed (reference %s): %s: %s", request.method, withheld(path), ref,
                  type(exc).__name__, redact(str(exc)).splitlines()[0] if str(exc) else "", exc_info=exc)
        title = "Something went wrong"
        lines = [f"The page could not be made (reference {ref}, in sewerwatch's log).",
                 "If you were sending a form, check whether it took effect before sending it again."]
    account = getattr(request.state, "account", None)
    return Template("error.html", context={"title": title, "lines": lines, "status": status, "account": account,
                                           "nav": None}, status_code=status)


def _quote(text: str) -> str:
    from urllib.parse import quote
    return quote(text, safe="/")


def _reason(status: int) -> str:
    from http import HTTPStatus
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _http_words(request: Request, exc: HTTPException) -> tuple[str, list[str]]:
    status, detail = exc.status_code, str(exc.detail or "")
    account = getattr(request.state, "account", None)
    if status == 403 and "CSRF" in detail:
        return "This form could not be accepted", [
            "It was not sent from a page of this office, or the page had been open a long time.",
            "Go back, reload the page and send the form again."]
    if status == 403 and account is not None and account.kind == "grease-hauler":
        return "This page is not a hauler's", [
            "Your account reports a grease hauler's pump-outs: its pages are under Your pump-outs.",
            "Ask the utility's pretreatment coordinator if you need something they do not show."]
    if status == 403 and account is not None and account.kind == "industrial-user":
        return "This page is the utility's", [
            "Your account belongs to the industrial users' portal: its pages are under Your portal.",
            "Ask the utility's pretreatment coordinator if you need something it does not show."]
    if status == 403 and account is not None and request.url.path.startswith("/portal"):
        return "This page is the industrial users' portal", [
            "Staff accounts do not open the portal's pages: the review queue shows what users submitted."]
    if status == 403:
        role = account.role if account else "your role"
        return "Not allowed for your role", [
            f"Your account ({role}: {roles.ROLE_WORDS.get(role, '')}) may not do this.",
            "Ask the superintendent or the pretreatment coordinator if you need it."]
    if status == 404:
        return "There is nothing here", ["There is nothing here. Use the menu, or go to the Today page."]
    if status == 405:
        return "There is nothing here", ["There is nothing here for this kind of request. Use the menu."]
    if status == 429:
        log.warning("office: too many requests from %s to %s (rate limited)", request.scope["state"].get("client"),
                    request.url.path)
        return "Too many attempts", ["Too many sign-in attempts from this address in a short time.",
                                     "Wait a minute, then try again."]
    if status == 413:
        return "Too large", ["The form sent was larger than the office takes."]
    if status == 400:
        return "The request could not be read", [detail or "Something in it was not as expected.",
                                                 "Go back and check the form."]
    return _reason(status), [detail or "The request was refused."]


def sign_in_rate_limit(office: Office) -> RateLimitConfig:
    """Litestar's rate limit on the sign-in form: ``[web] login_per_min`` attempts a minute
    per client address (behind the proxy: the client it names)."""
    return RateLimitConfig(rate_limit=("minute", office.opts.login_per_min), store="rate-limits",
                           identifier_for_request=lambda r: r.scope["state"].get("client") or "unknown",
                           check_throttle_handler=lambda r: r.method == "POST", set_rate_limit_headers=False)


def build_app(office: Office, csrf_secret: str) -> Litestar:
    """The office's application."""
    env = templates(office)
    handlers = [*login.routes(sign_in_rate_limit(office)), *today.ROUTES, *sites.ROUTES, *alerts.ROUTES,
                *sensors.ROUTES, *field_pages.ROUTES, *maintenance_pages.ROUTES, *instrument_pages.ROUTES,
                *inspection_pages.ROUTES, *ack.ROUTES,
                *lab.ROUTES, *permits.ROUTES, *calendar_page.ROUTES, *sampling_page.ROUTES, *letters_page.ROUTES,
                *portal.routes(office), *portal_grease.ROUTES, *portal_people.ROUTES, *review.ROUTES,
                *enforcement.ROUTES, *state_report_pages.ROUTES, *records_page.ROUTES, *bills.ROUTES, *statements_page.ROUTES, *rates_page.ROUTES,
                *accounts_page.ROUTES, *contacts_page.ROUTES, *contacts_import_page.ROUTES, *mailing_page.ROUTES, *help_page.ROUTES, *fog_pages.ROUTES,
                *fog_notice_pages.ROUTES, *fog_reminders.ROUTES, *grease_photos.ROUTES,
                *fog_inspections.ROUTES, *portal_kitchen.ROUTES,
                create_static_files_router(path="/static", directories=[HERE / "static"], opt={authz.OPT: roles.PUBLIC},
                                           include_in_schema=False)]
    app = Litestar(
        route_handlers=handlers,
        guards=[authz.guard],
        middleware=[sessions.config(office.opts).middleware],
        csrf_config=CSRFConfig(secret=csrf_secret, cookie_name=sessions.CSRF_COOKIE, cookie_httponly=True,
                               cookie_samesite="strict", cookie_secure=(office.opts.public_url or "").startswith("https"),
                               exclude=["^/ack/"]),
        stores={sessions.STORE: sessions.store(office.state_dir), "rate-limits": MemoryStore()},
        template_config=TemplateConfig(instance=JinjaTemplateEngine.from_environment(env)),
        exception_handlers={Exception: error_page},
        request_max_body_size=BODY_MAX,
        openapi_config=None,
        logging_config=None,
        debug=False,
    )
    app.state.office = office
    if getattr(office, "guide", None) is None:
        office.guide = guide.Guide(office.state_dir)
    return app


def asgi(office: Office, csrf_secret: str):
    """The application behind :class:`Edge`: what the server runs."""
    return Edge(build_app(office, csrf_secret), office)
