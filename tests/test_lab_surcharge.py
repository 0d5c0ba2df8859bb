"""Surcharges (EPA Model No. 2, palmyra-wi §13.45(4)) with hand-computed expectations."""

import numpy as np
import pytest

from lab.readers.labcsv import read_lab_csv
from lab.charges import site_surcharge, surcharges
from lab.formulas.surcharge import excess_pounds
from foundation.errors import InputError

RATES = {"bod5": 0.20, "tss": 0.15, "tkn": 0.90, "tp": 2.50}


def lab(tmp_path, body, name="lab.csv"):
    p = tmp_path / name
    p.write_text("sample_id,site,collected,analyte,value,unit,qualifier\n" + body)
    return read_lab_csv(p)


def test_bod_excess_hand_computed(tmp_path):
    f = lab(tmp_path, "A,mill,2026-01-05,bod5,400,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 0.5}, RATES, "palmyra-wi")
    bod = s.analytes["bod5"]
    # 0.5 MG x (400 - 250) mg/l x 8.34 = 625.5 lb; x $0.20 = $125.10
    assert bod.pounds == pytest.approx(625.5)
    assert bod.dollars == 125.10
    assert bod.base_mg_l == 250.0
    assert s.total_dollars == 125.10


def test_no_excess_is_zero_not_negative(tmp_path):
    # BOD 200 < 250, TSS 250 = 250 (not above), TKN 39.9 < 40, TP 7 = 7: no surcharge at all
    f = lab(tmp_path, "A,mill,2026-01-05,bod5,200,mg/l,\nA,mill,2026-01-05,tss,250,mg/l,\n"
                      "A,mill,2026-01-05,tkn,39.9,mg/l,\nA,mill,2026-01-05,tp,7,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 2.0}, RATES, "palmyra-wi")
    assert set(s.analytes) == {"bod5", "tss", "tkn", "tp"}
    assert all(a.pounds == 0.0 and a.dollars == 0.0 for a in s.analytes.values())
    assert s.total_dollars == 0.0


def test_period_average_against_base(tmp_path):
    # BOD 300 and 500 average 400: 0.2 MG x 150 x 8.34 = 250.2 lb x $0.20 = $50.04
    # TSS 300 and 100 average 200 < 250: nothing, although one sample is above
    f = lab(tmp_path, "A,mill,2026-01-05,bod5,300,mg/l,\nB,mill,2026-02-05,bod5,500,mg/l,\n"
                      "A,mill,2026-01-05,tss,300,mg/l,\nB,mill,2026-02-05,tss,100,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 0.2}, RATES, "palmyra-wi")
    assert s.analytes["bod5"].average_mg_l == pytest.approx(400.0)
    assert s.analytes["bod5"].dollars == 50.04
    assert s.analytes["tss"].dollars == 0.0
    assert s.total_dollars == 50.04


def test_all_four_analytes_summed(tmp_path):
    # 1 MG: BOD 350 -> 100 x 8.34 = 834 lb x 0.20 = 166.80
    #       TSS 450 -> 200 x 8.34 = 1668 lb x 0.15 = 250.20
    #       TKN 50  -> 10 x 8.34 = 83.4 lb x 0.90 = 75.06
    #       TP 9    -> 2 x 8.34 = 16.68 lb x 2.50 = 41.70
    # total 166.80 + 250.20 + 75.06 + 41.70 = 533.76
    f = lab(tmp_path, "A,mill,2026-01-05,bod5,350,mg/l,\nA,mill,2026-01-05,tss,450,mg/l,\n"
                      "A,mill,2026-01-05,tkn,50,mg/l,\nA,mill,2026-01-05,tp,9,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi")
    assert [s.analytes[a].dollars for a in ("bod5", "tss", "tkn", "tp")] == [166.80, 250.20, 75.06, 41.70]
    assert s.total_dollars == 533.76


def test_ug_per_litre_is_converted(tmp_path):
    # TP 9500 ug/l = 9.5 mg/l; and 8.5 mg/l: average 9.0 -> 2 mg/l over 7
    # 0.5 MG x 2 x 8.34 = 8.34 lb x $2.50 = $20.85
    f = lab(tmp_path, "A,mill,2026-01-05,tp,9500,ug/l,\nB,mill,2026-01-12,tp,8.5,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 0.5}, RATES, "palmyra-wi")
    assert s.analytes["tp"].average_mg_l == pytest.approx(9.0)
    assert s.analytes["tp"].dollars == 20.85


def test_non_detect_counts_zero_for_billing_by_default(tmp_path):
    # TKN: 80 mg/l and "<20": billing counts the non-detect as 0 -> average 40 = base: no charge
    f = lab(tmp_path, "A,mill,2026-01-05,tkn,80,mg/l,\nB,mill,2026-01-12,tkn,20,mg/l,<\n")
    [s] = surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi")
    assert s.analytes["tkn"].average_mg_l == 40.0
    assert s.analytes["tkn"].dollars == 0.0
    assert s.analytes["tkn"].n_non_detect == 1
    # policy dl: (80 + 20)/2 = 50 -> 1 MG x 10 x 8.34 = 83.4 lb x 0.90 = $75.06
    [s] = surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi", non_detect="dl")
    assert s.analytes["tkn"].dollars == 75.06
    # policy half: (80 + 10)/2 = 45 -> 1 x 5 x 8.34 = 41.7 lb x 0.90 = $37.53
    [s] = surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi", non_detect="half")
    assert s.analytes["tkn"].dollars == 37.53


def test_fog_and_cyanide_are_not_surcharged(tmp_path):
    f = lab(tmp_path, "A,mill,2026-01-05,fog,900,mg/l,\nA,mill,2026-01-05,cn,3,mg/l,\n"
                      "A,mill,2026-01-05,bod5,260,mg/l,\n")
    [s] = surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi")
    assert set(s.analytes) == {"bod5"}
    # 1 x 10 x 8.34 = 83.4 lb x 0.20 = 16.68
    assert s.total_dollars == 16.68


def test_several_sites_and_missing_volume(tmp_path):
    f = lab(tmp_path, "A,mill,2026-01-05,bod5,350,mg/l,\nB,dairy,2026-01-05,bod5,250,mg/l,\n")
    out = surcharges(f.rows, {"mill": 1.0, "dairy": 3.0}, RATES, "palmyra-wi")
    assert [s.site for s in out] == ["dairy", "mill"]
    assert [s.total_dollars for s in out] == [0.0, 166.80]
    with pytest.raises(InputError, match="no volume for site.*dairy"):
        surcharges(f.rows, {"mill": 1.0}, RATES, "palmyra-wi")
    with pytest.raises(InputError, match="no results for site.*cannery"):
        surcharges(f.rows, {"mill": 1.0, "dairy": 1.0, "cannery": 1.0}, RATES, "palmyra-wi")


def test_missing_rate_is_an_error(tmp_path):
    f = lab(tmp_path, "A,mill,2026-01-05,tkn,80,mg/l,\n")
    with pytest.raises(InputError, match="no rate for tkn"):
        surcharges(f.rows, {"mill": 1.0}, {"bod5": 0.2}, "palmyra-wi", rates_source="r.toml")


ADOPTED_MODEL_2 = {"adopted": {"surcharge": {"formula": "epa-model-2", "by": "Village Board resolution 2026-04"}}}


def test_webster_wi_base_is_200_for_bod_once_the_village_states_its_formula():
    # webster-wi §240-7: BOD 200. 1 MG x (260-200) x 8.34 = 500.4 lb x 0.20 = 100.08
    s = site_surcharge("mill", 1.0, {"bod5": (np.array([260.0]), np.array([False]))}, RATES, pack="webster-wi",
                       rates_doc=ADOPTED_MODEL_2)
    assert s.analytes["bod5"].base_mg_l == 200.0
    assert s.analytes["bod5"].dollars == 100.08
    assert s.citation == ("Village of Webster (WI) Code §240-8(4); EPA Model No. 2 (Federal Register, Vol. 39, "
                          "No. 29, p. 5270) as adopted by Village Board resolution 2026-04")
    # Palmyra's provision named as the model: cited as Palmyra's, adopted by the village
    pal = {"adopted": {"surcharge": {"model": "palmyra-wi", "by": "Ord. 2026-2"}}}
    s = site_surcharge("mill", 1.0, {"bod5": (np.array([260.0]), np.array([False]))}, RATES, pack="webster-wi",
                       rates_doc=pal)
    assert s.analytes["bod5"].dollars == 100.08
    assert s.citation == "Village of Webster (WI) Code §240-8(4); Village of Palmyra Code §13.45(4) as adopted by Ord. 2026-2"


@pytest.mark.parametrize("pack", ["webster-wi", "westfield-wi"])
def test_no_borrowed_formula_without_the_rates_file_saying_so(pack):
    # webster-wi §240-8(4) sets no formula, only "payment to cover the added
    # cost"; westfield-wi none at all. Nothing is borrowed by default: refused, with the words.
    results = {"bod5": (np.array([260.0]), np.array([False]))}
    with pytest.raises(InputError) as e:
        site_surcharge("mill", 1.0, results, RATES, pack=pack, rates_source="rates.toml")
    msg = str(e.value)
    assert msg.startswith(f"rates.toml: {pack} sets no surcharge formula") and "[adopted.surcharge]" in msg
    if pack == "webster-wi":
        assert "Village of Webster (WI) Code §240-8(4)" in msg and "Require payment to cover the added cost" in msg
    for bad, why in [({"formula": "epa-model-2"}, "by: missing"), ({"formula": "epa-model-3", "by": "x"}, "unknown formula kind"),
                     ({"model": "webster-ny", "by": "x"}, "has no charge 'surcharge'"),
                     ({"formula": "epa-model-2", "model": "palmyra-wi", "by": "x"}, "exactly one of")]:
        with pytest.raises(InputError, match=why):
            site_surcharge("mill", 1.0, results, RATES, pack=pack, rates_doc={"adopted": {"surcharge": bad}})
    # "none": the village adopted no surcharge
    with pytest.raises(InputError, match="adopts no surcharge formula"):
        site_surcharge("mill", 1.0, results, RATES, pack=pack,
                       rates_doc={"adopted": {"surcharge": {"formula": "none", "by": "Board minutes 2026-01-12"}}})


def test_pack_without_surcharge_base():
    with pytest.raises(InputError, match="webster-ny.*no normal sewage"):
        site_surcharge("m", 1.0, {"bod5": (np.array([260.0]), np.array([False]))}, RATES, pack="webster-ny")


def test_excess_pounds_vectorised():
    # 2 MG x (300-250) x 8.34 = 834; 0 below base; 0.1 MG x 750 x 8.34 = 625.5
    got = excess_pounds([2.0, 2.0, 0.1], [300.0, 100.0, 1000.0], 250.0)
    np.testing.assert_allclose(got, [834.0, 0.0, 625.5])
