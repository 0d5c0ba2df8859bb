"""The ordinances' formulas as pure functions (numbers in, numbers out; no files, no
database), each citing the section it implements: surcharges, sewer rents, charges per
residential equivalent, residential equivalent connections, late charges, rounding to the
cent, non-detects, and the flow arithmetic (volumes of windows and days, loadings).
"""

from lab.formulas.money import cents
from lab.formulas.nondetect import POLICIES, substitute
from lab.formulas.volumes import (
    bucket_volumes_gal, daily_volumes_gal, flow_weighted_mean, loading_lb, window_volume_gal,
)

__all__ = [
    "POLICIES", "bucket_volumes_gal", "cents", "daily_volumes_gal", "flow_weighted_mean", "loading_lb",
    "substitute", "window_volume_gal",
]
