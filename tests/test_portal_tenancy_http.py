"""The portal's tenancy and uploads, in process against the real database: a second user's
account on every route of the application with every object id of the first (403 or 404,
never the first's data), staff pages refusing portal accounts and the portal refusing staff;
uploads limited in size, typed by their bytes and served only as downloads."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import psycopg
import pytest

from identity import roles
from portal_support import LAB_PDF, lab_csv, person, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, mail, signin, new_draft, upload, sign  # noqa: F401 (fixtures)


def test_tenancy_every_portal_route_and_object_of_one_user_refused_to_another(db, tmp_path, mail):
    """User B (candy) tries every route of the application with user A's (plater) object ids:
    403 or 404, never A's data; staff pages refuse portal accounts and the portal refuses staff."""
    from enforcement import reports
    two_users(db.url)
    with psycopg.connect(db.url, autocommit=True) as conn:       # a report A owes
        report_a = reports.require(conn, "plater", "self-monitoring", datetime.now(timezone.utc).date(), by="coord")
    secret_a = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    secret_b = person(db.url, "candy", "carl", "Carl Candy", signatory=True)
    with office_client(db, tmp_path, mail_url=mail.url("x@example.com")) as c:
        signin(c, "rosa", secret_a, db.url)
        d = new_draft(c, "self-monitoring")
        upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=0.3))
        r = sign(c, db.url, "rosa", secret_a, d)
        assert r.status_code == 303
        sub = int(r.headers["location"].split("/")[-1].split("?")[0])
        d_open = new_draft(c, "self-monitoring")
        upload(c, d_open, "attachment", "site-plan.pdf", LAB_PDF)
        upload_id = re.search(rf"/portal/drafts/{d_open}/uploads/(\d+)", c.get(f"/portal/drafts/{d_open}").text).group(1)
        secrets_of_a = ["Rosa Alvarez", "results.csv", "site-plan.pdf", "P-0601", "Acme Plating"]
        values = {"draft_id": str(d_open), "upload_id": upload_id, "submission_id": str(sub), "position": "1",
                  "username": "rosa", "invitation_id": "1", "token": "x.y.z", "alert_id": "1", "letter_id": "1",
                  "key": "plater", "file_path": "css/office.css", "number": "PAL-IU-2026-02",
                  # the staff's routes (enforcement, bills, field work): A's site and ids where they name one
                  "site": "plater", "name": "ph", "violation_id": "1", "finding_id": "1", "notice_id": "1", "page": "1",
                  "run_id": "1", "bill_id": "1", "inspection_id": "1", "photo_id": "1", "window_id": "1", "version": "1",
                  "year": "2026", "publication_id": "1",
                  "path": "office/lab/", "import_id": "1",
                  "establishment_id": "1", "pumpout_id": "1", "contact_id": "1", "kind": "mailing", "batch_id": "1"}
        routes = _routes(c, values)
        portal_routes = [r for r in routes if r[2] == roles.PORTAL]
        assert len(portal_routes) >= 14
        signin(c, "carl", secret_b, db.url)
        token = csrf_of(c.get("/portal").text)
        tried = 0
        for method, path, perm in routes:
            if perm == roles.PUBLIC:
                continue
            r = c.request(method, path, data={"_csrf_token": token, "reason": "x", "kind": "notice-response",
                                              "target": "notice:1"} if method == "POST" else None,
                          follow_redirects=False)
            tried += 1
            if perm == roles.PORTAL and path in ("/portal", "/portal/drafts", "/portal/statement",
                                                 "/portal/statement/pdf"):
                # B's own home, B's own draft, B's own statement of account
                assert r.status_code in (200, 303, 404), (method, path, r.status_code)
            else:
                assert r.status_code in (403, 404), (method, path, r.status_code, r.text[:300])
            for s in secrets_of_a:
                assert s not in r.text, (method, path, s)
        assert tried >= 30
        # the same ids through the query and the form: another user's report owed or notice
        r = c.post("/portal/drafts", data={"_csrf_token": token, "kind": "self-monitoring",
                                           "target": f"report:{report_a}"}, follow_redirects=False)
        assert r.status_code == 404
        r = c.post("/portal/drafts", data={"_csrf_token": token, "kind": "permit-application",
                                           "target": "permit:PAL-IU-2026-02"}, follow_redirects=False)
        assert r.status_code == 404                                     # A's permit
        # staff cannot open the portal's pages, and a portal account nothing of the staff's
        signin(c, "coord")
        assert c.get(f"/portal/submissions/{sub}", follow_redirects=False).status_code == 403
        assert c.get("/portal", follow_redirects=False).status_code == 403
    with psycopg.connect(db.url) as conn:                   # B's requests changed nothing of A's
        assert conn.execute("SELECT count(*) FROM portal_events WHERE event <> 'submitted' AND event NOT LIKE "
                            "'receipt%%'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM portal_uploads").fetchone()[0] >= 1


def _routes(c, values: dict) -> list[tuple[str, str, str]]:
    out = []
    for route in c.litestar.routes:
        for handler in route.route_handlers:
            path = route.path
            for name in re.findall(r"{(\w+):\w+}", path):
                path = re.sub(r"{" + name + r":\w+}", values[name], path)
            for method in sorted(handler.http_methods - {"OPTIONS"}):
                out.append((method, path, handler.opt.get("permission")))
    return out


def test_uploads_are_limited_typed_by_their_bytes_and_served_as_downloads(db, tmp_path):
    two_users(db.url)
    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    with office_client(db, tmp_path, upload_max_mb=0.01) as c:
        signin(c, "rosa", secret, db.url)
        d = new_draft(c, "self-monitoring")
        r = upload(c, d, "lab-report", "report.pdf", b"MZ\x90\x00 this is a program")
        assert r.status_code == 400 and "expected a PDF" in r.text
        r = upload(c, d, "lab-csv", "x.csv", b"a,b\n" + b"1,2\n" * 5000)
        assert r.status_code == 400 and "larger than the 0.01 MB" in r.text
        r = upload(c, d, "attachment", '<script>x</script>"; filename=evil.html', b"plain words\n")
        assert r.status_code == 200
        page = c.get(f"/portal/drafts/{d}")
        assert "<script>x" not in page.text
        uid = re.search(rf"/portal/drafts/{d}/uploads/(\d+)", page.text).group(1)
        got = c.get(f"/portal/drafts/{d}/uploads/{uid}")
        assert got.status_code == 200 and got.content == b"plain words\n"
        assert got.headers["content-type"].startswith("text/plain")
        assert got.headers["content-disposition"].startswith("attachment;") and '"' not in got.headers[
            "content-disposition"].split('filename="', 1)[1][:-1]
        assert got.headers["x-content-type-options"] == "nosniff"
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM portal_uploads").fetchone()[0] == 1
