"""The state's electronic report as EPA reads it, on the command line and over HTTP, against
the real database and EPA's schema (the finished year 2025 of tests/state_village.py).

Every figure is worked out by hand against 40 CFR Part 127 Appendix A (the pretreatment
program report data) and 40 CFR 403.8(f)(2)(v) (the control authority samples and inspects
each significant user at least once a year) and (viii) (SNC, and the list's publication in a
newspaper).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime
from zoneinfo import ZoneInfo

import psycopg
import pytest

import state_village
from enforcement_support import run

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def village(module_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("state")
    state_village.seed(tmp, module_db)
    return module_db, tmp


def _figures(xml: bytes) -> tuple[dict, dict]:
    from enforcement import icis

    root = ET.fromstring(xml)
    ns = {"i": icis.NS}
    head = {el.tag.split("}")[1]: el.text for el in root.find("i:Header", ns)}
    pps = root.find("i:Payload/i:PretreatmentPerformanceSummaryData/i:PretreatmentPerformanceSummary", ns)
    return head, {el.tag.split("}")[1]: el.text for el in pps}


def test_the_finished_year_as_the_state_reads_it(village):
    from enforcement import icis

    db, tmp = village
    this_year = datetime.now(ZoneInfo("America/Chicago")).year

    # --- the checklist first: what the state will ask, each line a user and a link; nothing written
    r = run(tmp, db, "report", "icis", "--year", "2025", "--check")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "2025: what the state's reviewer will question (8; none stops the file)"
    heads = [ln for ln in out[1:] if not ln.startswith("  ")]
    lines = [ln.strip() for ln in out[1:] if ln.startswith("  ")]
    assert heads == ["Users in significant noncompliance without an enforcement action",
                     "Significant users without a discharge permit in force at the year's end",
                     "Significant users the village did not sample in the year",
                     "Significant users not inspected in the year",
                     "Penalties recorded without the day they were collected"]
    assert [ln.split(":")[0] for ln in lines] == [
        "Sweet Creek Confections",                                            # SNC, no action
        "Lakeside Plating", "Palmyra Sausage Co.", "Sweet Creek Confections",  # no permit in force
        "Sweet Creek Confections",                                            # no sample by the village
        "Lakeside Plating", "Sweet Creek Confections",                        # not inspected
        "Lakeside Plating"]                                                   # penalty without its day
    assert lines[0] == ("Sweet Creek Confections: in significant noncompliance in 2025H1 under (A), (B); no notice "
                        "or order issued in the year  /sites/candy")
    assert lines[4].endswith("(1 sample of the user's own)  /sites/candy")
    assert lines[5].endswith("/inspections/new?site=plating")
    assert "NOV-2025-001: a penalty of $500.00 without the day it was collected" in lines[7]
    assert not list(tmp.glob("icis-*.xml"))

    # --- the author is a staff account, by name; missing: one line, nothing written
    r = run(tmp, db, "report", "icis", "--year", "2025", "--by", "nobody", "--out", "r")
    assert r.returncode == 2 and "no staff account 'nobody'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp / "r").exists()

    # --- the publication of one of the two users in SNC, recorded once
    (tmp / "page.pdf").write_bytes(state_village.page_pdf("Lakeside Plating was in significant noncompliance."))
    (tmp / "notes.txt").write_text("not a page")
    r = run(tmp, db, "report", "publish", "--year", "2025", "--newspaper", "Palmyra Enterprise", "--on", "2026-01-15",
            "--page", "notes.txt", "--site", "plating")
    assert r.returncode == 2 and "expected a PDF or a photo" in r.stderr
    r = run(tmp, db, "report", "publish", "--year", "2025", "--newspaper", "Palmyra Enterprise", "--on", "2026-01-15",
            "--page", "page.pdf", "--site", "sausage")
    assert r.returncode == 2 and "sausage is not on the 2025 list of users in significant noncompliance" in r.stderr
    args = ("report", "publish", "--year", "2025", "--newspaper", "Palmyra Enterprise", "--on", "2026-01-15",
            "--page", "page.pdf", "--site", "plating", "--by", "coord")
    r = run(tmp, db, *args)
    assert r.returncode == 0 and "naming Lakeside Plating" in r.stdout, r.stderr
    r = run(tmp, db, *args)
    assert r.returncode == 2 and "already recorded (by coord" in r.stderr
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*), min(media_type) FROM snc_publications").fetchone() == (1, "application/pdf")

    # --- the file of the finished year
    r = run(tmp, db, "report", "icis", "--year", "2025", "--by", "super", "--out", "r")
    assert r.returncode == 0 and "submitted as PALMYRA-WWTP (Village of Palmyra Wastewater Utility) by Sam Super" \
        in r.stdout, r.stderr
    xml = (tmp / "r" / "icis-pretreatment-2025.xml").read_bytes()
    assert icis.validate(xml) == []                                           # EPA's schema 5.8
    head, got = _figures(xml)
    assert (head["Id"], head["Author"], head["Organization"]) == (
        "PALMYRA-WWTP", "Sam Super", "Village of Palmyra Wastewater Utility")
    assert "DRAFT" not in xml.decode() and head["Title"] == "Pretreatment performance summary 2025"
    assert (got["PretreatmentPerformanceSummaryStartDate"], got["PretreatmentPerformanceSummaryEndDate"]) == (
        "2025-01-01", "2025-12-31")
    # by hand: three significant users, none with a permit (no permit was ever imported)
    assert (got["NumberSIUs"], got["SIUsWithoutControlMechanism"]) == ("3", "3")
    # 403.8(f)(2)(v): one inspection (the sausage maker): two not inspected; the village (or its
    # contractor) sampled the plater and the sausage maker; the confectioner only sampled itself
    assert (got["SIUsNotInspected"], got["SIUsNotSampled"]) == ("2", "1")
    # (viii): cyanide 2.0 and 1.5 mg/l against 0.5 (§13.48(2)(l)), one measurement of one in
    # 2025H1: chronic (A) and TRC (B), the plater and the confectioner; the sausage maker's
    # 0.05 and 0.04 under the limit
    assert (got["SIUsSNCWithPretreatmentStandards"], got["SIUsSNCWithReportingRequirements"],
            got["SIUsSNCWithPretreatmentSchedule"]) == ("2", "0", "0")
    assert got["SIUsSNCPublishedNewspaper"] == "1"                        # the plater's name was published
    assert (got["ViolationNoticesIssuedSIUs"], got["AdministrativeOrdersIssuedSIUs"]) == ("1", "0")
    # the penalty has no day of collection: nothing collected in the year
    assert (got["DollarAmountPenaltiesCollectedPPS"], got["IUsWhichPenaltiesHaveBeenCollectedPPS"]) == ("0", "0")
    assert (got["NumberCIUs"], got["CIUsInSNC"], got["PassThroughInterferenceIndicator"]) == ("1", "1", "N")
    assert r.stderr.strip() == "8 things the state's reviewer will question (sewerwatch report icis --check --year 2025)"

    # --- the annual report shows the list and whether it was published
    r = run(tmp, db, "report", "annual", "--year", "2025", "--out", "a", "--on", "2026-02-01")
    assert r.returncode == 0, r.stderr
    import subprocess
    text = subprocess.run(["pdftotext", "-layout", str(tmp / "a" / "annual-report-2025.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    assert "Published in the newspaper" in flat and "Palmyra Enterprise 2026-01-15 Lakeside Plating" in flat
    assert "On the list, not named by a recorded publication: Sweet Creek Confections." in flat
    assert "samples taken by the village (or its contractor) 2" in flat

    # --- a year not over: refused without --draft, marked as a draft with it
    r = run(tmp, db, "report", "icis", "--year", str(this_year), "--by", "super", "--out", "r")
    assert r.returncode == 2 and f"{this_year} is not over in the village" in r.stderr and "--draft" in r.stderr
    assert not (tmp / "r" / f"icis-pretreatment-{this_year}.xml").exists()
    r = run(tmp, db, "report", "icis", "--year", str(this_year), "--by", "super", "--out", "r", "--draft")
    assert r.returncode == 0 and "(DRAFT: the year" in r.stdout, r.stderr
    draft = (tmp / "r" / f"icis-pretreatment-{this_year}-draft.xml").read_bytes()
    assert icis.validate(draft) == []
    assert re.search(rb"<!-- DRAFT: the year \d{4} is not over \(made \d{4}-\d\d-\d\d in the village\)", draft)
    head, _ = _figures(draft)
    assert head["Title"].endswith("(DRAFT)") and head["Comment"].startswith("DRAFT, not for submission")
    r = run(tmp, db, "report", "icis", "--year", str(this_year + 1), "--by", "super", "--draft")
    assert r.returncode == 2 and "has not begun" in r.stderr

    # --- the calendar: the year's sampling and inspection by the village, on its last day
    r = run(tmp, db, "calendar", "--from", "2025-12-01", "--to", "2026-01-01", "--json")
    assert r.returncode == 0, r.stderr
    import json
    got = {(e["kind"], e["site"]): (e["state"], e["title"]) for e in json.loads(r.stdout)
           if e["kind"].startswith("village-")}
    assert got[("village-sampling", "candy")] == ("missing", "Sweet Creek Confections: not sampled by the village in 2025")
    assert got[("village-sampling", "sausage")][0] == "taken"
    assert got[("village-inspection", "sausage")] == ("met", "Palmyra Sausage Co.: inspected in 2025 (first on 2025-06-10)")
    assert got[("village-inspection", "plating")][0] == "missing"


def test_the_submitter_is_configured_or_nothing_is_written(village):
    db, tmp = village
    sub = tmp / "nosub"
    sub.mkdir()
    (sub / "village.toml").write_text(state_village.CONFIG.replace('submitter_id = "PALMYRA-WWTP"\n', ""))
    r = run(sub, db, "report", "icis", "--year", "2025", "--by", "super", "--out", "r")
    assert r.returncode == 2 and "submitter_id is not set" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (sub / "r").exists()
    (sub / "village.toml").write_text(state_village.CONFIG.replace('"PALMYRA-WWTP"', '" PW"'))
    r = run(sub, db, "config", "check")
    assert r.returncode != 0 and "enforcement.program.submitter_id" in r.stderr + r.stdout


def test_the_office_names_the_signed_in_person_and_offers_a_year_not_over_only_as_a_draft(village):
    from web_round import config as office_cfg
    from web_support import cheap_hashes, office_client, sign_in

    db, tmp = village
    this_year = datetime.now(ZoneInfo("America/Chicago")).year
    with cheap_hashes(), office_client(db, tmp / "office", cfg=office_cfg(tmp / "office", tmp / "village.toml")) as c:
        assert sign_in(c, "coord").status_code == 200
        xml = c.get("/reports/icis-2025.xml")
        assert xml.status_code == 200 and xml.headers["content-disposition"].endswith('"icis-pretreatment-2025.xml"')
        head, _ = _figures(xml.content)
        assert (head["Id"], head["Author"]) == ("PALMYRA-WWTP", "Cora Coordinator")
        page = c.get("/reports", params={"year": this_year}).text
        assert 'id="icis-draft"' in page and f"icis-{this_year}-draft.xml" in page and "Draft only" in page
        r = c.get(f"/reports/icis-{this_year}.xml")
        assert r.status_code == 400 and "is not over in the village" in r.text
        r = c.get(f"/reports/icis-{this_year}-draft.xml")
        assert r.status_code == 200 and r.headers["content-disposition"].endswith(
            f'"icis-pretreatment-{this_year}-draft.xml"') and b"<!-- DRAFT" in r.content
        assert 'id="icis-draft"' not in c.get("/reports", params={"year": 2025}).text
        # who took each sample, on the results page and in its CSV (which imports again as it is)
        page = c.get("/lab/results", params={"site": "sausage", "since": "2025-01-01", "until": "2025-12-31"}).text
        assert "taken by the user&#39;s contractor" in page and "taken by the village&#39;s contractor" in page
        csv = c.get("/lab/results.csv", params={"site": "sausage", "since": "2025-01-01", "until": "2025-12-31"}).text
        lines = csv.splitlines()
        col = lines[0].split(",").index("sampled_by")
        assert [ln.split(",")[0] + ":" + ln.split(",")[col] for ln in lines[1:]] == [
            "C-01:user-contractor", "C-02:village-contractor"]
        # the checklist page: viewable by every staff role; the publication form only for those who may issue
        c.cookies.clear()
        assert sign_in(c, "viewer").status_code == 200
        page = c.get("/reports/2025/checklist")
        assert page.status_code == 200 and "Sweet Creek Confections" in page.text
        assert 'id="publication-form"' not in c.get("/reports", params={"year": 2025}).text


def test_who_took_a_sample_is_one_of_four(village):
    db, tmp = village
    bad = tmp / "bad.csv"
    bad.write_text("sample_id,site,collected,analyte,value,unit,qualifier,sampled_by\n"
                   "N-01,candy,2025-10-01 09:00,cn,0.1,mg/l,,the neighbour\n"
                   "N-02,candy,2024-10-02 09:00,cn,0.1,mg/l,,Village\n")       # a year before: the others' counts stay
    r = run(tmp, db, "lab", "import", str(bad), "--actor", "lab")
    assert "line 2: sampled_by: unknown 'the neighbour' (expected village, user, village-contractor or " \
        "user-contractor)" in r.stdout + r.stderr
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT sample_key, sampled_by FROM lab_samples WHERE sample_key LIKE 'N-%' "
                            "ORDER BY sample_key").fetchall()
        assert rows == [("N-02", "potw")]
