"""Discharge permits as data: the file, its rules, the stricter of
permit and ordinance, renewal and expiry, and the lab-side checks, each expectation worked
out by hand from the words quoted.

palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(3)(g): "Average and maximum pollutant
concentrations and total daily average and maximum pollutant discharges"; §13.48(2)(m)3:
"loading in excess of the wastewater discharge permit"; §13.54(4): "A permit shall be
issued for one year and shall be automatically renewed on a year to year basis thereafter,
unless the person is notified by the Village within 60 days prior to the expiration".
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from foundation.errors import InputError
from lab.checks.compliance import check_flows, check_lab, check_loadings
from lab.checks.permit import standing
from lab.checks.snc import Range, pack_limits
from lab.ordinance import lab_limits, loading_limits
from lab.results_table import LabTable
from limits.packs import load_pack
from limits.permits import load_permit, parse_permit, renewal, site_rules

ROOT = Path(__file__).resolve().parent.parent
PERMITS = ROOT / "examples" / "permits"
PAL = load_pack("palmyra-wi")
CHICAGO = ZoneInfo("America/Chicago")
UTC = timezone.utc


def permit(**over):
    """A Palmyra permit with the given keys replaced (a dict as TOML would give)."""
    doc = {"number": "PAL-T-1", "site": "acme", "pack": "palmyra-wi", "issued": date(2026, 1, 15),
           "effective": date(2026, 2, 1), "expires": date(2027, 1, 31),
           "flow": {"average_daily_gpd": 18000, "maximum_daily_gpd": 30000},
           "limits": [{"condition": "3(a)", "analyte": "cu", "unit": "mg/l", "daily_maximum": 1.0,
                       "monthly_average": 0.5, "daily_maximum_lb": 0.15, "words": "Copper."},
                      {"condition": "3(c)", "analyte": "cn", "unit": "mg/l", "daily_maximum": 0.2, "words": "Cyanide."},
                      {"condition": "3(d)", "analyte": "tss", "unit": "mg/l", "daily_maximum_lb": 60.0, "words": "TSS."},
                      {"condition": "4", "parameter": "ph", "unit": "pH", "minimum": 6.5, "maximum": 9.0,
                       "words": "pH 6.5 to 9.0."}]}
    doc.update(over)
    return parse_permit(doc, "test-permit.toml")


def table(*rows):
    """(site, sample, collected local Chicago 'YYYY-MM-DD HH:MM' or a UTC datetime, analyte, value)."""
    def when(x):
        if isinstance(x, datetime):
            return x
        return datetime.fromisoformat(x).replace(tzinfo=CHICAGO)
    return LabTable.from_columns([r[0] for r in rows], [r[1] for r in rows], [when(r[2]) for r in rows],
                                 [r[3] for r in rows], [r[4] for r in rows], [False] * len(rows))


# --- the file --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["plating", "sausage", "candy"])
def test_the_example_permits_load(name):
    p = load_permit(PERMITS / f"{name}.toml")
    assert p.site == name and p.number.startswith("PAL-IU-") and p.renewal.citation == "Village of Palmyra Code §13.54(4)"


def test_the_permits_data_is_clean_for_a_sampling_schedule():
    p = load_permit(PERMITS / "plating.toml")
    assert p.average_daily_gpd == 18000 and p.maximum_daily_gpd == 30000
    assert p.normal_flow_gpm == 12.5            # 18,000 gal/day / 1,440 min/day
    [lab, live] = p.monitoring
    assert (lab.condition, lab.parameters, lab.sample_type, lab.times, lab.per) == \
        ("5(a)", ("cu", "ni", "cn", "tss"), "composite-24h-flow", 1, "month")
    assert (live.parameters, live.sample_type, live.times, live.per) == (("ph", "flow"), "continuous", None, "continuous")
    cu = next(lim for lim in p.limits if lim.analyte == "cu")
    assert (cu.daily_maximum, cu.monthly_average, cu.daily_maximum_lb) == (1.0, 0.5, 0.15)
    assert [c.number for c in p.conditions] == ["1", "2"]


@pytest.mark.parametrize("edit,message", [
    ({"colour": 1}, "colour: unknown key"),
    ({"expires": date(2026, 1, 1)}, "expires: 2026-01-01 is not after the permit takes effect"),
    ({"issued": "15 January"}, "issued: expected a date"),
    ({"flow": {"average_daily_gpd": 30000, "maximum_daily_gpd": 20000}}, "flow.maximum_daily_gpd: 20000 is below"),
    ({"limits": [{"condition": "1", "analyte": "lead", "unit": "mg/l", "daily_maximum": 1, "words": "x"}]},
     "limits[0].analyte: unknown analyte 'lead'"),
    ({"limits": [{"condition": "1", "analyte": "cu", "unit": "mg/l", "words": "x"}]}, "limits[0]: no limit"),
    ({"limits": [{"condition": "1", "parameter": "ph", "unit": "pH", "minimum": 9, "maximum": 6, "words": "x"}]},
     "minimum 9 is not below maximum 6"),
    ({"limits": [{"condition": "1", "parameter": "temperature", "unit": "kelvin", "maximum": 300, "words": "x"}]},
     "limits[0].unit: unknown unit 'kelvin' for temperature"),
    ({"limits": [{"condition": "1", "analyte": "cu", "unit": "mg/l", "daily_maximum": 1, "words": "x"},
                 {"condition": "2", "analyte": "cu", "unit": "mg/l", "monthly_average": 1, "words": "y"}]},
     "cu is limited twice"),
    ({"monitoring": [{"condition": "5", "parameters": ["cu"], "sample_type": "scoop", "frequency": "continuous"}]},
     "sample_type: unknown sample type 'scoop'"),
    ({"monitoring": [{"condition": "5", "parameters": ["cu"], "sample_type": "grab",
                      "frequency": {"times": 1, "per": "fortnight"}}]}, "frequency.per: expected one of"),
    ({"renewal": {"automatic": "yes"}}, "renewal.automatic: expected true or false"),
])
def test_a_bad_permit_is_a_one_line_error_naming_the_key(edit, message):
    with pytest.raises(InputError) as e:
        permit(**edit)
    assert str(e.value).startswith("test-permit.toml: ") and message in str(e.value) and "\n" not in str(e.value)


# --- the stricter of permit and ordinance (item 9) ---------------------------------------------

def test_the_stricter_of_permit_and_ordinance_applies_and_says_which():
    rules = {r.id: r for r in site_rules(PAL, permit())}
    # pH: the permit's 6.5 is stricter than §13.48(2)(g) "lower than 6.0": the permit applies,
    # under the pack's rule id; 9.0 is as strict as "higher than 9.0": the ordinance applies
    low, high = rules["ph-min"], rules["ph-max"]
    assert (low.limit_canonical, low.origin, low.citation) == (6.5, "permit", "Permit PAL-T-1, condition 4")
    assert low.stricter_of == ("Permit PAL-T-1, condition 4 (less than 6.5 pH) applies: stricter than "
                               "Village of Palmyra Code §13.48(2)(g) (lower than 6 pH)")
    assert (high.limit_canonical, high.origin, high.citation) == (9.0, "ordinance", "Village of Palmyra Code §13.48(2)(g)")
    assert high.stricter_of.startswith("Village of Palmyra Code §13.48(2)(g) (higher than 9 pH) applies")
    # cyanide: permit 0.2 mg/l each sample vs §13.48(2)(l) "in excess of 0.5 mg/l": the permit
    cn = rules["cyanide-max"]
    assert (cn.limit_canonical, cn.origin) == (0.2, "permit") and "stricter than Village of Palmyra Code §13.48(2)(l)" in cn.stricter_of
    # copper: only the permit limits it (§13.48(2)(i) leaves it to the permit)
    assert {k for k in rules if k.startswith("cu-")} == {"cu-daily-max", "cu-monthly-avg", "cu-loading-max"}
    # a permit looser than the ordinance: the ordinance applies and says so
    loose = permit(limits=[{"condition": "7", "analyte": "cn", "unit": "mg/l", "daily_maximum": 1.0, "words": "x"}])
    cn = {r.id: r for r in site_rules(PAL, loose)}["cyanide-max"]
    assert (cn.limit_canonical, cn.origin) == (0.5, "ordinance")
    assert cn.stricter_of == ("Village of Palmyra Code §13.48(2)(l) (in excess of 0.5 mg/l) applies: stricter than "
                              "or as strict as Permit PAL-T-1, condition 7 (more than 1 mg/l)")


def test_stricter_of_on_lab_results_one_finding_citing_the_one_that_applies():
    # cyanide 0.3 mg/l: lawful under the ordinance (not in excess of 0.5), over the permit's
    # 0.2: one violation, the permit's; 0.62: over both, still one violation, the permit's
    tb = table(("acme", "a", "2026-03-02 08:00", "cn", 0.3), ("acme", "b", "2026-03-09 08:00", "cn", 0.62),
               ("acme", "c", "2026-03-16 08:00", "cn", 0.2))
    got = check_lab(tb, "palmyra-wi", permit=permit())
    assert [(v["rule"], v["peak"], v["limit"], v["citation"], v["applies"]) for v in got] == [
        ("cyanide-max", 0.3, 0.2, "Permit PAL-T-1, condition 3(c)", "permit"),
        ("cyanide-max", 0.62, 0.2, "Permit PAL-T-1, condition 3(c)", "permit")]
    assert "stricter than Village of Palmyra Code §13.48(2)(l)" in got[0]["stricter_of"]
    # without the permit only 0.62 violates, the ordinance's
    got = check_lab(tb, "palmyra-wi")
    assert [(v["peak"], v["citation"], v["applies"]) for v in got] == [(0.62, "Village of Palmyra Code §13.48(2)(l)", "ordinance")]


def test_another_village_and_its_permit():
    # webster-wi §240-5 "more than 100 parts per million by weight of fat, oil, or grease", each
    # result; a permit's 75 mg/l daily maximum is stricter: 90 violates the permit only
    web = parse_permit({"number": "WEB-1", "site": "diner", "pack": "webster-wi", "issued": date(2026, 1, 1),
                        "effective": date(2026, 1, 1), "expires": date(2026, 12, 31),
                        "limits": [{"condition": "2", "analyte": "fog", "unit": "ppm", "daily_maximum": 75,
                                    "words": "FOG 75 ppm."}]}, "web.toml")
    tb = table(("diner", "a", "2026-04-01 09:00", "fog", 90.0), ("diner", "b", "2026-04-08 09:00", "fog", 75.0))
    got = check_lab(tb, "webster-wi", permit=web)
    assert [(v["rule"], v["peak"], v["citation"]) for v in got] == [("fog-max", 90.0, "Permit WEB-1, condition 2")]
    assert "stricter than Village of Webster (WI) Code §240-5 (more than 100 mg/l)" in got[0]["stricter_of"]
    # Webster's ordinance has no permit duration: the §13.54(4) default of one year, 60 days
    assert (web.renewal.term_years, web.renewal.notice_days, web.renewal.citation) == (1, 60, "")
    # SNC is judged against the limits that apply: the permit's FOG, the ordinance's pH range
    assert pack_limits("webster-wi", web) == {"fog": 75.0, "ph": Range(5.0, 9.0, "<", ">")}
    assert pack_limits("palmyra-wi", permit())["ph"] == Range(6.5, 9.0, "<", ">")


# --- concentrations: daily maximum per sample, monthly average per calendar month -------------------

def test_daily_maximum_per_sample():
    # "1.0 mg/l daily maximum": 1.6 is more, 1.0 is not
    tb = table(("acme", "a", "2026-03-02 08:00", "cu", 1.6), ("acme", "b", "2026-03-03 08:00", "cu", 1.0))
    got = [v for v in check_lab(tb, "palmyra-wi", permit=permit()) if v["rule"] == "cu-daily-max"]
    assert [(v["peak"], v["limit"], v["citation"]) for v in got] == [(1.6, 1.0, "Permit PAL-T-1, condition 3(a)")]


def test_monthly_averages_are_calendar_months_in_the_village_across_a_month_boundary():
    # 0.5 mg/l monthly average. January (Chicago): 0.4 and 0.9 (the 0.9 at 23:30 on Jan 31, which
    # is already February 1 in UTC) -> (0.4 + 0.9) / 2 = 0.65 > 0.5: a violation.
    # February: 0.2 and 0.7 -> 0.45: none. (UTC months would give January 0.4 alone and
    # February (0.9 + 0.2 + 0.7) / 3 = 0.6: the wrong month.)
    tb = table(("acme", "a", "2026-01-20 08:00", "cu", 0.4), ("acme", "b", "2026-01-31 23:30", "cu", 0.9),
               ("acme", "c", "2026-02-01 00:30", "cu", 0.2), ("acme", "d", "2026-02-20 08:00", "cu", 0.7))
    in_force_all_year = permit(issued=date(2025, 12, 15), effective=date(2026, 1, 1))
    got = [v for v in check_lab(tb, "palmyra-wi", permit=in_force_all_year) if v["rule"] == "cu-monthly-avg"]
    assert len(got) == 1
    v = got[0]
    assert v["peak"] == pytest.approx(0.65) and v["limit"] == 0.5 and v["evidence"]["month"] == "2026-01"
    assert v["evidence"]["samples"] == ["a", "b"] and v["evidence"]["results"] == 2
    assert v["start"] == "2026-01-20T14:00:00Z" and v["end"] == "2026-02-01T05:30:00Z"


# --- loadings from the day's metered volume, a day of missing flow stated as incomplete ---------------

def test_loadings_on_the_days_metered_volume_and_missing_flow_stated_not_guessed():
    # TSS 60 lb/day (condition 3(d)); lb/day = mg/l x MG x 8.34
    days = {
        "2026-03-02": {"volume_gal": 30_000.0, "coverage": 1.0},     # 300 x 0.03 x 8.34 = 75.06 > 60
        "2026-03-03": {"volume_gal": 20_000.0, "coverage": 0.5},     # half the day: 200 x 0.02 x 8.34 = 33.36
        # 2026-03-04: no flow readings at all
        "2026-03-05": {"volume_gal": 40_000.0, "coverage": 0.6},     # 250 x 0.04 x 8.34 = 83.4 > 60 already
        "2026-03-06": {"volume_gal": 20_000.0, "coverage": 1.0},     # 300 x 0.02 x 8.34 = 50.04: lawful
    }
    tb = table(("acme", "s1", "2026-03-02 09:00", "tss", 300.0), ("acme", "s2", "2026-03-03 09:00", "tss", 200.0),
               ("acme", "s3", "2026-03-04 09:00", "tss", 280.0), ("acme", "s4", "2026-03-05 09:00", "tss", 250.0),
               ("acme", "s5", "2026-03-06 09:00", "tss", 300.0))
    found, incomplete = check_loadings(tb, loading_limits("palmyra-wi", permit()), days, "palmyra-wi")
    assert [(v["evidence"]["day"], v["peak"], v["evidence"]["lower_bound"]) for v in found] == [
        ("2026-03-02", pytest.approx(75.06), False), ("2026-03-05", pytest.approx(83.4), True)]
    assert all(v["rule"] == "tss-loading-max" and v["unit"] == "lb/d" and v["limit"] == 60.0 for v in found)
    assert found[0]["citation"] == "Permit PAL-T-1, condition 3(d)"
    assert [(x["sample"], x["day"], x["coverage"]) for x in incomplete] == [("s2", "2026-03-03", 0.5),
                                                                           ("s3", "2026-03-04", 0.0)]
    assert incomplete[0]["note"] == "loading not judged: the metered flow of 2026-03-03 is incomplete (50% of the day covered)"


def test_the_permits_daily_and_average_flows():
    # maximum 30,000 gal/day, average 18,000 gal/day (examples/permits/plating.toml)
    p = permit()
    days = {"2026-03-30": {"volume_gal": 31_000.0, "coverage": 1.0},
            "2026-03-31": {"volume_gal": 29_000.0, "coverage": 1.0},
            "2026-04-01": {"volume_gal": 10_000.0, "coverage": 1.0},
            "2026-04-02": {"volume_gal": 5_000.0, "coverage": 0.2}}
    found, incomplete = check_flows("acme", p, days, "palmyra-wi")
    # 31,000 > 30,000 on 03-30; March's whole days average (31,000 + 29,000) / 2 = 30,000 > 18,000;
    # April's one whole day 10,000 is lawful; 04-02 is incomplete
    assert [(v["rule"], v["peak"], v["limit"]) for v in found] == [
        ("flow-daily-max", 31_000.0, 30_000), ("flow-monthly-avg", 30_000.0, 18_000)]
    assert found[0]["start"] == "2026-03-30T05:00:00Z" and found[0]["citation"] == "Permit PAL-T-1, condition flow"
    assert [(x["days"], x["coverage"]) for x in incomplete] == [(["2026-04-02"], 0.2)]
    assert incomplete[0]["note"] == "daily flow not judged on 1 day(s) whose metered flow is incomplete: 2026-04-02"


# --- renewal and expiry (item 10) -------------------------------------------------------------------

def test_renewal_year_to_year_unless_notified_60_days_before():
    p = permit()                                # effective 2026-02-01, expires 2027-01-31
    assert renewal(p, date(2026, 1, 20)).state == "not-yet-effective"
    st = renewal(p, date(2026, 6, 1))
    assert (st.state, st.term_end, st.days_left) == ("in-force", date(2027, 1, 31), 244)
    # 61 days before the term ends: in force; 60 days: the reminder is due
    assert renewal(p, date(2026, 12, 1)).state == "in-force"
    st = renewal(p, date(2026, 12, 2))
    assert (st.state, st.days_left, st.ends) == ("renewal-due", 60, None)
    # no notice: renewed for a year
    st = renewal(p, date(2027, 2, 1))
    assert (st.state, st.term_end) == ("in-force", date(2028, 1, 31))


def test_notice_given_ends_the_permit_with_its_term_and_then_it_has_expired():
    p = permit(renewal={"notice_given": date(2026, 11, 15)})
    st = renewal(p, date(2027, 1, 31))
    assert (st.state, st.ends, st.days_left) == ("expires-soon", date(2027, 1, 31), 0)
    st = renewal(p, date(2027, 2, 1))
    assert (st.state, st.days_left) == ("expired", -1)
    # notice given after a renewal: the permit ends with the renewed term
    assert renewal(permit(renewal={"notice_given": date(2027, 3, 1)}), date(2027, 6, 1)).ends == date(2028, 1, 31)
    # a discharge monitoring agreement with another duration: no automatic renewal
    st = renewal(permit(renewal={"automatic": False}), date(2027, 2, 1))
    assert (st.state, st.ends) == ("expired", date(2027, 1, 31))


def test_an_expired_permit_is_a_finding():
    p = load_permit(PERMITS / "sausage.toml")       # notice given 2026-08-20, term ends 2026-10-31
    st = standing(p, "palmyra-wi", date(2026, 12, 1))
    f = st["finding"]
    assert st["state"] == "expired" and f["rule"] == "permit-expired" and f["source"] == "permit"
    # from 2026-11-01 (local midnight, 05:00Z) through 2026-12-01: 31 days
    assert (f["start"], f["end"], f["days_of_violation"]) == ("2026-11-01T05:00:00Z", "2026-12-02T06:00:00Z", 31)
    assert f["citation"] == "Village of Palmyra Code §13.54(1)(g); Village of Palmyra Code §13.54(4)"
    assert "without a wastewater discharge permit" in f["words"]
    assert standing(p, "palmyra-wi", date(2026, 10, 31))["finding"] is None


def test_permit_rules_judge_live_readings_like_pack_rules():
    # the permit's pH 6.5 minimum on readings: 6.4 violates it (not the ordinance's 6.0)
    from limits.evaluator import SensorMeta, evaluate, prepare, violations
    from limits.permits import continuous
    rules = continuous(site_rules(PAL, permit()))
    t = 1_772_344_800_000_000 + np.arange(4) * 60_000_000
    s, tt, v, q = prepare(np.zeros(4, np.int64), t, np.array([7.0, 6.4, 6.2, 7.0]), None)
    meta = {0: SensorMeta("ph", 60.0, site="acme", name="ph")}
    eps = evaluate(rules, s, tt, v, q, meta=meta)
    [rec] = violations(eps, rules, PAL, meta)
    assert (rec["rule"], rec["peak"], rec["limit"], rec["citation"]) == ("ph-min", 6.2, 6.5, "Permit PAL-T-1, condition 4")
    assert rec["applies"] == "permit" and "stricter than Village of Palmyra Code §13.48(2)(g)" in rec["stricter_of"]


def test_a_permit_judges_only_what_was_discharged_while_it_was_in_force():
    # effective 2026-02-01 (local): cyanide 0.3 on January 31 is judged by the ordinance alone
    # (lawful, not in excess of 0.5); on February 1 by the permit's 0.2 (a violation)
    tb = table(("acme", "a", "2026-01-31 23:00", "cn", 0.3), ("acme", "b", "2026-02-01 01:00", "cn", 0.3))
    got = check_lab(tb, "palmyra-wi", permit=permit())
    assert [(v["evidence"]["samples"], v["citation"]) for v in got] == [(["b"], "Permit PAL-T-1, condition 3(c)")]
    # after a permit ended (notice given) the ordinance alone again
    ended = permit(renewal={"notice_given": date(2026, 6, 1)})      # ends with its term, 2027-01-31
    tb = table(("acme", "c", "2027-01-31 12:00", "cn", 0.3), ("acme", "d", "2027-02-01 12:00", "cn", 0.3))
    assert [v["evidence"]["samples"] for v in check_lab(tb, "palmyra-wi", permit=ended)] == [["c"]]
