"""Findings from field work: a failed calibration, a calibration overdue, a
deficiency an inspection found.

Each is a computed finding with a key (finding it again stores nothing), from which a notice
is drafted like any other (``sewerwatch notice draft --finding N``; the guide's rows
``calibration-failed``, ``calibration-overdue``, ``inspection-deficiency``):

* ``calibration-failed:<calibration id>``: on the local day of the calibration;
* ``calibration-overdue:<sensor id>:<due date>``: on the first day after the due date (the
  calibration interval of :func:`field.instruments.interval`: the permit's, the ordinance's,
  the instrument's or the utility's, the shortest);
* ``inspection-deficiency:<inspection id>:<item number>``: on the day of the visit.

:func:`record_inspection` and :func:`record_calibration` are what the command line and the
office call: the record (:mod:`field`) and its findings in one go. :func:`check` finds the
rest (the overdue calibrations) and runs with the other computed findings
(:func:`enforcement.due.due_items`).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from enforcement.findings import store_finding
from field import calibrations, inspections
from lab.ordinance import pack_timezone

#: 40 CFR 403.8(f)(2)(v): the Control Authority's authority to "inspect and sample"; 403.12(o):
#: records of monitoring activities (calibrations among them) kept and available.
INSPECT_CITATION = "40 CFR 403.8(f)(2)(v)"
RECORDS_CITATION = "40 CFR 403.12(o)"


def _local_day(t: datetime, pack: str) -> date:
    return t.astimezone(pack_timezone(pack)).date()


def _pack_of(conn, site_id: int) -> str:
    return conn.execute("SELECT pack FROM sites WHERE id = %s", (site_id,)).fetchone()[0]


def calibration_failed(conn, c: dict, by: str | None = None) -> int | None:
    """The finding of a failed calibration ``c`` (:func:`field.calibrations.calibration`)."""
    if c["result"] != "fail":
        return None
    site_id = conn.execute("SELECT site_id FROM sensors WHERE id = %s", (c["sensor_id"],)).fetchone()[0]
    return store_finding(
        conn, site_id, "calibration-failed", _local_day(c["performed_at"], _pack_of(conn, site_id)),
        f"{c['site']}/{c['sensor']}: calibration {c['id']} failed: {'; '.join(c['reasons'])}",
        key=f"calibration-failed:{c['id']}", citation=RECORDS_CITATION,
        words="Records of monitoring activities and results, calibrations among them, shall be retained and made "
              "available (40 CFR 403.12(o)); an instrument that fails its calibration does not measure as required.",
        evidence={"calibration_id": c["id"], "sensor_id": c["sensor_id"], "reasons": c["reasons"]}, by=by or "sewerwatch")


def inspection_deficiencies(conn, ins: dict, by: str | None = None) -> list[int]:
    """A finding for each deficient item of inspection ``ins`` (:func:`field.inspections.inspection`)."""
    out = []
    day = _local_day(ins["visited_at"], _pack_of(conn, ins["site_id"]))
    for n, c in enumerate(ins["checklist"], start=1):
        if c["answer"] != "deficient":
            continue
        fid = store_finding(
            conn, ins["site_id"], "inspection-deficiency", day,
            f"{ins['site_name']}: inspection {ins['id']} found: {c['item']}: {c['note']}",
            key=f"inspection-deficiency:{ins['id']}:{n}", citation=c["citation"] or INSPECT_CITATION,
            words=c.get("words") or None,
            evidence={"inspection_id": ins["id"], "item": c["item"], "note": c["note"], "inspector": ins["inspector"],
                      "photos": [p["id"] for p in ins["photos"]]}, by=by or "sewerwatch")
        if fid is not None:
            out.append(fid)
    return out


def record_inspection(conn, site: str, *, actor, cfg, **kwargs) -> dict:
    """Record an inspection (:func:`field.inspections.record`) and its deficiencies as findings."""
    with conn.transaction():
        ins = inspections.record(conn, site, actor=actor, cfg=cfg, **kwargs)
        ins["findings_recorded"] = [] if ins.get("again") else inspection_deficiencies(conn, ins, actor.audit_name)
    return ins


def record_calibration(conn, sensor_key: str, *, actor, cfg, **kwargs) -> dict:
    """Record a calibration (:func:`field.calibrations.record`) and, when it failed, its finding."""
    with conn.transaction():
        c = calibrations.record(conn, sensor_key, actor=actor, tolerances=calibrations.Tolerances.of(cfg), **kwargs)
        c["finding_id"] = calibration_failed(conn, c, actor.audit_name)
    return c


def check(conn, now: datetime, cfg) -> list[int]:
    """Store the findings of field work not stored yet: failed calibrations, calibrations
    overdue on ``now``'s local day, deficient inspection items. Returns the new ids."""
    new = []
    for (cid,) in conn.execute("SELECT id FROM calibrations WHERE result = 'fail' ORDER BY id").fetchall():
        fid = calibration_failed(conn, calibrations.calibration(conn, cid))
        if fid is not None:
            new.append(fid)
    for (iid,) in conn.execute("SELECT id FROM inspections WHERE checklist @> '[{\"answer\": \"deficient\"}]' "
                               "ORDER BY id").fetchall():
        new += inspection_deficiencies(conn, inspections.inspection(conn, iid))
    if cfg is not None:
        tz = ZoneInfo(cfg.timezone) if cfg.timezone else pack_timezone(cfg.pack)
        today = now.astimezone(tz).date()
        for d in calibrations.schedule(conn, today, cfg):
            if today <= d.due_on:
                continue
            site_id = conn.execute("SELECT site_id FROM sensors WHERE id = %s", (d.sensor_id,)).fetchone()[0]
            fid = store_finding(
                conn, site_id, "calibration-overdue", d.due_on + timedelta(days=1),
                f"{d.site}/{d.sensor}: not calibrated by {d.due_on} (every {d.interval.days} days, "
                f"{d.interval.citation}; " + (f"last passed {d.last_pass.astimezone(tz).date()})" if d.last_pass
                                             else "none passed on record)"),
                key=f"calibration-overdue:{d.sensor_id}:{d.due_on.isoformat()}",
                citation=d.interval.citation if d.interval.source in ("permit", "ordinance") else RECORDS_CITATION,
                words=d.interval.words or None,
                evidence={"sensor_id": d.sensor_id, "due_on": d.due_on.isoformat(), "interval_days": d.interval.days,
                          "interval_source": d.interval.source}, by="sewerwatch")
            if fid is not None:
                new.append(fid)
    return new
