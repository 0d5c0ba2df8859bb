"""Checks over a period of stored results: each site's results against its pack and its
discharge permit (concentrations, loadings, flows, the permit's standing, permit need,
significant noncompliance), the days of violation, and the composite samples with their
window's metered volume and loadings."""

from __future__ import annotations

from datetime import date, datetime, timezone

from lab.checks.compliance import check_flows, check_lab, check_loadings, in_force
from lab.checks.permit import permit_required, standing
from lab.checks.snc import pack_limits, snc
from lab.ordinance import loading_limits, pack_timezone
from lab.store.flow import composite_loadings, link_composite, period_volume, store_violations
from lab.store.results import load_results
from limits.days import by_site_and_rule
from limits.permit_store import current_permits


def check_db(conn, start: datetime, end: datetime, store: bool = False, non_detect: str = "dl",
             today: date | None = None) -> dict:
    """Violations, permit needs and standing, SNC and days of violation of every site's
    results in ``[start, end)``, by its pack and its current discharge permit.

    Returns
    -------
    dict
        ``violations`` (concentrations, loadings and flows against the pack and the permit,
        the stricter applying; an expired permit), ``incomplete`` (loadings and daily flows
        not judged: the day's metered flow is incomplete), ``permits`` (whether each site
        needs one, §13.54(1)), ``standing`` (each permit's term and state on ``today``),
        ``snc``, ``days_of_violation`` (distinct local days per site and rule in the period,
        §13.60(1)) and ``stored``.
    """
    today = today or datetime.now(timezone.utc).date()
    permits = current_permits(conn)
    out = {"violations": [], "incomplete": [], "permits": [], "standing": [], "snc": [], "days_of_violation": [],
           "stored": 0}
    for key, pack in conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall():
        permit = permits.get(key)
        table = load_results(conn, start, end, [key])
        found = check_lab(table, pack, non_detect, permit)
        vol = period_volume(conn, key, start, end)
        out["permits"].append(permit_required(table, key, pack, daily_volumes_gal=list(vol["daily_gal"].values()),
                                              non_detect=non_detect))
        if permit is not None:
            during = table.select(in_force(table, permit, pack))
            loads, missing = check_loadings(during, loading_limits(pack, permit), vol["days"], pack, non_detect)
            flows, no_flow = check_flows(key, permit, vol["days"], pack) if vol["sensors"] else ([], [])
            found += loads + flows
            out["incomplete"] += missing + no_flow
            tz = pack_timezone(pack)
            st = standing(permit, pack, today, (start.astimezone(tz).date(), end.astimezone(tz).date()))
            out["standing"].append(st)
            if st["finding"] is not None:
                found.append(st["finding"])
        out["violations"] += found
        out["snc"] += snc(table, pack_limits(pack, permit), non_detect)
        tz = pack_timezone(pack)
        period = (start.astimezone(tz).date(), end.astimezone(tz).date())
        out["days_of_violation"] += by_site_and_rule(found, tz, period)
    out["violations"].sort(key=lambda v: (v["site"], v["start"], v["rule"]))
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
