"""The New permit form's template and document (limits/permit_template.py), and its pages
over HTTP in process: the pack's term and analytes by their names, the document a form makes
validated by the same reader as ``permit import``, each refusal one line naming the field;
who may open and send the form (``permits.edit``)."""

from __future__ import annotations

import html
import re
from datetime import date

import psycopg
import pytest

import web_round
from foundation.errors import InputError
from limits.packs import load_pack
from limits.permit_template import document, template
from limits.permits import parse_permit

TODAY = date(2026, 12, 4)


def _t():
    return template(load_pack("palmyra-wi"), "candy")


def test_the_template_reads_the_pack():
    t = _t()
    assert t.term_years == 1                                     # palmyra-wi §13.54(4): "issued for one year"
    named = dict(t.named)
    assert named["cn"] == "Cyanide (total)" and named["bod5"].startswith("Biochemical oxygen demand")
    assert "cu" not in named and dict(t.priority)["cu"] == "Copper"
    ph = next(c for c in t.continuous if c[0] == "ph")
    assert ph[3:] == (6.0, 9.0)                                  # §13.48(2)(b): pH lower than 6.0 or higher than 9.0
    assert t.expires(date(2027, 2, 1)) == date(2028, 1, 31) and t.expires(date(2028, 2, 29)) == date(2029, 2, 27)


def test_a_form_makes_a_permit_the_reader_takes():
    t = _t()
    doc = document(t, {"number": "PAL-IU-2027-01", "effective": "2027-02-01", "average_daily_gpd": "9000",
                       "analyte0": "cu", "limit0_daily_maximum": "1.0", "limit0_daily_maximum_lb": "0.15",
                       "analyte3": "bod5", "unit3": "mg/l", "limit3_monthly_average": "600", "condition3": "3(b)",
                       "ph_minimum": "6.5", "continuous_ph": "1", "times": "2", "per": "quarter",
                       "conditions": "Keep the interceptor pumped.\n\nReport a spill at once."}, TODAY)
    p = parse_permit(doc, "form", load_pack("palmyra-wi"))
    assert (p.issued, p.effective, p.expires) == (TODAY, date(2027, 2, 1), date(2028, 1, 31))
    assert [(x.analyte or x.parameter, x.condition) for x in p.limits] == [("cu", "L1"), ("bod5", "3(b)"),
                                                                         ("ph", "L3")]
    assert p.limits[0].words == "Copper: 1 mg/l daily maximum, 0.15 lb/day."
    assert p.limits[2].words == "The pH of the discharge shall be at least 6.5 at all times."
    assert {r.id for r in p.rules()} == {"cu-daily-max", "cu-loading-max", "bod5-monthly-avg", "ph-min"}
    lab, live = p.monitoring
    assert (lab.parameters, lab.times, lab.per, lab.sample_type) == (("cu", "bod5"), 2, "quarter", "composite-24h-flow")
    assert live.parameters == ("ph",) and live.per == "continuous"
    assert [(c.number, c.words) for c in p.conditions] == [("1", "Keep the interceptor pumped."),
                                                          ("2", "Report a spill at once.")]


@pytest.mark.parametrize("fields, message", [
    ({}, "Permit number: missing (e.g. PAL-IU-2027-01)"),
    ({"expires": "2026-12-01"}, "Term ends: 2026-12-01 is not after the permit takes effect (2026-12-04)"),
    ({"effective": "4 Dec"}, "Takes effect: expected a date such as 2027-01-01, got '4 Dec'"),
    ({"maximum_daily_gpd": "100", "average_daily_gpd": "200"},
     "Maximum daily flow [gal/day]: 100 is below the average daily flow 200"),
    ({"limit2_daily_maximum": "3"}, "Limit 3: choose the analyte its numbers limit"),
    ({"analyte1": "cu"}, "Limit 2 (Copper): give a daily maximum, a monthly average or a daily maximum loading"),
    ({"analyte1": "cu", "limit1_monthly_average": "0"}, "Limit 2 (Copper): monthly average: a limit is more than 0"),
    ({"analyte0": "cu", "limit0_daily_maximum": "1", "analyte1": "cu", "limit1_daily_maximum": "2"},
     "Limit 2 (Copper): limited already in limit 1: one limit each"),
    ({"analyte0": "unobtainium", "limit0_daily_maximum": "1"},
     "Limit 1: 'unobtainium' is not an analyte of this ordinance or the catalogue"),
    ({"ph_minimum": "9", "ph_maximum": "6"}, "pH: minimum [pH]: 9 is not below the maximum 6"),
])
def test_each_refusal_names_the_field(fields, message):
    data = {"number": "PAL-IU-2027-01", **fields}
    if not fields:
        data = {}
    with pytest.raises(InputError) as e:
        document(_t(), data, TODAY)
    assert str(e.value) == message


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


def test_who_may_make_a_permit_and_the_refusals_on_the_page(db, round_village, tmp_path):
    from test_web_round import as_, keyed
    from web_support import cheap_hashes, csrf_of, office_client

    with cheap_hashes(), office_client(db, tmp_path, cfg=web_round.config(tmp_path, round_village[2])) as c:
        as_(c, "clerk")
        page = c.get("/permits").text
        assert 'id="permit-new-start"' not in page
        assert c.get("/permits/new?site=candy").status_code == 403
        r = c.post("/permits/create", data={"_csrf_token": csrf_of(page), "_form_key": "k" * 32, "site": "candy",
                                            "number": "X-1", "analyte0": "cu", "limit0_daily_maximum": "1"})
        assert r.status_code == 403
        as_(c, "coord")
        r = c.get("/permits/new?site=nobody")
        assert r.status_code == 400 and "user: choose the industrial user the permit is for (got &#39;nobody&#39;)" \
            in r.text
        page = c.get("/permits/new?site=candy").text
        assert "New permit for Sweet Creek Confections" in page and ">Copper</option>" in page
        form = {**keyed(page, "permit-new-form"), "number": "PAL-IU-2027-09", "analyte0": "cu",
                "limit0_daily_maximum": "-1"}
        r = c.post("/permits/create", data=form)
        problem = html.unescape(re.search(r'id="problem">([^<]+)<', r.text).group(1))
        assert r.status_code == 400 and problem == "Limit 1 (Copper): daily maximum: a limit is more than 0"
        r = c.post("/permits/create", data={**form, "limit0_daily_maximum": "1.5"})
        assert r.status_code == 200 and "Permit PAL-IU-2027-09" in r.text and "Saved as version 1" in r.text
        # the same form again: saved once
        again = c.post("/permits/create", data={**form, "limit0_daily_maximum": "1.5"})
        assert "sent already" in again.text
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT version, entered_by, document->'limits'->0->>'words' FROM permits "
                            "WHERE number = 'PAL-IU-2027-09'").fetchall()
        audit = conn.execute("SELECT actor, detail->>'via' FROM audit_log WHERE action = 'permit.import' AND "
                             "object = 'permit:PAL-IU-2027-09'").fetchall()
    assert rows == [(1, "coord", "Copper: 1.5 mg/l daily maximum.")] and audit == [("coord", "web")]
