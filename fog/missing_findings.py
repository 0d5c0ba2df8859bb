"""The grease removal devices recorded missing (:mod:`fog.missing_devices`) as the
establishments' findings (kind ``missing device``, :class:`fog.findings.Finding`), and the
year's count: what :mod:`fog.store` reads of ``fog_missing_devices``."""

from __future__ import annotations

from datetime import date

from fog.findings import Finding

KIND = "missing device"
#: What stands where a device's label stands when the establishment has no device at all.
NO_DEVICE = "no device"


def _words(row_label: str | None, category: str, notes: str) -> str:
    said = (f"device {row_label} on record was not there" if row_label else
            f"no grease interceptor at the establishment, a {category}")
    return said + (f" ({notes})" if notes else "")


def findings_of(conn, establishment_ids: list[int], as_of: date) -> dict[int, list]:
    """The missing devices recorded up to ``as_of``, as findings: establishment id ->
    ``[(place, Finding)]``, ``place`` the device (its ``id`` and ``label``), or ``no device``."""
    out: dict[int, list] = {}
    for mid, est, on, dev_id, label, category, notes in conn.execute(
            "SELECT m.id, m.establishment_id, m.found_on, m.device_id, d.label, e.category, m.notes "
            "FROM fog_missing_devices m JOIN fog_establishments e ON e.id = m.establishment_id "
            "LEFT JOIN fog_devices d ON d.id = m.device_id WHERE m.establishment_id = ANY(%s) AND m.found_on <= %s "
            "ORDER BY m.found_on, m.id", (establishment_ids, as_of)).fetchall():
        place = {"id": dev_id, "label": label or NO_DEVICE}
        out.setdefault(est, []).append((place, Finding(KIND, on, _words(label, category, notes), missing_id=mid)))
    return out


def count(conn, year: int, end: date) -> int:
    """Missing devices found in ``year`` up to ``end`` [count]."""
    return conn.execute("SELECT count(*) FROM fog_missing_devices WHERE found_on BETWEEN %s AND %s",
                        (date(year, 1, 1), end)).fetchone()[0]
