"""The grease blockages traced to an establishment as its findings (kind ``blockage``,
:class:`fog.findings.Finding`), and the year's count of blockages: what :mod:`fog.store`
reads of the sewer crew's reports (:mod:`fog.blockages` records them)."""

from __future__ import annotations

from datetime import date

from fog.findings import Finding


def findings_of(conn, establishment_ids: list[int], as_of: date) -> dict[int, list]:
    """The blockages traced to each establishment up to ``as_of``, as its findings:
    establishment id -> ``[(place, Finding)]``, ``place`` standing where a device stands
    beside a device's finding (``label``: the manhole or segment)."""
    out: dict[int, list] = {}
    for bid, est, on, location, found, by in conn.execute(
            "SELECT id, establishment_id, found_on, location, found, found_by FROM fog_blockages "
            "WHERE establishment_id = ANY(%s) AND found_on <= %s ORDER BY found_on, id",
            (establishment_ids, as_of)).fetchall():
        place = {"id": None, "label": location}
        out.setdefault(est, []).append((place, Finding("blockage", on, f"grease blockage at {location}: {found} "
                                                       f"(found by {by})",
                                                       blockage_id=bid)))
    return out


def counts(conn, year: int, end: date) -> dict:
    """The year's blockages to ``end``: found, and traced to an establishment [count]."""
    n, traced = conn.execute(
        "SELECT count(*), count(establishment_id) FROM fog_blockages WHERE found_on BETWEEN %s AND %s",
        (date(year, 1, 1), end)).fetchone()
    return {"blockages": n, "blockages_traced": traced}
