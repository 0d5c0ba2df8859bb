"""Field work of a year, for the annual pretreatment report.

Every maintenance window of the year (approved, pending, rejected: each with its reason,
person, source and how many readings it kept from being judged), every calibration and
verification (pass or fail), the grab samples compared with the sensors (drift), and the
inspections of each industrial user with whether samples were taken (40 CFR 403.12(i): the
report describes "the inspections and sampling" of the significant industrial users). An
auditor sees every exclusion: nothing is left out of the judging that is not listed here.
"""

from __future__ import annotations

from datetime import datetime

from foundation.quality import MAINTENANCE

from field import calibrations, drift, inspections, windows
from field.common import iso


def _excluded(conn, w: dict) -> int:
    """Readings the window kept from being judged (stored with the maintenance code in it)."""
    if not w["in_effect"]:
        return 0
    return conn.execute(
        "SELECT count(*) FROM readings r JOIN sensors se ON se.id = r.sensor_id WHERE se.site_id = %s "
        "AND (%s::int IS NULL OR r.sensor_id = %s) AND r.time >= %s AND (%s::timestamptz IS NULL OR r.time < %s) "
        "AND r.quality = %s", (w["site_id"], w["sensor_id"], w["sensor_id"], w["start"], w["end"], w["end"],
                               MAINTENANCE)).fetchone()[0]


def of_site(conn, site: str, start: datetime, end: datetime) -> dict:
    """One industrial user's field work in ``[start, end)``: ``windows``, ``calibrations``,
    ``grab_checks``, ``inspections`` (JSON-ready)."""
    ws = []
    for w in windows.list_windows(conn, start, end, site):
        ws.append({"id": w["id"], "scope": w["scope"], "start": iso(w["start"]), "end": iso(w["end"]),
                   "reason": w["reason"], "person": w["person"], "source": w["source"], "approval": w["approval"],
                   "approved_by": w["approved_by"], "readings_excluded": _excluded(conn, w)})
    cs = [{"id": c["id"], "sensor": c["sensor"], "parameter": c["parameter"], "performed_at": iso(c["performed_at"]),
           "technician": c["technician"], "result": c["result"], "line": calibrations.line(c),
           "serial": c["serial"]} for c in calibrations.list_calibrations(conn, start, end, site)]
    gs = [{"id": g["id"], "sensor": g["sensor"], "source": g["source"], "taken_at": iso(g["taken_at"]),
           "grab": g["grab"], "sensor_value": g["sensor_value"], "difference": g["difference"], "drifted": g["drifted"]}
          for g in drift.checks(conn, start, end, site)]
    ins = [{"id": i["id"], "visited_at": iso(i["visited_at"]), "inspector": i["inspector"], "kind": i["kind"],
            "sampled": i["sampled"], "representative": i["representative"],
            "deficient": [d["item"] for d in i["deficient"]], "photos": len(i["photos"]), "findings": i["findings"]}
           for i in inspections.list_inspections(conn, start, end, site)]
    return {"windows": ws, "calibrations": cs, "grab_checks": gs, "inspections": ins,
            "counts": {"windows": len(ws), "readings_excluded": sum(w["readings_excluded"] for w in ws),
                       "windows_pending": sum(w["approval"] == "pending" for w in ws),
                       "calibrations": len(cs), "calibrations_failed": sum(c["result"] == "fail" for c in cs),
                       "grab_checks": len(gs), "drifted": sum(bool(g["drifted"]) for g in gs),
                       "inspections": len(ins), "inspections_with_sampling": sum(bool(i["sampled"]) for i in ins)}}
