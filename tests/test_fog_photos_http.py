"""Photos of a pump-out, in process against the real database (``tests/hauler_support.py``):
the hauler attaches a PNG to its own report through the form as served (multipart, CSRF, the
form's key), reads it back on the report's page; the same photo twice and a file that is not
a photo are refused in one line; the coordinator sees it on the establishment's page and opens
it; another hauler's account gets "not found" for the photo and for attaching to the report.
"""

from __future__ import annotations

import io

import pytest

from hauler_support import grease_village
from portal_support import two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, form_key, signin  # noqa: F401,E402 (fixtures)
from test_fog_hauler_portal_http import _report  # noqa: E402


def _png(w: int = 64, h: int = 48) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 120, 40)).save(buf, "PNG")
    return buf.getvalue()


def _attach(c, pumpout: int, name: str, content: bytes, media: str):
    page = c.get(f"/portal/grease/reports/{pumpout}")
    assert page.status_code == 200 and 'id="photo-form"' in page.text
    data = {"_csrf_token": csrf_of(page.text), "_form_key": form_key(page.text)}
    return c.post(f"/portal/grease/reports/{pumpout}/photos", data=data, files={"photo": (name, content, media)},
                  follow_redirects=False)


def test_a_hauler_attaches_a_photo_the_coordinator_sees_it_another_hauler_does_not(db, tmp_path):
    two_users(db.url)
    v = grease_village(db.url)
    with office_client(db, tmp_path) as c:
        signin(c, "badger")
        r, _ = _report(c, v["devices"]["H0001"], date=v["today"].isoformat(), manifest="B-PHOTO-1")
        assert r.status_code == 303, r.text[:500]
        pumpout = int(r.headers["location"].split("/reports/")[1].split("?")[0])
        r = _attach(c, pumpout, "IMG_0001.png", _png(), "image/png")
        assert r.status_code == 303 and r.headers["location"].endswith("?done=photo#photos"), r.text[:500]
        page = c.get(r.headers["location"])
        assert "Photos (1)" in page.text and "The photo is attached." in page.text
        src = page.text.split('<img src="', 1)[1].split('"', 1)[0]
        got = c.get(src)
        assert got.status_code == 200 and got.headers["content-type"] == "image/png"
        from PIL import Image
        assert Image.open(io.BytesIO(got.content)).size == (64, 48)
        # the same photo again, and a file that is not a photo: refused in one line, nothing stored
        r = _attach(c, pumpout, "again.png", _png(), "image/png")
        assert r.status_code == 400
        assert "this photo is attached to the report of manifest B-PHOTO-1 already: nothing was saved" in r.text
        r = _attach(c, pumpout, "notes.png", b"just some text, not an image", "image/png")
        assert r.status_code == 400 and "not a photo: expected a JPEG, PNG or WebP image" in r.text
        assert "Photos (1)" in c.get(f"/portal/grease/reports/{pumpout}").text
        # the coordinator: on the establishment's page, and the photo itself
        signin(c, "coord")
        page = c.get(f"/grease/{v['establishments']['H0001']}")
        assert page.status_code == 200 and "Photo 1 of the pump-out of manifest B-PHOTO-1" in page.text
        staff_src = page.text.split('class="pumpout-photo"><img src="', 1)[1].split('"', 1)[0]
        got = c.get(staff_src)
        assert got.status_code == 200 and got.headers["content-type"] == "image/png"
        # another hauler: neither the photo nor attaching to the report; nor the staff's address
        signin(c, "lakeshore")
        assert c.get(src).status_code == 404
        assert c.get(staff_src, follow_redirects=False).status_code in (403, 404)
        page = c.get("/portal/grease")
        r = c.post(f"/portal/grease/reports/{pumpout}/photos", data={"_csrf_token": csrf_of(page.text),
                                                                     "_form_key": "k" * 22},
                   files={"photo": ("x.png", _png(8, 8), "image/png")}, follow_redirects=False)
        assert r.status_code == 404
