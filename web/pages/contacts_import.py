"""The address book's CSV file in the office: uploaded, previewed row by row, then saved once
(:mod:`identity.contacts_files`, the functions ``sewerwatch contacts import FILE --commit``
calls), as the bank's file of payments is (:mod:`web.pages.statements`).

``/contacts/import`` has the form (and the last files); the upload keeps the file with its
preview and leads to the file's page, ``/contacts/import/{id}``: each row with what it would
do (to add, to change, unchanged) or why it cannot be used, and the button that saves it.
Once saved the page shows what was done. Reading takes ``view``; uploading and saving take
``contacts.edit`` (the clerk, the coordinator, the superintendent), once per form
(:func:`web.forms.once`). A file that cannot be used, or one saved already, is one line on
the page that was sent from.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template

from foundation.errors import InputError
from identity import contacts_files, contacts_import
from web import authz, forms

VIEW = {authz.OPT: "view"}
EDIT = {authz.OPT: "contacts.edit"}
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]
Upload = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
#: action -> what a row does, in the preview and once saved
WORDS = {"preview": {"add": "to add", "change": "to change", "unchanged": "unchanged", "dead": "cannot be used"},
         "saved": {"add": "added", "change": "changed", "unchanged": "unchanged", "dead": "not used"}}


def _sites(conn) -> dict[str, str]:
    return dict(conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall())


def _form_page(request: Request, *, status: int = 200, problem: str | None = None) -> Template:
    office = request.app.state.office
    site = str(request.query_params.get("site") or "")[:80]
    names, files = office.read(lambda conn: (_sites(conn), contacts_files.recent(conn, 10)))
    return Template("contacts_import.html", status_code=status, context={
        "account": request.state.account, "nav": "today", "files": files, "words": WORDS,
        "site": site if site in names else None, "site_name": names.get(site), "problem": problem,
        "may_edit": authz.may(request.state.account, "contacts.edit")})


def _file_page(request: Request, import_id: int, *, status: int = 200, problem: str | None = None) -> Template:
    office = request.app.state.office

    def read(conn):
        try:
            return contacts_files.contact_file(conn, import_id), _sites(conn)
        except InputError:
            raise NotFoundException("no such contacts file") from None
    f, names = office.read(read)
    saved = f["state"] == "saved"
    rep = f["report"] if saved else f["preview"]
    return Template("contacts_file.html", status_code=status, context={
        "account": request.state.account, "nav": "today", "f": f, "rep": rep, "saved": saved,
        "words": WORDS["saved" if saved else "preview"], "names": names, "problem": problem,
        "usable": rep["total"] - rep["dead"], "done": request.query_params.get("done") == "saved",
        "again": request.query_params.get("again") == "1",
        "may_edit": authz.may(request.state.account, "contacts.edit")})


# The two handlers of /contacts/import are async, their work in a thread: Litestar registers
# a path's handlers again when another is added to the path, and would wrap a sync one in its
# thread twice (the handler then answers a coroutine, not a page).
@get("/contacts/import", opt=VIEW, name="contacts-import")
async def import_page(request: Request) -> Template:
    return await anyio.to_thread.run_sync(_form_page, request)


@post("/contacts/import", opt=EDIT, status_code=200, request_max_body_size=contacts_import.MAX_BYTES + 65536)
async def upload(request: Request, data: Upload) -> Redirect | Template:
    """Keep the file with its preview (:func:`identity.contacts_files.stage`); nothing saved yet."""
    return await anyio.to_thread.run_sync(_upload, request, data)


def _upload(request: Request, data: dict) -> Redirect | Template:
    file = data.get("file")
    if not isinstance(file, UploadFile) or not file.filename:
        return _form_page(request, status=400, problem="Choose the address book's file (CSV) to read.")
    content = file.file.read(contacts_import.MAX_BYTES + 1)
    office = request.app.state.office

    def work(conn, actor):
        f = contacts_files.stage(conn, file.filename, content, actor=actor, tz=office.tz)
        return {"location": f"/contacts/import/{f['id']}", "file": f["id"]}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.import.stage", work))
    except InputError as exc:
        return _form_page(request, status=400, problem=str(exc))


@get("/contacts/import/{import_id:int}", opt=VIEW, sync_to_thread=True)
def file_page(request: Request, import_id: FromPath[int]) -> Template:
    return _file_page(request, import_id)


@post("/contacts/import/{import_id:int}/save", opt=EDIT, sync_to_thread=True, status_code=200)
def save(request: Request, import_id: FromPath[int], data: Form) -> Redirect | Template:
    """Save the usable rows (:func:`identity.contacts_files.save`: checked again, the others
    kept with their reasons; a file saved already refused, naming what it did)."""
    office = request.app.state.office

    def work(conn, actor):
        f = contacts_files.save(conn, import_id, actor=actor, tz=office.tz)
        return {"location": f"/contacts/import/{import_id}?done=saved", "added": f["report"]["add"]}
    try:
        return forms.redirect(request, forms.once(request, data, "contacts.import.save", work))
    except InputError as exc:
        return _file_page(request, import_id, status=400, problem=str(exc))


ROUTES = [import_page, upload, file_page, save]
