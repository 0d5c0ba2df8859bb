"""The grease program in the office: the establishments (search by name, address or
licence; overdue first; the year's counts for the annual report, :func:`fog.store.counts`)
and one page per establishment with its grease removal devices,
their pump-outs and the findings, as of today (or ``?as_of=``). Each page calls the function
``sewerwatch fog list`` and ``fog show`` call (:func:`fog.store.establishments`,
:func:`fog.store.establishment`), with the village's rules (:func:`fog.rules.for_pack`).
A pump-out report entered on the establishment's page (``grease.record``) calls
:func:`fog.store.add_pumpout`, what ``sewerwatch fog pumpout add`` calls, once per form
(:mod:`web.forms`); a hauler assigned to a device there calls :func:`fog.haulers.assign`,
what ``sewerwatch fog hauler assign`` calls; a person of the establishment invited to the portal
(``accounts.manage``) calls :func:`ereport.invitations.invite_establishment`, what
``sewerwatch portal invite-establishment`` calls. Staff only.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from fog.rules import KINDS
from web import authz, forms

VIEW = {authz.OPT: "view"}
RECORD = {authz.OPT: "grease.record"}
MANAGE = {authz.OPT: "accounts.manage"}
#: The fields of the pump-out form, as :func:`fog.store.check_pumpout` names them.
PUMPOUT_FIELDS = ("device", "date", "hauler", "gallons", "fog_depth_in", "solids_depth_in", "receiving_facility",
                  "manifest")
Q = FromQuery[str | None]


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such page")


def _as_of(request: Request, text: str | None) -> date:
    if not text:
        return request.app.state.office.today()
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"as of: expected a date such as 2026-12-31, got {text!r}") from None


def _rules(request: Request):
    from fog.rules import for_pack

    return for_pack(request.app.state.office.cfg.utility.pack)


@get("/grease", opt=VIEW, sync_to_thread=True, name="grease")
def grease_page(request: Request, q: Q = None, as_of: Q = None) -> Template:
    from fog import store

    _staff(request)
    day, rules = _as_of(request, as_of), _rules(request)
    ests, counts = request.app.state.office.read(lambda conn: (store.establishments(conn, rules, day, q),
                                                               store.counts(conn, rules, day.year, day)))
    return Template("fog_list.html", context={
        "account": request.state.account, "nav": "grease", "establishments": ests, "q": q or "", "counts": counts,
        "as_of": day, "asked_day": as_of or "", "rules": rules,
        "overdue": sum(1 for e in ests if e["overdue_days"])})


def _establishment_context(request: Request, establishment_id: int, as_of: str | None, **more) -> dict:
    from fog import store

    day, rules = _as_of(request, as_of), _rules(request)

    def read(conn):
        from fog.haulers import assigned
        try:
            e = store.establishment(conn, rules, day, establishment_id)
        except InputError:
            raise NotFoundException("no such establishment") from None
        from ereport.grease_photos import photos
        from fog.inspections import add_to
        add_to(conn, rules, e, day)
        from fog.verdicts import of_pumpouts
        ids = [p["id"] for d in e["devices"] for p in d["pumpouts"]]
        return e, store.haulers(conn), assigned(conn, establishment_id), photos(conn, ids), of_pumpouts(conn, ids)

    from fog.inspections import KIND, basis
    e, haulers, hired, pictures, verdicts = request.app.state.office.read(read)
    bases = {k: rules.basis(k) for k in KINDS}
    bases[KIND] = basis(rules)
    typed = more.pop("typed", None) or {"date": request.app.state.office.today().isoformat()}
    return {"account": request.state.account, "nav": "grease", "e": e, "as_of": day, "asked_day": as_of or "",
            "rules": rules, "bases": bases, "haulers": haulers, "hired": hired, "typed": typed, "photos": pictures,
            "verdicts": verdicts, "disputed": [(p, verdicts[p["id"]]) for d in e["devices"] for p in d["pumpouts"]
                                               if verdicts.get(p["id"], {}).get("verdict") == "disputed"],
            **_enforcement(request, e), **more}


def _enforcement(request: Request, e: dict) -> dict:
    """The establishment's findings with the grease guide's step and the notices issued for
    each (``proposals``), and its notices (``notices``): :mod:`enforcement.grease_notices`
    (issued from the page by :mod:`web.pages.fog_notices`)."""
    from enforcement import grease_notices
    from enforcement.grease_guide import load

    guide = load()
    props, issued = request.app.state.office.read(lambda conn: (grease_notices.proposals(conn, guide, e),
                                                                grease_notices.notices(conn, e["id"])))
    return {"proposals": props, "notices": issued, "guide": guide, "today": request.app.state.office.today()}


@get("/grease/{establishment_id:int}", opt=VIEW, sync_to_thread=True)
def establishment_page(request: Request, establishment_id: FromPath[int], as_of: Q = None, saved: Q = None,
                       again: Q = None, hired: Q = None, issued: Q = None, segment: Q = None,
                       inspected: Q = None, answered: Q = None, escalated: Q = None, invited: Q = None,
                       missing: Q = None) -> Template:
    _staff(request)
    return Template("fog_establishment.html", context=_establishment_context(
        request, establishment_id, as_of, saved=saved, again=bool(again), hired_now=hired, issued_now=issued,
        segment_saved=segment, inspected=inspected, answered_now=answered, escalated_now=escalated, missing_now=missing,
        **_invited(request, establishment_id, invited)))


def _invited(request: Request, establishment_id: int, invited: str | None) -> dict:
    """The invitation just made for this establishment's person (another's: nothing), and its
    link when it could not be mailed."""
    from ereport import invitations

    if not invited or not invited.isdigit():
        return {}
    office = request.app.state.office
    inv = office.read(lambda conn: invitations.get(conn, int(invited)))
    if inv is None or inv.establishment_id != establishment_id:
        return {}
    link = invitations.link(inv, office.invite_links) if not inv.mailed and office.invite_links else None
    return {"invited_now": inv, "invite_link": link}


@post("/grease/{establishment_id:int}/invite", opt=MANAGE, sync_to_thread=True, status_code=303)
def invite_person(request: Request, establishment_id: FromPath[int],
                  data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A person of the establishment invited to the portal (to confirm or dispute the pump-outs
    reported for its devices): :func:`ereport.invitations.invite_establishment`."""
    from ereport import invitations

    _staff(request)
    office = request.app.state.office
    licence = _licence(request, establishment_id)
    typed = {k: str(data.get(k, "") or "").strip()[:300] for k in ("email", "full_name")}

    def work(conn, actor):
        if office.invite_links is None:
            raise InputError("invitations need the state folder's key (secrets.json)")
        made = invitations.invite_establishment(conn, licence, typed["email"], typed["full_name"], actor=actor,
                                                links=office.invite_links, mailer=office.mailer, utility=office.utility)
        return {"location": f"/grease/{establishment_id}?invited={made.invitation.id}#portal-people",
                "invitation": made.invitation.id}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.invite", work))
    except InputError as exc:
        return Template("fog_establishment.html", status_code=400, context=_establishment_context(
            request, establishment_id, None, invite_typed=typed, invite_problem=str(exc)))


def _licence(request: Request, establishment_id: int) -> str:
    row = request.app.state.office.read(lambda conn: conn.execute(
        "SELECT licence FROM fog_establishments WHERE id = %s", (establishment_id,)).fetchone())
    if row is None:
        raise NotFoundException("no such establishment")
    return row[0]


@post("/grease/{establishment_id:int}/haulers", opt=RECORD, sync_to_thread=True, status_code=303)
def assign_hauler(request: Request, establishment_id: FromPath[int],
                  data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A hauler hired for a device (it may then report it in the portal): :func:`fog.haulers.assign`."""
    from fog import haulers

    _staff(request)
    licence = _licence(request, establishment_id)
    hauler, device = str(data.get("hauler", "")).strip()[:200], str(data.get("device", "")).strip()[:60]

    def work(conn, actor):
        a = haulers.assign(conn, hauler, licence, device, actor)
        return {"location": f"/grease/{establishment_id}?hired={a['device']}#hired", "device": a["device"]}
    try:
        return forms.redirect(request, forms.once(request, data, "grease.assign", work))
    except InputError as exc:
        return Template("fog_establishment.html", status_code=400, context=_establishment_context(
            request, establishment_id, None, problem=str(exc)))


@post("/grease/{establishment_id:int}/pumpouts", opt=RECORD, sync_to_thread=True, status_code=303)
def record_pumpout(request: Request, establishment_id: FromPath[int],
                   data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A hauler's pump-out report entered by staff: :func:`fog.store.add_pumpout`."""
    from fog import store

    _staff(request)
    rec = {"establishment": _licence(request, establishment_id), **{k: str(data.get(k, "")).strip()[:200] for k in PUMPOUT_FIELDS}}

    def work(conn, actor):
        p = store.add_pumpout(conn, rec, actor, source="office", today=request.app.state.office.today())
        return {"location": f"/grease/{establishment_id}?saved={p['manifest']}#findings", "manifest": p["manifest"]}

    try:
        return forms.redirect(request, forms.once(request, data, "grease.pumpout", work))
    except InputError as exc:
        return Template("fog_establishment.html", status_code=400, context=_establishment_context(
            request, establishment_id, None, typed=rec, problem=str(exc)))


ROUTES = [grease_page, establishment_page, record_pumpout, assign_hauler, invite_person]
