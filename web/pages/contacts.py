"""The Contacts page of an industrial user (the office's address book) and a contact's page.

Everyone on staff reads them (``view``); adding and changing a person or an address takes
``contacts.edit`` and calls :mod:`identity.contacts` as the signed-in account (the function
``sewerwatch contacts add|edit|address`` calls), once per form (:func:`web.forms.once`), from
the version the form was drawn from (:class:`foundation.errors.Conflict` otherwise). Inviting
the person to the portal from the contact takes ``accounts.manage`` and calls
:func:`ereport.invitations.invite_contact`. Whether the person's documents go on paper or by
e-mail takes ``contacts.edit`` and calls :func:`ereport.mailing.batches.set_paper` (as
``sewerwatch mail paper-preference``). A portal account never reaches these pages (the
guard: staff only).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from ereport import invitations
from ereport.mailing import batches
from foundation.errors import Conflict, InputError
from identity import contacts
from web import authz, forms

VIEW = {authz.OPT: "view"}
EDIT = {authz.OPT: "contacts.edit"}
MANAGE = {authz.OPT: "accounts.manage"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
_FIELDS = ("full_name", "title", "phone", "email", "note")


def _values(data: dict) -> dict:
    v = {k: str(data.get(k, "") or "")[:400] for k in _FIELDS}
    roles = data.get("roles", [])
    v["roles"] = [str(r) for r in (roles if isinstance(roles, list) else [roles]) if r]
    return v


def _site_page(request: Request, key: str, *, status: int = 200, problem: str | None = None,
               form: dict | None = None, done: str | None = None) -> Template:
    office = request.app.state.office

    def read(conn):
        try:
            sid, name = contacts.site_of(conn, key)
        except InputError:
            raise NotFoundException("no such industrial user") from None
        return (name, contacts.contacts_of(conn, key, removed=True), contacts.addresses_of(conn, key),
                contacts.address_history(conn, key))
    name, people, addrs, history = office.read(read)
    return Template("contacts.html", status_code=status, context={
        "account": request.state.account, "nav": "today", "key": key, "name": name, "people": people,
        "addresses": addrs, "address_history": history, "kinds": contacts.ADDRESS_KINDS, "role_words": contacts.ROLES,
        "problem": problem, "form": form or {}, "done": done or request.query_params.get("done"),
        "again": request.query_params.get("again") == "1", "may_edit": authz.may(request.state.account, "contacts.edit")})


@get("/sites/{key:str}/contacts", opt=VIEW, sync_to_thread=True, name="contacts")
def contacts_page(request: Request, key: FromPath[str]) -> Template:
    return _site_page(request, key)


@post("/sites/{key:str}/contacts/add", opt=EDIT, sync_to_thread=True, status_code=200)
def add(request: Request, key: FromPath[str], data: Form) -> Redirect | Template:
    v = _values(data)

    def work(conn, actor):
        c = contacts.add_contact(conn, key, v, actor=actor, note=v["note"] or None)
        return {"location": f"/contacts/{c['id']}?done=added", "contact": c["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.add", work))
    except InputError as exc:
        return _site_page(request, key, status=400, problem=str(exc), form=v)


@post("/sites/{key:str}/addresses/{kind:str}", opt=EDIT, sync_to_thread=True, status_code=200)
def set_address(request: Request, key: FromPath[str], kind: FromPath[str], data: Form) -> Redirect | Template:
    v = {k: str(data.get(k, "") or "")[:400] for k in ("street", "city", "state", "postal_code", "note")}

    def work(conn, actor):
        a = contacts.set_address(conn, key, kind, v, actor=actor, note=v["note"] or None,
                                 expected_version=forms.base_version(data))
        return {"location": f"/sites/{key}/contacts?done=address-{kind}#addresses", "version": a["version"]}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.address", work))
    except Conflict as exc:
        return _site_page(request, key, status=forms.CONFLICT, problem=str(exc))
    except InputError as exc:
        return _site_page(request, key, status=400, problem=f"The {kind} address: {exc}")


def _contact_page(request: Request, contact_id: int, *, status: int = 200, problem: str | None = None,
                  form: dict | None = None, made=None, link: str | None = None) -> Template:
    office = request.app.state.office

    def read(conn):
        try:
            return {**contacts.contact(conn, contact_id), "paper": batches.prefers_paper(conn, contact_id)}
        except InputError:
            raise NotFoundException("no such contact") from None
    c = office.read(read)
    account = request.state.account
    return Template("contact.html", status_code=status, context={
        "account": account, "nav": "today", "c": c, "role_words": contacts.ROLES, "problem": problem,
        "form": form, "done": request.query_params.get("done"), "again": request.query_params.get("again") == "1",
        "may_edit": authz.may(account, "contacts.edit"), "may_invite": authz.may(account, "accounts.manage"),
        "made": made, "link": link})


@get("/contacts/{contact_id:int}", opt=VIEW, sync_to_thread=True, name="contact")
def contact_page(request: Request, contact_id: FromPath[int]) -> Template:
    return _contact_page(request, contact_id)


@post("/contacts/{contact_id:int}/edit", opt=EDIT, sync_to_thread=True, status_code=200)
def edit(request: Request, contact_id: FromPath[int], data: Form) -> Redirect | Template:
    v = _values(data)
    remove = {"remove": True, "restore": False}.get(str(data.get("state", "")))

    def work(conn, actor):
        c = contacts.edit_contact(conn, contact_id, {k: v[k] for k in contacts.CONTACT_FIELDS}, actor=actor,
                                  expected_version=forms.base_version(data), note=v["note"] or None, remove=remove)
        return {"location": f"/contacts/{contact_id}?done=saved", "version": c["version"]}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.edit", work))
    except Conflict as exc:
        return _contact_page(request, contact_id, status=forms.CONFLICT,
                             problem=" ".join(forms.conflict_lines(exc, request.app.state.office.tz)), form=v)
    except InputError as exc:
        return _contact_page(request, contact_id, status=400, problem=str(exc), form=v)


@post("/contacts/{contact_id:int}/invite", opt=MANAGE, sync_to_thread=True, status_code=200)
def invite(request: Request, contact_id: FromPath[int], data: Form) -> Template:
    """The person invited to the portal from the contact (its name, e-mail and position)."""
    office = request.app.state.office
    if office.invite_links is None:
        return _contact_page(request, contact_id, status=503,
                             problem="Invitations need the state folder's key (secrets.json).")

    def work(conn, actor):
        made = invitations.invite_contact(conn, contact_id, actor=actor, links=office.invite_links,
                                          mailer=office.mailer, utility=office.utility)
        return {"location": f"/contacts/{contact_id}", "invitation": made.invitation.id}
    try:
        done = forms.once(request, data, "contacts.invite", work)
    except InputError as exc:
        return _contact_page(request, contact_id, status=400, problem=str(exc))
    made = office.read(lambda conn: invitations.get(conn, int(done.outcome["invitation"])))
    link = invitations.link(made, office.invite_links) if made and not made.mailed else None
    return _contact_page(request, contact_id, made=made, link=link)


@post("/contacts/{contact_id:int}/documents", opt=EDIT, sync_to_thread=True, status_code=200)
def documents_by(request: Request, contact_id: FromPath[int], data: Form) -> Redirect | Template:
    """Whether the person's notices, bills and letters go on paper (by post) or by e-mail."""
    by = str(data.get("by", ""))
    if by not in ("paper", "email"):
        return _contact_page(request, contact_id, status=400,
                             problem=f"Documents: choose on paper or by e-mail (the form sent {by[:40]!r}).")
    paper = by == "paper"

    def work(conn, actor):
        batches.set_paper(conn, contact_id, paper, actor=actor)
        return {"location": f"/contacts/{contact_id}?done={'paper' if paper else 'email'}"}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.documents", work))
    except InputError as exc:
        return _contact_page(request, contact_id, status=400, problem=str(exc))


ROUTES = [contacts_page, add, set_address, contact_page, edit, invite, documents_by]
