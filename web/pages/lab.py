"""Lab results in the office: a lab CSV uploaded and previewed before
anything is stored (each row that cannot be used with its line and reason, the violations
the results would bring), then imported once (:mod:`lab.store.uploads`, the function ``lab
import --check`` calls); a handful of results typed into a form, which take the same path;
the results table per user and analyte with the limits beside the values, ``< DL`` for
non-detects, and its CSV export (:mod:`lab.store.listing`)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from lab.readers.analytes import ANALYTES, units_of
from web import authz, forms

VIEW = {authz.OPT: "view"}
IMPORT = {authz.OPT: "lab.import"}
Q = FromQuery[str | None]
#: Largest lab file the office takes [bytes] (the import streams; 1,000,000 rows are ~40 MB).
UPLOAD_MAX = 64 << 20
#: Rows of the form for results typed by hand.
TYPED_ROWS = 6


def _day(text: str | None, tz: str, default: date) -> datetime:
    try:
        d = date.fromisoformat(text) if text else default
    except ValueError:
        d = default
    return datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(tz))


def _sites(office) -> list[tuple[str, str]]:
    return office.read(lambda conn: conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall())


@get("/lab", opt=VIEW, sync_to_thread=True, name="lab")
def lab_page(request: Request) -> Template:
    from lab.store import uploads

    office = request.app.state.office
    recent = office.read(lambda conn: uploads.recent(conn, 15))
    return Template("lab.html", context={
        "account": request.state.account, "nav": "lab", "recent": recent, "sites": _sites(office),
        "analytes": sorted(ANALYTES), "units": ("mg/l", "ug/l"), "rows": range(1, TYPED_ROWS + 1)})


@post("/lab/uploads", opt=IMPORT, sync_to_thread=True, status_code=303, request_max_body_size=UPLOAD_MAX)
def upload(request: Request, data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect:
    """Keep a lab file (or the rows typed into the form) with its preview; nothing imported."""
    from lab.store import uploads

    correct = str(data.get("correct", "")) == "1"
    file = data.get("file")
    if isinstance(file, UploadFile) and file.filename:
        name, content = file.filename[-200:], file.file.read()
    else:
        typed = [{c: data.get(f"r{i}_{c}") for c in uploads.TYPED_COLUMNS} for i in range(1, TYPED_ROWS + 1)]
        name, content = "typed in the office", None
        content = uploads.rows_csv(typed)        # an InputError (nothing typed) is a page saying so

    def work(conn, actor):
        staged = uploads.stage(conn, name, content, actor=actor, correct=correct)
        return {"location": f"/lab/uploads/{staged['id']}", "id": staged["id"]}

    return forms.redirect(request, forms.once(request, data, "lab.upload", work))


@get("/lab/uploads/{upload_id:int}", opt=VIEW, sync_to_thread=True)
def upload_page(request: Request, upload_id: FromPath[int], again: Q = None) -> Template:
    from lab.store import uploads

    office = request.app.state.office
    u = office.read(lambda conn: uploads.get(conn, upload_id))
    if u is None:
        raise NotFoundException(f"no lab upload {upload_id}")
    shown = u["report"] if u["state"] == "imported" else u["preview"]
    return Template("lab_upload.html", context={
        "account": request.state.account, "nav": "lab", "u": u, "shown": shown, "again": bool(again),
        "names": dict(_sites(office))})


@post("/lab/uploads/{upload_id:int}/import", opt=IMPORT, sync_to_thread=True, status_code=303)
def import_upload(request: Request, upload_id: FromPath[int],
                  data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    """Import the upload, once (``lab import --check`` of its bytes, as the account)."""
    from lab.store import uploads

    def work(conn, actor):
        done = uploads.commit(conn, upload_id, actor=actor)
        r = done["report"]
        return {"location": f"/lab/uploads/{upload_id}#result", "already": done["already"], "stored": r["stored"],
                "corrected": r["corrected"], "bad": r["bad"]}

    return forms.redirect(request, forms.once(request, data, "lab.import", work))


@post("/lab/uploads/{upload_id:int}/discard", opt=IMPORT, sync_to_thread=True, status_code=303)
def discard_upload(request: Request, upload_id: FromPath[int],
                   data: Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> Redirect:
    from lab.store import uploads

    def work(conn, actor):
        uploads.discard(conn, upload_id, actor=actor)
        return {"location": f"/lab/uploads/{upload_id}"}

    return forms.redirect(request, forms.once(request, data, "lab.discard", work))


def _results(request: Request, site, analyte, since, until):
    from lab.store.listing import results_with_limits

    office = request.app.state.office
    now = datetime.now(timezone.utc).astimezone(ZoneInfo(office.tz))
    t0 = _day(since, office.tz, date(now.year, 1, 1))
    t1 = _day(until, office.tz, now.date()) + timedelta(days=1)
    rows = office.read(lambda conn: results_with_limits(conn, t0, t1, [site] if site else None,
                                                        [analyte] if analyte else None))
    return rows, t0, t1


@get("/lab/results", opt=VIEW, sync_to_thread=True, name="lab-results")
def results_page(request: Request, site: Q = None, analyte: Q = None, since: Q = None, until: Q = None,
                 exceeding: Q = None) -> Template:
    office = request.app.state.office
    rows, t0, t1 = _results(request, site, analyte, since, until)
    if exceeding:
        rows = [r for r in rows if r["exceeds"]]
    names = dict(_sites(office))
    return Template("lab_results.html", context={
        "account": request.state.account, "nav": "lab", "rows": rows, "names": names, "analytes": sorted(ANALYTES),
        "filters": {"site": site or "", "analyte": analyte or "", "since": t0.date().isoformat(),
                    "until": (t1 - timedelta(days=1)).date().isoformat(), "exceeding": bool(exceeding)},
        "units_of": units_of})


@get("/lab/results.csv", opt=VIEW, sync_to_thread=True)
def results_csv(request: Request, site: Q = None, analyte: Q = None, since: Q = None, until: Q = None) -> Response:
    from lab.store.listing import as_csv

    rows, t0, t1 = _results(request, site, analyte, since, until)
    name = f"lab-results-{t0.date()}-{(t1 - timedelta(days=1)).date()}" + (f"-{site}" if site else "") + ".csv"
    return Response(as_csv(rows), media_type="text/csv; charset=utf-8",
                    headers={"content-disposition": f'attachment; filename="{name}"'})


ROUTES = [lab_page, upload, upload_page, import_upload, discard_upload, results_page, results_csv]
