"""The state's report beyond the finished year's figures (tests/test_state_report.py), against
the real database, over the village of tests/state_village.py seeded afresh for this module:

- the compliance calendar before the year ends: each significant user the village has not yet
  sampled or inspected this year is *due* ("not yet sampled by the village this year", "not yet
  inspected this year"), on the command line and on the office's calendar page; a sample the
  village takes ends it for that user, and only that one;
- the command line's default author: the operating-system user's staff account, by its full
  name; an operating-system user with no staff account is refused in one line before anything
  is written;
- a count that is 0 is written as 0 (40 CFR 403.8(f)(2)(v): every significant user sampled by
  the village and inspected in the year: ``SIUsNotSampled`` and ``SIUsNotInspected`` are 0, and
  nobody's name published yet: ``SIUsSNCPublishedNewspaper`` 0), never left out;
- the newspaper's publication of the SNC list recorded with a photo of the printed page (a JPEG
  on the command line, a PNG too), the office serving the photo back as it was recorded and the
  state's figure counting the names it published.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import state_village
from enforcement_support import run

pytestmark = pytest.mark.services

TZ = ZoneInfo("America/Chicago")


@pytest.fixture(scope="module")
def village(module_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("state-more")
    state_village.seed(tmp, module_db)
    return module_db, tmp


def _summary(xml: bytes) -> tuple[dict, dict]:
    """The header's and the performance summary's elements, by name (text as written)."""
    from enforcement import icis

    root = ET.fromstring(xml)
    ns = {"i": icis.NS}
    head = {el.tag.split("}")[1]: el.text for el in root.find("i:Header", ns)}
    pps = root.find("i:Payload/i:PretreatmentPerformanceSummaryData/i:PretreatmentPerformanceSummary", ns)
    return head, {el.tag.split("}")[1]: el.text for el in pps}


def _control(tmp, db, year: int) -> dict:
    """The calendar's village-sampling and village-inspection entries on the year's last day,
    by (kind, site): (state, title)."""
    r = run(tmp, db, "calendar", "--from", f"{year}-12-01", "--to", f"{year + 1}-01-01", "--json")
    assert r.returncode == 0, r.stderr
    return {(e["kind"], e["site"]): (e["state"], e["title"]) for e in json.loads(r.stdout)
            if e["kind"] in ("village-sampling", "village-inspection")}


def _lab(tmp, db, name: str, rows: str) -> None:
    (tmp / name).write_text("sample_id,site,collected,analyte,value,unit,qualifier,laboratory,sampled_by\n" + rows,
                            encoding="utf-8")
    r = run(tmp, db, "lab", "import", name, "--actor", "lab")
    assert r.returncode == 0, r.stdout + r.stderr


def test_before_the_year_ends_the_calendar_shows_what_the_village_still_owes(village):
    from web_round import config as office_cfg
    from web_support import cheap_hashes, office_client, sign_in

    db, tmp = village
    year = datetime.now(TZ).year                  # not over: the seeded samples and inspection are of 2025
    got = _control(tmp, db, year)
    for site, name in (("plating", "Lakeside Plating"), ("candy", "Sweet Creek Confections"),
                       ("sausage", "Palmyra Sausage Co.")):
        assert got[("village-sampling", site)] == ("due", f"{name}: not yet sampled by the village this year")
        assert got[("village-inspection", site)] == ("due", f"{name}: not yet inspected this year")
    assert len(got) == 6                          # the three significant users, nobody else

    # the office's calendar says the same, the inspection's line linking to the inspection form
    with cheap_hashes(), office_client(db, tmp / "office-cal",
                                       cfg=office_cfg(tmp / "office-cal", tmp / "village.toml")) as c:
        assert sign_in(c, "coord").status_code == 200
        page = c.get("/calendar", params={"month": f"{year}-12", "view": "list"}).text
    assert "Sweet Creek Confections: not yet sampled by the village this year" in page
    assert '/inspections/new?site=plating">Lakeside Plating: not yet inspected this year</a>' in page

    # the user's own sample does not end it; the village's does, for that user only
    # (taken a few minutes ago, whatever the day of the year the suite runs on: never in the future)
    own_at = datetime.now(TZ) - timedelta(minutes=3)
    village_at = own_at + timedelta(minutes=1)
    _lab(tmp, db, "own.csv",
         f"O-01,candy,{own_at:%Y-%m-%d %H:%M},cn,0.1,mg/l,,Rock River Environmental Laboratory,user\n")
    assert _control(tmp, db, year)[("village-sampling", "candy")][0] == "due"
    _lab(tmp, db, "village.csv",
         f"W-01,candy,{village_at:%Y-%m-%d %H:%M},cn,0.1,mg/l,,Rock River Environmental Laboratory,village\n")
    got = _control(tmp, db, year)
    assert got[("village-sampling", "candy")] == (
        "taken", f"Sweet Creek Confections: sampled by the village in {year} (first on {village_at:%Y-%m-%d})")
    assert got[("village-inspection", "candy")] == ("due", "Sweet Creek Confections: not yet inspected this year")
    assert got[("village-sampling", "plating")] == ("due", "Lakeside Plating: not yet sampled by the village this year")

    # the year before, over: what was not done is missing, not due
    before = _control(tmp, db, 2025)
    assert before[("village-sampling", "candy")] == ("missing", "Sweet Creek Confections: not sampled by the village "
                                                                "in 2025")


def test_the_command_line_names_the_operating_system_users_staff_account(village):
    from enforcement import icis

    db, tmp = village
    # the operating-system user, as the login gives it to every program it starts
    r = run(tmp, db, "report", "icis", "--year", "2025", "--out", "os", os_user="super")
    assert r.returncode == 0 and "submitted as PALMYRA-WWTP (Village of Palmyra Wastewater Utility) by Sam Super" \
        in r.stdout, r.stderr
    xml = (tmp / "os" / "icis-pretreatment-2025.xml").read_bytes()
    assert icis.validate(xml) == []
    head, _ = _summary(xml)
    assert (head["Id"], head["Author"], head["Organization"]) == (
        "PALMYRA-WWTP", "Sam Super", "Village of Palmyra Wastewater Utility")

    # an operating-system user with no staff account: one line, before anything is written
    r = run(tmp, db, "report", "icis", "--year", "2025", "--out", "nobody", os_user="mallory")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "sewerwatch: error: no staff account 'mallory': the state's report names its author by a staff account "
        "(sewerwatch users add, or --by ACCOUNT)"]
    assert not (tmp / "nobody").exists()


def test_a_count_of_none_is_written_as_0(village):
    from enforcement import icis

    db, tmp = village
    # 40 CFR 403.8(f)(2)(v): the village samples and inspects each significant user in 2025
    _lab(tmp, db, "rounds.csv",
         "R-01,candy,2025-11-04 09:00,cn,0.2,mg/l,,Rock River Environmental Laboratory,village\n")
    for site, at in (("plating", "2025-10-07T10:00:00-05:00"), ("candy", "2025-11-04T09:30:00-06:00")):
        r = run(tmp, db, "inspections", "record", "--site", site, "--at", at, "--inspector", "Ines Inspector",
                "--representative", "J. Nowak")
        assert r.returncode == 0, r.stdout + r.stderr
    r = run(tmp, db, "report", "icis", "--year", "2025", "--by", "coord", "--out", "zero")
    assert r.returncode == 0, r.stderr
    xml = (tmp / "zero" / "icis-pretreatment-2025.xml").read_bytes()
    assert icis.validate(xml) == []
    _, got = _summary(xml)
    assert got["NumberSIUs"] == "3"
    # by hand: the plater (V-01) and the sausage maker (C-02) sampled by the village before, the
    # confectioner now; the sausage maker inspected on 2025-06-10, the two others now
    assert (got["SIUsNotSampled"], got["SIUsNotInspected"]) == ("0", "0")
    # no publication recorded yet; no report or schedule SNC; no order; nothing collected
    assert got["SIUsSNCPublishedNewspaper"] == "0"
    assert (got["SIUsSNCWithReportingRequirements"], got["SIUsSNCWithPretreatmentSchedule"],
            got["AdministrativeOrdersIssuedSIUs"]) == ("0", "0", "0")
    assert (got["DollarAmountPenaltiesCollectedPPS"], got["IUsWhichPenaltiesHaveBeenCollectedPPS"]) == ("0", "0")
    # the lines of the printed summary say the same
    assert any(ln.split() == ["SIUsNotInspected", "0", "significant", "users", "not", "inspected", "in", "the",
                              "year"] for ln in r.stdout.splitlines())
    r = run(tmp, db, "report", "icis", "--year", "2025", "--check", "--json")
    kinds = {i["kind"] for i in json.loads(r.stdout)}
    assert "not-sampled" not in kinds and "not-inspected" not in kinds and "snc-without-action" in kinds


def _photo(kind: str, words: str) -> bytes:
    """A photo of the printed page (Pillow, the imaging library WeasyPrint already brings)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (640, 320), "white")
    ImageDraw.Draw(img).text((20, 20), words, fill="black")
    out = io.BytesIO()
    img.save(out, format=kind)
    return out.getvalue()


def test_a_publication_recorded_with_a_photo_of_the_page(village):
    from web_round import config as office_cfg
    from web_support import cheap_hashes, office_client, sign_in

    db, tmp = village
    jpeg = _photo("JPEG", "Public notice: Lakeside Plating, Sweet Creek Confections")
    png = _photo("PNG", "Public notice: Sweet Creek Confections")
    (tmp / "page.jpg").write_bytes(jpeg)
    (tmp / "page.png").write_bytes(png)
    r = run(tmp, db, "report", "publish", "--year", "2025", "--newspaper", "Palmyra Enterprise", "--on", "2026-01-15",
            "--page", "page.jpg", "--site", "plating", "--by", "coord")
    assert r.returncode == 0 and "naming Lakeside Plating (page page.jpg" in r.stdout, r.stderr
    r = run(tmp, db, "report", "publish", "--year", "2025", "--newspaper", "Daily Jefferson County Union",
            "--on", "2026-01-22", "--page", "page.png", "--site", "candy", "--by", "coord")
    assert r.returncode == 0 and "naming Sweet Creek Confections (page page.png" in r.stdout, r.stderr
    # the same photo for the same newspaper and day: refused the second time, naming the one recorded
    r = run(tmp, db, "report", "publish", "--year", "2025", "--newspaper", "Daily Jefferson County Union",
            "--on", "2026-01-22", "--page", "page.png", "--by", "coord")
    assert r.returncode == 2 and "Daily Jefferson County Union on 2026-01-22 is already recorded (by coord" \
        in r.stderr
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT id, media_type, page_name, bytes FROM snc_publications ORDER BY published_on"
                            ).fetchall()
    assert [r[1:] for r in rows] == [("image/jpeg", "page.jpg", len(jpeg)), ("image/png", "page.png", len(png))]

    with cheap_hashes(), office_client(db, tmp / "office-pub",
                                       cfg=office_cfg(tmp / "office-pub", tmp / "village.toml")) as c:
        assert sign_in(c, "coord").status_code == 200
        for (pid, kind, _name, _n), content in zip(rows, (jpeg, png)):
            got = c.get(f"/reports/publications/{pid}")
            assert got.status_code == 200 and got.headers["content-type"].startswith(kind)
            assert got.content == content                   # the photo as it was recorded
        page = c.get("/reports", params={"year": 2025}).text
        assert "Palmyra Enterprise" in page and "Daily Jefferson County Union" in page
        assert f'/reports/publications/{rows[1][0]}"' in page
        xml = c.get("/reports/icis-2025.xml")
    assert xml.status_code == 200
    _, got = _summary(xml.content)
    assert got["SIUsSNCPublishedNewspaper"] == "2"                # both users on the list, each named once
