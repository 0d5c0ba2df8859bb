"""A sensor's instrument in the office: the register's current entry and
its history, and the form that records a change, as ``sewerwatch instruments set`` does.

The form calls :func:`field.instruments.set_instrument` (the command's function) through
:func:`web.forms.once`: the same make, model and serial number update the entry in place,
another serial number is another instrument (the one it replaces gets its removed date), so the
register keeps its history. ``field.record`` (inspectors, the superintendent and the
coordinator); an industrial user's account acts on none.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import authz, forms
from web.pages.field import _sensor

RECORD = {authz.OPT: "field.record"}
Form = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
#: The form's text fields, in the register's names.
TEXT = ("make", "model", "serial", "note")


def _staff(request: Request) -> None:
    if request.state.account.kind != "staff":
        raise NotFoundException("no such sensor")


def parse(data: dict) -> dict:
    """The form's fields as :func:`field.instruments.set_instrument` takes them; a field left
    empty keeps what the register has. Raises :class:`InputError` naming the field."""
    out: dict = {k: (str(data.get(k, "")).strip() or None) for k in TEXT}
    for key, what in (("range_low", "range, low end"), ("range_high", "range, high end")):
        text = str(data.get(key, "")).strip()
        if text:
            try:
                out[key] = float(text)
            except ValueError:
                raise InputError(f"{what}: not a number: {text!r}") from None
    text = str(data.get("calibration_interval_days", "")).strip()
    if text:
        if not text.isdigit() or int(text) <= 0:
            raise InputError(f"calibration interval: expected a whole number of days > 0, got {text!r}")
        out["calibration_interval_days"] = int(text)
    owner = str(data.get("owner", "")).strip()
    if owner:
        out["owner"] = owner
    text = str(data.get("installed", "")).strip()
    if text:
        try:
            out["installed"] = date.fromisoformat(text)
        except ValueError:
            raise InputError(f"installed: expected a date such as 2026-03-01, got {text!r}") from None
    return {k: v for k, v in out.items() if v is not None}


def _context(conn, site: str, name: str, account, values: dict | None, problem: str | None) -> dict:
    from field import instruments
    s = _sensor(conn, site, name, account)
    cur = instruments.current(conn, s.id)
    return {"account": account, "nav": "sensors", "s": s, "instrument": cur, "history": instruments.history(conn, s.id),
            "owners": instruments.OWNERS, "problem": problem,
            "values": values if values is not None else {k: ("" if (cur or {}).get(k) is None else cur[k])
                                                         for k in instruments.FIELDS}}


@get("/sensors/{site:str}/{name:str}/instrument", opt=RECORD, sync_to_thread=True)
def instrument_form(request: Request, site: FromPath[str], name: FromPath[str]) -> Template:
    _staff(request)
    office = request.app.state.office
    ctx = office.read(lambda conn: _context(conn, site, name, request.state.account, None, None))
    return Template("field_instrument.html", context=ctx)


# (a path of its own beside the form's GET: see web/pages/field.py on Litestar 2.25)
@post("/sensors/{site:str}/{name:str}/instrument/save", opt=RECORD, sync_to_thread=True, status_code=200)
def instrument_save(request: Request, site: FromPath[str], name: FromPath[str], data: Form) -> Redirect | Template:
    """Record the instrument as ``sewerwatch instruments set`` does (once per form)."""
    from field import instruments
    _staff(request)
    office = request.app.state.office
    account = request.state.account

    def work(conn, actor):
        s = _sensor(conn, site, name, account)
        row = instruments.set_instrument(conn, s.key, parse(data), actor=actor)
        return {"location": f"/sensors/{site}/{name}?done=instrument-{row['id']}", "instrument": row["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "field.instrument", work))
    except InputError as exc:
        problem = str(exc)
        ctx = office.read(lambda conn: _context(conn, site, name, account, dict(data), problem))
        return Template("field_instrument.html", status_code=400, context=ctx)


ROUTES = [instrument_form, instrument_save]
