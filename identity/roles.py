"""Roles and what each may do: the one table the office authorises by.

Every route of the web application names one permission (:data:`PERMISSIONS`); the guard
(:func:`web.authz.guard`) lets an account through when its role holds it. Pages that show
something name ``view``; an action names its own. The industrial users' portal (an account
of kind ``industrial-user``, bound to one site) gets permissions of its own, checked with
the object's site: :data:`PORTAL` (its pages, under ``/portal``), which no staff role holds,
and :func:`web.authz.require_site` on every object. A grease hauler's account (kind
``grease-hauler``, bound to one registered hauler) gets :data:`HAULER` (its pages, under
``/portal/grease``) and sees only its own hauler's reports and the devices it was hired for.
"""

from __future__ import annotations

#: The staff roles, most powerful first.
ROLES = ("superintendent", "coordinator", "clerk", "inspector", "viewer")

#: What each role is for, in words (``sewerwatch users list``, the accounts page).
ROLE_WORDS = {
    "superintendent": "everything",
    "coordinator": "everything (the pretreatment coordinator)",
    "clerk": "lab results and bills",
    "inspector": "field records, readings, acknowledging alerts",
    "viewer": "read only (a council member, the state's auditor)",
}

#: Account kinds: the utility's staff, an industrial user's people and a grease hauler's
#: people (the portal).
KINDS = ("staff", "industrial-user", "grease-hauler", "grease-establishment")

#: What each kind of portal account is, in words (the menu, the people page).
KIND_WORDS = {"industrial-user": "industrial user", "grease-hauler": "grease hauler",
              "grease-establishment": "establishment with a grease interceptor"}

_ALL = set(ROLES)
_EVERYTHING = {"superintendent", "coordinator"}

#: The permission of the portal's pages.
PORTAL = "portal"
#: The permission of a grease hauler's pages in the portal.
HAULER = "hauler"
#: The permission of an establishment's pages in the portal (its devices' pump-out reports).
ESTABLISHMENT = "establishment"

#: permission -> the staff roles that hold it.
PERMISSIONS: dict[str, frozenset[str]] = {
    # pages
    "view": frozenset(_ALL),
    # the actions of the first pages
    "alerts.acknowledge": frozenset(_EVERYTHING | {"inspector"}),
    "deadletters.replay": frozenset(_EVERYTHING),
    # the actions the next pages bring (named here so the table is whole)
    "lab.import": frozenset(_EVERYTHING | {"clerk"}),
    "bills.issue": frozenset(_EVERYTHING | {"clerk"}),
    # payments from the bank's file (the bills' statements of account are pages: view)
    "payments.record": frozenset(_EVERYTHING | {"clerk"}),
    "field.record": frozenset(_EVERYTHING | {"inspector"}),
    "notices.issue": frozenset(_EVERYTHING),
    "accounts.manage": frozenset(_EVERYTHING),
    # the address book: an industrial user's people and addresses (the clerk keeps the billing ones)
    "contacts.edit": frozenset(_EVERYTHING | {"clerk"}),
    # mailing issued notices and bills in batches: making a batch and sending it (/mail)
    "mail.send": frozenset(_EVERYTHING | {"clerk"}),
    # a new version of a permit (a file or the form); one's own calendar feed link
    "permits.edit": frozenset(_EVERYTHING),
    "calendar.feed": frozenset(_ALL - {"viewer"}),
    # sampling events planned from the schedule (/sampling, the calendar's button)
    "sampling.plan": frozenset(_EVERYTHING),
    # the letters the utility writes (/letters): a template saved, a letter issued, its PDF brought back
    "letters.write": frozenset(_EVERYTHING),
    # a maintenance window opened after the fact over readings already judged,
    # approved or rejected by a second person (/maintenance; field.windows.approve/reject)
    "field.approve": frozenset(_EVERYTHING),
    # the grease program: a hauler's pump-out report entered in the office
    "grease.record": frozenset(_EVERYTHING | {"clerk", "inspector"}),
    # the industrial users' portal: the coordinator's review of what users submit
    "portal.review": frozenset(_EVERYTHING),
    # the portal's own pages: no staff role holds it; an account of kind industrial-user does,
    # for its own site only (web.authz.guard, web.authz.require_site)
    PORTAL: frozenset(),
    # a grease hauler's pages: no staff role holds it; an account of kind grease-hauler does,
    # for its own hauler only (web.authz.guard, fog.hauler_portal)
    HAULER: frozenset(),
    # an establishment's pages: no staff role holds it; an account of kind grease-establishment
    # does, for its own establishment only (web.authz.guard, web.authz.own_establishment)
    ESTABLISHMENT: frozenset(),
}

#: Routes anyone may open without a session: the sign-in and the acknowledgement link
#: (whose token is its own capability), the stylesheet and the script.
PUBLIC = "public"


def may(role: str | None, permission: str) -> bool:
    """True when ``role`` holds ``permission`` (an unknown permission is nobody's)."""
    return role is not None and role in PERMISSIONS.get(permission, ())


def second_factor_roles() -> tuple[str, ...]:
    """The roles that may issue notices: the ones offered a TOTP second factor."""
    return tuple(r for r in ROLES if may(r, "notices.issue"))
