"""The Rates page over HTTP, in process, against the real database: who may save (the clerk's
``bills.issue``; the viewer and the inspector see the versions, not the forms, and a save
they post is refused 403), a rates file saved through the upload form as served and read back,
the form sent twice saving once, a bad number refused in one line naming the field, the same
rates again refused naming the version that has them. The village is a copy of the session's
seeded one (``round_village``)."""

from __future__ import annotations

import html
import re

import psycopg
import pytest

import web_round
from test_web_round import as_, keyed
from web_support import cheap_hashes, csrf_of, office_client


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def office(db, round_village, tmp_path):
    with cheap_hashes(), office_client(db, tmp_path, cfg=web_round.config(tmp_path, round_village[2])) as c:
        yield c


def _versions(db) -> list[tuple]:
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT version, effective::text, source, saved_by FROM rate_versions "
                            "ORDER BY version").fetchall()


def test_who_may_save_and_what_is_saved(office, db):
    c = office
    rates = web_round.RATES.encode()
    for user in ("viewer", "inspector"):
        as_(c, user)
        r = c.get("/rates")
        assert r.status_code == 200 and "No rates saved yet" in r.text and 'id="rates-form"' not in r.text
        r = c.post("/rates/upload", data={"_csrf_token": csrf_of(r.text), "_form_key": "k" * 32,
                                          "effective": "2026-01-01"}, files={"file": ("rates.toml", rates)})
        assert r.status_code == 403, user
    assert _versions(db) == []
    as_(c, "clerk")
    page = c.get("/rates").text
    form = {**keyed(page, "rates-upload"), "effective": "2026-01-01", "note": "2026 rates"}
    r = c.post("/rates/upload", data=form, files={"file": ("rates.toml", rates)})
    assert r.status_code == 200 and "Saved." in r.text and "Rates version 1, in effect from 2026-01-01" in r.text
    table = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r.text[r.text.index('id="rate-values"'):])))
    assert "Sewer use charge: unit cost 6.37 $ per 1,000 gallons" in table
    assert "Volume of Lakeside Plating where its meter does not give the quarter's 0.12 million gallons" in table
    # the same form sent again: nothing saved twice
    r = c.post("/rates/upload", data=form, files={"file": ("rates.toml", rates)})
    assert r.status_code == 200 and "sent already" in r.text
    assert _versions(db) == [(1, "2026-01-01", "rates.toml", "clerk")]
    # the same rates from a new page: refused, naming the version that has them
    page = c.get("/rates").text
    r = c.post("/rates/upload", data={**keyed(page, "rates-upload"), "effective": "2026-01-01"},
               files={"file": ("again.toml", rates)})
    assert r.status_code == 400
    assert "again.toml: the same rates as rates version 1, in effect from 2026-01-01: nothing was saved" in r.text
    # the form, filled in from version 1: a bad number named by its label, then a new version
    page = c.get("/rates").text
    assert 'name="r:bill.palmyra-wi.use_per_1000_gal"' in page and 'value="6.37"' in page
    fields = dict(re.findall(r'<input id="(r:[^"]+)" name="\1" (?:inputmode="decimal" )?value="([^"]*)"', page))
    form = {**keyed(page, "rates-form"), **fields, "effective": "2027-01-01", "r:tp": "-1"}
    r = c.post("/rates/versions", data=form)
    assert r.status_code == 400
    problem = html.unescape(re.search(r'id="problem">([^<]+)<', r.text).group(1))
    assert problem == ("Surcharge rate, Total phosphorus: expected a number 0 or more [$ per pound above normal "
                       "strength], got '-1'"), problem
    assert 'value="-1"' in r.text                            # what was typed is kept
    r = c.post("/rates/versions", data={**form, "r:tp": "2.75", "_form_key": form["_form_key"][::-1]})
    assert r.status_code == 200 and "Rates version 2, in effect from 2027-01-01" in r.text, r.text[-1500:]
    assert _versions(db)[-1] == (2, "2027-01-01", "the office's form", "clerk")
    with psycopg.connect(db.url) as conn:
        v1, v2 = [x for (x,) in conn.execute("SELECT rates FROM rate_versions ORDER BY version")]
        audit = conn.execute("SELECT actor, detail->>'via' FROM audit_log WHERE action = 'rates.saved'").fetchall()
    assert v1["tp"] == 2.5 and v2["tp"] == 2.75 and v2["bill"] == v1["bill"]     # everything else as it was
    assert audit == [("clerk", "web"), ("clerk", "web")]


def test_a_rates_file_sent_with_the_draft_is_stored_and_the_bill_names_it(office, db):
    c = office
    as_(c, "clerk")
    page = c.get("/bills").text
    assert "the quarter's first day" in page and "(today:" not in page          # no rates stored yet
    r = c.post("/bills/draft", data={**keyed(page, "bills-draft-form"), "quarter": "2026Q1", "on": "2026-04-10"},
               files={"rates": ("village-rates.toml", web_round.RATES.encode(), "text/plain")})
    assert r.status_code == 200 and "from rates version 1, in effect from 2026-01-01" in html.unescape(r.text)
    assert _versions(db) == [(1, "2026-01-01", "village-rates.toml", "clerk")]
    run = int(re.search(r"/bills/runs/(\d+)/issue", r.text).group(1))
    r = c.post(f"/bills/runs/{run}/issue", data={**keyed(r.text, "bills-issue-form"), "on": "2026-04-10"})
    assert r.status_code == 200 and "Issued." in r.text
    bill = int(re.search(r'href="/bills/(\d+)/pdf" id="pdf-plating"', r.text).group(1))
    page = c.get(f"/bills/{bill}").text
    assert re.search(r'id="bill-rates">Rates version 1, in effect from 2026-01-01<', page)
    # the next draft of the quarter, no file: the same stored version
    page = c.get("/bills").text
    assert "(today: rates version 1, in effect from 2026-01-01)" in page
