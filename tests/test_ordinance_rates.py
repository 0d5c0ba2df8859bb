"""Rates the ordinance fixes, in the pack (``rates = { x = { key, value, section, effective } }``),
overridden by the utility's rates; a rate neither gives bills nothing, and the bill says so.
The City of Examplehaven is a FICTIONAL fixture (tests/data/example-city/); its pack is changed
here to fix the service charge's rate per 1,000 gallons by ordinance ($4.00 from 2020-01-01)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from lab.charges import BillInputs, charges, rates_applied
from lab.results_table import LabTable
from limits.pack_cli import check_pack

ROOT = Path(__file__).resolve().parent.parent
CITY = ROOT / "tests" / "data" / "example-city"
KEY = "bill.examplehaven-mn.service_charge_per_1000_gal"
OLD = f'rates = {{ per_1000_gal = "{KEY}" }}'


def fixed_pack(folder: Path, new: str | None = None) -> Path:
    text = (CITY / "examplehaven-mn.toml").read_text(encoding="utf-8")
    assert OLD in text
    new = new or (f'rates = {{ per_1000_gal = {{ key = "{KEY}", value = 4.00, section = "Sec. 22-60", '
                  'effective = 2020-01-01 } }')
    p = folder / "examplehaven-mn.toml"
    p.write_text(text.replace(OLD, new), encoding="utf-8")
    return p


def _line(pack: Path, rates_doc: dict, volume_mg: float = 0.9):
    [(p, kind, terms)] = [c for c in charges(str(pack), rates_doc) if c[0].id == "service-charge"]
    values, applied, missing = rates_applied(p, rates_doc, "anodizer", "rates.toml")
    if missing:
        return None, applied, missing
    empty = LabTable.from_columns([], [], [], [], [], [])
    inputs = BillInputs("anodizer", str(pack), 2026, volume_mg, empty, {}, "rates.toml", "zero", [])
    return kind.line(p, terms, inputs, values), applied, missing


def test_the_ordinances_rate_applies_unless_the_utilitys_rates_give_one(tmp_path):
    pack = fixed_pack(tmp_path)
    assert check_pack(pack) == []
    # no rate in the utility's rates: the ordinance's $4.00: 900,000 gal / 1,000 x 4.00 = $3,600.00
    line, applied, _ = _line(pack, {})
    assert line["dollars"] == 3600.0
    assert applied == [{"name": "per_1000_gal", "words": "the rate per 1,000 gallons", "value": 4.0, "by": "ordinance",
                        "citation": "Examplehaven City Code Sec. 22-60", "effective": "2020-01-01"}]
    # the utility's $4.25 overrides it: 900 x 4.25 = $3,825.00
    line, applied, _ = _line(pack, {"bill": {"examplehaven-mn": {"service_charge_per_1000_gal": 4.25}}})
    assert line["dollars"] == 3825.0 and [(a["value"], a["by"]) for a in applied] == [(4.25, "rates")]


def test_a_rate_neither_gives_is_missing_never_a_stand_in(tmp_path):
    line, applied, missing = _line(CITY / "examplehaven-mn.toml", {})
    assert (line, applied, missing) == (None, [], ["per_1000_gal"])


@pytest.mark.parametrize("new,problem", [
    (f'rates = {{ per_1000_gal = {{ key = "{KEY}", value = 4.00, section = "Sec. 22-60" }} }}',
     "charges[0].rates.per_1000_gal.effective: missing (a rate the ordinance fixes gives key, value, section and "
     "effective)"),
    (f'rates = {{ per_1000_gal = {{ key = "{KEY}", value = "4.00", section = "Sec. 22-60", effective = 2020-01-01 }} }}',
     "charges[0].rates.per_1000_gal.value: expected a number >= 0, got '4.00'"),
    (f'rates = {{ per_1000_gal = {{ key = "{KEY}", value = 4.0, section = "Sec. 22-60", effective = "2020" }} }}',
     "charges[0].rates.per_1000_gal.effective: expected a date (effective = 2019-05-01), got '2020'"),
])
def test_a_bad_fixed_rate_is_one_line_naming_the_key(tmp_path, new, problem):
    [line] = check_pack(fixed_pack(tmp_path, new))
    assert line.startswith(f"{tmp_path / 'examplehaven-mn.toml'}: {problem}"), line


@pytest.mark.services
def test_the_bill_says_which_rate_applied_and_what_was_not_billed(tmp_path, db):
    from lab.documents.pdf import pdf_text
    from tests.test_city_as_data import _main, flat

    for f in ("city.toml", "rates.toml", "lab.csv"):
        shutil.copy(CITY / f, tmp_path / f)
    fixed_pack(tmp_path)
    assert _main(tmp_path, db, "db", "migrate")[0] == 0
    assert _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab")[0] == 0
    # the utility's rates give no service charge rate: the ordinance's $4.00 applies
    rates = (tmp_path / "rates.toml").read_text(encoding="utf-8").replace("service_charge_per_1000_gal = 4.25", "")
    (tmp_path / "rates.toml").write_text(rates, encoding="utf-8")
    code, out, err = _main(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--draft", "--out",
                           "bills", "--json")
    assert code == 0, err
    bills = {b["site"]: b for b in json.loads(out)}
    [c] = bills["anodizer"]["charges"]
    assert c["dollars"] == 3600.0 and c["rates"][0]["by"] == "ordinance"
    [pdf] = [p for p in (tmp_path / "bills").glob("bill-2026Q1-anodizer*.pdf")]
    page = flat(pdf_text(pdf, layout=False))
    assert "the rate per 1,000 gallons 4, fixed by Examplehaven City Code Sec. 22-60 (effective 2020-01-01)" in page
    assert "$3,600.00" in page

    # neither gives it: nothing billed for it, and the bill says so
    fixed_pack(tmp_path, OLD)
    code, out, err = _main(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--draft", "--out",
                           "bills2", "--json")
    assert code == 0, err
    b = {x["site"]: x for x in json.loads(out)}["anodizer"]
    assert b["charges"] == [] and b["total_dollars"] == 0
    assert "sewer service charge: not billed: neither the utility's rates nor the ordinance give the rate per " \
           "1,000 gallons" in b["notes"]


def test_a_surcharge_rate_per_pound_the_ordinance_fixes(tmp_path):
    """An ordinance that fixes the cost per pound of BOD (here, for the test, palmyra-wi's
    §13.45(4) surcharge given a fixed Bc of $0.12): the rates file's bod overrides it."""
    text = (ROOT / "limits" / "packs" / "palmyra-wi.toml").read_text(encoding="utf-8")
    old = 'formula = "epa-model-2"\nsection = "§13.45(4)"'
    assert old in text
    p = tmp_path / "palmyra-wi.toml"
    p.write_text(text.replace(old, old + '\nrates = { bod5 = { key = "bod", value = 0.12, section = "§13.45(4)", '
                              'effective = 2020-01-01 } }', 1), encoding="utf-8")
    assert check_pack(p) == []
    [(prov, kind, terms)] = [c for c in charges(str(p), {}) if c[0].id == "surcharge"]
    day = [np.datetime64("2026-02-02T15:00")] * 2
    tb = LabTable(np.array(["mill"] * 2, dtype=object), np.array(["S1", "S2"], dtype=object),
                  np.array(day, dtype="datetime64[us]"), np.array(["bod5"] * 2, dtype=object),
                  np.array([400.0, 500.0]), np.array([False, False]))
    for doc, per_lb, dollars, by in (({}, {}, 200.16, "ordinance"), ({"bod": 0.2}, {"bod5": 0.2}, 333.6, "rates")):
        values, applied, missing = rates_applied(prov, doc, "mill", "rates.toml")
        assert missing == [] and [a["by"] for a in applied] == [by]
        line = kind.line(prov, terms, BillInputs("mill", str(p), 2026, 1.0, tb, per_lb, "rates.toml", "zero", []),
                         values)
        # mean 450 - normal 250 (§13.43) = 200 mg/l x 1.0 MG x 8.34 = 1,668 lb x $0.12 = $200.16 (x $0.20: $333.60)
        assert line["dollars"] == pytest.approx(dollars)
