"""A fourth real ordinance: the Town of Mooresville, Indiana (tests/data/mooresville-in/, its words
quoted in words.md with where they were found): a local-limits table of three columns and a
strength surcharge with the rate the ordinance fixes.

Table 1 "NONCATEGORICAL DISCHARGE LIMITS" of the 1989 ordinance (¶224) gives, per pollutant, a
"Grab Sample" limit, a "(Composite Sample) Daily Maximum Concentration" and an "(Average of
Composite Samples) 30 Day Average Concentration": copper 4.0 / 2.0 / 1.0 mg/l, zinc 6.8 / 3.4 /
1.5 mg/l. The pack reads them as maxima ("more than": a result or an average equal to the number
is lawful) and the 30 days as a calendar month of composites (the words do not say which days).
The 1982 rate ordinance, Section II A.: "an additional charge of twelve cents (12ç) per pound of
biochemical oxygen demand in excess of 200 PPM". Every expectation below is worked out by hand
from those words.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from foundation.errors import InputError
from lab.charges import BillInputs, charges, rates_applied
from lab.checks.compliance import check_lab
from lab.results_table import LabTable
from limits.pack_cli import check_pack
from limits.packs import load_pack
from limits.statements import of_violation
from tests.ordinance_cases import judged, sewerwatch, table

ROOT = Path(__file__).resolve().parent.parent
TOWN = ROOT / "tests" / "data" / "mooresville-in"
PACK = str(TOWN / "mooresville-in.toml")
UTC = timezone.utc

#: the table's names the pack reads, by analyte id (every row of Table 1)
NAMES = {"Cyanide (Amenable)": "cn-amenable", "Cyanide (Total)": "cn", "Chromium (VI)": "cr6",
         "Chromium (Total)": "cr", "Copper": "cu", "Nickel": "ni", "Zinc": "zn", "Lead": "pb", "Cadmium": "cd",
         "Tin": "sn", "Fluoride": "fluoride"}


def quoted() -> dict[str, tuple[float, float, float]]:
    """Each row of Table 1 as words.md quotes it: analyte -> (grab, composite daily maximum, 30
    day average) [mg/l] ("1 . 0" as printed is 1.0)."""
    text = (TOWN / "words.md").read_text(encoding="utf-8")
    out = {}
    for name, analyte in NAMES.items():
        [row] = re.findall(rf"^\| {re.escape(name)} \| ([0-9. ]+) \| ([0-9. ]+) \| ([0-9. ]+) \|$", text, re.M)
        out[analyte] = tuple(float(x.replace(" ", "")) for x in row)
    return out


def test_the_pack_states_the_three_columns_of_each_quoted_row():
    assert check_pack(TOWN / "mooresville-in.toml") == []
    pack, rows = load_pack(PACK), quoted()
    assert len(rows) == 11
    for analyte, (grab, composite, average) in rows.items():
        # the stored page lists each column in order; each grab is twice its composite, so the
        # rows were set back together right
        assert grab == pytest.approx(2 * composite), analyte
        got = {(r.sample_type, r.basis): r.limit for r in pack.lab_limits(analyte)}
        assert got == {("grab", "sample"): grab, ("composite", "sample"): composite,
                       ("composite", "monthly"): average}, analyte
    cu = {r.id: r for r in pack.lab_limits("cu")}
    assert cu["cu-30-day"].words.endswith("(Average of Composite Samples) 30 Day Average Concentration (mg/1 ) 1.0")
    assert {r.comparison for a in rows for r in pack.lab_limits(a)} == {"more than"}


def test_a_grab_is_judged_by_the_grab_column_at_over_and_under():
    # copper grabs: 3.9 is under 4.0 (lawful, though over the composite daily maximum of 2.0),
    # 4.0 is at it ("more than" 4.0: lawful), 4.1 is over; no composite that month, so no average
    tb = table(("G1", "2026-03-02T15:00", "cu", 3.9, "grab"), ("G2", "2026-03-03T15:00", "cu", 4.0, "grab"),
               ("G3", "2026-03-04T15:00", "cu", 4.1, "grab"))
    assert judged(tb, PACK) == [("cu-grab", ["G3"], 4.0)]
    [v] = check_lab(tb, PACK)
    assert of_violation(v) == "more than 4 mg/l in a grab sample"
    assert v["citation"] == "Town of Mooresville 1989 ordinance ¶224, Table 1"
    # zinc grabs: 6.7 under, 6.8 at, 6.9 over 6.8
    tb = table(("Z1", "2026-03-02T15:00", "zn", 6.7, "grab"), ("Z2", "2026-03-03T15:00", "zn", 6.8, "grab"),
               ("Z3", "2026-03-04T15:00", "zn", 6.9, "grab"))
    assert judged(tb, PACK) == [("zn-grab", ["Z3"], 6.8)]


def test_a_composite_is_judged_by_the_daily_maximum_at_over_and_under():
    # each month's composites average exactly the 30 day limit (lawful), so only the daily
    # maximum can be broken:
    #   April: 2.0 (at the daily maximum 2.0: lawful), 0.5, 0.5: average 3.0 / 3 = 1.0
    #   May:   2.1 (over 2.0), 0.4, 0.5: average 3.0 / 3 = 1.0
    #   June:  1.9 (under 2.0), 0.6, 0.5: average 3.0 / 3 = 1.0
    tb = table(("C1", "2026-04-06T15:00", "cu", 2.0, "composite"), ("C2", "2026-04-13T15:00", "cu", 0.5, "composite"),
               ("C3", "2026-04-20T15:00", "cu", 0.5, "composite"), ("C4", "2026-05-04T15:00", "cu", 2.1, "composite"),
               ("C5", "2026-05-11T15:00", "cu", 0.4, "composite"), ("C6", "2026-05-18T15:00", "cu", 0.5, "composite"),
               ("C7", "2026-06-01T15:00", "cu", 1.9, "composite"), ("C8", "2026-06-08T15:00", "cu", 0.6, "composite"),
               ("C9", "2026-06-15T15:00", "cu", 0.5, "composite"))
    assert judged(tb, PACK) == [("cu-composite", ["C4"], 2.0)]
    [v] = check_lab(tb, PACK)
    assert of_violation(v) == "more than 2 mg/l in a composite sample"
    # zinc, daily maximum 3.4: April 3.4 (at), 0.4, 0.7 average 4.5 / 3 = 1.5 (at the 30 day 1.5);
    # May 3.5 (over), 0.3, 0.7 average 1.5
    tb = table(("Z1", "2026-04-06T15:00", "zn", 3.4, "composite"), ("Z2", "2026-04-13T15:00", "zn", 0.4, "composite"),
               ("Z3", "2026-04-20T15:00", "zn", 0.7, "composite"), ("Z4", "2026-05-04T15:00", "zn", 3.5, "composite"),
               ("Z5", "2026-05-11T15:00", "zn", 0.3, "composite"), ("Z6", "2026-05-18T15:00", "zn", 0.7, "composite"))
    assert judged(tb, PACK) == [("zn-composite", ["Z4"], 3.4)]


def test_the_30_day_average_is_of_a_months_composites_at_over_and_under_never_a_grab():
    # July: composites 0.8 and 1.2 average exactly 1.0 (at: lawful); the month's grab of 3.5
    # (lawful under 4.0) is not averaged in: with it (0.8 + 1.2 + 3.5) / 3 = 1.83 would be over
    # August: composites 1.0 and 1.1 average 1.05, over 1.0; the grab of 0.1 is not averaged in
    # either (with it 0.73 would be lawful)
    # September: composites 0.9 and 1.0 average 0.95, under 1.0; a grab of 3.9 beside them
    tb = table(("C1", "2026-07-06T15:00", "cu", 0.8, "composite"), ("G1", "2026-07-13T15:00", "cu", 3.5, "grab"),
               ("C2", "2026-07-20T15:00", "cu", 1.2, "composite"), ("C3", "2026-08-03T15:00", "cu", 1.0, "composite"),
               ("G2", "2026-08-10T15:00", "cu", 0.1, "grab"), ("C4", "2026-08-17T15:00", "cu", 1.1, "composite"),
               ("C5", "2026-09-07T15:00", "cu", 0.9, "composite"), ("G3", "2026-09-14T15:00", "cu", 3.9, "grab"),
               ("C6", "2026-09-21T15:00", "cu", 1.0, "composite"))
    [v] = check_lab(tb, PACK)
    assert (v["rule"], v["evidence"]["samples"], v["evidence"]["results"]) == ("cu-30-day", ["C3", "C4"], 2)
    assert v["peak"] == pytest.approx(1.05) and v["limit"] == 1.0 and v["evidence"]["month"] == "2026-08"
    assert of_violation(v) == "more than 1 mg/l as a monthly average of composite samples"


# --- the surcharge, through the bill's line (lab.charges), by hand ---------------------------------

def _surcharge(rows, rates_doc: dict, per_lb: dict, volume_mg: float = 1.0):
    """The bill line of the pack's surcharge for ``rows`` (analyte, mg/l) of one quarter."""
    [(prov, kind, terms)] = [c for c in charges(PACK, rates_doc) if c[0].id == "surcharge"]
    values, applied, missing = rates_applied(prov, rates_doc, "plater", "rates.toml")
    assert missing == []
    n = len(rows)
    tb = LabTable(np.array(["plater"] * n, dtype=object), np.array([f"S{i}" for i in range(n)], dtype=object),
                  np.array([np.datetime64("2026-02-02T15:00")] * n, dtype="datetime64[us]"),
                  np.array([a for a, _ in rows], dtype=object), np.array([float(x) for _, x in rows]),
                  np.zeros(n, dtype=bool))
    line = kind.line(prov, terms, BillInputs("plater", PACK, 2026, volume_mg, tb, per_lb, "rates.toml", "zero", []),
                     values)
    return line, applied


def test_the_surcharge_at_the_ordinances_twelve_cents_a_pound_of_bod_over_200():
    # over: BOD 400 and 500 average 450; 450 - 200 = 250 mg/l x 1.0 MG x 8.34 = 2,085 lb x $0.12 = $250.20
    line, applied = _surcharge([("bod5", 400), ("bod5", 500)], {}, {})
    assert line["dollars"] == 250.20
    assert line["detail"]["analytes"]["bod5"]["pounds"] == pytest.approx(2085.0)
    assert applied == [{"name": "bod5", "words": "the rate per pound of Biochemical oxygen demand, 5-day 20 °C", "value": 0.12, "by": "ordinance",
                        "citation": "Town of Mooresville 1982 rate ordinance Section II(A)", "effective": "1982-01-01"}]
    # just over: 201 - 200 = 1 mg/l x 8.34 = 8.34 lb x $0.12 = $1.0008, $1.00
    assert _surcharge([("bod5", 201)], {}, {})[0]["dollars"] == 1.00
    # at: 150 and 250 average 200, "in excess of 200 PPM" is nothing; under: 180, nothing
    assert _surcharge([("bod5", 150), ("bod5", 250)], {}, {})[0]["dollars"] == 0.0
    assert _surcharge([("bod5", 180)], {}, {})[0]["dollars"] == 0.0
    # the utility's rates file's bod ($0.15) overrides the ordinance's: 2,085 lb x $0.15 = $312.75
    line, applied = _surcharge([("bod5", 400), ("bod5", 500)], {"bod": 0.15}, {"bod5": 0.15})
    assert line["dollars"] == 312.75 and [(a["value"], a["by"]) for a in applied] == [(0.15, "rates")]


def test_suspended_solids_have_a_normal_strength_but_no_rate_the_ordinance_fixes():
    # "B. Special Use Rate Based upon Suspended Solids:" is where the stored text ends: results
    # for TSS with no rate from the rates file are refused, never billed at a stand-in rate
    with pytest.raises(InputError, match=r"^rates\.toml: no rate for tss \(site 'plater' has results\)"):
        _surcharge([("bod5", 400), ("tss", 300)], {}, {})
    # with the utility's tss rate ($0.10): 300 - 250 = 50 mg/l x 8.34 = 417 lb x $0.10 = $41.70,
    # and BOD (400 - 200) x 8.34 = 1,668 lb x $0.12 = $200.16; together $241.86
    line, _ = _surcharge([("bod5", 400), ("tss", 300)], {}, {"tss": 0.10})
    assert line["dollars"] == pytest.approx(241.86)


# --- stored and judged from the lab file -------------------------------------------------------------

def _main(tmp_path: Path, db, *args) -> tuple[int, str, str]:
    return sewerwatch(tmp_path, db, "town.toml", *args)


@pytest.mark.services
def test_the_lab_file_stored_and_judged_by_each_column(tmp_path, db):
    from lab.store.listing import results_with_limits

    for f in ("town.toml", "mooresville-in.toml", "words.md", "lab.csv"):
        shutil.copy(TOWN / f, tmp_path / f)
    code, _, err = _main(tmp_path, db, "db", "migrate")
    assert code == 0, err
    code, out, err = _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab", "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 16
    code, out, err = _main(tmp_path, db, "lab", "check", "--since", "2026-04-01", "--until", "2026-06-01", "--store",
                           "--json")
    assert code == 0, err
    got = sorted((v["rule"], tuple(v["evidence"]["samples"])) for v in json.loads(out)["violations"])
    # lab.csv by hand:
    #   copper grabs (April) 3.9 and 4.0 lawful, 4.1 over 4.0
    #   copper composites April 2.0 (at 2.0), 0.5, 0.5: average 1.0, at 1.0: lawful (the grabs not
    #   in it: with them 15.0 / 6 = 2.5); May 2.1 over 2.0, and 2.1, 0.5, 0.6 average 1.07 > 1.0
    #   zinc grabs 6.8 lawful, 6.9 over 6.8
    #   zinc composites April 3.4 (at 3.4), 0.4, 0.7: average 1.5, at 1.5: lawful; May 3.5 over 3.4,
    #   and 3.5, 0.5 average 2.0 > 1.5
    assert got == [("cu-30-day", ("C-507", "C-508", "C-509")), ("cu-composite", ("C-507",)), ("cu-grab", ("G-503",)),
                   ("zn-30-day", ("C-515", "C-516")), ("zn-composite", ("C-515",)), ("zn-grab", ("G-511",))]

    with db.connect() as conn:
        rows = results_with_limits(conn, datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC))
    by = {r["sample"]: r for r in rows}
    # beside each result, the limits of its own type only
    assert [x["stated"] for x in by["G-501"]["limits"]] == ["more than 4 mg/l in a grab sample"]
    assert [x["stated"] for x in by["C-504"]["limits"]] == [
        "more than 2 mg/l in a composite sample", "more than 1 mg/l as a monthly average of composite samples"]
    assert by["G-501"]["exceeds"] == [] and by["G-502"]["exceeds"] == [] and by["C-504"]["exceeds"] == []
