"""The database side of lab/ (SQL only here): importing lab results (versions, dead letters,
audit log) and reading them back, flow readings and the volumes of windows and periods,
composite links, stored lab violations, and the checks over a period of stored results.
"""

from lab.store.current import list_results, load_results
from lab.store.flow import composite_loadings, link_composite, period_volume, store_violations
from lab.store.period_checks import check_db, composites
from lab.store.results import ImportReport, import_lab_file

__all__ = [
    "ImportReport", "check_db", "composite_loadings", "composites", "import_lab_file", "link_composite",
    "list_results", "load_results", "period_volume", "store_violations",
]
