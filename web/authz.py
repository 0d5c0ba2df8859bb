"""The one place the office authorises: every route by role, every object by
the account's industrial user.

Each route handler names its permission in ``opt={"permission": ...}`` (:data:`identity.roles.
PERMISSIONS`, or :data:`identity.roles.PUBLIC` for the sign-in, the acknowledgement link and the
static files). :func:`guard`, the application's only guard, loads the session's account
(:func:`web.sessions.current_account`) and lets the request through when its role holds the
permission; a route that names none is refused (fails closed). The portal's pages
(:data:`identity.roles.PORTAL`) are for accounts of kind ``industrial-user`` only, and staff pages
for staff only: neither sees the other's. A grease hauler's pages (:data:`identity.roles.HAULER`)
are for accounts of kind ``grease-hauler`` only. Objects: an account of kind ``industrial-user``
sees only its own site (:func:`require_site`, :func:`own`), a hauler's account only its own
hauler's reports and the devices it was hired for (:func:`own_hauler`).
"""

from __future__ import annotations

import logging

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, NotFoundException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from identity import roles
from web import sessions

log = logging.getLogger("sewerwatch.web.authz")

#: The key of a route handler's ``opt`` naming its permission.
OPT = "permission"


class SignInNeeded(NotAuthorizedException):
    """No session, or one that ended (the text says why, for the sign-in page)."""


async def guard(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
    """Authorise one request (Litestar guard of the whole application)."""
    permission = handler.opt.get(OPT)
    if permission == roles.PUBLIC:
        return
    if permission not in roles.PERMISSIONS:
        log.error("route %s names no known permission (%r): refused", connection.url.path, permission)
        raise PermissionDeniedException("this page has no permission assigned")
    account, why = await sessions.current_account(connection, passive=bool(handler.opt.get("passive")))
    if account is None:
        raise SignInNeeded(why or "Sign in to continue.")
    connection.state.account = account
    if permission == roles.PORTAL:
        allowed = account.kind == "industrial-user"      # its own site's objects: require_site
    elif permission == roles.HAULER:
        allowed = account.kind == "grease-hauler"        # its own hauler's objects: own_hauler
    elif permission == roles.ESTABLISHMENT:
        allowed = account.kind == "grease-establishment"  # its own establishment's: own_establishment
    else:
        allowed = account.kind == "staff" and roles.may(account.role, permission)
    if not allowed:
        office = connection.app.state.office
        office.stats["forbidden"] += 1
        log.warning("forbidden: %s (%s) %s %s needs %s", account.username, account.role or account.kind,
                    connection.scope.get("method"), connection.url.path, permission)
        raise PermissionDeniedException(f"{permission} is not allowed to the role {account.role or account.kind}")


def may(account, permission: str) -> bool:
    """For templates: show an action only to those who may take it."""
    return account is not None and account.kind == "staff" and roles.may(account.role, permission)


def require_site(account, site_id: int) -> None:
    """An object of site ``site_id``: staff see every site, an industrial user's account only
    its own (another site is "not found", which says nothing about it)."""
    if account.kind == "staff":
        return
    if account.site_id != site_id:
        raise NotFoundException("no such industrial user")


def own(account, site_id: int | None, what: str = "no such page") -> None:
    """A portal object (a draft, an upload, a submission, a notice, a report owed): it must be
    the account's own site's, else "not found" (which says nothing about it)."""
    if account.kind != "industrial-user" or site_id is None or account.site_id != site_id:
        raise NotFoundException(what)


def own_hauler(account, hauler_id: int | None, what: str = "no such page") -> None:
    """A grease hauler's object (a pump-out report, a device it was hired for): it must be the
    account's own hauler's, else "not found" (which says nothing about it)."""
    if account.kind != "grease-hauler" or hauler_id is None or account.hauler_id != hauler_id:
        raise NotFoundException(what)


def own_establishment(account, establishment_id: int | None, what: str = "no such page") -> None:
    """An establishment's object (a pump-out report of its device, a photo of one): it must be
    the account's own establishment's, else "not found" (which says nothing about it)."""
    if (account.kind != "grease-establishment" or establishment_id is None
            or account.establishment_id != establishment_id):
        raise NotFoundException(what)
