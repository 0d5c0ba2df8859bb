"""Photos of a grease pump-out: the hauler attaches them to its own report in the portal
(``/portal/grease/reports/<id>/photos``, multipart), and reads them back there; the utility's
staff see them on the establishment's page (``/grease/photos/<id>``). The work is
:func:`ereport.grease_photos.attach` (checked and re-encoded as the field inspections'
photos are), once per form (:mod:`web.forms`). A photo on another hauler's report is "not
found" to a hauler's account; portal accounts never reach the staff's address.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import forms
from web.pages.fog import VIEW, _staff
from web.pages.portal_grease import HAULER

#: The largest form taken: one photo at its bound, and the form's fields [bytes].
FORM_MAX = 24 << 20


def serve(p: dict, photo_id: int) -> Response:
    ext = "jpg" if p["media_type"] == "image/jpeg" else "png"
    return Response(p["content"], media_type=p["media_type"], headers={
        "Content-Disposition": f'inline; filename="pump-out-photo-{photo_id}.{ext}"',
        "Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"})


@post("/portal/grease/reports/{pumpout_id:int}/photos", opt=HAULER, sync_to_thread=True, status_code=303,
      request_max_body_size=FORM_MAX)
def attach_photo(request: Request, pumpout_id: FromPath[int],
                 data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
                 ) -> Redirect | Template:
    """A photo attached by the hauler to its own report: :func:`ereport.grease_photos.attach`."""
    from ereport import grease_photos
    from web.pages.portal_grease import report_context

    account, office = request.state.account, request.app.state.office
    owner = office.read(lambda conn: conn.execute("SELECT hauler_id FROM fog_pumpouts WHERE id = %s",
                                                  (pumpout_id,)).fetchone())
    if owner is None or owner[0] != account.hauler_id:
        raise NotFoundException("no such report")
    f = data.get("photo")
    values = {k: v for k, v in data.items() if isinstance(v, str)}
    try:
        if not isinstance(f, UploadFile) or not f.filename:
            raise InputError("photo: choose a photo (JPEG or PNG) to attach")
        content = f.file.read(office.cfg.field.photo_max_bytes + 1)

        def work(conn, actor):
            p = grease_photos.attach(conn, account.hauler_id, pumpout_id, content,
                                     max_bytes=office.cfg.field.photo_max_bytes,
                                     max_pixels=office.cfg.field.photo_max_pixels, actor=actor)
            return {"location": f"/portal/grease/reports/{pumpout_id}?done=photo#photos", "photo": p["id"]}
        return forms.redirect(request, forms.once(request, values, "grease.photo", work))
    except InputError as exc:
        return Template("hauler_report.html", status_code=400,
                        context={**report_context(request, pumpout_id), "photo_problem": str(exc)})


@get("/portal/grease/photos/{photo_id:int}", opt=HAULER, sync_to_thread=True)
def hauler_photo(request: Request, photo_id: FromPath[int]) -> Response:
    """A photo of the hauler's own report."""
    from ereport import grease_photos

    p = request.app.state.office.read(lambda conn: grease_photos.photo(conn, photo_id))
    if p is None or p["hauler_id"] != request.state.account.hauler_id:
        raise NotFoundException("no such photo")
    return serve(p, photo_id)


@get("/grease/photos/{photo_id:int}", opt=VIEW, sync_to_thread=True)
def staff_photo(request: Request, photo_id: FromPath[int]) -> Response:
    """A photo of a pump-out, to the utility's staff."""
    from ereport import grease_photos

    _staff(request)
    p = request.app.state.office.read(lambda conn: grease_photos.photo(conn, photo_id))
    if p is None:
        raise NotFoundException("no such photo")
    return serve(p, photo_id)


ROUTES = [attach_photo, hauler_photo, staff_photo]
