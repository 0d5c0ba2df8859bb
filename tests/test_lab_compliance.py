"""Compliance on lab results: FOG, cyanide, discharge permit, EPA SNC; flow volumes."""

from datetime import datetime, timezone
from decimal import Decimal

import numpy as np
import pytest

from lab.formulas.volumes import daily_volumes_gal, flow_weighted_mean, loading_lb, window_volume_gal
from lab.checks.compliance import check_lab
from lab.checks.permit import permit_required
from lab.checks.snc import Range, pack_limits, snc, snc_counts, trc_boundary
from lab.results_table import LabTable

UTC = timezone.utc


def table(*rows):
    """rows: (site, sample, 'YYYY-MM-DD[THH:MM]', analyte, mg/l, non_detect)"""
    def t(s):
        return datetime.fromisoformat(s).replace(tzinfo=UTC)
    cols = list(zip(*rows)) if rows else [[]] * 6
    return LabTable.from_columns(cols[0], cols[1], [t(x) for x in cols[2]], cols[3], cols[4], cols[5])


# --- FOG and cyanide ---------------------------------------------------------------------

def test_palmyra_fog_is_judged_on_the_period_average():
    # palmyra-wi §13.48(2)(k) "exceeding on analysis an average of 100 mg/l"
    tb = table(("m", "a", "2026-01-05T08:00", "fog", 150.0, False),
               ("m", "b", "2026-01-05T14:00", "fog", 40.0, False),
               ("m", "c", "2026-01-06T08:00", "fog", 120.0, False),
               ("m", "d", "2026-01-06T14:00", "fog", 90.0, False),     # mill: (150+40+120+90)/4 = 100: not above
               ("k", "e", "2026-01-07T08:00", "fog", 99.0, False),
               ("k", "f", "2026-01-09T08:00", "fog", 111.0, False))    # kitchen: (99+111)/2 = 105 > 100
    v = check_lab(tb, "palmyra-wi")
    assert [(x["rule"], x["site"]) for x in v] == [("fog-max", "k")]
    assert v[0]["peak"] == pytest.approx(105.0) and v[0]["limit"] == 100.0
    assert v[0]["start"] == "2026-01-07T08:00:00Z" and v[0]["end"] == "2026-01-09T08:00:00Z"
    assert "§13.48(2)(k)" in v[0]["citation"] and v[0]["evidence"]["samples"] == ["e", "f"]
    assert v[0]["evidence"]["statistic"] == "period-average"


def test_fog_exactly_at_limit_is_not_a_violation_and_webster_judges_each_result():
    tb = table(("m", "a", "2026-01-05", "fog", 100.0, False),
               ("m", "b", "2026-01-05", "fog", 100.5, False),
               ("m", "c", "2026-01-05", "fog", 60.0, False))
    # webster-wi §240-5 "more than 100 ppm": each result; only 100.5 exceeds
    v = check_lab(tb, "webster-wi")
    assert [(x["rule"], x["peak"]) for x in v] == [("fog-max", 100.5)]
    assert "§240-5" in v[0]["citation"]
    # superior-wi: the same words
    assert [x["peak"] for x in check_lab(tb, "superior-wi")] == [100.5]
    # palmyra-wi: the average (100 + 100.5 + 60)/3 = 86.8 -> nothing
    assert check_lab(tb, "palmyra-wi") == []


def test_cyanide_and_its_non_detects():
    tb = table(("p", "a", "2026-02-01", "cn", 0.5, False),    # at the limit: fine
               ("p", "b", "2026-02-02", "cn", 0.51, False),   # above
               ("p", "c", "2026-02-03", "cn", 0.02, True))    # "<0.02"
    v = check_lab(tb, "palmyra-wi")
    assert [(x["rule"], x["peak"], x["site"]) for x in v] == [("cyanide-max", 0.51, "p")]
    assert "§13.48(2)(l)" in v[0]["citation"] and v[0]["source"] == "lab"
    # a non-detect with a detection limit above 0.5 counts at its limit for compliance by default
    tb = table(("p", "a", "2026-02-01", "cn", 0.8, True))
    assert [x["peak"] for x in check_lab(tb, "palmyra-wi")] == [0.8]
    assert check_lab(tb, "palmyra-wi", non_detect="zero") == []


def test_westfield_has_no_lab_prohibitions():
    tb = table(("m", "a", "2026-01-05", "fog", 900.0, False))
    assert check_lab(tb, "westfield-wi") == []


# --- discharge permit §13.54(1) ------------------------------------------------------------

def test_permit_by_concentration_average():
    tb = table(("m", "a", "2026-01-05", "bod5", 200.0, False), ("m", "b", "2026-01-12", "bod5", 310.0, False),
               ("m", "a", "2026-01-05", "tp", 7.0, False), ("m", "b", "2026-01-12", "tp", 7.0, False),
               ("o", "c", "2026-01-05", "bod5", 900.0, False))
    r = permit_required(tb, "m", "palmyra-wi")
    # BOD average (200 + 310)/2 = 255 > 250 -> required; TP average 7.0 is not > 7
    assert r["required"] is True
    assert [(x["criterion"], x["value"]) for x in r["reasons"]] == [("bod5", 255.0)]
    assert "§13.54(1)(a)" in r["reasons"][0]["citation"]
    assert {x["criterion"] for x in r["checked"]} == {"bod5", "tp"}


def test_permit_by_volume_5000_gal_a_day_or_more():
    tb = table(("m", "a", "2026-01-05", "bod5", 100.0, False))
    # average exactly (4,000 + 6,000)/2 = 5,000 gal/day -> "5,000 gallons per day or greater": required
    r = permit_required(tb, "m", "palmyra-wi", daily_volumes_gal=[4000, 6000])
    assert r["required"] and r["reasons"][0]["criterion"] == "volume" and "§13.54(1)(e)" in r["reasons"][0]["citation"]
    # average (4,000 + 5,998)/2 = 4,999 gal/day < 5,000: not required
    assert permit_required(tb, "m", "palmyra-wi", daily_volumes_gal=[4000, 5998])["required"] is False


# --- EPA significant noncompliance -----------------------------------------------------------

def test_snc_chronic_exactly_at_66_percent():
    # 33 of 50 = 66 % exceed the limit (by any magnitude) -> chronic
    vals = [100.1] * 33 + [50.0] * 17
    r = snc_counts(vals, 100.0, "fog")
    assert (r["n"], r["n_exceed"], r["chronic"], r["snc"]) == (50, 33, True, True)
    # 32 of 50 = 64 % -> not chronic (and none reaches 1.4 x 100 = 140 -> no TRC)
    r = snc_counts([100.1] * 32 + [50.0] * 18, 100.0, "fog")
    assert (r["chronic"], r["trc"], r["snc"]) == (False, False, False)
    # equal to the limit is not exceeding: 33 at exactly 100 -> 0 % exceed
    assert snc_counts([100.0] * 33 + [50.0] * 17, 100.0, "fog")["n_exceed"] == 0


def test_snc_trc_exactly_at_1_4_times():
    # FOG limit 100: 1.4 x 100 = 140. 1 of 3 results (33.3 % >= 33 %) at exactly 140 -> TRC
    r = snc_counts([140.0, 10.0, 10.0], 100.0, "fog")
    assert (r["n_trc"], r["trc"], r["chronic"], r["snc"]) == (1, True, False, True)
    # 139.99 is below 1.4 x: no TRC
    assert snc_counts([139.99, 10.0, 10.0], 100.0, "fog")["trc"] is False
    # 33 of 100 = exactly 33 % -> TRC; 32 of 100 -> not
    assert snc_counts([140.0] * 33 + [1.0] * 67, 100.0, "bod5")["trc"] is True
    assert snc_counts([140.0] * 32 + [1.0] * 68, 100.0, "bod5")["trc"] is False


def test_snc_trc_factor_1_2_for_others_and_none_for_ph():
    # cyanide limit 0.5: 1.2 x 0.5 = 0.6; 0.6 counts, 0.59 does not
    assert snc_counts([0.6, 0.1], 0.5, "cn")["n_trc"] == 1
    assert snc_counts([0.59, 0.1], 0.5, "cn")["n_trc"] == 0
    assert snc_counts([0.6], 0.5, "cn")["trc_factor"] == 1.2
    assert snc_counts([1.0], 1.0, "tss")["trc_factor"] == 1.4
    # pH is judged against its range, never against one number
    with pytest.raises(ValueError, match="pH"):
        snc_counts([3.0], 6.0, "ph")


# 40 CFR 403.8(f)(2)(viii)(A) covers every pollutant parameter, pH included
# ("66 percent or more of all of the measurements ... exceed (by any magnitude)"); for a range,
# exceeding is being outside it. Only (B) excludes pH ("1.2 for all other pollutants except pH").
PALMYRA_PH = Range(6.0, 9.0, "<", ">")     # §13.48(2)(g) "lower than 6.0 or higher than 9.0"


def test_snc_chronic_for_ph_counts_readings_outside_the_range():
    # 5.9, 9.1, 5.0 and 9.5 are outside; 6.0 and 9.0 are lawful (lower than / higher than):
    # 4 of 6 = 66.7 % >= 66 % -> chronic
    r = snc_counts([5.9, 9.1, 6.0, 9.0, 5.0, 9.5], PALMYRA_PH, "ph")
    assert (r["n"], r["n_exceed"], r["chronic"], r["snc"]) == (6, 4, True, True)
    # 2 of 3 = 66.7 % -> chronic; 65 of 100 -> not
    assert snc_counts([5.0, 5.5, 7.0], PALMYRA_PH, "ph")["chronic"] is True
    assert snc_counts([5.0] * 65 + [7.0] * 35, PALMYRA_PH, "ph")["chronic"] is False
    assert snc_counts([5.0] * 66 + [7.0] * 34, PALMYRA_PH, "ph")["chronic"] is True
    # no TRC for pH however far outside: 1 of 1 at pH 1 is chronic, not TRC
    r = snc_counts([1.0], PALMYRA_PH, "ph")
    assert (r["chronic"], r["trc"], r["trc_factor"], r["n_trc"]) == (True, False, None, 0)


def test_snc_for_ph_over_lab_results_and_the_packs_range():
    assert pack_limits("palmyra-wi")["ph"] == PALMYRA_PH
    assert pack_limits("webster-wi")["ph"] == Range(5.0, 9.0, "<", ">")   # §240-5 "less than 5.0 or higher than nine"
    tb = table(("p", "a", "2026-02-01", "ph", 5.5, False), ("p", "b", "2026-03-01", "ph", 9.4, False),
               ("p", "c", "2026-04-01", "ph", 7.2, False))
    [r] = snc(tb, pack_limits("palmyra-wi"))
    assert (r["parameter"], r["n"], r["n_exceed"], r["snc"], r["limit"]) == ("ph", 3, 2, True, [6.0, 9.0])


def test_snc_trc_is_exact_at_the_product():
    # "equal or exceed the product" of limit x 1.4, in exact arithmetic
    below_140 = float(np.nextafter(140.0, 0.0))            # 139.99999999999997
    assert snc_counts([below_140], 100.0, "fog")["n_trc"] == 0
    assert snc_counts([140.0], 100.0, "fog")["n_trc"] == 1
    assert snc_counts([float(np.nextafter(0.6, 0.0))], 0.5, "cn")["n_trc"] == 0
    # a copper limit of 0.17 mg/l: 0.17 x 1.2 = 0.204 exactly, so a result of 0.204 equals the
    # product (in binary floating point 0.17 * 1.2 is 0.20400000000000001, which 0.204 would
    # not reach) and the float below it does not
    assert 0.17 * 1.2 > 0.204
    assert snc_counts([0.204], 0.17, "cu")["n_trc"] == 1
    assert snc_counts([float(np.nextafter(0.204, 0.0))], 0.17, "cu")["n_trc"] == 0
    # 0.75 x 1.2 = 0.9 exactly; in floating point 0.8999999999999999, which must not count
    assert 0.75 * 1.2 < 0.9
    assert snc_counts([0.75 * 1.2], 0.75, "cu")["n_trc"] == 0 and snc_counts([0.9], 0.75, "cu")["n_trc"] == 1
    assert trc_boundary(100.0, Decimal("1.4")) == 140.0 and trc_boundary(0.17, Decimal("1.2")) == 0.204
    assert snc_counts([0.204], 0.17, "cu")["trc_limit"] == 0.204


def test_snc_six_month_windows_per_site():
    # Jan-Jun 2026: 2 of 3 cyanide results > 0.5 (66.7 % -> chronic);
    # Jul-Dec 2026: 1 of 3 > 0.5 at 0.55 < 0.6 (33 % exceed, no TRC) -> no SNC
    tb = table(("p", "a", "2026-01-10", "cn", 0.7, False), ("p", "b", "2026-03-10", "cn", 0.55, False),
               ("p", "c", "2026-06-30T23:00", "cn", 0.1, False),
               ("p", "d", "2026-07-01", "cn", 0.55, False), ("p", "e", "2026-09-01", "cn", 0.1, False),
               ("p", "f", "2026-12-01", "cn", 0.1, False))
    res = snc(tb, pack_limits("palmyra-wi"))
    assert [(r["window_start"], r["n"], r["n_exceed"], r["snc"]) for r in res] == [
        ("2026-01-01T00:00:00Z", 3, 2, True), ("2026-07-01T00:00:00Z", 3, 1, False)]
    assert res[0]["chronic"] and res[0]["window_end"] == "2026-07-01T00:00:00Z"


# --- flow: volumes, composites, loadings ------------------------------------------------------

def test_window_volume_trapezoid_and_clipping():
    t0 = np.datetime64("2026-01-05T00:00:00", "us")
    t = t0 + np.arange(0, 25 * 60, 60).astype("timedelta64[m]")  # hourly readings, 25 of them
    q = np.full(t.size, 100.0)                                      # 100 gpm
    v, cov = window_volume_gal(t, q, t0, t0 + np.timedelta64(24, "h"), max_gap_s=3600)
    # 100 gal/min x 1440 min = 144,000 gal
    assert v == pytest.approx(144_000.0) and cov == pytest.approx(1.0)
    # a ramp 0 -> 240 gpm over 4 h (1 reading an hour), window 1 h - 3 h: flow 60 -> 180,
    # mean 120 gpm x 120 min = 14,400 gal
    t = t0 + np.arange(0, 5 * 60, 60).astype("timedelta64[m]")
    q = np.array([0.0, 60, 120, 180, 240])
    v, cov = window_volume_gal(t, q, t0 + np.timedelta64(1, "h"), t0 + np.timedelta64(3, "h"), max_gap_s=3600)
    assert v == pytest.approx(14_400.0) and cov == pytest.approx(1.0)
    # an 8-hour gap is not bridged: coverage 16/24
    t = np.concatenate([t0 + np.arange(0, 8 * 60 + 1, 60).astype("timedelta64[m]"),
                        t0 + np.arange(16 * 60, 24 * 60 + 1, 60).astype("timedelta64[m]")])
    v, cov = window_volume_gal(t, np.full(t.size, 10.0), t0, t0 + np.timedelta64(24, "h"), max_gap_s=3600)
    assert v == pytest.approx(10 * 16 * 60) and cov == pytest.approx(16 / 24)


def test_daily_volumes_split_at_midnight():
    t0 = np.datetime64("2026-01-05T12:00:00", "us")
    t = t0 + np.arange(0, 36 * 60 + 1, 30).astype("timedelta64[m]")  # noon Jan 5 to midnight Jan 7
    days, vol, cov = daily_volumes_gal(t, np.full(t.size, 5.0), max_gap_s=3600)
    assert [str(d) for d in days] == ["2026-01-05", "2026-01-06", "2026-01-07"]
    # 5 gpm: half a day = 3,600 gal, a whole day 7,200 gal, Jan 7 nothing (one reading at 00:00)
    np.testing.assert_allclose(vol, [3600.0, 7200.0, 0.0])
    np.testing.assert_allclose(cov, [0.5, 1.0, 0.0])


def test_flow_weighted_mean_and_loading():
    t = np.array([0.0, 3600.0, 7200.0])
    q = np.array([100.0, 300.0, 100.0])
    # grabs at 0 h (200 mg/l, 100 gpm) and 1 h (600 mg/l, 300 gpm): (200*100 + 600*300)/400 = 500
    assert flow_weighted_mean([0.0, 3600.0], [200.0, 600.0], t, q) == pytest.approx(500.0)
    # 400 mg/l over 250,000 gal = 0.25 MG: 400 x 0.25 x 8.34 = 834 lb
    assert float(loading_lb(400.0, 250_000.0)) == pytest.approx(834.0)


def test_bucket_volumes_uneven_days_and_unsorted_readings():
    from lab.formulas.volumes import bucket_volumes_gal
    # readings every 10 min over 3 h: 0 h .. 3 h, 60 gpm; buckets [0, 1 h), [1 h, 2.5 h), [2.5 h, 4 h)
    t = np.arange(0, 3 * 3600 + 1, 600.0)
    q = np.full(t.size, 60.0)
    edges = np.array([0.0, 3600.0, 9000.0, 14400.0])
    vol, cov = bucket_volumes_gal(t, q, edges, max_gap_s=900)
    # 60 gal/min: 60 min -> 3,600 gal; 90 min -> 5,400 gal; 30 min covered of 90 -> 1,800 gal
    np.testing.assert_allclose(vol, [3600.0, 5400.0, 1800.0])
    np.testing.assert_allclose(cov, [1.0, 1.0, 1 / 3])
    rng = np.random.default_rng(1)
    perm = rng.permutation(t.size)
    vol2, _ = bucket_volumes_gal(t[perm], q[perm], edges, max_gap_s=900)
    np.testing.assert_allclose(vol2, vol)
    # a ramp across an edge: 0 gpm at 50 min, 120 gpm at 70 min; edge at 60 min (60 gpm there)
    # before: (0 + 60)/2 x 10 = 300 gal; after: (60 + 120)/2 x 10 = 900 gal
    vol, _ = bucket_volumes_gal([3000.0, 4200.0], [0.0, 120.0], [0.0, 3600.0, 7200.0], max_gap_s=1800)
    np.testing.assert_allclose(vol, [300.0, 900.0])


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.floats(1.0, 2000.0), min_size=2, max_size=60),
       flows=st.lists(st.floats(0.0, 500.0), min_size=61, max_size=61),
       cuts=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_buckets_add_up_to_the_window(steps, flows, cuts):
    from lab.formulas.volumes import bucket_volumes_gal
    # whatever the readings and bucket edges, the buckets sum to the volume of the whole span
    t = np.cumsum(steps)
    q = np.asarray(flows[: t.size])
    lo, hi = t[0] - 100.0, t[-1] + 100.0
    edges = np.unique(np.concatenate([[lo, hi], lo + (hi - lo) * np.asarray(cuts)]))
    vol, cov = bucket_volumes_gal(t, q, edges, max_gap_s=900.0)
    whole, wcov = window_volume_gal(t, q, lo, hi, max_gap_s=900.0)
    assert vol.sum() == pytest.approx(whole, rel=1e-9, abs=1e-6)
    assert np.all(cov <= 1.0 + 1e-9)
    assert (cov * np.diff(edges)).sum() == pytest.approx(wcov * (hi - lo), rel=1e-9, abs=1e-6)
