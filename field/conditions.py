"""What ``sewerwatch run`` alerts about field work: its periodic round.

:func:`conditions` lists the conditions that hold now, in the form the alert manager takes
sensor-health conditions (``{(rule, subject): {"since", "detail", ...}}``): one alert each
while it lasts, resolved when it is gone.

=======================  ===================  ===============================================
rule                     subject              while
=======================  ===================  ===============================================
``maintenance-open``     ``window-<id>``      a window in effect open longer than
                                              ``[field] window_limit_h`` (2 h)
``calibration-due``      the sensor           due within ``calibration_remind_days``
``calibration-overdue``  the sensor           past its due date, not calibrated
``calibration-failed``   the sensor           its latest calibration failed
``sensor-drift``         the sensor           its latest grab sample was beyond the tolerance
                                              and no calibration has passed since
``maintenance-pending``  ``window-<id>``      a window opened after the fact awaits a
                                              second person's approval
=======================  ===================  ===============================================

:func:`round_` first compares new grab samples with the live sensors (:func:`field.drift.check_new`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from field import calibrations, drift, windows
from field.common import iso

#: The rules of this module (alert content words them; ``alerts.content.HEALTH_WORDS``).
RULES = ("maintenance-open", "maintenance-pending", "calibration-due", "calibration-overdue", "calibration-failed",
         "sensor-drift")


def _ts(t: datetime) -> float:
    return t.timestamp()


def conditions(conn, cfg, now: datetime | None = None) -> dict:
    """The field conditions that hold at ``now`` (see the module docstring)."""
    now = now or datetime.now(timezone.utc)
    out: dict = {}
    limit_h = cfg.field.window_limit_h
    for w in windows.open_too_long(conn, limit_h):
        hours = (now - w["start"]).total_seconds() / 3600.0
        out[("maintenance-open", f"window-{w['id']}")] = {
            "site": w["site"], "label": f"maintenance window {w['id']} ({w['scope']})", "since": _ts(w["start"]),
            "sensor_id": w["sensor_id"],
            "detail": f"open for {hours:.1f} h (limit {limit_h:g} h): {w['reason']}, {w['person']}; readings of "
                      f"{w['scope']} are not judged while it is open: end it (sewerwatch maintenance end {w['id']})"}
    for w in windows.pending(conn):
        out[("maintenance-pending", f"window-{w['id']}")] = {
            "site": w["site"], "label": f"maintenance window {w['id']} ({w['scope']})", "since": _ts(w["recorded_at"]),
            "sensor_id": w["sensor_id"],
            "detail": f"opened after the fact by {w['opened_by']} over {w['judged_readings']} readings already judged "
                      f"(from {iso(w['start'])}; {w['reason']}): awaits a second person's approval "
                      f"(sewerwatch maintenance approve {w['id']})"}
    tz = ZoneInfo(_tz(cfg))
    today = now.astimezone(tz).date()
    for d in calibrations.schedule(conn, today, cfg):
        why = f"every {d.interval.days} days ({d.interval.citation})"
        last = f"last passed {d.last_pass.astimezone(tz).date()}" if d.last_pass else "none passed on record"
        if d.state == "failed":
            c = calibrations.calibration(conn, d.last["id"])
            out[("calibration-failed", d.sensor_id)] = {
                "since": _ts(c["performed_at"]),
                "detail": f"calibration {c['id']} on {c['performed_at'].astimezone(tz):%Y-%m-%d %H:%M} by "
                          f"{c['technician']} failed: {'; '.join(c['reasons'])}"}
        if d.state == "overdue" or (d.state == "failed" and today > d.due_on):
            out[("calibration-overdue", d.sensor_id)] = {
                "since": datetime(d.due_on.year, d.due_on.month, d.due_on.day, tzinfo=tz).timestamp(),
                "detail": f"calibration was due {d.due_on} ({why}; {last}): {(today - d.due_on).days} days overdue"}
        elif d.state == "due-soon":
            out[("calibration-due", d.sensor_id)] = {
                "since": _ts(now), "detail": f"calibration due {d.due_on} ({why}; {last})"}
    for g in drift.drifting(conn):
        out[("sensor-drift", g["sensor_id"])] = {"since": _ts(g["taken_at"]), "detail": g["detail"],
                                                 "grab": g["grab"], "sensor_value": g["sensor_value"]}
    return out


def _tz(cfg) -> str:
    if cfg.timezone:
        return cfg.timezone
    from limits.packs import load_pack
    return load_pack(cfg.pack).timezone


def round_(conn, cfg, now: datetime | None = None) -> tuple[list[dict], dict]:
    """One round of ``run``'s field component: new grab checks, then the conditions."""
    new = drift.check_new(conn, cfg, now)
    conn.commit()
    return new, conditions(conn, cfg, now)
