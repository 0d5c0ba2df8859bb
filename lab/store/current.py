"""Stored lab results read back: the current version of each result of a period, as the
checks read them (:func:`load_results`, a :class:`lab.results_table.LabTable`) and as a list
shows them (:func:`list_results`). Below the import (:mod:`lab.store.results`) and the
period's checks (:mod:`lab.store.period_checks`), which both stand on it."""

from __future__ import annotations

from datetime import datetime

from lab.results_table import LabTable


def load_results(conn, start: datetime, end: datetime, sites: list[str] | None = None) -> LabTable:
    """Current versions of the results collected in ``[start, end)`` as a :class:`LabTable`."""
    q = ("SELECT t.key, s.sample_key, s.collected, r.analyte, r.value_mg_l, r.qualifier = '<', s.sample_type "
         "FROM lab_results_current r JOIN lab_samples s ON s.id = r.sample_id JOIN sites t ON t.id = s.site_id "
         "WHERE s.collected >= %s AND s.collected < %s")
    params: list = [start, end]
    if sites is not None:
        q += " AND t.key = ANY(%s)"
        params.append(list(sites))
    rows = conn.execute(q + " ORDER BY t.key, s.collected, r.analyte", params).fetchall()
    cols = list(zip(*rows)) if rows else [[]] * 7
    return LabTable.from_columns(*[list(c) for c in cols])


#: columns of :func:`list_results`
LISTED = ("site", "sample", "collected", "sample_type", "analyte", "qualifier", "mg_l", "version",
          "entered_by", "entered_at")


def list_results(conn, start: datetime, end: datetime, sites: list[str] | None = None) -> list[tuple]:
    """The current version of each result collected in ``[start, end)``, one tuple of
    :data:`LISTED` each, in site, time, sample and analyte order."""
    q = ("SELECT t.key, s.sample_key, s.collected, s.sample_type, r.analyte, r.qualifier, r.value_mg_l, "
         "r.version, r.entered_by, r.entered_at FROM lab_results_current r "
         "JOIN lab_samples s ON s.id = r.sample_id JOIN sites t ON t.id = s.site_id "
         "WHERE s.collected >= %s AND s.collected < %s")
    params: list = [start, end]
    if sites:
        q += " AND t.key = ANY(%s)"
        params.append(list(sites))
    return conn.execute(q + " ORDER BY t.key, s.collected, s.sample_key, r.analyte", params).fetchall()
