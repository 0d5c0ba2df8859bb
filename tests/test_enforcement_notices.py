"""Notices, the SNC list and the annual report as people read them: rendered to PDF by the
CLI as a user types it and read back with pdftotext. The ordinance's words must appear exactly
as the pack has them, cited by the ordinance's title, and every figure must match the
database; the same inputs give the same bytes apart from the issue date."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from datetime import datetime

import pytest

from enforcement.documents.notice_page import render_html
from enforcement.notices import cite
from enforcement_support import run, sw, village
from lab.documents.pdf import page_count, page_size, pdf_text, write_pdf
from limits.packs import load_pack

pytestmark = pytest.mark.services

PALMYRA = load_pack("palmyra-wi")


def flat(text: str) -> str:
    """Text with line breaks and runs of spaces as single spaces (pdftotext wraps lines)."""
    return re.sub(r"\s+", " ", text.replace("\f", " ")).strip()


def rule(rule_id: str):
    return next(r for r in PALMYRA.rules if r.id == rule_id)


def test_acid_dump_notice_drafted_issued_and_rendered_again(db, tmp_path):
    village(tmp_path, db)
    r = run(tmp_path, db, "findings", "list", "--since", "2026-06-01", "--until", "2026-07-01", "--site", "candy",
            "--json")
    assert r.returncode == 0, r.stderr
    [v] = [x for x in json.loads(r.stdout)["violations"] if x["rule"] == "ph-min"]
    r = sw(tmp_path, db, "notice", "draft", "--violation", str(v["id"]), "--on", "2026-06-10", "--out", "out")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"NOV-2026-001 drafted: Notice of violation to Sweet Creek Confections for violation "
                               f"{v['id']}")
    draft = (tmp_path / "out" / "NOV-2026-001-draft.pdf").read_bytes()
    assert page_size(draft) == "612 x 792 pts (letter)"
    raw = pdf_text(draft, layout=False)
    pages = page_count(draft)
    assert pages >= 2 and raw.count("DRAFT: not issued") == pages    # DRAFT on every page
    text = flat(raw)
    # the ordinance's words, exactly as in the pack, cited by the ordinance's title
    ph = rule("ph-min")
    assert flat(ph.words) in text and cite(PALMYRA, ph.section) in text
    f1 = rule("forfeiture-max")
    assert flat(f1.words) in text and cite(PALMYRA, "§13.60(1)") in text
    assert PALMYRA.seed not in text                                   # never the seed file's name
    # figures from the database
    with db.connect() as conn:
        start, end, peak, limit, days, n = conn.execute(
            "SELECT start_time, end_time, peak, limit_value, days_of_violation, (evidence->>'readings')::int "
            "FROM violations WHERE id = %s", (v["id"],)).fetchone()
    tz = PALMYRA.tz
    assert f"{start.astimezone(tz):%Y-%m-%d %H:%M %Z} to {end.astimezone(tz):%Y-%m-%d %H:%M %Z}" in text
    assert (peak, limit, days, n) == (3.5, 6.0, 1, 30)
    # the limit as the ordinance states it, with its comparison word (§13.48(2)(g) "a pH lower than 6.0")
    assert "Most extreme reading pH 3.5 at 2026-06-09 10:30 CDT" in text and "Limit lower than pH 6 at any time" in text
    assert "Readings beyond the limit 30" in text
    assert "1 day of violation" in text and "Range: $100 to $2,500 for each day: 1 day of violation, $100 to $2,500." in text
    assert "Respond in writing within 30 days of the date of issue." in text
    assert "No discharge permit on file" in text           # the config names one; none is stored and "Pat Example Utility Superintendent" in text
    assert "Village of Palmyra (test) Department of Public Works, Wastewater Utility" in text   # the letterhead

    r = sw(tmp_path, db, "notice", "issue", "NOV-2026-001", "--on", "2026-06-15", "--out", "out", "--by", "Pat")
    assert r.returncode == 0, r.stderr
    assert "NOV-2026-001 issued 2026-06-15: response due 2026-07-15" in r.stdout
    issued = (tmp_path / "out" / "NOV-2026-001.pdf").read_bytes()
    itext = flat(pdf_text(issued, layout=False))
    assert "DRAFT" not in itext and "Date of issue: 2026-06-15" in itext
    assert "Respond in writing by 2026-07-15 (30 days from the date of this notice)." in itext
    with db.connect() as conn:
        state, sha, due = conn.execute("SELECT state, pdf_sha256, response_due FROM notices WHERE number = "
                                       "'NOV-2026-001'").fetchone()
        doc = conn.execute("SELECT document FROM notices WHERE number = 'NOV-2026-001'").fetchone()[0]
    assert state == "issued" and sha == hashlib.sha256(issued).hexdigest() and due.isoformat() == "2026-07-15"
    # reproducible from the database: rendered again, the same bytes
    r = run(tmp_path, db, "notice", "pdf", "NOV-2026-001", "--out", "again")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "NOV-2026-001.pdf").read_bytes() == issued
    # another issue date: the text differs in the dates alone
    other = write_pdf(render_html(doc, datetime(2026, 6, 16).date()), issued=datetime(2026, 6, 16).date())
    a = pdf_text(issued).splitlines()
    b = pdf_text(other).splitlines()
    changed = [x for x in difflib.unified_diff(a, b, lineterm="", n=0) if x[:1] in "+-" and x[:3] not in ("+++", "---")]
    assert changed and all(re.search(r"2026-0(6-1[56]|7-1[56])", x) for x in changed), changed

    r = run(tmp_path, db, "notice", "response", "NOV-2026-001", "--on", "2026-07-01", "--note", "valve replaced")
    assert r.returncode == 0 and "response received 2026-07-01" in r.stdout, r.stderr
    r = run(tmp_path, db, "notice", "close", "NOV-2026-001", "--on", "2026-07-03", "--note", "report accepted")
    assert r.returncode == 0, r.stderr
    r = run(tmp_path, db, "notice", "show", "NOV-2026-001")
    assert r.returncode == 0, r.stderr
    events = [line.split()[4] for line in r.stdout.splitlines() if line.startswith("    2")]   # date time ZONE actor event
    assert events == ["drafted", "issued", "response-received", "closed"]
    r = run(tmp_path, db, "notice", "issue", "NOV-2026-001")
    assert r.returncode == 2 and "is closed: only a drafted notice is issued" in r.stderr


def test_lab_violation_notice_names_the_laboratory_and_samples(db, tmp_path):
    village(tmp_path, db, dump=False)
    r = run(tmp_path, db, "findings", "list", "--site", "plating", "--since", "2026-01-01", "--json")
    assert r.returncode == 0, r.stderr
    [v] = [x for x in json.loads(r.stdout)["violations"] if x["rule"] == "cyanide-max"]
    assert v["source"] == "lab"
    r = run(tmp_path, db, "notice", "draft", "--violation", str(v["id"]), "--on", "2026-02-20", "--out", "out")
    assert r.returncode == 0, r.stderr
    text = flat(pdf_text(tmp_path / "out" / "NOV-2026-001-draft.pdf", layout=False))
    cn = rule("cyanide-max")
    assert flat(cn.words) in text and cite(PALMYRA, cn.section) in text
    assert "a discharge limit exceeded, as a laboratory measured it" in text.lower()
    # the laboratory, the sample id, the value, the method and the sample type; never the
    # file and line it was imported from (a key of ours, not the user's record)
    assert "Laboratory: Rock River Environmental Laboratory" in text
    assert "P-02 2026-02-04 00:00 CST Cyanide (total) 0.62 SM 4500-CN E grab" in text
    assert "lab.csv" not in text and "line 3" not in text
    # the limit with the ordinance's comparison words
    # (§13.48(2)(l) "in excess of one-half (0.5) mg/l"), on each sample
    assert "Prohibited: a result in excess of 0.5 mg/l in any sample." in text


def test_snc_explained_and_the_annual_list_and_report(db, tmp_path):
    village(tmp_path, db)
    r = run(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "bills")
    assert r.returncode == 2 and "volume unknown for candy" in r.stderr      # candy's meter has no Q1 readings
    (tmp_path / "rates.toml").write_text((tmp_path / "rates.toml").read_text() + "candy = 0.4\n")
    r = run(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "bills")
    assert r.returncode == 0, r.stderr

    r = sw(tmp_path, db, "snc", "--period", "2026H1")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # plating: cyanide <0.02, 0.62, 0.41 against 0.5 mg/l: 1 of 3 exceeds (33.3 %, not chronic); 0.62 >= 1.2 x 0.5
    # = 0.6: 1 of 3 = 33.3 % >= 33 %: TRC
    # no permit is stored in this village (the config's numbers are not permits): none is named
    assert "Lakeside Plating (plating): IN SIGNIFICANT NONCOMPLIANCE, criteria (B)" in out
    assert "cn: 1 of 3 measurements (33.3 %) exceed 0.5 mg/l (66 % makes it chronic): P-02 2026-02-04 0.62" in out
    assert "cn: 1 of 3 (33.3 %) equal or exceed 1.2 x 0.5 mg/l = 0.6 mg/l (33 % makes it a TRC violation): " \
           "P-02 2026-02-04 0.62" in out
    assert "Sweet Creek Confections (candy): not in significant noncompliance" in out
    assert out.count("  (H) other violations designated: not met") == 2

    r = sw(tmp_path, db, "report", "snc", "--year", "2026")
    assert r.returncode == 0, r.stderr
    assert "Lakeside Plating: 2026H1: (B) technical review criteria (TRC) violations" in r.stdout
    assert "Sweet Creek" not in r.stdout

    r = run(tmp_path, db, "notice", "draft", "--snc", "plating", "--period", "2026H1", "--on", "2026-07-02",
            "--out", "out")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("AO-2026-001 drafted: Administrative order to Lakeside Plating")
    run(tmp_path, db, "notice", "issue", "AO-2026-001", "--on", "2026-07-06", "--out", "out")

    r = run(tmp_path, db, "report", "annual", "--year", "2026", "--on", "2027-01-15", "--out", "rep", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    with db.connect() as conn:
        episodes = conn.execute("SELECT count(*) FROM violations").fetchone()[0]
        # days of violation: distinct local days per site and rule (each episode here is within a day)
        days = conn.execute("SELECT count(DISTINCT (site_id, rule, (start_time AT TIME ZONE "
                            "'America/Chicago')::date)) FROM violations").fetchone()[0]
        samples = conn.execute("SELECT count(*) FROM lab_samples").fetchone()[0]
        billed = conn.execute("SELECT sum(total_dollars) FROM bills").fetchone()[0]
    t = rep["totals"]
    assert (t["violation_episodes"], t["days_of_violation"], t["samples_taken"]) == (episodes, days, samples)
    assert t["billed_dollars"] == float(billed) and t["users_in_snc"] == 1 and t["notices"] == 1
    # plating's surcharge: BOD 400 over 250: 0.12 MG x 150 x 8.34 = 150.12 lb x $0.20 = $30.02
    assert t["surcharge_dollars"] == 30.02
    pdf = tmp_path / "rep" / "annual-report-2026.pdf"
    text = flat(pdf_text(pdf, layout=False))
    assert "Pretreatment program annual report 2026" in text and "Date of the report: 2027-01-15" in text
    assert f"violation episodes {episodes}" in text and f"days of violation {days}" in text
    assert f"samples taken {samples}" in text and "surcharges billed $30.02" in text
    assert f"all charges billed ${float(billed):,.2f}" in text
    assert "AO-2026-001 Lakeside Plating" in text and "Lakeside Plating 2026H1 (B)" in text
    assert page_size(pdf) == "612 x 792 pts (letter)"


def test_reports_owed_milestones_findings_and_due_as_typed(db, tmp_path):
    village(tmp_path, db, lab=False, dump=False)
    r = run(tmp_path, db, "user-reports", "require", "--site", "plating", "--due", "2026-04-30",
            "--period", "2026-01-01", "2026-04-01", "--by", "clerk")
    assert r.returncode == 0 and r.stdout.startswith("report 1: plating owes a self-monitoring report due 2026-04-30")
    # judged as of day 45 and day 46 after the due date
    r = run(tmp_path, db, "user-reports", "list", "--as-of", "2026-06-14")
    assert r.returncode == 0 and "not received, 45 days after its due date 2026-04-30" in r.stdout
    assert "FINDING" not in r.stdout
    r = run(tmp_path, db, "user-reports", "list", "--as-of", "2026-06-15")
    assert "not received, 46 days after its due date 2026-04-30  [FINDING: late]" in r.stdout
    r = run(tmp_path, db, "user-reports", "list", "--as-of", "2099-01-01")
    assert r.returncode == 2 and "--as-of 2099-01-01 is in the future" in r.stderr
    r = run(tmp_path, db, "user-reports", "receive", "1", "--on", "2026-06-20", "--note", "mailed")
    assert r.returncode == 0 and "received 2026-06-20, 51 days after its due date (a finding: late)" in r.stdout

    r = run(tmp_path, db, "milestones", "add", "--site", "candy", "--due", "2026-03-01",
            "--description", "equalisation tank in service", "--source", "AO-2025-004")
    assert r.returncode == 0 and r.stdout.startswith("milestone 1: candy")
    r = run(tmp_path, db, "findings", "record", "--site", "candy", "--kind", "interference", "--on", "2026-03-10",
            "--summary", "nitrification upset", "--by", "supt")
    assert r.returncode == 0 and "(SNC criterion (C))" in r.stdout
    r = run(tmp_path, db, "findings", "record", "--site", "candy", "--kind", "late-report", "--on", "2026-03-10",
            "--summary", "x")
    assert r.returncode == 2 and "a finding to record is one of pass-through, interference" in r.stderr

    r = run(tmp_path, db, "findings", "list", "--since", "2026-01-01", "--until", "2026-12-31")
    assert r.returncode == 0, r.stderr
    kinds = [line.split()[3] for line in r.stdout.splitlines() if line.startswith("finding")]
    assert kinds == ["interference", "compliance-schedule", "late-report"]  # Mar 10, May 31 (day 91), Jun 15 (day 46)
    r = run(tmp_path, db, "snc", "--period", "2026H1", "--site", "candy", "--json")
    assert json.loads(r.stdout)[0]["criteria_met"] == ["C", "E"]

    r = run(tmp_path, db, "due", "--alert", "--notify")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "OVERDUE" in out and "compliance schedule milestone 'equalisation tank in service' due 2026-03-01" in out
    assert re.search(r"^OVERDUE  \d{4}-\d\d-\d\d \d\d:\d\d C[DS]T ", out, re.M), out   # the village's time, its zone
    assert "alert #1 opened: [sewerwatch] ENFORCEMENT #1" in out
    assert "Alert #1: enforcement" in out                       # the console channel delivered it
    r = run(tmp_path, db, "due", "--alert")
    assert "opened" not in r.stdout                              # once
