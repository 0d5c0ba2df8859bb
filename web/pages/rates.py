"""The rates the bills use, in the office: every version with the day it takes effect, the
one in effect today, each version's numbers in words, and a new version saved from the form
(the rates file's fields, labelled with their units, filled from the version in effect) or
from a rates file. Saving calls :func:`lab.store.rates.save_version`, what ``sewerwatch rates
import`` calls, once per form (:mod:`web.forms`), with ``bills.issue`` (the clerk's). A
quarter's bills use the version in effect on its first day (the Bills page).

(Forms are drawn at ``GET /rates`` and saved at ``POST /rates/versions`` and ``POST
/rates/upload``: a GET and a POST of one path, both synchronous, do not work in Litestar 2.25,
see :mod:`web.pages.permits`.)
"""

from __future__ import annotations

from datetime import date
from itertools import groupby
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import InputError
from web import authz, forms

VIEW = {authz.OPT: "view"}
SAVE = {authz.OPT: "bills.issue"}
Q = FromQuery[str | None]
#: Largest rates file taken [bytes].
RATES_MAX = 256 * 1024


def _effective(text: Any) -> date:
    t = str(text or "").strip()
    try:
        return date.fromisoformat(t)
    except ValueError:
        raise InputError(f"in effect from: expected a date such as 2027-01-01, got {t!r}") from None


def _sections(fields) -> list[tuple[str, list]]:
    return [(k, list(g)) for k, g in groupby(fields, key=lambda f: f.section)]


def _context(request: Request, typed: dict | None = None, **more) -> dict:
    from lab.store import rates

    office = request.app.state.office
    today = office.today()

    def read(conn):
        return rates.versions(conn), rates.in_effect(conn, today), rates.form_fields(conn)

    vs, now, fields = office.read(read)
    from_v = now or (vs[0] if vs else None)
    values = typed if typed is not None else rates.values(fields, from_v["rates"] if from_v else None)
    for v in vs:
        v["label"] = rates.label(v)
    return {"account": request.state.account, "nav": "rates", "versions": vs, "now": now,
            "sections": _sections(fields), "values": values, "from_v": from_v, "today": today.isoformat(),
            "effective": (typed or {}).get("effective", today.isoformat()), **more}


@get("/rates", opt=VIEW, sync_to_thread=True, name="rates")
def rates_page(request: Request, saved: Q = None, again: Q = None) -> Template:
    return Template("rates.html", context=_context(request, saved=saved, again=bool(again)))


@get("/rates/{version:int}", opt=VIEW, sync_to_thread=True)
def version_page(request: Request, version: FromPath[int], saved: Q = None, again: Q = None) -> Template:
    from lab.store import rates

    office = request.app.state.office

    def read(conn):
        try:
            v = rates.version(conn, version)
        except InputError:
            raise NotFoundException(f"no rates version {version}") from None
        return v, rates.form_fields(conn), rates.in_effect(conn, office.today())

    v, fields, now = office.read(read)
    shown = rates.values(fields, v["rates"])
    rows = [(f, shown[f.name]) for f in fields if shown[f.name]]
    choice = {f.name: dict(f.choices) for f in fields if f.kind == "choice"}
    return Template("rates_version.html", context={
        "account": request.state.account, "nav": "rates", "v": v, "label": rates.label(v), "rows": rows,
        "choice": choice, "in_effect": now is not None and now["version"] == v["version"], "saved": saved,
        "again": bool(again)})


def _save(request: Request, data: dict, text: str, effective: date, source: str) -> Redirect:
    from lab.store import rates

    note = str(data.get("note", "")).strip()[:500] or None

    def work(conn, actor):
        v = rates.save_version(conn, text, effective, source=source, actor=actor, note=note)
        return {"location": f"/rates/{v['version']}?saved=1", "version": v["version"]}

    return forms.redirect(request, forms.once(request, data, "rates.save", work))


@post("/rates/versions", opt=SAVE, sync_to_thread=True, status_code=303)
def save_form(request: Request,
              data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """A new version from the form: the version it was drawn from with the fields put in."""
    from lab.store import rates

    office = request.app.state.office
    try:
        effective = _effective(data.get("effective"))

        def make(conn):
            base = str(data.get("from_version", "")).strip()
            doc = rates.version(conn, int(base))["rates"] if base.isdigit() else None
            return rates.from_form(rates.form_fields(conn), data, doc)

        text = office.read(make)
        return _save(request, data, text, effective, "the office's form")
    except InputError as exc:
        return Template("rates.html", status_code=400, context=_context(request, typed=data, problem=str(exc)))


@post("/rates/upload", opt=SAVE, sync_to_thread=True, status_code=303, request_max_body_size=RATES_MAX + 65536)
def upload(request: Request,
           data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect:
    """A new version from a rates file (the format of ``sewerwatch rates import``)."""
    file = data.get("file")
    if not isinstance(file, UploadFile) or not file.filename:
        raise InputError("rates file: choose a rates file (TOML)")
    name, raw = file.filename.replace("\\", "/").rsplit("/", 1)[-1][-120:], file.file.read(RATES_MAX + 1)
    if len(raw) > RATES_MAX:
        raise InputError(f"{name}: larger than {RATES_MAX // 1024} kB: not a rates file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text: a rates file is TOML") from None
    return _save(request, data, text, _effective(data.get("effective")), name)


ROUTES = [rates_page, version_page, save_form, upload]
