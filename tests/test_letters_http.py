"""Who may write and issue letters, in process (Litestar's test client) against the real
database: the coordinator issues from the page's own form (the letter's page, its DOCX); the
viewer reads without a form and is refused an issue sent with its page's token (nothing
issued); the clerk is refused a template's edit; a template's mistake is one line on the page;
a save without a letters folder is refused in words; an unknown kind or letter is not found."""

from __future__ import annotations

import re

import psycopg
import pytest

from support import add_site_and_sensors
from web_support import add_people, cheap_hashes, csrf_of, office_client, sign_in


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _form(html: str, form_id: str, **fields) -> dict:
    form = html[html.index(f'id="{form_id}"'):]
    key = re.search(r'name="_form_key" value="([^"]+)"', form).group(1)
    out = {"_csrf_token": csrf_of(html), "_form_key": key, **fields}
    m = re.search(r'name="_base_version" value="(\d+)"', form)
    if m:
        out["_base_version"] = m.group(1)
    m = re.search(r'name="loaded" value="([0-9a-f]+)"', form)
    if m:
        out["loaded"] = m.group(1)
    return out


def _count(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM letters").fetchone()[0]


def test_who_may_write_and_issue_letters(db, tmp_path):
    add_people(db.url)
    add_site_and_sensors(db.url, "plant", {})
    with office_client(db, tmp_path) as c:
        sign_in(c, "coord")
        page = c.get("/letters")
        assert page.status_code == 200 and 'id="issue-form"' in page.text
        r = c.post("/letters/issue", data=_form(page.text, "issue-form", kind="warning-letter", site="plant",
                                                about="oil in the sample"), follow_redirects=False)
        assert r.status_code == 303 and "/letters/1?done=issued" in r.headers["location"], r.text[:500]
        got = c.get("/letters/1?done=issued")
        assert got.status_code == 200 and "is issued and kept as issued" in got.text and "oil in the sample" in got.text
        d = c.get("/letters/1/letter.docx")
        assert d.status_code == 200 and d.headers["content-type"].startswith(
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        assert c.get("/letters/1/pdf").content.startswith(b"%PDF-")
        # a template's mistake: one line naming the line, the text kept in the form
        edit = c.get("/letters/templates/warning-letter")
        r = c.post("/letters/templates/warning-letter/edit",
                   data=_form(edit.text, "template-form", text="<p>{{ user.name }}</p>\n<p>{{ nope }}</p>",
                              site="plant", about="x", do="preview"))
        assert r.status_code == 400 and "Traceback" not in r.text
        assert "the letter template warning-letter, line 2: &#39;nope&#39; is not something a letter knows" in r.text
        assert "{{ nope }}" in r.text
        # no letters folder in this configuration: saving is refused in words, nothing written
        r = c.post("/letters/templates/warning-letter/edit",
                   data=_form(edit.text, "template-form", text="<p>{{ user.name }}</p>", site="plant", do="save"))
        assert r.status_code == 400 and "no letters folder" in r.text
        assert c.get("/letters/templates/no-such-kind").status_code == 404
        assert c.get("/letters/99").status_code == 404
        # the viewer reads, without a form; an issue sent anyway is refused
        c.cookies.clear()
        sign_in(c, "viewer")
        page = c.get("/letters")
        assert page.status_code == 200 and 'id="issue-form"' not in page.text and "LTR-" in page.text
        r = c.post("/letters/issue", data={"_csrf_token": csrf_of(page.text), "_form_key": "k" * 32,
                                           "kind": "warning-letter", "site": "plant", "about": "another"})
        assert r.status_code == 403
        assert 'id="template-form"' not in c.get("/letters/templates/warning-letter").text
        # the clerk reads too, and may not edit a template
        c.cookies.clear()
        sign_in(c, "clerk")
        page = c.get("/letters/templates/warning-letter")
        assert page.status_code == 200
        r = c.post("/letters/templates/warning-letter/edit", data={"_csrf_token": csrf_of(page.text), "do": "preview",
                                                                   "text": "<p>x</p>", "site": "plant"})
        assert r.status_code == 403
    assert _count(db.url) == 1
