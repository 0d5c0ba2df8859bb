"""The grease program in the office: the establishments (search by name, address or
licence; overdue first; the year's counts for the annual report, :func:`fog.store.counts`)
and one page per establishment with its grease removal devices,
their pump-outs and the findings, as of today (or ``?as_of=``). Each page calls the function
``sewerwatch fog list`` and ``fog show`` call (:func:`fog.store.establishments`,
:func:`fog.store.establishment`), with the village's rules (:func:`fog.rules.for_pack`).
Staff only; read only (the ``view`` permission).
"""

from __future__ import annotations

from datetime import date

from litestar import Request, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from foundation.errors import InputError
from web import authz

VIEW = {authz.OPT: "view"}
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


@get("/grease/{establishment_id:int}", opt=VIEW, sync_to_thread=True)
def establishment_page(request: Request, establishment_id: FromPath[int], as_of: Q = None) -> Template:
    from fog import store

    _staff(request)
    day, rules = _as_of(request, as_of), _rules(request)

    def read(conn):
        try:
            return store.establishment(conn, rules, day, establishment_id)
        except InputError:
            raise NotFoundException("no such establishment") from None

    e = request.app.state.office.read(read)
    bases = {k: rules.basis(k) for k in ("too late", "overdue", "over capacity", "unregistered hauler")}
    return Template("fog_establishment.html", context={
        "account": request.state.account, "nav": "grease", "e": e, "as_of": day, "asked_day": as_of or "",
        "rules": rules, "bases": bases})


ROUTES = [grease_page, establishment_page]
