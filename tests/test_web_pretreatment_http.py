"""Lab results, permits and the compliance calendar over HTTP, in process (Litestar's test
client) against the real database: who may do what, what is
refused and why, one submission one action, two editors one conflict, the CSV export, the
iCalendar feed and its revocation. The browser round is tests/test_web_pretreatment_browser.py.
"""

from __future__ import annotations

import calendar as cal_mod
import csv
import io
import logging
import re
import subprocess
import sys

import psycopg
import pytest

from identity import roles
from web_support import (PERMITS, ROOT, add_people, cheap_hashes, csrf_of, demo_users, office_client, sign_in,
                         spoiled_demo_lab)

ROWS = 19


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _key(html: str, form_id: str | None = None) -> str:
    """The submission key of a form of the page (the form with ``form_id``, else the first)."""
    if form_id is not None:
        html = html[html.index(f'id="{form_id}"'):]
    return re.search(r'name="_form_key" value="([^"]+)"', html).group(1)


def _count(url: str, sql: str, params=()) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()[0]


def _upload(c, data: bytes, name: str = "lab-results.csv", follow: bool = True):
    page = c.get("/lab")
    key = _key(page.text, "upload-form") if 'id="upload-form"' in page.text else "u" * 30   # a role without the form
    return c.post("/lab/uploads", data={"_csrf_token": csrf_of(page.text), "_form_key": key},
                  files={"file": (name, data, "text/csv")}, follow_redirects=follow)


def test_who_may_upload_import_edit_permits_and_make_a_feed(db, tmp_path):
    demo_users(db.url)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        for user in ("super", "coord", "clerk", "inspector", "viewer"):
            role = {"super": "superintendent", "coord": "coordinator"}.get(user, user)
            c.cookies.clear()
            r = sign_in(c, user)
            for path in ("/lab", "/lab/results", "/permits", "/permits/PAL-IU-2026-02", "/calendar",
                         "/calendar?view=list&month=2026-02"):
                assert c.get(path).status_code == 200, (user, path)        # every role looks
            lab = c.get("/lab").text
            assert ('id="upload-form"' in lab) == roles.may(role, "lab.import"), user
            if role in ("clerk", "inspector", "viewer"):       # the others may everything (their uploads: below)
                r = _upload(c, spoiled_demo_lab(), follow=False)
                assert r.status_code == (303 if role == "clerk" else 403), (user, r.status_code)
            token = csrf_of(c.get("/permits").text)
            r = c.post("/permits/PAL-IU-2026-02/versions", data={"_csrf_token": token, "_form_key": "k" * 24 + user,
                                                             "_base_version": "1"}, follow_redirects=False)
            assert r.status_code == (303 if roles.may(role, "permits.edit") else 403), (user, r.status_code)
            r = c.post("/calendar/feed", data={"_csrf_token": token, "_form_key": "f" * 20 + user},
                       follow_redirects=False)
            assert r.status_code == (303 if role != "viewer" else 403), (user, r.status_code)
            if r.status_code == 403:
                assert "Not allowed for your role" in r.text
    # the clerk uploaded, the inspector and the viewer could not; nothing imported (an upload only previews)
    assert _count(db.url, "SELECT count(*) FROM lab_uploads") == 1
    assert _count(db.url, "SELECT count(*) FROM lab_results") == 0


def test_upload_preview_import_once_the_results_table_and_results_typed_by_hand(db, tmp_path, caplog):
    demo_users(db.url)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        sign_in(c, "clerk")
        r = _upload(c, spoiled_demo_lab(6, "4z0"))
        assert r.status_code == 200 and "Preview: nothing is stored yet" in r.text
        assert "value &#39;4z0&#39; is not a number" in r.text and ">6</th>" in r.text
        assert f"Import {ROWS - 1} rows (leave 1 out)" in r.text
        assert "Violations these results would bring" in r.text and "Copper, daily maximum" in r.text
        assert _count(db.url, "SELECT count(*) FROM lab_results") == 0
        assert _count(db.url, "SELECT count(*) FROM dead_letters") == 0
        upload = int(re.search(r"Lab upload #(\d+)", r.text).group(1))
        form = {"_csrf_token": csrf_of(r.text), "_form_key": _key(r.text, "import-form")}
        first = c.post(f"/lab/uploads/{upload}/import", data=form, follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == f"/lab/uploads/{upload}#result"
        again = c.post(f"/lab/uploads/{upload}/import", data=form, follow_redirects=False)   # a second click
        assert again.status_code == 303 and again.headers["location"] == f"/lab/uploads/{upload}?again=1#result"
        page = c.get(again.headers["location"]).text
        assert "This form had been sent already" in page and f"<strong>{ROWS - 1}</strong> results stored" in page
        # the back button to a freshly drawn preview, a new key: the upload is imported already
        back = c.post(f"/lab/uploads/{upload}/import", data={**form, "_form_key": "b" * 32})
        assert back.status_code == 200 and "Imported" in back.text
        assert _count(db.url, "SELECT count(*) FROM audit_log WHERE action = 'lab.import'") == 1
        assert _count(db.url, "SELECT count(*) FROM lab_results") == ROWS - 1
        assert _count(db.url, "SELECT count(*) FROM dead_letters") == 1
        assert _count(db.url, "SELECT count(*) FROM violations WHERE rule = 'cu-daily-max'") == 1
        assert _count(db.url, "SELECT count(*) FROM audit_log WHERE action = 'lab.import' AND actor = 'clerk' "
                      "AND detail->>'via' = 'web'") == 1
        # the table: limits beside the values, a non-detect as < DL, the copper over its limit
        t = c.get("/lab/results?since=2026-01-01&until=2026-03-31&site=plating").text
        cn = t[t.index('id="r-plating-S-0201-cn"'):]
        cn = cn[:cn.index("</tr>")]
        # January: before the permit took effect, the ordinance's cyanide limit alone (§13.48(2)(l) 0.5 mg/l)
        assert "&lt; 0.020 mg/l" in cn and "each sample 0.50 mg/l" in cn and "§13.48(2)(l)" in cn, cn
        assert "Permit PAL-IU-2026-02" not in cn
        cu = t[t.index('id="r-plating-S-0202-cu"'):]
        cu = cu[:cu.index("</tr>")]
        assert "1.60 mg/l" in cu and "over the daily maximum 1.00 mg/l" in cu
        assert "Permit PAL-IU-2026-02, condition 3(a)" in cu and "monthly average 0.50 mg/l" in cu
        assert "id=\"r-sausage-" not in t and "id=\"r-plating-" in t    # the filter by user
        only = c.get("/lab/results?since=2026-01-01&until=2026-03-31&exceeding=1").text
        assert only.count('class="attention"') >= 1 and 'id="r-sausage-S-0101-bod5"' not in only
        # the export: the lab CSV's columns, imported again it changes nothing
        r = c.get("/lab/results.csv?since=2026-01-01&until=2026-03-31")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
        assert "attachment" in r.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(r.text)))
        assert len(rows) == ROWS - 1 and rows[0].keys() >= {"sample_id", "site", "collected", "analyte", "value", "unit"}
        cu_row = next(x for x in rows if x["sample_id"] == "S-0202" and x["analyte"] == "cu")
        assert cu_row["exceeds"].startswith("cu-daily-max > 1")
        with caplog.at_level(logging.INFO):
            again = _upload(c, r.content, "export.csv")
        assert f"<strong>{ROWS - 1}</strong> rows can be used (0 new, 0 corrections, {ROWS - 1} already stored" in again.text
        # results typed by hand: checked and previewed as a file is
        page = c.get("/lab")
        form = {"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text, "typed-form"),
                "r1_sample_id": "H-7", "r1_site": "plating", "r1_collected": "2026-03-03", "r1_analyte": "cu",
                "r1_value": "0.31", "r1_unit": "mg/l",
                "r3_sample_id": "H-7", "r3_site": "plating", "r3_collected": "2026-03-03", "r3_analyte": "ni",
                "r3_value": "", "r3_unit": "mg/l", "r1_laboratory": "Rock River Environmental Laboratory"}
        r = c.post("/lab/uploads", data=form, files={"file": ("", b"", "application/octet-stream")})
        assert r.status_code == 200 and "typed in the office" in r.text
        assert "value &#39;&#39; is not a number" in r.text and ">4</th>" in r.text     # row 3 of the form: line 4
        assert "Import 1 row (leave 1 out)" in r.text
        # a lab file larger than the office's forms (1 MiB) is taken: uploads have their own bound
        big = (b"sample_id,site,collected,analyte,value,unit,qualifier,note\nB-1,plating,2026-03-04,cu,0.2,mg/l,,"
               + b"x" * (3 << 19) + b"\n")
        r = _upload(c, big, "big.csv")
        assert r.status_code == 200 and "Preview: nothing is stored yet" in r.text, r.text[:300]
        assert "field larger than field limit" in r.text          # a 1.5 MB field is that row's reason
        nothing = c.post("/lab/uploads", data={"_csrf_token": csrf_of(page.text), "_form_key": _key(page.text)},
                         files={"file": ("", b"", "application/octet-stream")})
        assert nothing.status_code == 400 and "no result was entered" in nothing.text


def test_two_people_editing_one_permit_get_a_conflict_not_an_overwrite(db, tmp_path):
    demo_users(db.url)
    add_people(db.url)
    with office_client(db, tmp_path) as cora, office_client(db, tmp_path) as sam:
        sign_in(cora, "coord")
        sign_in(sam, "super")
        a = cora.get("/permits/PAL-IU-2026-02/edit").text
        b = sam.get("/permits/PAL-IU-2026-02/edit").text           # both from version 1
        assert 'name="_base_version" value="1"' in a and 'name="_base_version" value="1"' in b
        i = re.search(r'Condition 3\(a\): cu', a) and re.search(r'name="limit(\d+)_daily_maximum" [^>]*value="1.0"', a).group(1)
        saved = cora.post("/permits/PAL-IU-2026-02/versions", data={
            "_csrf_token": csrf_of(a), "_form_key": _key(a, "permit-form"), "_base_version": "1",
            "issued": "2026-01-15", "effective": "2026-02-01", "expires": "2027-01-31",
            f"limit{i}_daily_maximum": "0.9", f"limit{i}_monthly_average": "0.5", f"limit{i}_daily_maximum_lb": "0.15",
            "average_daily_gpd": "18000", "maximum_daily_gpd": "30000", "reason": "copper lowered"})
        assert saved.status_code == 200 and "Saved as version 2" in saved.text
        assert "limit, condition 3(a): daily maximum" in saved.text          # the difference, readable
        late = sam.post("/permits/PAL-IU-2026-02/versions", data={
            "_csrf_token": csrf_of(b), "_form_key": _key(b, "permit-form"), "_base_version": "1",
            "expires": "2027-03-31", "reason": "term moved"})
        assert late.status_code == 409
        assert "Someone else saved this permit meanwhile" in late.text
        assert "coord saved version 2 of permit PAL-IU-2026-02" in late.text and "Nothing was saved" in late.text
        assert 'value="2027-03-31"' in late.text                              # what Sam typed is kept
        assert "limit, condition 3(a): daily maximum" in late.text            # and what Cora changed is shown
        bad = sam.post("/permits/PAL-IU-2026-02/versions", data={
            "_csrf_token": csrf_of(b), "_form_key": "z" * 30, "_base_version": "2", "expires": "2025-01-01"})
        assert bad.status_code == 400 and "is not after the permit takes effect" in bad.text
        # a new version from a file, sent from the permit's page (its version: 2)
        page = sam.get("/permits/PAL-IU-2026-02").text
        up = sam.post("/permits/upload", data={"_csrf_token": csrf_of(page), "_form_key": _key(page, "version-upload"),
                                               "_base_version": "2", "reason": "the file again"},
                      files={"file": ("plating.toml", (PERMITS / "plating.toml").read_bytes(), "application/toml")})
        assert up.status_code == 200 and "Saved as version 3" in up.text
        broken = sam.post("/permits/upload", data={"_csrf_token": csrf_of(page), "_form_key": "y" * 30},
                          files={"file": ("broken.toml", b"number = \n", "application/toml")})
        assert broken.status_code == 400 and "broken.toml: not valid TOML" in broken.text
    with psycopg.connect(db.url) as conn:
        assert [v for (v,) in conn.execute("SELECT version FROM permits WHERE number = 'PAL-IU-2026-02' "
                                            "ORDER BY version")] == [1, 2, 3]
        assert conn.execute("SELECT actor FROM audit_log WHERE action = 'permit.change' ORDER BY id").fetchall() \
            == [("coord",), ("super",)]


def test_the_calendar_and_its_feed(db, tmp_path, caplog):
    from icalendar import Calendar

    demo_users(db.url)
    add_people(db.url)
    with office_client(db, tmp_path, public_url="http://office.example") as c:
        sign_in(c, "coord")
        month = c.get("/calendar?month=2026-03").text
        # the plater's permit, condition 5(a): one composite a month from 2026-02-01; March's is due on the 31st
        assert 'id="month"' in month and "Lakeside Plating: samples" in month and "for 2026-03" in month
        assert "Permit PAL-IU-2026-02, condition 5(a)" in month
        lst = c.get("/calendar?view=list&month=2026-06&site=candy").text
        listed = lst[lst.index('id="list"'):]
        assert "Sweet Creek Confections: " in listed and "Lakeside Plating" not in listed
        assert "Make my calendar address" in c.get("/calendar").text
        page = c.get("/calendar").text
        r = c.post("/calendar/feed", data={"_csrf_token": csrf_of(page), "_form_key": _key(page)})
        assert "A new address was made" in r.text
        url = re.search(r'id="feed-url">([^<]+)<', r.text).group(1)
        assert url.startswith("http://office.example/calendar/feed/") and url.endswith(".ics")
        path = url.removeprefix("http://office.example")
        c.cookies.clear()                                      # a calendar program: no session
        with caplog.at_level(logging.INFO, logger="sewerwatch.web.access"):
            feed = c.get(path)
        assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/calendar")
        cal = Calendar.from_ical(feed.content)
        events = [e for e in cal.walk("VEVENT")]
        sampling = [e for e in events if str(e.get("uid")).startswith("sampling:PAL-IU-2026-02:5(a):")]
        assert sampling and all("samples" in str(e.get("summary")) for e in sampling)
        days = sorted(e.decoded("dtstart") for e in sampling)
        assert all(d.day == cal_mod.monthrange(d.year, d.month)[1] for d in days)     # each a month's last day
        token = path.split("/")[-1].removesuffix(".ics")
        assert token not in caplog.text and "/calendar/feed/(withheld)" in caplog.text
        assert c.get(path.replace(token[-6:], "AAAAAA")).status_code == 404     # a forged one
        sign_in(c, "coord")
        page = c.get("/calendar").text
        c.post("/calendar/feed/revoke", data={"_csrf_token": csrf_of(page), "_form_key": _key(page, "revoke-form")})
        c.cookies.clear()
        assert c.get(path).status_code == 404                                 # revoked: gone at once
    # the same entries on the command line, and as an iCalendar file
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[utility]\ntimezone = "America/Chicago"\n[services]\ndb_url = "{db.url}"\nstate_dir = "{tmp_path}"\n')
    ics = tmp_path / "plating.ics"
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "calendar", "--from", "2026-03-01",
                        "--to", "2026-04-01", "--site", "plating", "--ics", str(ics)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "2026-03-31" in r.stdout and "Lakeside Plating: samples MISSING for 2026-03" in r.stdout, r.stdout
    uids = [str(e.get("uid")) for e in Calendar.from_ical(ics.read_bytes()).walk("VEVENT")]
    assert "sampling:PAL-IU-2026-02:5(a):2026-03@sewerwatch" in uids
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "calendar", "--site", "brewery"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "unknown site 'brewery'" in r.stderr
