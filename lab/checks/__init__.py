"""Judging lab results against the ordinance: pure functions over a
:class:`lab.results_table.LabTable` and the limits of a site's rule pack.

``compliance`` the prohibitions checked on lab results (FOG, cyanide), ``permit`` whether a
discharge permit is required, ``snc`` EPA significant noncompliance.
"""

from lab.checks.compliance import check_lab, check_limit
from lab.checks.permit import permit_required
from lab.checks.snc import pack_limits, snc, snc_counts

__all__ = ["check_lab", "check_limit", "pack_limits", "permit_required", "snc", "snc_counts"]
