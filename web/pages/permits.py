"""Discharge permits in the office: each user's current permit and its
earlier versions, a readable difference between two versions, a new version from an uploaded
permit file or from the form, the renewal status in words and colour (palmyra-wi
003_44f871d49a02d8f5.txt §13.54(4), :func:`limits.permits.renewal`). Saving calls
:func:`limits.permit_store.import_permit`, the function ``permit import`` calls, with the
version the edit was made from: two people editing one permit get a conflict, not an
overwrite (:mod:`web.forms`).

(The form is drawn at ``GET /permits/<n>/edit`` and saved at ``POST /permits/<n>/versions``:
Litestar 2.25 wraps a synchronous handler for its worker thread once more for each handler
of the same path, so a GET and a POST of one path, both synchronous, do not work.)"""

from __future__ import annotations

import copy
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Template

from foundation.errors import Conflict, InputError
from web import authz, forms

VIEW = {authz.OPT: "view"}
EDIT = {authz.OPT: "permits.edit"}
Q = FromQuery[str | None]
#: Largest permit file taken [bytes].
PERMIT_MAX = 1 << 20
#: The numbers of a limit the form edits, by kind of limit.
LAB_KEYS = ("daily_maximum", "monthly_average", "daily_maximum_lb")
RANGE_KEYS = ("minimum", "maximum")
STATE_WORDS = {"in-force": "in force", "renewal-due": "term ends soon: renews automatically unless notice is given",
               "expires-soon": "ends soon (notice given or no renewal)", "expired": "expired",
               "not-yet-effective": "not yet in effect"}


def _versions(office, number: str) -> list[dict]:
    from limits.permit_store import versions
    vs = office.read(lambda conn: versions(conn, number))
    if not vs:
        raise NotFoundException(f"no permit {number}")
    return vs


def _permit(office, doc: dict, number: str, version: int):
    from limits.permit_store import permit_of_site
    return office.read(lambda conn: permit_of_site(conn, doc, f"permit {number} version {version}"))


@get("/permits", opt=VIEW, sync_to_thread=True, name="permits")
def permits_page(request: Request) -> Template:
    from limits.permit_store import current_permits, list_permits
    from limits.permits import renewal

    office = request.app.state.office
    today = office.today()
    rows, current, names = office.read(lambda conn: (list_permits(conn), current_permits(conn),
                                                     dict(conn.execute("SELECT key, name FROM sites").fetchall())))
    numbers = {p.number for p in current.values()}
    for r in rows:
        r["site_name"] = names.get(r["site"], r["site"])
        r["current"] = r["number"] in numbers
        if r["current"]:
            p = next(p for p in current.values() if p.number == r["number"])
            st = renewal(p, today)
            r.update(state=st.state, words=STATE_WORDS[st.state], term_end=st.term_end, days_left=st.days_left)
    without = sorted(set(names) - set(current))
    return Template("permits.html", context={"account": request.state.account, "nav": "permits", "rows": rows,
                                             "without": [(k, names[k]) for k in without], "today": today,
                                             "with_permit": sorted(((k, names[k]) for k in current if k in names),
                                                                   key=lambda x: x[1])})


@get("/permits/{number:str}", opt=VIEW, sync_to_thread=True)
def permit_page(request: Request, number: FromPath[str], a: Q = None, b: Q = None, saved: Q = None,
                again: Q = None) -> Template:
    from lab.permit_cli import describe
    from limits.permit_store import changes, history, readable

    office = request.app.state.office
    vs = _versions(office, number)
    cur = vs[-1]
    permit = _permit(office, cur["document"], number, cur["version"])
    pack = office.read(lambda conn: conn.execute("SELECT pack FROM sites WHERE key = %s", (cur["site"],)).fetchone()[0])
    d = describe(permit, pack, office.today())
    d["words"] = STATE_WORDS[d["standing"]["state"]]
    by_v = {v["version"]: v for v in vs}
    va = int(a) if a and a.isdigit() and int(a) in by_v else (cur["version"] - 1 if cur["version"] > 1 else None)
    vb = int(b) if b and b.isdigit() and int(b) in by_v else cur["version"]
    diff = None
    if va is not None:
        diff = [{**c, "what": readable(c["key"])} for c in changes(by_v[va]["document"], by_v[vb]["document"])]
    trail = office.read(lambda conn: history(conn, number))
    from limits.packs import load_pack
    from limits.permit_template import PARAMETER_WORDS, SAMPLE_WORDS, template
    t = template(load_pack(pack), cur["site"])
    names = {**{k: t.name(k) for k in {r["parameter"] for r in d["rules"]} |
                {p for m in d["monitoring"] for p in m["parameters"]}}, **PARAMETER_WORDS}
    return Template("permit.html", context={
        "account": request.state.account, "nav": "permits", "d": d, "versions": vs, "current": cur, "va": va,
        "vb": vb, "diff": diff, "trail": trail, "saved": saved, "again": bool(again), "names": names,
        "sample_words": SAMPLE_WORDS})


def _number(text: str | None, what: str) -> float | None:
    t = (text or "").strip()
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        raise InputError(f"{what}: {t!r} is not a number") from None


def edited(doc: dict, data: dict) -> dict:
    """The permit document ``doc`` with the form's fields (dates, renewal notice, flows, each
    limit's numbers) put in: a field sent blank removes that number, a field not sent leaves
    it, and everything the form does not show stays as it is."""
    new = copy.deepcopy(doc)
    for k in ("issued", "effective", "expires"):
        if str(data.get(k, "")).strip():
            new[k] = str(data[k]).strip()
    renewal = dict(new.get("renewal") or {})
    if "notice_given" in data:
        notice = str(data.get("notice_given", "")).strip()
        if notice:
            renewal["notice_given"] = notice
        else:
            renewal.pop("notice_given", None)
    if renewal:
        new["renewal"] = renewal
    else:
        new.pop("renewal", None)
    flow = dict(new.get("flow") or {})
    for k in ("average_daily_gpd", "maximum_daily_gpd"):
        if k not in data:
            continue
        v = _number(data.get(k), f"flow: {k.replace('_', ' ')}")
        if v is None:
            flow.pop(k, None)
        else:
            flow[k] = v
    if flow:
        new["flow"] = flow
    else:
        new.pop("flow", None)
    for i, lim in enumerate(new.get("limits") or []):
        keys = RANGE_KEYS if "parameter" in lim else LAB_KEYS
        for k in keys:
            if f"limit{i}_{k}" not in data:
                continue
            v = _number(data.get(f"limit{i}_{k}"), f"limit, condition {lim.get('condition')}: {k.replace('_', ' ')}")
            if v is None:
                lim.pop(k, None)
            else:
                lim[k] = v
    return new


def _edit_context(request, number, base, typed: dict | None = None, **more) -> dict:
    vs = _versions(request.app.state.office, number)
    by_v = {v["version"]: v for v in vs}
    src = by_v.get(base, vs[-1])
    doc = src["document"]
    values = typed if typed is not None else {}
    return {"account": request.state.account, "nav": "permits", "number": number, "from_version": src["version"],
            "doc": doc, "values": values, "site": src["site"], "lab_keys": LAB_KEYS, "range_keys": RANGE_KEYS, **more}


@get("/permits/{number:str}/edit", opt=EDIT, sync_to_thread=True)
def edit_page(request: Request, number: FromPath[str]) -> Template:
    return Template("permit_edit.html", context=_edit_context(request, number, None))


def _save(request, data, permit_doc: dict, name: str, base: int | None, action: str):
    """Store a new version through :func:`limits.permit_store.import_permit` (once per form key)."""
    from limits.permit_store import import_permit, permit_of_site

    reason = str(data.get("reason", "")).strip()[:500] or None

    def work(conn, actor):
        permit = permit_of_site(conn, permit_doc, name)
        done = import_permit(conn, permit, actor=actor, reason=reason, expected_version=base)
        return {"location": f"/permits/{done['number']}?saved={done['status']}", **done}

    return forms.redirect(request, forms.once(request, data, action, work))


@post("/permits/{number:str}/versions", opt=EDIT, sync_to_thread=True, status_code=303)
def save_edit(request: Request, number: FromPath[str],
              data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    from limits.permit_store import changes, in_words, readable

    office = request.app.state.office
    base = forms.base_version(data)
    vs = _versions(office, number)
    by_v = {v["version"]: v for v in vs}
    if base not in by_v:
        raise InputError(f"permit {number} has no version {base}")
    try:
        doc = edited(by_v[base]["document"], data)
        return _save(request, data, doc, f"the office's form (permit {number}, from version {base})", base,
                     "permit.edit")
    except Conflict as exc:
        diff = [{**c, "what": readable(c["key"])} for c in changes(by_v[base]["document"], vs[-1]["document"])]
        return Template("permit_edit.html", status_code=forms.CONFLICT, context=_edit_context(
            request, number, base, typed=data, conflict=forms.conflict_lines(exc, request.app.state.office.tz),
            conflict_diff=diff, current_version=vs[-1]["version"]))
    except InputError as exc:
        return Template("permit_edit.html", status_code=400, context=_edit_context(
            request, number, base, typed=data, problem=in_words(str(exc))))


@post("/permits/upload", opt=EDIT, sync_to_thread=True, status_code=303, request_max_body_size=PERMIT_MAX)
def upload(request: Request,
           data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect:
    """A permit file (the format of ``permit import``): a new permit, or a new version of the
    one whose page it was sent from (``_base_version``: a conflict if another came meanwhile)."""
    from foundation import tomlfile

    file = data.get("file")
    if not isinstance(file, UploadFile) or not file.filename:
        raise InputError("choose a permit file (TOML, as examples/permits/plating.toml)")
    name = file.filename[-200:]
    doc = tomlfile.loads(file.file.read(), name)
    base = forms.base_version(data) if str(data.get(forms.VERSION_FIELD, "")).strip() else None
    try:
        return _save(request, data, doc, name, base, "permit.upload")
    except Conflict as exc:
        first = forms.conflict_lines(exc, request.app.state.office.tz)[0]
        raise InputError(first + " Open the permit again and send the file from its page.") from None


# --- a new permit from the form (the site's pack's template, limits.permit_template) ---------

def _new_context(request: Request, site: str | None, typed: dict | None = None, **more) -> dict:
    from limits.packs import load_pack
    from limits.permit_template import LAB_NUMBERS, LIMIT_ROWS, SAMPLE_WORDS, UNITS, template

    office = request.app.state.office
    sites = office.read(lambda conn: conn.execute("SELECT key, name, pack FROM sites ORDER BY name").fetchall())
    row = next((r for r in sites if r[0] == site), None)
    if row is None:
        raise InputError(f"user: choose the industrial user the permit is for (got {site!r})" if site else
                         "user: choose the industrial user the permit is for")
    t = template(load_pack(row[2]), row[0])
    today = office.today()
    return {"account": request.state.account, "nav": "permits", "t": t, "site": row[0], "site_name": row[1],
            "values": typed or {}, "rows": range(LIMIT_ROWS), "lab_numbers": LAB_NUMBERS, "units": UNITS,
            "samples": [(k, w) for k, w in SAMPLE_WORDS.items() if k != "continuous"],
            "periods": ("day", "week", "month", "quarter", "year"), "today": today.isoformat(),
            "expires": t.expires(today).isoformat(), "issued_by": office.cfg.utility.name or "", **more}


@get("/permits/new", opt=EDIT, sync_to_thread=True)
def new_page(request: Request, site: Q = None) -> Template:
    """The New permit form for ``site``, made from its pack (:func:`limits.permit_template.template`)."""
    return Template("permit_new.html", context=_new_context(request, site))


@post("/permits/create", opt=EDIT, sync_to_thread=True, status_code=303)
def create(request: Request,
           data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect | Template:
    """Store the new permit (:func:`limits.permit_store.import_permit`, as ``permit import``;
    refused when its number is stored already)."""
    from limits.packs import load_pack
    from limits.permit_store import import_permit, permit_of_site
    from limits.permit_template import document, template

    office = request.app.state.office
    site = str(data.get("site", "")).strip()
    reason = str(data.get("reason", "")).strip()[:500] or None
    ctx = _new_context(request, site)          # an unknown user: the one-line refusal
    try:
        t = template(load_pack(ctx["t"].pack), site)
        doc = document(t, data, office.today())

        def work(conn, actor):
            permit = permit_of_site(conn, doc, "New permit form")
            done = import_permit(conn, permit, actor=actor, reason=reason, new=True)
            return {"location": f"/permits/{done['number']}?saved={done['status']}", **done}

        return forms.redirect(request, forms.once(request, data, "permit.new", work))
    except InputError as exc:
        return Template("permit_new.html", status_code=400,
                        context=_new_context(request, site, typed=data, problem=str(exc)))


ROUTES = [permits_page, new_page, create, permit_page, edit_page, save_edit, upload]
