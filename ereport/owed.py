"""What an industrial user owes and has, for its portal's home page: its
permit (current version, limits, monitoring conditions, renewal), its samples due and taken,
the reports it owes (due dates, days late), the notices issued to it with their response
deadlines, its own results and violations, its bills, and what it submitted.

Every query names the site: nothing here reads another user's rows. Notices still in draft
are the utility's and not shown.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from lab.ordinance import pack_timezone
from limits.statements import of_violation

#: Palmyra §13.54(4): "unless the person is notified by the Village within 60 days prior to the
#: expiration of the permit": the renewal application opens this many days before the term ends.
RENEWAL_OPENS_DAYS = 60


def site_of(conn, site_id: int) -> dict:
    row = conn.execute("SELECT id, key, name, pack, sic, permit FROM sites WHERE id = %s", (site_id,)).fetchone()
    return dict(zip(("id", "key", "name", "pack", "sic", "permit"), row))


def permit_view(conn, site: dict, today: date) -> dict | None:
    """The current permit, its renewal and whether a renewal application is open."""
    from limits.permit_store import current_permits
    from limits.permits import renewal

    permit = current_permits(conn).get(site["key"])
    if permit is None:
        return None
    st = renewal(permit, today)
    opens = st.term_end - timedelta(days=RENEWAL_OPENS_DAYS)
    version = conn.execute("SELECT version, entered_at FROM permits_current WHERE number = %s",
                           (permit.number,)).fetchone()
    return {"permit": permit, "renewal": st, "renewal_opens": opens, "renewal_open": today >= opens,
            "version": version[0] if version else None}


def renewal_open(conn, site: dict, today: date) -> tuple[bool, str]:
    """Whether the user may apply now, and why (a new application is always open)."""
    pv = permit_view(conn, site, today)
    if pv is None:
        return True, "no permit on record: an application for one"
    if pv["renewal_open"]:
        return True, f"renewal of {pv['permit'].number}, whose term ends {pv['renewal'].term_end.isoformat()}"
    return False, (f"the renewal of {pv['permit'].number} opens on {pv['renewal_opens'].isoformat()}, "
                   f"{RENEWAL_OPENS_DAYS} days before its term ends on {pv['renewal'].term_end.isoformat()} "
                   "(Village of Palmyra Code §13.54(4))")


def home(conn, site: dict, now: datetime) -> dict:
    """Everything the home page shows for one user."""
    from enforcement import notices, reports, schedules

    tz = pack_timezone(site["pack"])
    today = now.astimezone(tz).date()
    out = {"permit": permit_view(conn, site, today)}
    try:
        periods = schedules.schedule(conn, now, site_key=site["key"])
    except Exception as exc:  # noqa: BLE001 - the rest of the page stands; the section says why
        periods, out["schedule_error"] = [], f"{type(exc).__name__}: {exc}"
    out["samples"] = [p for p in periods if p.state != "continuous"][-12:]
    out["continuous"] = [p for p in periods if p.state == "continuous"]
    out["reports"] = reports.list_reports(conn, now, site["key"])
    out["notices"] = [n for n in notices.list_notices(conn, site["key"]) if n["state"] != "drafted"]
    out["results"] = [dict(zip(("sample", "collected", "analyte", "value", "unit", "qualifier", "version", "own",
                                "sample_type"), r)) for r in conn.execute(
        "SELECT s.sample_key, s.collected, r.analyte, r.value_mg_l, 'mg/l', r.qualifier, r.version, "
        "s.submission_id IS NOT NULL, s.sample_type FROM lab_results_current r JOIN lab_samples s ON s.id = r.sample_id "
        "WHERE s.site_id = %s ORDER BY s.collected DESC, r.analyte LIMIT 60", (site["id"],)).fetchall()]
    out["violations"] = [dict(zip(("rule", "parameter", "start", "end", "peak", "limit", "unit", "days", "citation",
                                   "source", "evidence"), r)) for r in conn.execute(
        "SELECT rule, parameter, start_time, end_time, peak, limit_value, unit, days_of_violation, citation, source, "
        "evidence FROM violations WHERE site_id = %s ORDER BY start_time DESC LIMIT 60", (site["id"],)).fetchall()]
    for v in out["violations"]:     # the limit in words, of the sample's type ("4 mg/l in a grab sample")
        v["stated"] = of_violation(v) if v["source"] == "lab" and v["limit"] is not None else None
    out["bills"] = [dict(zip(("id", "period", "issued_at", "total"), r)) for r in conn.execute(
        "SELECT id, period, issued_at, total_dollars FROM bills WHERE site_id = %s AND superseded_by IS NULL ORDER BY period_start DESC LIMIT 12",
        (site["id"],)).fetchall()]
    out["today"] = today
    out["now"] = now.astimezone(timezone.utc)
    return out


def home_day(now: datetime, site: dict) -> date:
    """Today in the user's village."""
    return now.astimezone(pack_timezone(site["pack"])).date()
