"""Checks over a period of stored results: each site's results against its pack (lab limits,
discharge permit, significant noncompliance), and the composite samples with their window's
metered volume and loadings."""

from __future__ import annotations

from datetime import datetime

from lab.checks.compliance import check_lab
from lab.checks.permit import permit_required
from lab.checks.snc import pack_limits, snc
from lab.store.flow import composite_loadings, link_composite, period_volume, store_violations
from lab.store.results import load_results


def check_db(conn, start: datetime, end: datetime, store: bool = False, non_detect: str = "dl") -> dict:
    """Violations, permit needs and SNC of every site's results in ``[start, end)``."""
    out = {"violations": [], "permits": [], "snc": [], "stored": 0}
    for key, pack in conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall():
        table = load_results(conn, start, end, [key])
        out["violations"] += check_lab(table, pack, non_detect)
        daily = list(period_volume(conn, key, start, end)["daily_gal"].values())
        out["permits"].append(permit_required(table, key, pack, daily_volumes_gal=daily, non_detect=non_detect))
        out["snc"] += snc(table, pack_limits(pack), non_detect)
    if store:
        with conn.transaction():
            out["stored"] = store_violations(conn, out["violations"])
    return out


def composites(conn, start: datetime, end: datetime, relink: bool = False) -> list[dict]:
    """Composite samples collected in ``[start, end)`` with their window's volume and loadings.

    With ``relink`` each window's volume is computed again from the readings stored now
    (readings that arrived after the lab import count).
    """
    rows = conn.execute(
        "SELECT s.id, t.key, s.sample_key, s.window_start, s.window_end FROM lab_samples s "
        "JOIN sites t ON t.id = s.site_id WHERE s.sample_type = 'composite' AND s.collected >= %s "
        "AND s.collected < %s ORDER BY t.key, s.collected", (start, end)).fetchall()
    out = []
    with conn.transaction():
        for sid, site, key, ws, we in rows:
            linked = conn.execute("SELECT 1 FROM lab_composite_flows WHERE sample_id = %s", (sid,)).fetchone()
            if relink or linked is None:
                link_composite(conn, sid)
            item = {"site": site, "sample": key, "window_start": ws.isoformat(), "window_end": we.isoformat()}
            try:
                item.update(composite_loadings(conn, sid))
            except LookupError:
                item["note"] = "no single flow meter at the site: not linked"
            out.append(item)
    return out
