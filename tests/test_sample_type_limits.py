"""Lab limits by sample type (limits/sample_types.py): a local-limits table of three columns,
Grab Sample, Composite Daily Maximum and 30 Day Average of composites.

The Town of Exampleford is a FICTIONAL test fixture (tests/data/by-sample-type/: its made-up
ordinance, pack, config and lab results) with the copper and zinc numbers of the table a new
user tried: copper 4.0 / 2.0 / 1.0 mg/l, zinc 6.8 / 3.4 / 2.0 mg/l (Sec. 40-12(a)); nickel
2.0 mg/l in a grab sample and 1.0 in any other (Sec. 40-12(b)), a limit naming no type beside
one naming grabs. Every expectation is worked out by hand from its words.
"""

from __future__ import annotations

import shutil
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from foundation.errors import InputError
from lab.checks.compliance import check_lab
from limits.pack_cli import check_pack
from limits.permits import parse_permit, site_rules
from limits.packs import load_pack
from limits.statements import of_violation
from tests.ordinance_cases import judged, sewerwatch, table

ROOT = Path(__file__).resolve().parent.parent
TOWN = ROOT / "tests" / "data" / "by-sample-type"
PACK = str(TOWN / "exampleford-mn.toml")
UTC = timezone.utc


def found(tb, permit=None):
    return judged(tb, PACK, permit)


# --- pack check: one limit per analyte, sample type and statistic ------------------------------

def test_pack_check_accepts_three_copper_limits_by_type_and_statistic():
    assert check_pack(TOWN / "exampleford-mn.toml") == []
    cu = [(r.basis, r.sample_type, r.limit) for r in load_pack(PACK).lab_limits("cu")]
    assert cu == [("sample", "grab", 4.0), ("sample", "composite", 2.0), ("monthly", "composite", 1.0)]


def test_pack_check_refuses_two_limits_for_one_type_and_statistic(tmp_path):
    text = (TOWN / "exampleford-mn.toml").read_text(encoding="utf-8")
    p = tmp_path / "exampleford-mn.toml"
    # the composite daily maximum made a second grab limit
    p.write_text(text.replace('sample_type = "composite"\ncomparison = "exceeding"\nlimit = 2.0',
                              'sample_type = "grab"\ncomparison = "exceeding"\nlimit = 2.0', 1), encoding="utf-8")
    [line] = check_pack(p)
    assert line == (f"{p}: rules[1] (cu-composite): overlaps rules[0] (cu-grab): both limit cu (lab-limit, basis "
                    "sample, grab samples) (Sec. 40-12(a) and Sec. 40-12(a)); an ordinance states one limit for it "
                    "(a stricter one for a user belongs in the user's permit)")
    p.write_text(text.replace('sample_type = "grab"', 'sample_type = "grabbed"', 1), encoding="utf-8")
    [line] = check_pack(p)
    assert line.startswith(f"{p}: rules[0] (cu-grab).sample_type: unknown sample type 'grabbed' (known: grab, composite)"), line


# --- the new user's cases, by hand ----------------------------------------------------------------

def test_a_grab_is_judged_by_the_grab_column_only():
    # Sec. 40-12(a) copper: a grab of 3.0 (under the grab limit 4.0) and one of exactly 4.0
    # ("exceeding" 4.0: 4.0 is lawful) are no violations, though both are over the composite
    # daily maximum of 2.0; a grab of 4.1 is one, against 4.0
    tb = table(("G1", "2026-03-02T15:00", "cu", 3.0, "grab"),
               ("G2", "2026-03-03T15:00", "cu", 4.0, "grab"),
               ("G3", "2026-03-04T15:00", "cu", 4.1, "grab"))
    vs = check_lab(tb, PACK)
    assert [(v["rule"], v["evidence"]["samples"], v["limit"]) for v in vs] == [("cu-grab", ["G3"], 4.0)]
    assert of_violation(vs[0]) == "exceeding 4 mg/l in a grab sample"
    assert vs[0]["evidence"]["sample_type"] == "grab" and vs[0]["citation"] == "Exampleford Town Code Sec. 40-12(a)"
    # zinc: a grab of 6.0 (grab limit 6.8) is lawful though over 3.4; 6.8 lawful; 6.9 not
    tb = table(("Z1", "2026-03-02T15:00", "zn", 6.0, "grab"), ("Z2", "2026-03-03T15:00", "zn", 6.8, "grab"),
               ("Z3", "2026-03-04T15:00", "zn", 6.9, "grab"))
    assert found(tb) == [("zn-grab", ["Z3"], 6.8)]


def test_a_composite_is_judged_by_the_composite_column():
    # copper composites: 1.9 under, 2.0 at (lawful), 2.1 over the daily maximum of 2.0; zinc 3.4 at, 3.5 over
    tb = table(("C1", "2026-04-02T15:00", "cu", 1.9, "composite"), ("C2", "2026-04-03T15:00", "cu", 2.0, "composite"),
               ("C3", "2026-04-04T15:00", "cu", 2.1, "composite"), ("C4", "2026-04-05T15:00", "zn", 3.4, "composite"),
               ("C5", "2026-04-06T15:00", "zn", 3.5, "composite"))
    vs = check_lab(tb, PACK)
    got = [(v["rule"], v["evidence"]["samples"], v["limit"]) for v in vs]
    # and the month's averages: copper (1.9 + 2.0 + 2.1) / 3 = 2.0 > 1.0; zinc (3.4 + 3.5) / 2 = 3.45 > 2.0
    assert got == [("cu-30-day", ["C1", "C2", "C3"], 1.0), ("cu-composite", ["C3"], 2.0),
                   ("zn-30-day", ["C4", "C5"], 2.0), ("zn-composite", ["C5"], 3.4)]
    assert of_violation(vs[1]) == "exceeding 2 mg/l in a composite sample"
    assert of_violation(vs[0]) == "exceeding 1 mg/l as a monthly average of composite samples"


def test_the_30_day_average_is_of_composites_only():
    # May: composites 0.8 and 1.2 average exactly 1.0, the 30-day limit: lawful, though a grab
    # of 3.5 (lawful as a grab) was taken that month and would make the average 1.83
    may = table(("C1", "2026-05-05T15:00", "cu", 0.8, "composite"), ("G1", "2026-05-12T15:00", "cu", 3.5, "grab"),
                ("C2", "2026-05-19T15:00", "cu", 1.2, "composite"))
    assert found(may) == []
    # June: grabs only (3.0, 3.5, both lawful): no 30-day average of composites exists
    june = table(("G2", "2026-06-05T15:00", "cu", 3.0, "grab"), ("G3", "2026-06-12T15:00", "cu", 3.5, "grab"))
    assert found(june) == []
    # July: composites 1.0 and 1.1 average 1.05 > 1.0: a violation of the composites alone
    july = table(("C3", "2026-07-05T15:00", "cu", 1.0, "composite"), ("G4", "2026-07-06T15:00", "cu", 0.1, "grab"),
                 ("C4", "2026-07-19T15:00", "cu", 1.1, "composite"))
    [v] = check_lab(july, PACK)
    assert (v["rule"], v["evidence"]["samples"], v["evidence"]["results"]) == ("cu-30-day", ["C3", "C4"], 2)
    assert v["peak"] == pytest.approx(1.05) and v["evidence"]["month"] == "2026-07"


def test_a_type_no_limit_names_is_judged_by_the_limits_naming_none():
    # Sec. 40-12(b) nickel: a grab of 1.5 is lawful (grab limit 2.0; the 1.0 limit is for "any
    # other sample"), a composite of 1.5 is over 1.0; a grab of 2.1 is over 2.0 and only it
    tb = table(("G1", "2026-03-02T15:00", "ni", 1.5, "grab"), ("C1", "2026-03-03T15:00", "ni", 1.5, "composite"),
               ("G2", "2026-03-04T15:00", "ni", 2.1, "grab"))
    vs = check_lab(tb, PACK)
    assert [(v["rule"], v["evidence"]["samples"]) for v in vs] == [("ni-max", ["C1"]), ("ni-grab", ["G2"])]
    assert of_violation(vs[0]) == "more than 1 mg/l in any sample"     # a limit naming no type: as before


def test_a_table_without_sample_types_is_judged_as_before():
    # results of no stated type (a table built without them): every limit judges every result
    tb = table(("X1", "2026-03-02T15:00", "ni", 1.5, ""), typed=False)
    assert [v["rule"] for v in check_lab(tb, PACK)] == ["ni-max"]
    tb = table(("X1", "2026-03-02T15:00", "cu", 3.0, ""), typed=False)
    assert {v["rule"] for v in check_lab(tb, PACK)} == {"cu-composite", "cu-30-day"}


# --- a permit's limits by sample type: the stricter of the two per type -------------------------

PERMIT = {"number": "EXF-IU-1", "site": "plater", "issued": date(2026, 1, 1), "effective": date(2026, 1, 1),
          "expires": date(2027, 1, 1), "limits": [
              {"condition": "3(a)", "analyte": "cu", "sample_type": "composite", "unit": "mg/l", "daily_maximum": 1.5,
               "words": "Copper, composite daily maximum 1.5 mg/l"},
              {"condition": "3(b)", "analyte": "cu", "sample_type": "grab", "unit": "mg/l", "daily_maximum": 5.0,
               "words": "Copper, grab 5.0 mg/l"}]}


def test_the_stricter_of_permit_and_ordinance_per_type():
    pack = load_pack(PACK)
    permit = parse_permit(PERMIT, "permit.toml", pack)
    rules = {r.id: r for r in site_rules(pack, permit) if r.analyte == "cu"}
    # composite: the permit's 1.5 is stricter than the ordinance's 2.0; grab: the ordinance's
    # 4.0 is stricter than the permit's 5.0; the 30-day average has no permit counterpart
    assert (rules["cu-composite"].origin, rules["cu-composite"].limit_canonical) == ("permit", 1.5)
    assert (rules["cu-grab"].origin, rules["cu-grab"].limit_canonical) == ("ordinance", 4.0)
    assert set(rules) == {"cu-grab", "cu-composite", "cu-30-day"}
    assert "stricter than Exampleford Town Code Sec. 40-12(a)" in rules["cu-composite"].stricter_of
    tb = table(("C1", "2026-03-03T15:00", "cu", 1.6, "composite"), ("G1", "2026-03-04T15:00", "cu", 4.5, "grab"),
               ("C2", "2026-04-03T15:00", "cu", 0.5, "composite"))
    got = found(tb, permit)
    # C1 1.6 > 1.5 (the permit's); G1 4.5 > 4.0 (the ordinance's, not the permit's 5.0); March's
    # composites: 1.6 > 1.0; April's 0.5 lawful
    assert got == [("cu-30-day", ["C1"], 1.0), ("cu-composite", ["C1"], 1.5), ("cu-grab", ["G1"], 4.0)]


def test_a_permit_refuses_two_limits_of_one_type():
    pack = load_pack(PACK)
    twice = {**PERMIT, "limits": [PERMIT["limits"][0], {**PERMIT["limits"][0], "condition": "3(c)"}]}
    with pytest.raises(InputError, match=r"^permit\.toml: limits\[1\]: cu in composite samples is limited twice "
                                         r"\(first at limits\[0\]\)"):
        parse_permit(twice, "permit.toml", pack)
    with pytest.raises(InputError, match=r"sample_type: unknown sample type 'spot' \(known: grab, composite\)"):
        parse_permit({**PERMIT, "limits": [{**PERMIT["limits"][0], "sample_type": "spot"}]}, "permit.toml", pack)


# --- stored, judged, listed, noticed ----------------------------------------------------------------

def _main(tmp_path: Path, db, *args) -> tuple[int, str, str]:
    """``sewerwatch --config town.toml ARGS`` in this process, in ``tmp_path``."""
    return sewerwatch(tmp_path, db, "town.toml", *args)


@pytest.fixture
def town(tmp_path, db):
    import json
    for f in ("town.toml", "exampleford-mn.toml", "lab.csv"):
        shutil.copy(TOWN / f, tmp_path / f)
    code, _, err = _main(tmp_path, db, "db", "migrate")
    assert code == 0, err
    code, out, err = _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab", "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 7
    return tmp_path


@pytest.mark.services
def test_stored_results_are_judged_listed_and_noticed_by_their_type(town, db):
    import json
    import re

    from lab.documents.pdf import pdf_text
    from lab.store.listing import results_with_limits
    from tests.plain_words import internal

    code, out, err = _main(town, db, "lab", "check", "--since", "2026-03-01", "--until", "2026-04-01", "--store",
                           "--json")
    assert code == 0, err
    got = sorted((v["rule"], tuple(v["evidence"]["samples"])) for v in json.loads(out)["violations"])
    # lab.csv by hand: grabs of copper 3.0 and 4.0 lawful, 4.1 over 4.0; a zinc grab of 6.0
    # lawful; copper composites 0.8 and 1.2 average exactly 1.0 (lawful; the grabs are not
    # averaged in: with them 2.62); a zinc composite of 3.5 over 3.4, and March's zinc
    # composites (3.5 alone) over the 30-day 2.0
    assert got == [("cu-grab", ("G-303",)), ("zn-30-day", ("C-307",)), ("zn-composite", ("C-307",))]

    with db.connect() as conn:
        rows = results_with_limits(conn, datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC))
    by = {r["sample"]: r for r in rows}
    # the limits beside a result are those of its type, stated with it
    assert [x["stated"] for x in by["G-302"]["limits"]] == ["exceeding 4 mg/l in a grab sample"]
    assert [x["stated"] for x in by["C-305"]["limits"]] == [
        "exceeding 2 mg/l in a composite sample", "exceeding 1 mg/l as a monthly average of composite samples"]
    assert by["G-302"]["exceeds"] == [] and by["C-305"]["exceeds"] == []
    assert [(x["rule"], x["form"]) for x in by["G-303"]["exceeds"]] == [("cu-grab", "in a grab sample")]

    code, out, err = _main(town, db, "findings", "list", "--site", "plater", "--since", "2026-03-01", "--json")
    assert code == 0, err
    [v] = [x for x in json.loads(out)["violations"] if x["rule"] == "cu-grab"]
    code, out, err = _main(town, db, "notice", "draft", "--violation", str(v["id"]), "--on", "2026-04-10",
                           "--out", "out")
    assert code == 0, err
    [pdf] = (town / "out").glob("*.pdf")
    text = re.sub(r"\s+", " ", pdf_text(pdf, layout=False).replace("\f", " "))
    # the limit of the sample's type, in words; the result by sample id, date, laboratory, method
    assert "exceeding 4 mg/l in a grab sample" in text and "2 mg/l" not in text, text
    assert "G-303" in text and "2026-03-04" in text and "Northfield Analytical" in text and "EPA 200.7" in text
    assert "Exampleford Town Code Sec. 40-12(a)" in text and "Copper: Grab Sample 4.0 mg/l" in text
    # no file, line or rule id
    assert "lab.csv" not in text and "line 4" not in text and "cu-grab" not in text, text
    assert internal(text, {"sample_type"}) == [], internal(text)


@pytest.mark.services
def test_the_portal_states_the_limit_of_the_samples_type(town, db):
    import json

    from ereport.owed import home

    code, out, err = _main(town, db, "lab", "check", "--since", "2026-03-01", "--until", "2026-04-01", "--store",
                           "--json")
    assert code == 0, err
    with db.connect() as conn:
        sid, key, pack = conn.execute("SELECT id, key, pack FROM sites WHERE key = 'plater'").fetchone()
        data = home(conn, {"id": sid, "key": key, "pack": pack, "name": "Exampleford Plating Works"},
                    datetime(2026, 4, 10, 12, tzinfo=UTC))
    stated = {v["rule"]: v["stated"] for v in data["violations"]}
    assert stated == {"cu-grab": "exceeding 4 mg/l in a grab sample",
                      "zn-composite": "exceeding 3.4 mg/l in a composite sample",
                      "zn-30-day": "exceeding 2 mg/l as a monthly average of composite samples"}, json.dumps(stated)
    assert {r["sample"]: r["sample_type"] for r in data["results"]}["G-301"] == "grab"


def test_the_portals_form_carries_the_sample_type_into_the_lab_csv():
    import csv
    import io

    from lab.readers.labcsv import LabReader
    from lab.store.results import _sample_kind
    from ereport.labcheck import form_csv

    data = form_csv("plater", [{"sample_id": "G-1", "collected": "2026-03-04", "analyte": "cu", "value": "4.1",
                                "unit": "mg/l", "sample_type": "grab"},
                               {"sample_id": "C-1", "collected": "2026-03-05", "analyte": "cu", "value": "1.9",
                                "unit": "mg/l", "sample_type": "composite"},
                               {"sample_id": "X-1", "collected": "2026-03-06", "analyte": "cu", "value": "1.0",
                                "unit": "mg/l"}])
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert [r["sample_type"] for r in rows] == ["grab", "composite", ""]
    from zoneinfo import ZoneInfo
    tz = ZoneInfo("America/Chicago")
    kinds = [_sample_kind(r, tz)[0] for r in LabReader("form", text=data.decode(), tz=tz) if hasattr(r, "extra")]
    assert kinds == ["grab", "composite", "grab"]         # none given: the store's default, grab


def test_the_offices_typed_rows_carry_their_sample_type():
    import csv
    import io

    from lab.store.uploads import rows_csv

    data = rows_csv([{"sample_id": "C-9", "site": "plater", "collected": "2026-03-05", "analyte": "cu", "value": "1.9",
                      "unit": "mg/l", "sample_type": "composite"},
                     {"sample_type": "grab", "unit": ""}])          # a blank row: its default type alone keeps it blank
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert [(r["sample_id"], r["sample_type"]) for r in rows] == [("C-9", "composite")]
