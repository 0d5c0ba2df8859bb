"""A third real ordinance: the Town of Fortville, Indiana's local limits (tests/data/fortville-in/,
its words quoted in words.md with where they were found).

Its list states one number per pollutant, a daily maximum "based upon a flow proportional
sampling or time proportional sampling" (a composite), and the same numbers "times a multiplier
of l.5 based upon a grab sample"; cyanide has no multiplier. So copper is 0.6 mg/l in a
composite and 0.9 in a grab, zinc 2.0 and 3.0, BOD5 and TSS 200 and 300; cyanide 0.025 in any
sample; "in excess of": a result equal to the number is lawful. It has no 30-day average
column, and no surcharge of Fortville's was found (words.md says so). Every expectation below
is worked out by hand from those words.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lab.checks.compliance import check_lab
from limits.pack_cli import check_pack
from limits.packs import load_pack
from limits.statements import of_violation
from tests.ordinance_cases import judged, sewerwatch, table

ROOT = Path(__file__).resolve().parent.parent
TOWN = ROOT / "tests" / "data" / "fortville-in"
PACK = str(TOWN / "fortville-in.toml")
UTC = timezone.utc

#: the list's items this pack reads: item number -> (analyte, the list's name)
ITEMS = {"3": ("bod5", "BOD5"), "7": ("cu", "Copper"), "8": ("cn", "Cyanide (total)"), "14": ("tss", "TSS (Total Suspended Solids)"),
         "16": ("zn", "Zinc (total)")}


def listed() -> dict[str, float]:
    """The number words.md quotes for each item of the list, by analyte: "(7) 0.6 mg/l: Copper;"."""
    text = (TOWN / "words.md").read_text(encoding="utf-8")
    out = {}
    for item, (analyte, name) in ITEMS.items():
        [m] = re.findall(rf"^\({item}\) ([0-9.]+) mg/l: {re.escape(name)};$", text, re.M)
        out[analyte] = float(m)
    return out


def test_the_pack_states_each_number_of_the_quoted_list_and_its_grab_product():
    assert check_pack(TOWN / "fortville-in.toml") == []
    pack, numbers = load_pack(PACK), listed()
    for analyte, n in numbers.items():
        got = {(r.sample_type, r.basis): r.limit for r in pack.lab_limits(analyte)}
        if analyte == "cn":       # "The 1.5 grab sample multiplier does not apply to ... Cyanide"
            assert got == {(None, "sample"): n}
        else:                     # the list's number in a composite; times 1.5 in a grab
            assert got == {("composite", "sample"): n, ("grab", "sample"): pytest.approx(n * 1.5)}
    # no average of any period: the ordinance has no 30-day column
    assert {r.basis for a in numbers for r in pack.lab_limits(a)} == {"sample"}


def test_under_at_and_over_each_column():
    # copper: composites 0.5 under, 0.6 at (lawful), 0.61 over 0.6; grabs 0.8 (over the
    # composite's 0.6, under the grab's 0.9), 0.9 at (lawful), 0.95 over 0.9
    tb = table(("C1", "2026-04-01T13:00", "cu", 0.5, "composite"), ("C2", "2026-04-02T13:00", "cu", 0.6, "composite"),
               ("C3", "2026-04-03T13:00", "cu", 0.61, "composite"), ("G1", "2026-04-04T13:00", "cu", 0.8, "grab"),
               ("G2", "2026-04-05T13:00", "cu", 0.9, "grab"), ("G3", "2026-04-06T13:00", "cu", 0.95, "grab"))
    assert judged(tb, PACK) == [("cu-composite", ["C3"], 0.6), ("cu-grab", ["G3"], 0.9)]
    vs = check_lab(tb, PACK)
    assert [of_violation(v) for v in vs] == ["in excess of 0.6 mg/l in a composite sample",
                                             "in excess of 0.9 mg/l in a grab sample"]
    assert vs[1]["citation"] == "Fortville Code of Ordinances, local limits, (A)(7)"
    # cyanide: no multiplier, one limit for both types: a grab of 0.025 lawful, 0.03 over; a
    # composite of 0.026 over
    tb = table(("G4", "2026-04-07T13:00", "cn", 0.025, "grab"), ("G5", "2026-04-08T13:00", "cn", 0.03, "grab"),
               ("C4", "2026-04-09T13:00", "cn", 0.026, "composite"))
    vs = check_lab(tb, PACK)
    assert [(v["rule"], v["evidence"]["samples"]) for v in vs] == [("cn-max", ["G5"]), ("cn-max", ["C4"])]
    assert of_violation(vs[0]) == "exceed 0.025 mg/l in any sample"


def _main(tmp_path: Path, db, *args) -> tuple[int, str, str]:
    """``sewerwatch --config town.toml ARGS`` in this process, in ``tmp_path``."""
    return sewerwatch(tmp_path, db, "town.toml", *args)


@pytest.mark.services
def test_the_lab_file_stored_and_judged_by_each_samples_column(tmp_path, db):
    from lab.store.listing import results_with_limits

    for f in ("town.toml", "fortville-in.toml", "words.md", "lab.csv"):
        shutil.copy(TOWN / f, tmp_path / f)
    code, _, err = _main(tmp_path, db, "db", "migrate")
    assert code == 0, err
    code, out, err = _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab", "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 20
    code, out, err = _main(tmp_path, db, "lab", "check", "--since", "2026-04-01", "--until", "2026-05-01", "--store",
                           "--json")
    assert code == 0, err
    got = sorted((v["rule"], tuple(v["evidence"]["samples"])) for v in json.loads(out)["violations"])
    # lab.csv by hand, one sample a day:
    #   copper composites 0.5, 0.6 lawful, 0.61 over 0.6; grabs 0.8, 0.9 lawful, 0.95 over 0.9
    #   zinc composites 2.0 lawful, 2.1 over 2.0; grabs 3.0 lawful, 3.1 over 3.0
    #   BOD5 composites 200 lawful, 250 over 200; grabs 300 lawful, 301 over 300
    #   TSS composite 199 lawful; grabs 299 lawful, 350 over 300
    #   cyanide grab 0.025 lawful, grab 0.03 and composite 0.026 over 0.025
    assert got == [("bod5-composite", ("C-412",)), ("bod5-grab", ("G-414",)), ("cn-max", ("C-420",)),
                   ("cn-max", ("G-419",)), ("cu-composite", ("C-403",)), ("cu-grab", ("G-406",)),
                   ("tss-grab", ("G-417",)), ("zn-composite", ("C-408",)), ("zn-grab", ("G-410",))]

    with db.connect() as conn:
        rows = results_with_limits(conn, datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC))
    by = {r["sample"]: r for r in rows}
    # beside each result, the limit of its own type only
    assert [x["stated"] for x in by["G-404"]["limits"]] == ["in excess of 0.9 mg/l in a grab sample"]
    assert [x["stated"] for x in by["C-401"]["limits"]] == ["in excess of 0.6 mg/l in a composite sample"]
    assert [x["stated"] for x in by["C-420"]["limits"]] == ["exceed 0.025 mg/l in any sample"]
    assert by["G-404"]["exceeds"] == [] and by["G-405"]["exceeds"] == [] and by["C-402"]["exceeds"] == []
