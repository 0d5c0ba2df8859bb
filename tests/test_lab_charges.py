"""Charges other than surcharges: Westfield RE charges, Webster NY sewer rents, Palmyra REC,
late charges. Every expectation is computed by hand in the comments."""

from datetime import date

import pytest

from lab.charges import charge_terms, late_charge, rec_terms
from lab.formulas.rec import gallons_per_employee_hour, rec_for_sic, round_rec
from lab.formulas.re_charges import debt_charge_per_re, service_charge, user_charge_per_re
from lab.formulas.sewer_rents import quarterly_sewer_rent, residential_units
from foundation.errors import InputError

# the ordinances' numbers, as the packs give them
WESTFIELD = charge_terms("westfield-wi", "service-charge")
WEBSTER_NY = charge_terms("webster-ny", "sewer-rent")
PALMYRA_REC = rec_terms("palmyra-wi")


# --- Westfield -------------------------------------------------------------------------

def test_westfield_worked_example_101_a_quarter():
    # westfield-wi C: 500 RE, $35,000 + $5,000 = $40,000; 40,000 / 500 = $80 per RE a year;
    # 80 / 4 = $20 a quarter; user charge $81 (2014 and after) + $20 = $101 a quarter
    assert debt_charge_per_re(35_000 + 5_000, 500, 4) == 20.0
    sc = service_charge(2026, 1.0, WESTFIELD, annual_debt_budget=40_000, total_re=500, periods_per_year=4)
    assert (sc.user_per_re, sc.debt_per_re, sc.per_re, sc.dollars) == (81.0, 20.0, 101.0, 101.0)


def test_westfield_user_charge_by_year_and_several_re():
    assert [user_charge_per_re(y, WESTFIELD) for y in (2010, 2011, 2012, 2013, 2014, 2020)] == [61, 66, 71, 76, 81, 81]
    # 2012, before debt charges were computed (2016): $71 per RE, debt $0; 3.5 RE -> $248.50
    assert service_charge(2012, 3.5, WESTFIELD).dollars == 248.50
    # 2026, 12.25 RE, $40,000 / 500 / 4 = $20: 12.25 x 101 = $1,237.25
    assert service_charge(2026, 12.25, WESTFIELD, annual_debt_budget=40_000, total_re=500).dollars == 1237.25
    with pytest.raises(InputError, match="before 2010"):
        user_charge_per_re(2009, WESTFIELD)


# --- Webster NY ------------------------------------------------------------------------

def test_webster_ny_quarterly_rent():
    # §113-75 D(4)(c): 150,000 gal / 60,000 = 2.5 units x $400 = $1,000.00
    r = quarterly_sewer_rent(150_000, 400.0, WEBSTER_NY)
    assert r.units == 2.5 and r.dollars == 1000.0 and not r.minimum_applied


def test_webster_ny_minimum_is_quarter_of_annual_fee():
    # 9,000 gal / 60,000 = 0.15 unit x $400 = $60 < 25 % x $400 = $100 -> $100.00
    r = quarterly_sewer_rent(9_000, 400.0, WEBSTER_NY)
    assert r.dollars == 100.0 and r.minimum_applied
    # exactly at the minimum: 15,000 / 60,000 = 0.25 x 400 = $100, not flagged as raised
    r = quarterly_sewer_rent(15_000, 400.0, WEBSTER_NY)
    assert r.dollars == 100.0 and not r.minimum_applied


def test_webster_ny_first_quarter_from_previous_year():
    # §113-75 D(4)(a): 480,000 gal last year x 0.25 = 120,000 gal -> 2 units x $375 = $750.00
    r = quarterly_sewer_rent(None, 375.0, WEBSTER_NY, previous_year_use_gal=480_000)
    assert r.use_gal == 120_000 and r.dollars == 750.0
    with pytest.raises(InputError, match="previous year"):
        quarterly_sewer_rent(None, 375.0, WEBSTER_NY)


def test_webster_ny_residential_units():
    assert residential_units(1, WEBSTER_NY) == 1.0 and residential_units(2, WEBSTER_NY) == 2.0
    with pytest.raises(InputError):
        residential_units(3, WEBSTER_NY)


# --- Palmyra REC -----------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (0.3, 1.0),      # below the minimum of 1.00
    (1.0, 1.0),
    (1.12, 1.0),     # 1.12 is nearer 1.00 than 1.25
    (1.125, 1.25),   # half-way rounds up
    (1.13, 1.25),
    (2.37, 2.25),    # 2.37 - 2.25 = 0.12 < 0.13
    (2.38, 2.5),
    (7.874, 7.75),
    (7.875, 8.0),
])
def test_rec_rounding(raw, expected):
    assert round_rec(raw, PALMYRA_REC) == expected


def test_rec_from_sic_table():
    # §13.61(2): SIC 5812 restaurants 20.0 gal/employee-hour; 12 employees x 8 h = 96 h
    # 96 x 20 = 1,920 gal/day; average home 220 gal/day -> 8.727 REC -> 8.75
    r = rec_for_sic("5812", 96, 220, PALMYRA_REC)
    assert r.gal_per_employee_hour == 20.0 and r.flow_gal == 1920.0
    assert r.rec == 8.75
    # SIC 7215 coin laundries 910 gal/employee-hour x 2 h = 1,820 / 200 = 9.1 -> 9.0
    assert rec_for_sic("7215", 2, 200, PALMYRA_REC).rec == 9.0
    # SIC 8111 attorneys 2.3 x 8 h = 18.4 gal / 200 = 0.092 -> minimum 1.00
    assert rec_for_sic("8111", 8, 200, PALMYRA_REC).rec == 1.0


def test_rec_sic_ranges_and_unknown_codes():
    # "5942-9 Miscellaneous Stores 2.3" covers 5942 ... 5949; "6022-59 Banks" 6022 ... 6059
    assert gallons_per_employee_hour("5945", PALMYRA_REC) == (2.3, "Miscellaneous Stores")
    assert gallons_per_employee_hour("6059", PALMYRA_REC)[1] == "Banks"
    assert gallons_per_employee_hour("2013", PALMYRA_REC) == (110.0, "Sausage & Other Prepared Meats")
    with pytest.raises(InputError, match="not in the §13.61 table"):
        gallons_per_employee_hour("6060", PALMYRA_REC)
    with pytest.raises(InputError, match="4 digits"):
        gallons_per_employee_hour("58x2", PALMYRA_REC)


# --- late charges ----------------------------------------------------------------------

def test_palmyra_three_percent_after_twenty_days():
    # §13.46(8): billed Jan 10; paid Jan 30 (20 days) -> on time; Jan 31 (21 days) -> 3 %
    assert late_charge("palmyra-wi", 1234.56, date(2026, 1, 10), date(2026, 1, 30)).dollars == 0.0
    # 3 % x 1,234.56 = 37.0368 -> $37.04
    lc = late_charge("palmyra-wi", 1234.56, date(2026, 1, 10), date(2026, 1, 31))
    assert lc.dollars == 37.04 and "§13.46(8)" in lc.citation
    # flat: the same 3 % however late
    assert late_charge("palmyra-wi", 1234.56, date(2026, 1, 10), date(2026, 6, 1)).dollars == 37.04


def test_superior_one_percent_a_month_from_thirty_days():
    billed = date(2026, 4, 1)
    # paid on day 30 (May 1): nothing
    assert late_charge("superior-wi", 500.0, billed, date(2026, 5, 1)).dollars == 0.0
    # paid on day 75 (Jun 15): 45 days late = 1.5 months x 1 % x $500 = $7.50
    lc = late_charge("superior-wi", 500.0, billed, date(2026, 6, 15))
    assert (lc.days_late, lc.dollars) == (45, 7.50)
    # paid on day 120 (Jul 30): 90 days = 3 months x 1 % x $800 = $24.00
    assert late_charge("superior-wi", 800.0, billed, date(2026, 7, 30)).dollars == 24.0


def test_late_charge_errors():
    with pytest.raises(InputError, match="no late charge"):
        late_charge("westfield-wi", 10.0, date(2026, 1, 1), date(2026, 3, 1))
    with pytest.raises(InputError, match="before billed"):
        late_charge("palmyra-wi", 10.0, date(2026, 3, 1), date(2026, 1, 1))
