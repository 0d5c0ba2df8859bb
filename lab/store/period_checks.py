"""Checks over a period of stored results: each site's results against its pack and its
discharge permit (concentrations, loadings, flows, the permit's standing, permit need,
significant noncompliance), the days of violation, and the composite samples with their
window's metered volume and loadings."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from lab.checks.compliance import ROLLING_DAYS, check_flows, check_lab, check_loadings, in_force
from lab.checks.permit import permit_required, standing
from lab.checks.snc import pack_limits, snc
from lab.ordinance import lab_limits, loading_limits, pack_of, pack_timezone
from lab.store.current import load_results
from lab.store.flow import composite_loadings, link_composite, period_volume, stored_violations, store_violations
from limits.days import by_site_and_rule
from limits.permit_store import current_permits
from limits.readings import Readings


def prohibited_episodes(conn, site: str, pack: str, start: datetime, end: datetime) -> list[dict]:
    """The stored episodes of the readings at ``site`` in ``[start, end)`` that show a
    prohibition of the ordinance itself (its own limit, whatever a stricter permit applied:
    a range rule's peak beyond the pack's limit; a slug), for §13.54(1)(f)."""
    p = pack_of(pack)
    rules = {r.id: r for r in p.rules}
    out = []
    for v in stored_violations(conn, site, start, end):
        r = rules.get(v["rule"])
        if v["source"] not in ("stream", "batch") or r is None or v["peak"] is None:
            continue
        if r.kind == "slug" or (r.kind == "range" and bool(r.exceeded_by([v["peak"]])[0])):
            out.append({**v, "limit": v["limit"] if r.kind == "slug" else r.limit_canonical,
                        "comparison": r.comparison, "citation": r.citation})
    return out


def with_rolling_lookback(conn, found: list[dict], key: str, pack: str, permit, start: datetime, end: datetime,
                           non_detect: str, readings: Readings) -> list[dict]:
    """``found`` with its rolling 30-day averages judged over the results of the 30 days before
    each day of the period too (a window ending on the period's first days reaches back before
    it): the records of windows ending in the period."""
    if not any(lim.statistic == "rolling-30-day" for lim in lab_limits(pack, permit)):
        return found
    first = start.astimezone(pack_timezone(pack)).date().isoformat()
    back = load_results(conn, start - timedelta(days=ROLLING_DAYS), end, [key])
    rolling = [v for v in check_lab(back, pack, non_detect, permit, readings, (start, end))
               if v["evidence"].get("statistic") == "rolling-30-day" and v["evidence"]["window"][1] >= first]
    return [v for v in found if v["evidence"].get("statistic") != "rolling-30-day"] + rolling


def check_db(conn, start: datetime, end: datetime, store: bool = False, non_detect: str = "dl",
             today: date | None = None, readings: Readings = Readings()) -> dict:
    """Violations, permit needs and standing, SNC and days of violation of every site's
    results in ``[start, end)``, by its pack and its current discharge permit (``readings``:
    :mod:`limits.readings`).

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
    permits = current_permits(conn)
    out = {"violations": [], "incomplete": [], "permits": [], "standing": [], "snc": [], "days_of_violation": [],
           "stored": 0}
    for key, pack in conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall():
        permit = permits.get(key)
        tz = pack_timezone(pack)
        table = load_results(conn, start, end, [key])
        found = check_lab(table, pack, non_detect, permit, readings, (start, end))
        found = with_rolling_lookback(conn, found, key, pack, permit, start, end, non_detect, readings)
        vol = period_volume(conn, key, start, end)
        # §13.54(1)(f): the ordinance's own prohibitions, whatever the permit applies
        prohibited = (check_lab(table, pack, non_detect, None, readings, (start, end))
                      + prohibited_episodes(conn, key, pack, start, end))
        out["permits"].append(permit_required(table, key, pack, daily_volumes_gal=list(vol["daily_gal"].values()),
                                              non_detect=non_detect, prohibited=prohibited))
        if permit is not None:
            during = table.select(in_force(table, permit, pack))
            loads, missing = check_loadings(during, loading_limits(pack, permit), vol["days"], pack, non_detect)
            flows, no_flow = check_flows(key, permit, vol["days"], pack, readings) if vol["sensors"] else ([], [])
            found += loads + flows
            out["incomplete"] += missing + no_flow
            st = standing(permit, pack, today or datetime.now(tz).date(),
                          (start.astimezone(tz).date(), end.astimezone(tz).date()))
            out["standing"].append(st)
            if st["finding"] is not None:
                found.append(st["finding"])
        out["violations"] += found
        out["snc"] += snc(table, pack_limits(pack, permit), non_detect, tz)
        out["days_of_violation"] += by_site_and_rule(found, tz, (start, end))
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
