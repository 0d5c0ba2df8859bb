"""The ordinances' formulas as pure functions (numbers in, numbers out; no files, no
database), each citing the section it implements. The numbers a village fixes come in as a
terms object built from its rule pack (:mod:`lab.charges` maps formula kinds to these).

``surcharge`` EPA Model No. 2; ``use_charge`` a unit cost per 1,000 gallons;
``sewer_rents`` units of use; ``re_charges`` user and debt charges per residential
equivalent; ``rec`` residential equivalent connections by SIC code; ``late`` late charges;
``money`` rounding to the cent; ``nondetect`` what a non-detect counts as; ``volumes`` the
flow arithmetic (volumes of windows and days, flow-weighted means, loadings).
"""

from lab.formulas.late import FlatLateCharge, MonthlyInterest, late_days
from lab.formulas.money import cents
from lab.formulas.nondetect import POLICIES, substitute
from lab.formulas.re_charges import ReChargeTerms, debt_charge_per_re, service_charge, user_charge_per_re
from lab.formulas.rec import RecTerms, gallons_per_employee_hour, rec_for_sic, round_rec, sic_ranges
from lab.formulas.sewer_rents import SewerRentTerms, quarterly_sewer_rent, residential_units
from lab.formulas.surcharge import LB_PER_MG_MGL, excess_pounds, group_results, model_2_surcharge
from lab.formulas.use_charge import UseChargeTerms, use_charge
from lab.formulas.volumes import (
    bucket_volumes_gal, daily_volumes_gal, flow_weighted_mean, loading_lb, window_volume_gal,
)

__all__ = [
    "FlatLateCharge", "LB_PER_MG_MGL", "MonthlyInterest", "POLICIES", "ReChargeTerms", "RecTerms",
    "SewerRentTerms", "UseChargeTerms", "bucket_volumes_gal", "cents", "daily_volumes_gal", "debt_charge_per_re",
    "excess_pounds", "flow_weighted_mean", "gallons_per_employee_hour", "group_results", "late_days",
    "loading_lb", "model_2_surcharge", "quarterly_sewer_rent", "rec_for_sic", "residential_units", "round_rec",
    "service_charge", "sic_ranges", "substitute", "use_charge", "user_charge_per_re", "window_volume_gal",
]
