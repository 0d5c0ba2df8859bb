"""Calibration records and what is due.

A pH probe is calibrated in buffers: each buffer's value (``nominal``), what the probe read
before (``as_found``) and after (``as_left``) the calibration, the electrode's slope [% of
Nernstian] and offset [mV], the temperature. It **passes** when every buffer reads within
``[field] ph_check_tolerance`` (0.1 pH) of its value after calibration (a check buffer within
±0.1 pH units: EPA Method 150.1, Standard Methods 4500-H+ B) and the slope and offset, where
given, lie within ``ph_slope_min_pct``..``ph_slope_max_pct`` and ``ph_offset_max_mv``. A flow
meter is verified against a reference (a portable meter, a bucket and stopwatch, a weir): the
percent difference ``100 × (meter − reference) / reference`` passes within
``flow_tolerance_pct`` (10 %: EPA NPDES Compliance Inspection Manual). A temperature probe is
checked against a reference thermometer, within ``temperature_tolerance_degf``.

The record keeps the tolerance it was judged by, so a later change of the config never
changes a past result (40 CFR 136.7 quality control records; 40 CFR 403.12(o) records of
monitoring activities).

**Due.** Each sensor with a calibration interval (:func:`field.instruments.interval`) is due
``interval`` days after its last passing calibration (or after its instrument was installed
or entered in the register). Within ``calibration_remind_days`` of the due date ``run``
alerts the superintendent (``calibration-due``); after it, the calibration is overdue (an
alert, and a finding on the first day after the due date); a failed calibration is an alert
and a finding until a later one passes (:func:`schedule`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from foundation.actor import Actor
from foundation.errors import InputError
from foundation.units import to_canonical

from field.common import audit, db_now, iso, sensor
from field import instruments

KINDS = ("ph", "flow", "temperature")
#: the kind of calibration each parameter's instrument gets
KIND_OF = {"ph": "ph", "flow": "flow", "temperature": "temperature"}


@dataclass(frozen=True)
class Buffer:
    """A pH buffer of a calibration [pH]."""

    nominal: float
    as_found: float | None
    as_left: float


@dataclass(frozen=True)
class Tolerances:
    """What a calibration is judged by (``[field]``)."""

    ph: float = 0.1
    slope_min_pct: float = 95.0
    slope_max_pct: float = 105.0
    offset_max_mv: float = 30.0
    flow_pct: float = 10.0
    temperature_degf: float = 2.0

    @classmethod
    def of(cls, cfg) -> "Tolerances":
        f = cfg.field
        return cls(f.ph_check_tolerance, f.ph_slope_min_pct, f.ph_slope_max_pct, f.ph_offset_max_mv,
                   f.flow_tolerance_pct, f.temperature_tolerance_degf)


def parse_buffer(text: str) -> Buffer:
    """``NOMINAL:AS_FOUND:AS_LEFT`` (``4.00:4.12:4.01``; ``as_found`` may be empty) -> :class:`Buffer`."""
    parts = str(text).split(":")
    if len(parts) not in (2, 3):
        raise InputError(f"--buffer: expected NOMINAL:AS_FOUND:AS_LEFT (e.g. 4.00:4.12:4.01), got {text!r}")
    if len(parts) == 2:
        parts = [parts[0], "", parts[1]]
    try:
        nominal = float(parts[0])
        found = float(parts[1]) if parts[1].strip() else None
        left = float(parts[2])
    except ValueError:
        raise InputError(f"--buffer: expected numbers NOMINAL:AS_FOUND:AS_LEFT, got {text!r}") from None
    for v, what in ((nominal, "value"), (found, "as-found reading"), (left, "as-left reading")):
        if v is not None and not 0.0 <= v <= 14.0:
            raise InputError(f"--buffer {text}: the {what} {v:g} is not a pH (0 to 14)")
    return Buffer(nominal, found, left)


def judge_ph(buffers: list[Buffer], slope_pct: float | None, offset_mv: float | None,
             tol: Tolerances) -> tuple[str, list[str]]:
    """``("pass" | "fail", reasons)`` of a pH calibration (see the module docstring)."""
    if len(buffers) < 1:
        raise InputError("a pH calibration needs at least one buffer (--buffer NOMINAL:AS_FOUND:AS_LEFT)")
    reasons = []
    for b in buffers:
        off = b.as_left - b.nominal
        if abs(off) > tol.ph + 1e-9:
            reasons.append(f"buffer {b.nominal:.2f} read {b.as_left:.2f} after calibration ({off:+.2f} pH; "
                           f"tolerance ±{tol.ph:g} pH)")
    if slope_pct is not None and not tol.slope_min_pct <= slope_pct <= tol.slope_max_pct:
        reasons.append(f"slope {slope_pct:g} % outside {tol.slope_min_pct:g}-{tol.slope_max_pct:g} %")
    if offset_mv is not None and abs(offset_mv) > tol.offset_max_mv:
        reasons.append(f"offset {offset_mv:+g} mV beyond ±{tol.offset_max_mv:g} mV")
    return ("fail" if reasons else "pass"), reasons


def judge_flow(reference: float, meter: float, tol: Tolerances) -> tuple[str, float, list[str]]:
    """``(result, percent difference, reasons)`` of a flow meter verification."""
    if not reference > 0:
        raise InputError(f"--reference: expected the reference flow > 0, got {reference!r}")
    pct = 100.0 * (meter - reference) / reference
    reasons = [] if abs(pct) <= tol.flow_pct + 1e-9 else [
        f"meter {meter:g} against reference {reference:g}: {pct:+.1f} % (tolerance ±{tol.flow_pct:g} %)"]
    return ("fail" if reasons else "pass"), pct, reasons


def judge_temperature(reference_degf: float, probe_degf: float, tol: Tolerances) -> tuple[str, list[str]]:
    d = probe_degf - reference_degf
    reasons = [] if abs(d) <= tol.temperature_degf + 1e-9 else [
        f"probe {probe_degf:.1f} °F against reference {reference_degf:.1f} °F ({d:+.1f} °F; tolerance "
        f"±{tol.temperature_degf:g} °F)"]
    return ("fail" if reasons else "pass"), reasons


def record(conn, sensor_key: str, *, actor: Actor, tolerances: Tolerances, technician: str | None = None,
           performed_at: datetime | None = None, buffers: list[Buffer] = (), slope_pct: float | None = None,
           offset_mv: float | None = None, temperature: float | None = None, temperature_unit: str = "degF",
           reference: float | None = None, meter: float | None = None, window_id: int | None = None,
           note: str | None = None) -> dict:
    """Record a calibration of ``sensor_key`` and judge it (pass or fail).

    Parameters
    ----------
    buffers : list of Buffer
        A pH calibration's buffers [pH].
    reference, meter : float, optional
        A flow verification's reference and meter flows [the sensor's unit], or a
        temperature check's reference thermometer and probe readings [``temperature_unit``].
    temperature : float, optional
        The buffers' temperature [``temperature_unit``].
    window_id : int, optional
        The maintenance window it was done in.

    Returns
    -------
    dict
        The stored record (:func:`calibration`).
    """
    s = sensor(conn, sensor_key)
    kind = KIND_OF.get(s.parameter)
    if kind is None:
        raise InputError(f"{s.key} measures {s.parameter}: calibrations are recorded for pH, flow and temperature")
    technician = (technician or actor.display).strip()
    pct = None
    ref: dict = {}
    if kind == "ph":
        if reference is not None or meter is not None:
            raise InputError(f"{s.key} is a pH probe: give its buffers (--buffer), not --reference/--meter")
        result, reasons = judge_ph(list(buffers), slope_pct, offset_mv, tolerances)
        tol, tol_unit = tolerances.ph, "pH"
    else:
        if buffers:
            raise InputError(f"{s.key} measures {s.parameter}: buffers are for pH probes (give --reference and --meter)")
        if reference is None or meter is None:
            raise InputError(f"a {s.parameter} check needs --reference (the reference's reading) and --meter "
                             "(the instrument's)")
        if kind == "flow":
            r_c = float(to_canonical("flow", s.unit, reference))
            m_c = float(to_canonical("flow", s.unit, meter))
            result, pct, reasons = judge_flow(r_c, m_c, tolerances)
            ref = {"reference": reference, "meter": meter, "unit": s.unit}
            tol, tol_unit = tolerances.flow_pct, "%"
        else:
            r_f = float(to_canonical("temperature", temperature_unit, reference))
            p_f = float(to_canonical("temperature", temperature_unit, meter))
            result, reasons = judge_temperature(r_f, p_f, tolerances)
            ref = {"reference": reference, "meter": meter, "unit": temperature_unit}
            tol, tol_unit = tolerances.temperature_degf, "degF"
    with conn.transaction():
        now = db_now(conn)
        at = performed_at or now
        if at > now + timedelta(minutes=5):
            raise InputError(f"--at: {at.isoformat()} is in the future")
        if window_id is not None and conn.execute("SELECT 1 FROM maintenance_windows WHERE id = %s AND "
                                                  "(sensor_id = %s OR (sensor_id IS NULL AND site_id = %s))",
                                                  (window_id, s.id, s.site_id)).fetchone() is None:
            raise InputError(f"--window: no maintenance window {window_id} of {s.key}")
        ins = instruments.current(conn, s.id)
        cid = conn.execute(
            "INSERT INTO calibrations (sensor_id, instrument_id, performed_at, kind, technician, buffers, slope_pct, "
            "offset_mv, temperature, temperature_unit, reference, percent_difference, tolerance, tolerance_unit, "
            "result, reasons, window_id, note, recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (s.id, ins["id"] if ins else None, at, kind, technician,
             json.dumps([b.__dict__ for b in buffers]), slope_pct, offset_mv, temperature,
             temperature_unit if temperature is not None else None, json.dumps(ref), pct, tol, tol_unit, result,
             json.dumps(reasons), window_id, note, actor.audit_name)).fetchone()[0]
        audit(conn, actor, "calibration-record", f"calibration:{cid}",
              {"sensor": s.key, "kind": kind, "result": result, "reasons": reasons, "performed_at": iso(at)})
    return calibration(conn, cid)


COLS = ("id", "sensor_id", "site", "site_name", "sensor", "parameter", "instrument_id", "performed_at", "kind",
        "technician", "buffers", "slope_pct", "offset_mv", "temperature", "temperature_unit", "reference",
        "percent_difference", "tolerance", "tolerance_unit", "result", "reasons", "window_id", "note", "recorded_by",
        "recorded_at", "serial")
SQL = """SELECT c.id, c.sensor_id, si.key, si.name, se.name, se.parameter, c.instrument_id, c.performed_at, c.kind,
                c.technician, c.buffers, c.slope_pct, c.offset_mv, c.temperature, c.temperature_unit, c.reference,
                c.percent_difference, c.tolerance, c.tolerance_unit, c.result, c.reasons, c.window_id, c.note,
                c.recorded_by, c.recorded_at, i.serial
         FROM calibrations c JOIN sensors se ON se.id = c.sensor_id JOIN sites si ON si.id = se.site_id
         LEFT JOIN instruments i ON i.id = c.instrument_id"""


def calibration(conn, cid: int) -> dict:
    r = conn.execute(SQL + " WHERE c.id = %s", (cid,)).fetchone()
    if r is None:
        raise InputError(f"no calibration {cid}")
    return dict(zip(COLS, r))


def list_calibrations(conn, since: datetime | None = None, until: datetime | None = None, site: str | None = None,
                      sensor_id: int | None = None) -> list[dict]:
    """Calibrations performed in ``[since, until)``, oldest first."""
    rows = conn.execute(SQL + " WHERE (%(a)s::timestamptz IS NULL OR c.performed_at >= %(a)s) AND "
                        "(%(b)s::timestamptz IS NULL OR c.performed_at < %(b)s) AND "
                        "(%(s)s::text IS NULL OR si.key = %(s)s) AND (%(i)s::int IS NULL OR c.sensor_id = %(i)s) "
                        "ORDER BY c.performed_at, c.id",
                        {"a": since, "b": until, "s": site, "i": sensor_id}).fetchall()
    return [dict(zip(COLS, r)) for r in rows]


def line(c: dict) -> str:
    """One calibration in words."""
    if c["kind"] == "ph":
        bufs = ", ".join(f"{b['nominal']:.2f}" + (f" found {b['as_found']:.2f}" if b.get("as_found") is not None else "")
                         + f" left {b['as_left']:.2f}" for b in c["buffers"])
        extra = "".join([f", slope {c['slope_pct']:g} %" if c["slope_pct"] is not None else "",
                         f", offset {c['offset_mv']:+g} mV" if c["offset_mv"] is not None else ""])
        what = f"buffers {bufs}{extra}"
    else:
        r = c["reference"]
        what = (f"reference {r.get('reference'):g}, meter {r.get('meter'):g} {r.get('unit', '')}"
                + (f" ({c['percent_difference']:+.1f} %)" if c["percent_difference"] is not None else ""))
    why = f": {'; '.join(c['reasons'])}" if c["reasons"] else ""
    return f"{c['result'].upper()} {c['site']}/{c['sensor']} by {c['technician']}: {what}{why}"


@dataclass
class Due:
    """Where a sensor stands with its calibrations."""

    sensor_id: int
    site: str
    site_name: str
    sensor: str
    parameter: str
    interval: instruments.Interval
    last_pass: datetime | None
    last: dict | None           # the latest calibration
    since: date                 # what the interval counts from
    due_on: date
    state: str                  # ok, due-soon, overdue, failed

    def as_json(self) -> dict:
        return {"sensor_id": self.sensor_id, "site": self.site, "sensor": self.sensor, "parameter": self.parameter,
                "interval_days": self.interval.days, "interval_source": self.interval.source,
                "interval_citation": self.interval.citation, "last_pass": iso(self.last_pass),
                "last_result": self.last["result"] if self.last else None,
                "last_id": self.last["id"] if self.last else None, "due_on": self.due_on.isoformat(),
                "state": self.state}


def schedule(conn, today: date, cfg, remind_days: float | None = None) -> list[Due]:
    """Every sensor with a calibration interval: its last passing calibration, due date and
    state on the local day ``today`` (``ok``, ``due-soon`` within the reminder days, ``overdue``
    after the due date, ``failed`` when its latest calibration failed)."""
    remind = cfg.field.calibration_remind_days if remind_days is None else remind_days
    last_rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT DISTINCT ON (sensor_id) sensor_id, id, result, performed_at FROM calibrations "
        "ORDER BY sensor_id, performed_at DESC, id DESC").fetchall()}
    last_pass = dict(conn.execute("SELECT sensor_id, max(performed_at) FROM calibrations WHERE result = 'pass' "
                                  "GROUP BY sensor_id").fetchall())
    out = []
    for e in instruments.register(conn, cfg):
        s, ins, iv = e["sensor"], e["instrument"], e["interval"]
        if iv is None:
            continue
        tz = ZoneInfo(_tz(s.pack))
        lp = last_pass.get(s.id)
        if lp is not None:
            since = lp.astimezone(tz).date()
        elif ins is not None and ins.get("installed"):
            since = ins["installed"]
        elif ins is not None:
            since = ins["recorded_at"].astimezone(tz).date()
        else:
            since = today
        due_on = since + timedelta(days=iv.days)
        last = None
        if s.id in last_rows:
            lid, lres, lat = last_rows[s.id]
            last = {"id": lid, "result": lres, "performed_at": lat}
        if last is not None and last["result"] == "fail":
            state = "failed"
        elif today > due_on:
            state = "overdue"
        elif (due_on - today).days <= remind:
            state = "due-soon"
        else:
            state = "ok"
        out.append(Due(s.id, s.site, s.site_name, s.name, s.parameter, iv, lp, last, since, due_on, state))
    return out


def _tz(pack: str) -> str:
    from limits.packs import load_pack
    return load_pack(pack).timezone
