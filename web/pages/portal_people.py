"""The portal's people, for the coordinator: every industrial user's portal
accounts and invitations; inviting a person by e-mail (a signatory with the day the
subscriber agreement was received), or a person of the address book with an e-mail address
(its contact's page invites it: :func:`ereport.invitations.invite_contact`); a registered grease hauler's people likewise
(:func:`ereport.invitations.invite_hauler`); revoking an account or an invitation. Each calls
:mod:`ereport.invitations` as the signed-in account (``accounts.manage``); the invitation
once per form (:func:`web.forms.once`: a double click or a reload mails once and shows what the
first submission did)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from ereport import invitations
from foundation.errors import InputError
from identity import contacts
from web import authz, forms

MANAGE = {authz.OPT: "accounts.manage"}
FORM = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]


def _page(request: Request, *, status: int = 200, error: str | None = None, done: forms.Done | None = None,
          form: dict | None = None) -> Template:
    """The page; after an invitation (``done``) the invitation made, the earlier ones it
    superseded and, when it was not mailed and is still open, its link."""
    office = request.app.state.office

    def read(conn):
        sites = conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall()
        haulers = conn.execute("SELECT licence, company FROM fog_haulers ORDER BY company").fetchall()
        made = invitations.get(conn, int(done.outcome["invitation"])) if done else None
        gone = [invitations.get(conn, int(i)) for i in done.outcome.get("superseded", [])] if done else []
        book = [c for c in contacts.contacts_of(conn) if c["email"]]
        return sites, haulers, invitations.people(conn), made, [g for g in gone if g is not None], book
    sites, haulers, people, made, superseded, book = office.read(read)
    link = invitations.link(made, office.invite_links) if made and not made.mailed and office.invite_links else None
    return Template("portal_people.html", status_code=status, context={
        "account": request.state.account, "nav": "people", "sites": sites, "haulers": haulers, "people": people,
        "error": error,
        "made": made, "link": link, "book": book, "superseded": superseded, "again": bool(done and done.again),
        "form": form or {}, "mail_configured": office.mailer.configured, "done": request.query_params.get("done")})


@get("/portal-people", opt=MANAGE, sync_to_thread=True, name="portal-people")
def people_page(request: Request) -> Template:
    return _page(request)


@post("/portal-people/invite", opt=MANAGE, sync_to_thread=True, status_code=200)
def invite(request: Request, data: FORM) -> Template:
    office = request.app.state.office
    form = {k: str(data.get(k, "") or "")[:300] for k in ("site", "email", "full_name", "title", "signatory",
                                                           "agreement_on")}
    if office.invite_links is None:
        return _page(request, status=503, error="Invitations need the state folder's key (secrets.json).", form=form)
    try:
        agreed = date.fromisoformat(form["agreement_on"]) if form["agreement_on"] else None
    except ValueError:
        return _page(request, status=400, error="The subscriber agreement's day: a date (YYYY-MM-DD).", form=form)

    def work(conn, actor):
        made = invitations.invite(conn, form["site"], form["email"], form["full_name"],
                                  signatory=form["signatory"] == "yes", title=form["title"] or None,
                                  subscriber_agreement_on=agreed, actor=actor, links=office.invite_links,
                                  mailer=office.mailer, utility=office.utility)
        return {"location": "/portal-people", "invitation": made.invitation.id,
                "superseded": [i.id for i in made.superseded]}
    try:
        done = forms.once(request, data, "portal.invite", work)
    except InputError as exc:
        return _page(request, status=400, error=str(exc), form=form)
    return _page(request, done=done)


@post("/portal-people/invite-hauler", opt=MANAGE, sync_to_thread=True, status_code=200)
def invite_hauler(request: Request, data: FORM) -> Template:
    """A grease hauler's person invited to report its pump-outs in the portal."""
    office = request.app.state.office
    form = {k: str(data.get(k, "") or "")[:300] for k in ("hauler", "email", "full_name")}
    shown = {"hauler": form["hauler"], "hauler_email": form["email"], "hauler_full_name": form["full_name"]}
    if office.invite_links is None:
        return _page(request, status=503, error="Invitations need the state folder's key (secrets.json).", form=shown)

    def work(conn, actor):
        made = invitations.invite_hauler(conn, form["hauler"], form["email"], form["full_name"], actor=actor,
                                         links=office.invite_links, mailer=office.mailer, utility=office.utility)
        return {"location": "/portal-people", "invitation": made.invitation.id,
                "superseded": [i.id for i in made.superseded]}
    try:
        done = forms.once(request, data, "portal.invite-hauler", work)
    except InputError as exc:
        return _page(request, status=400, error=str(exc), form=shown)
    return _page(request, done=done)


@post("/portal-people/{username:str}/revoke", opt=MANAGE, sync_to_thread=True, status_code=303)
def revoke(request: Request, username: FromPath[str]) -> Redirect | Template:
    office, account = request.app.state.office, request.state.account
    try:
        office.act(account, invitations.revoke, username)
    except InputError as exc:
        return _page(request, status=404, error=str(exc))
    return Redirect(office.url("/portal-people?done=revoked"), status_code=303)


@post("/portal-people/invitations/{invitation_id:int}/revoke", opt=MANAGE, sync_to_thread=True, status_code=303)
def revoke_invitation(request: Request, invitation_id: FromPath[int]) -> Redirect | Template:
    office, account = request.app.state.office, request.state.account
    try:
        office.act(account, invitations.revoke_invitation, invitation_id)
    except InputError as exc:
        return _page(request, status=404, error=str(exc))
    return Redirect(office.url("/portal-people?done=withdrawn"), status_code=303)


ROUTES = [people_page, invite, invite_hauler, revoke, revoke_invitation]
