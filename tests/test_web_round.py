"""The pretreatment round in the office over HTTP, in process, against the real database:
every new route authorised by role, the notice's lifecycle
through the same functions as ``sewerwatch notice``, a double-submitted "issue" issuing once,
two editors of one draft getting a conflict, the guide deciding what is editable, the
state's ICIS-NPDES XML checked against EPA's schema and every figure against the annual
report, and the quarter's bills drafted, issued (refused when a result changed since the
draft) and paid with the late charge of palmyra-wi §13.46(8).

The village is seeded once for the session (``round_village``, tests/conftest.py) and each
test takes a copy of it: one for the notice's whole story (one notice, as a coordinator
walks it), one for the quarter's bills, one for the command line's same steps.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import xml.etree.ElementTree as ET
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from web_support import cheap_hashes, csrf_of, office_client, sign_in

XSD = Path(__file__).resolve().parent.parent / "enforcement" / "icis_xsd"
#: Whether the round's year (2026) is over in the village: its state's report is a draft until then.
ROUND_YEAR_OVER = datetime.now(ZoneInfo("America/Chicago")).year > 2026


@pytest.fixture
def db(services, round_village):
    """A copy of the seeded village for this test (web_round.clone)."""
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def office(db, round_village, tmp_path):
    (tmp_path / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    with cheap_hashes(), office_client(db, tmp_path, cfg=web_round.config(tmp_path, round_village[2])) as c:
        c.tmp = tmp_path
        yield c


def keyed(html: str, form_id: str) -> dict:
    """The hidden fields of form ``form_id`` (its CSRF token and its submission key)."""
    seg = html[html.index(f'id="{form_id}"'):]
    seg = seg[:seg.index("</form>")]
    return dict(re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', seg)) | {"_csrf_token": csrf_of(html)}


def as_(c, user: str):
    c.cookies.clear()
    assert sign_in(c, user).status_code == 200


def drafted(c, db) -> tuple[int, str]:
    vid = web_round.copper_violation(db)
    page = c.get(f"/enforcement/violations/{vid}").text
    r = c.post("/notices/draft", data=keyed(page, "draft-form"))
    assert r.status_code == 200 and "Drafted." in r.text, r.text[-2000:]
    return int(re.search(r"/notices/(\d+)/pdf", r.text).group(1)), r.text


def events(db, nid: int, event: str) -> list[tuple]:
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT actor, detail FROM notice_events WHERE notice_id = %s AND event = %s",
                            (nid, event)).fetchall()


def test_one_notice_from_draft_to_escalation_and_the_state_report(office, db):
    """The copper violation's notice walked through the office in one database: who may act
    on it, two editors and what the guide lets them edit, a double-submitted issue issuing
    once as the account, the guide's next step, the response, a penalty, the escalation; then
    the state's ICIS-NPDES XML against EPA's schema and every figure against the annual report."""
    from enforcement import icis, notices
    from enforcement.guide import load_guide
    from enforcement.settings import DEFAULT_GUIDE
    from foundation.errors import InputError

    c = office
    as_(c, "coord")
    nid, page = drafted(c, db)
    form = keyed(page, "issue-form")

    # --- who may act (identity/roles.py): the others may look, not issue; bills are the clerk's
    for user in ("inspector", "viewer", "clerk"):
        as_(c, user)
        r = c.get(f"/notices/{nid}")
        assert r.status_code == 200 and 'id="issue-form"' not in r.text, user
        token = csrf_of(r.text)
        r = c.post(f"/notices/{nid}/issue", data={**form, "_csrf_token": token}, follow_redirects=False)
        assert r.status_code == 403 and "Not allowed for your role" in r.text, user
        r = c.post("/notices/draft", data={"violation": "1", "_form_key": "k" * 32, "_csrf_token": token})
        assert r.status_code == 403, user
        if user == "clerk":
            assert 'id="bills-draft-form"' in c.get("/bills").text
        else:
            r = c.post("/bills/draft", data={"quarter": "2026Q1", "_form_key": "k" * 32, "_csrf_token": token},
                       files={"rates": ("rates.toml", b"bod = 0.2\n", "text/plain")})
            assert r.status_code == 403, user
    assert events(db, nid, "issued") == []
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM bill_runs").fetchone()[0] == 0

    # --- the preview is the PDF's page; two editors of the draft: the second gets a conflict
    as_(c, "coord")
    page = c.get(f"/notices/{nid}").text
    png = c.get(f"/notices/{nid}/page/1")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    a, b = keyed(page, "edit-form"), keyed(page, "edit-form")
    b["_form_key"] = a["_form_key"][::-1]                       # the second editor's own page
    r = c.post(f"/notices/{nid}/edit", data={**a, "remarks": "Call J. Kowalski before the 15th."})
    assert r.status_code == 200 and "Saved." in r.text
    r = c.post(f"/notices/{nid}/edit", data={**b, "remarks": "A second opinion"})
    assert r.status_code == 409 and "coord saved version 2 of notice NOV-2026-001" in r.text
    assert "A second opinion" in r.text                          # what was typed is kept in the form
    with psycopg.connect(db.url) as conn:
        rev, doc = conn.execute("SELECT revision, document FROM notices WHERE id = %s", (nid,)).fetchone()
    assert rev == 2 and doc["remarks"] == "Call J. Kowalski before the 15th."
    [(_who, detail)] = events(db, nid, "edited")
    assert detail["changes"]["remarks"] == {"before": None, "after": "Call J. Kowalski before the 15th."}
    # the finding's words are not editable: the guide lists corrective action, report, remarks
    page = c.get(f"/notices/{nid}").text
    r = c.post(f"/notices/{nid}/edit", data={**keyed(page, "edit-form"), "corrective_action": ""})
    assert r.status_code == 400 and "cannot be empty" in r.text
    guide = load_guide(DEFAULT_GUIDE)
    assert notices.editable({"state": "drafted", "action": "show-cause"}, guide) == ("remarks",)
    assert notices.editable({"state": "issued", "action": "notice-of-violation"}, guide) == ()
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE notices SET action = 'show-cause' WHERE id = %s", (nid,))
        with pytest.raises(InputError, match="does not allow editing corrective action"):
            notices.edit(conn, nid, {"corrective_action": "x"}, expected_revision=2, guide=guide)
        conn.rollback()                                          # the notice stays a notice of violation

    # --- an issue form drawn before a colleague's edit: 409, nothing issued; the notice as it stands now,
    # what changed, and a form to issue that revision
    stale = keyed(c.get(f"/notices/{nid}").text, "issue-form")
    assert stale["_base_version"] == "2"
    page = c.get(f"/notices/{nid}").text
    r = c.post(f"/notices/{nid}/edit", data={**keyed(page, "edit-form"), "remarks": "Call J. Kowalski by the 10th."})
    assert r.status_code == 200 and "Saved." in r.text
    r = c.post(f"/notices/{nid}/issue", data={**stale, "on": "2026-03-02"})
    text = html.unescape(re.sub(r"\s+", " ", r.text))
    assert r.status_code == 409 and "coord saved version 3 of notice NOV-2026-001 at " in text, text[-3000:]
    assert "after you opened version 2 to issue it. Nothing was issued." in text
    # the time in the village's zone, as the list of changes and every time of the office
    saved_at = re.search(r"of notice NOV-2026-001 at (\d{4}-\d\d-\d\d \d\d:\d\d \w+), after", text)
    assert saved_at and saved_at[1].endswith((" CST", " CDT")), text[-3000:]
    assert "Remarks (version 3, coord, " in text
    assert "Call J. Kowalski before the 15th. → Call J. Kowalski by the 10th." in re.sub(r"<[^>]+>", "", text)
    assert 'src="/notices/%d/page/1?r=3"' % nid in r.text                     # the preview is the current draft
    fresh = keyed(r.text, "issue-form")
    assert fresh["_base_version"] == "3" and fresh["_form_key"] != stale["_form_key"]
    assert re.search(r'id="issue-on" name="on" value="2026-03-02"', r.text)   # the date chosen is kept
    assert events(db, nid, "issued") == []
    with psycopg.connect(db.url) as conn:
        row = conn.execute("SELECT state, issued_on FROM notices WHERE id = %s", (nid,)).fetchone()
    assert row == ("drafted", None)
    # a form that does not say which revision it issues is refused
    r = c.post(f"/notices/{nid}/issue", data={k: v for k, v in fresh.items() if k != "_base_version"})
    assert r.status_code == 400 and "does not say which version it was drawn from" in r.text
    assert events(db, nid, "issued") == []

    # --- a double-submitted issue issues one notice, as the account, at the revision read
    other_tab = keyed(c.get(f"/notices/{nid}").text, "issue-form")
    first = c.post(f"/notices/{nid}/issue", data={**fresh, "on": "2026-03-02"})
    again = c.post(f"/notices/{nid}/issue", data={**fresh, "on": "2026-03-02"})
    assert first.status_code == again.status_code == 200
    assert "Issued." in first.text and "had been sent already" in again.text
    [(actor, detail)] = events(db, nid, "issued")
    assert actor == "coord" and detail["via"] == "web" and detail["response_due"] == "2026-04-01"
    assert detail["revision"] == 3
    # another form of the same revision (the back button to an older page, another tab) is refused by the
    # package, and so is the stale one: issued once
    for form in (other_tab, stale):
        r = c.post(f"/notices/{nid}/issue", data={**form, "on": "2026-03-03"})
        assert r.status_code == 400 and "only a drafted notice is issued" in r.text
    assert len(events(db, nid, "issued")) == 1
    pdf = c.get(f"/notices/{nid}/pdf")
    assert pdf.headers["content-disposition"] == 'attachment; filename="NOV-2026-001.pdf"'
    with psycopg.connect(db.url) as conn:
        assert hashlib.sha256(pdf.content).hexdigest() == conn.execute(
            "SELECT pdf_sha256 FROM notices WHERE id = %s", (nid,)).fetchone()[0]      # the bytes issued

    # --- the guide's next step; the response, a penalty, the escalation
    page = c.get(f"/notices/{nid}").text
    text = html.unescape(re.sub(r"\s+", " ", page))      # the deadline passed (today is after 2026-04-01)
    assert "No response by its deadline (2026-04-01): the guide's next step is administrative order (respond " \
        "within 15 days of its issue)." in text
    r = c.post(f"/notices/{nid}/response", data={**keyed(page, "response-form"), "on": "2026-03-20",
                                                 "note": "cause: rinse tank overflow; fixed"})
    assert "Response recorded." in r.text
    r = c.post(f"/notices/{nid}/penalty", data={**keyed(r.text, "penalty-form"), "dollars": "1,250.40",
                                                "on": "2026-05-01"})
    assert "Penalty recorded." in r.text
    page = c.get(f"/notices/{nid}/escalation", params={"note": "report inadequate"}).text     # what and why, first
    assert "the response is found inadequate" in html.unescape(page) and "Confirm: draft the administrative order" in page
    r = c.post(f"/notices/{nid}/escalate", data={**keyed(page, "escalate-confirm-form"), "note": "report inadequate"})
    assert r.status_code == 200 and "AO-2026-001" in r.text and "Escalated" in r.text
    with psycopg.connect(db.url) as conn:
        states = conn.execute("SELECT number, state, respond_within_days FROM notices ORDER BY id").fetchall()
    assert states == [("NOV-2026-001", "escalated", 30), ("AO-2026-001", "drafted", 15)]

    # --- the state's report: valid against EPA's schema, every figure the annual report's
    rep = c.get("/reports/annual-2026.json").json()
    # while 2026 is not over in the village, its summary is only a draft (the same figures, marked)
    tail = "" if ROUND_YEAR_OVER else "-draft"
    xml = c.get(f"/reports/icis-2026{tail}.xml")
    assert xml.status_code == 200 and xml.headers["content-disposition"].endswith(f'"icis-pretreatment-2026{tail}.xml"')
    assert (b"<!-- DRAFT: the year 2026 is not over" in xml.content) != ROUND_YEAR_OVER
    assert icis.validate(xml.content) == []
    ns = {"i": icis.NS}
    pps = ET.fromstring(xml.content).find("i:Payload/i:PretreatmentPerformanceSummaryData/"
                                          "i:PretreatmentPerformanceSummary", ns)
    got = {el.tag.split("}")[1]: el.text for el in pps}
    figures = {e["element"]: str(e["value"]) for e in rep["performance_summary"]["elements"]}
    assert {k: got[k] for k in figures} == figures                       # every figure as the annual report says
    assert got["PermitIdentifier"] == "WI0020231" and got["PretreatmentPerformanceSummaryEndDate"] == "2026-12-31"
    # by hand: two significant users (the config names them), the plater with its permit in force at the
    # year's end (2026-02-01 to 2027-01-31), the candy maker without one; neither sampled by the village (the
    # lab file says nothing of who took its samples: the users' own) nor inspected; the plater's copper
    # 1.6 mg/l of 1.6 / 1.0: one measurement of one, chronic (A) and TRC (B); one notice of violation issued
    # (2026-03-02, escalated since), the administrative order it led to drafted, not issued; $1,250.40
    # collected, whole dollars 1250
    assert (figures["NumberSIUs"], figures["SIUsWithoutControlMechanism"], figures["SIUsNotSampled"]) == ("2", "1", "2")
    # the plater is on the year's list; no publication of it is recorded
    assert figures["SIUsSNCWithPretreatmentStandards"] == "1" and figures["SIUsSNCPublishedNewspaper"] == "0"
    assert figures["ViolationNoticesIssuedSIUs"] == "1" and figures["AdministrativeOrdersIssuedSIUs"] == "0"
    assert figures["DollarAmountPenaltiesCollectedPPS"] == "1250" and figures["IUsWhichPenaltiesHaveBeenCollectedPPS"] == "1"
    assert (figures["NumberCIUs"], figures["CIUsInSNC"], figures["PassThroughInterferenceIndicator"]) == ("1", "1", "N")
    assert got["SIUsNotInspected"] == "2"                               # no inspection recorded: written, not left out
    # the element order is the schema's (read from EPA's file, not from the serializer)
    group = ET.parse(XSD / "5.8" / "ICIS_Pretreatment_v5.8.xsd").getroot().find(
        "{http://www.w3.org/2001/XMLSchema}group[@name='PretreatmentPerformanceSummaryDataGroup']")
    order = [el.get("ref").split(":")[1] for el in group.iter("{http://www.w3.org/2001/XMLSchema}element")]
    assert order == list(icis.ELEMENTS)
    tags = [t for t in got if t in order]
    assert tags == sorted(tags, key=order.index)
    # a document out of the schema's order is refused
    swapped = xml.content.replace(b"<NumberSIUs>2</NumberSIUs>", b"").replace(
        b"<PassThroughInterferenceIndicator>", b"<NumberSIUs>2</NumberSIUs><PassThroughInterferenceIndicator>")
    problems = icis.validate(swapped)
    assert problems and "NumberSIUs" in problems[0]
    # EPA's files as they were taken (README.md: their origin and terms)
    for line in (XSD / "5.8" / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((XSD / "5.8" / name).read_bytes()).hexdigest() == digest, name


def test_a_quarter_is_drafted_reviewed_issued_and_paid_with_the_late_charge(office, db):
    c = office
    as_(c, "clerk")
    rates = (c.tmp / "rates.toml").read_bytes()
    page = c.get("/bills").text
    r = c.post("/bills/draft", data={**keyed(page, "bills-draft-form"), "quarter": "2026q1", "on": "2026-04-10"},
               files={"rates": ("rates.toml", rates, "text/plain")})
    assert r.status_code == 200 and "Drafted: review each bill" in r.text
    run = int(re.search(r"/bills/runs/(\d+)/issue", r.text).group(1))
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r.text))
    assert "Lakeside Plating" in text and "0.1200 MG (rates version 1, in effect from 2026-01-01: bill.volume_mg.plating)" in text
    assert "§13.45(4)" in text or "§13.46" in text                          # the charges with their citations
    # a lab result corrected after the draft: the reviewed bills would change, nothing is issued
    with psycopg.connect(db.url) as conn:
        before = conn.execute("SELECT count(*) FROM bills").fetchone()[0]
    form = keyed(r.text, "bills-issue-form")
    from lab.store.results import import_lab_file
    fixed = c.tmp / "fix.csv"
    fixed.write_text("sample_id,site,collected,analyte,value,unit,qualifier\nS-0202,plating,2026-02-04,tss,900,mg/l,\n")
    with psycopg.connect(db.url) as conn:
        import_lab_file(conn, fixed, actor="lab", correct=True)
        conn.commit()
    r = c.post(f"/bills/runs/{run}/issue", data={**form, "on": "2026-04-10"})
    assert r.status_code == 400 and "differ from the draft reviewed" in r.text
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT count(*) FROM bills").fetchone()[0] == before
    page = c.get("/bills").text
    r = c.post("/bills/draft", data={**keyed(page, "bills-draft-form"), "quarter": "2026Q1", "on": "2026-04-10",
                                     "reuse": str(run)})
    run2 = int(re.search(r"/bills/runs/(\d+)/issue", r.text).group(1))
    form = keyed(r.text, "bills-issue-form")
    r = c.post(f"/bills/runs/{run2}/issue", data={**form, "on": "2026-04-10"})
    again = c.post(f"/bills/runs/{run2}/issue", data={**form, "on": "2026-04-10"})
    assert "Issued." in r.text and "had been sent already" in again.text
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT b.id, s.key, b.total_dollars::float8 FROM bills b JOIN sites s ON s.id = b.site_id "
                            "WHERE run_id = %s ORDER BY s.key", (run2,)).fetchall()
        first_state = conn.execute("SELECT state FROM bill_runs WHERE id = %s", (run,)).fetchone()[0]
    assert [k for _i, k, _t in rows] == ["candy", "plating"] and first_state == "superseded"
    bid, _k, total = rows[1]
    pdf = c.get(f"/bills/{bid}/pdf")
    from lab.documents.pdf import pdf_text
    assert pdf.status_code == 200 and "Lakeside Plating" in pdf_text(pdf.content)
    # palmyra-wi §13.46(8): due within 20 days of the statement; paid on day 40 (2026-05-20), 3 % is added
    page = c.get(f"/bills/{bid}").text
    r = c.post(f"/bills/{bid}/payment", data={**keyed(page, "payment-form"), "on": "2026-05-20"})
    assert r.status_code == 200 and "Payment recorded." in r.text
    late = round(total * 0.03 + 1e-9, 2)
    assert f"${late:,.2f} (20 days past the grace period)" in r.text
    with psycopg.connect(db.url) as conn:
        actor, detail = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'bill.paid'").fetchone()
    assert actor == "clerk" and detail["via"] == "web" and detail["late_dollars"] == late


def test_the_command_line_takes_the_same_steps(db, tmp_path):
    from enforcement_support import run, sw
    cfg = tmp_path / "village.toml"
    cfg.write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    vid = web_round.copper_violation(db)
    out = run(tmp_path, db, "notice", "draft", "--violation", str(vid), "--out", "n", "--json")
    number = json.loads(out.stdout)["number"]
    r = run(tmp_path, db, "notice", "edit", number, "--remarks", "Sample again by 2026-04-15.")
    assert r.returncode == 0 and f"{number}: revision 2 (remarks)" in r.stdout
    r = run(tmp_path, db, "notice", "edit", number, "--remarks", "late", "--revision", "1")
    assert r.returncode == 2 and "the edit was made from version 1" in r.stderr
    # issued only as read: revision 1 is no longer the notice's, one line, nothing issued
    r = run(tmp_path, db, "notice", "issue", number, "--revision", "1", "--on", "2026-03-02", "--out", "n")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"sewerwatch: error: notice {number}: version 1 was read to be issued, but ")
    assert r.stderr.rstrip().endswith("meanwhile: nothing was issued; read version 2, then issue it")
    assert not (tmp_path / "n" / f"{number}.pdf").exists()
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT state FROM notices WHERE number = %s", (number,)).fetchone() == ("drafted",)
    r = run(tmp_path, db, "notice", "show", number)
    assert "(drafted, revision 2)" in r.stdout.splitlines()[0]
    r = run(tmp_path, db, "notice", "issue", number, "--revision", "2", "--on", "2026-03-02", "--out", "n")
    assert r.returncode == 0 and f"{number} issued 2026-03-02" in r.stdout, r.stderr
    r = run(tmp_path, db, "notice", "issue", number, "--revision", "2", "--on", "2026-03-02", "--out", "n")
    assert r.returncode == 2 and "is issued: only a drafted notice is issued" in r.stderr
    r = sw(tmp_path, db, "notice", "issue", "--help")
    assert r.returncode == 0 and "--revision N" in r.stdout and "nothing issued, when someone saved another " \
        "revision since" in " ".join(r.stdout.split())
    r = run(tmp_path, db, "notice", "penalty", number, "--dollars", "300", "--on", "2026-04-01")
    assert r.returncode == 0 and "penalty $300.00 collected 2026-04-01" in r.stdout
    r = run(tmp_path, db, "bills", "draft", "--quarter", "2026Q1", "--rates", "rates.toml", "--on", "2026-04-10")
    assert r.returncode == 0 and "bill run 1: 2026Q1 drafted, 2 bills" in r.stdout, r.stderr
    r = run(tmp_path, db, "bills", "issue", "1", "--on", "2026-04-10", "--out", "bills")
    assert r.returncode == 0 and "2 bills" in r.stdout, r.stderr
    r = run(tmp_path, db, "bills", "list", "--issued")
    bid = int(re.search(r"bill (\d+)\s+2026Q1 plating", r.stdout).group(1))
    r = run(tmp_path, db, "bills", "pay", str(bid), "--on", "2026-04-30")
    assert r.returncode == 0 and "no late charge" in r.stdout                    # day 20: in time
    r = run(tmp_path, db, "report", "icis", "--year", "2026", "--out", "r", "--by", "coord",
            *(() if ROUND_YEAR_OVER else ("--draft",)))
    assert r.returncode == 0 and "valid against EPA's schema" in r.stdout, r.stderr
    tail = "" if ROUND_YEAR_OVER else "-draft"
    assert (tmp_path / "r" / f"icis-pretreatment-2026{tail}.xml").is_file() and cfg.is_file()
    with psycopg.connect(db.url) as conn:
        vias = {d["via"] for (d,) in conn.execute("SELECT detail FROM audit_log WHERE action LIKE 'notice.%%' "
                                                  "OR action LIKE 'bill%%'").fetchall()}
    assert vias == {"cli"}
