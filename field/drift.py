"""Drift against grab samples.

When the laboratory reports a grab sample's pH (``sewerwatch lab import``: a grab sample with
a ``ph`` result) or an inspector records a grab pH or temperature at a control manhole
(:func:`record_field_reading`: ``sewerwatch grab record``, the inspection form), it is compared
with the live sensor of that parameter at that site at that time: the median of the sensor's
good readings within ``[field] drift_window_s`` (120 s) either side of the grab's time,
readings in a maintenance window left out. Further apart than the tolerance (``drift_ph``
0.3 pH, ``drift_temperature_degf`` 2 °F) the sensor is **drifting**: a ``sensor-drift`` alert
in ``sewerwatch run`` with both numbers, until a calibration of the sensor passes after the
grab (:func:`drifting`).

Each comparison is a row of ``grab_checks`` (once per grab and sensor), whatever its result,
and the period a probe drifted (:func:`periods`: from the last passing calibration or grab
within tolerance before the drifted grab, to the first passing calibration after it) is marked
in the evidence of every violation judged on readings of it (a notice's chart hatches it).

A grab is compared once the sensor's readings after it can have arrived (its time plus the
window plus :data:`SETTLE_S`), or at once when there are readings after the window already.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from foundation.actor import Actor
from foundation.errors import InputError
from foundation.units import to_canonical
from foundation.windows import load as load_windows

from field.common import audit, db_now, iso, site as site_row

#: Seconds after a grab's window before it is compared (readings still on their way) [s].
SETTLE_S = 5.0
PARAMETERS = ("ph", "temperature")
#: How the grab's parameter is named in words.
WORDS = {"ph": "pH", "temperature": "temperature"}


def tolerance(parameter: str, cfg) -> float:
    """The drift tolerance of ``parameter`` [its canonical unit: pH, degF]."""
    return cfg.field.drift_ph if parameter == "ph" else cfg.field.drift_temperature_degf


def record_field_reading(conn, site: str, parameter: str, value: float, unit: str | None = None, *, actor: Actor,
                         taken_at: datetime | None = None, inspection_id: int | None = None,
                         note: str | None = None) -> dict:
    """Record a grab pH or temperature an inspector took at ``site``'s control manhole.

    Returns
    -------
    dict
        ``id``, ``site``, ``parameter``, ``value`` [canonical unit], ``taken_at``.
    """
    if parameter not in PARAMETERS:
        raise InputError(f"--parameter: a field reading is ph or temperature, got {parameter!r}")
    unit = unit or ("pH" if parameter == "ph" else "degF")
    try:
        v = float(to_canonical(parameter, unit, float(value)))
    except (TypeError, ValueError):
        raise InputError(f"--value: expected a number, got {value!r}") from None
    if not np.isfinite(v) or (parameter == "ph" and not 0.0 <= v <= 14.0):
        raise InputError(f"--value: {value!r} is not a possible {WORDS[parameter]}")
    srow = site_row(conn, site)
    with conn.transaction():
        now = db_now(conn)
        at = taken_at or now
        if at > now + timedelta(minutes=5):
            raise InputError(f"--at: {at.isoformat()} is in the future")
        fid = conn.execute("INSERT INTO field_readings (site_id, parameter, value, taken_at, taken_by, inspection_id, "
                           "note) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                           (srow[0], parameter, v, at, actor.display, inspection_id, note)).fetchone()[0]
        audit(conn, actor, "field-reading", f"field-reading:{fid}",
              {"site": srow[1], "parameter": parameter, "value": v, "taken_at": iso(at)})
    return {"id": fid, "site": srow[1], "parameter": parameter, "value": v, "taken_at": at}


#: Grabs not compared yet: lab grab samples' pH and the field readings, with the site's sensors of the parameter.
NEW_GRABS = """
SELECT 'lab' AS source, r.id, s.site_id, 'ph' AS parameter, r.value_mg_l, s.collected, se.id, s.sample_key
FROM lab_results_current r JOIN lab_samples s ON s.id = r.sample_id
JOIN sensors se ON se.site_id = s.site_id AND se.parameter = 'ph'
WHERE r.analyte = 'ph' AND s.sample_type = 'grab' AND r.qualifier = '' AND r.value_mg_l IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM grab_checks g WHERE g.source = 'lab' AND g.ref = r.id AND g.sensor_id = se.id)
UNION ALL
SELECT 'field', f.id, f.site_id, f.parameter, f.value, f.taken_at, se.id, NULL
FROM field_readings f JOIN sensors se ON se.site_id = f.site_id AND se.parameter = f.parameter
WHERE NOT EXISTS (SELECT 1 FROM grab_checks g WHERE g.source = 'field' AND g.ref = f.id AND g.sensor_id = se.id)
ORDER BY 6"""


def sensor_value(conn, sensor_id: int, at: datetime, window_s: float) -> tuple[float | None, int, bool]:
    """The sensor's reading at ``at``: the median of its good readings within ``window_s``
    either side, readings in maintenance windows left out. Returns ``(value or None, readings
    compared, whether readings after the window exist)``."""
    a, b = at - timedelta(seconds=window_s), at + timedelta(seconds=window_s)
    rows = conn.execute("SELECT (extract(epoch FROM time) * 1000000)::int8, value FROM readings WHERE sensor_id = %s "
                        "AND time >= %s AND time <= %s AND quality = 0 AND value IS NOT NULL ORDER BY time",
                        (sensor_id, a, b)).fetchall()
    after = conn.execute("SELECT EXISTS (SELECT 1 FROM readings WHERE sensor_id = %s AND time > %s)",
                         (sensor_id, b)).fetchone()[0]
    if not rows:
        return None, 0, after
    t = np.array([r[0] for r in rows], dtype=np.int64)
    v = np.array([r[1] for r in rows], dtype=np.float64)
    w = load_windows(conn, [sensor_id], int(a.timestamp() * 1e6), int(b.timestamp() * 1e6) + 1)
    keep = ~w.inside(np.full(len(t), sensor_id), t) & np.isfinite(v)
    if not keep.any():
        return None, 0, after
    return float(np.median(v[keep])), int(keep.sum()), after


def check_new(conn, cfg, now: datetime | None = None) -> list[dict]:
    """Compare every grab not compared yet whose time has settled (see the module
    docstring); store each comparison in ``grab_checks``. Returns the new rows (drifted or not)."""
    now = now or db_now(conn)
    window_s = cfg.field.drift_window_s
    out = []
    for source, ref, site_id, parameter, grab, taken_at, sensor_id, sample_key in conn.execute(NEW_GRABS).fetchall():
        value, n, after = sensor_value(conn, sensor_id, taken_at, window_s)
        settled = now >= taken_at + timedelta(seconds=window_s + SETTLE_S) or after
        if not settled:
            continue
        tol = tolerance(parameter, cfg)
        diff = None if value is None else abs(grab - value)
        drifted = diff is not None and diff > tol + 1e-9
        name, unit = WORDS[parameter], "pH" if parameter == "ph" else "°F"
        where = f"lab sample {sample_key}" if source == "lab" else "field reading"
        if value is None:
            detail = (f"grab {name} {grab:.2f} {unit} ({where}, {iso(taken_at)}): the sensor has no usable reading within "
                      f"{window_s:g} s of it, so it could not be compared")
        else:
            detail = (f"grab {name} {grab:.2f} {unit} ({where}, {iso(taken_at)}) against the sensor's {value:.2f} {unit} "
                      f"(median of {n} readings within {window_s:g} s): {diff:.2f} {unit} apart, tolerance {tol:g} {unit}"
                      + (": the sensor is drifting" if drifted else ""))
        row = conn.execute(
            "INSERT INTO grab_checks (sensor_id, source, ref, taken_at, grab, sensor_value, readings, difference, "
            "tolerance, drifted, detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (source, ref, sensor_id) DO NOTHING RETURNING id",
            (sensor_id, source, ref, taken_at, grab, value, n, diff, tol, drifted, detail)).fetchone()
        if row is None:
            continue
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES ('sewerwatch', 'grab-check', %s, "
                     "%s::jsonb)", (f"sensor:{sensor_id}", f'{{"check": {row[0]}, "drifted": {str(drifted).lower()}}}'))
        out.append({"id": row[0], "sensor_id": sensor_id, "source": source, "ref": ref, "taken_at": taken_at,
                    "grab": grab, "sensor_value": value, "difference": diff, "tolerance": tol, "drifted": drifted,
                    "detail": detail})
    return out


CHECK_COLS = ("id", "sensor_id", "site", "sensor", "source", "ref", "taken_at", "grab", "sensor_value", "readings",
              "difference", "tolerance", "drifted", "detail", "checked_at")
CHECK_SQL = """SELECT g.id, g.sensor_id, si.key, se.name, g.source, g.ref, g.taken_at, g.grab, g.sensor_value, g.readings,
                      g.difference, g.tolerance, g.drifted, g.detail, g.checked_at
               FROM grab_checks g JOIN sensors se ON se.id = g.sensor_id JOIN sites si ON si.id = se.site_id"""


def checks(conn, since: datetime | None = None, until: datetime | None = None, site: str | None = None,
           sensor_id: int | None = None) -> list[dict]:
    rows = conn.execute(CHECK_SQL + " WHERE (%(a)s::timestamptz IS NULL OR g.taken_at >= %(a)s) AND "
                        "(%(b)s::timestamptz IS NULL OR g.taken_at < %(b)s) AND (%(s)s::text IS NULL OR si.key = %(s)s) "
                        "AND (%(i)s::int IS NULL OR g.sensor_id = %(i)s) ORDER BY g.taken_at, g.id",
                        {"a": since, "b": until, "s": site, "i": sensor_id}).fetchall()
    return [dict(zip(CHECK_COLS, r)) for r in rows]


def drifting(conn) -> list[dict]:
    """Sensors whose latest grab check drifted with no passing calibration after it (each a
    ``sensor-drift`` condition of ``run``)."""
    rows = conn.execute(CHECK_SQL + """
        WHERE g.id = (SELECT g2.id FROM grab_checks g2 WHERE g2.sensor_id = g.sensor_id AND g2.sensor_value IS NOT NULL
                      ORDER BY g2.taken_at DESC, g2.id DESC LIMIT 1)
          AND g.drifted
          AND NOT EXISTS (SELECT 1 FROM calibrations c WHERE c.sensor_id = g.sensor_id AND c.result = 'pass'
                          AND c.performed_at > g.taken_at)
        ORDER BY si.key, se.name""").fetchall()
    return [dict(zip(CHECK_COLS, r)) for r in rows]


def periods(conn, sensor_id: int, start: datetime, end: datetime) -> list[dict]:
    """The periods sensor ``sensor_id`` drifted overlapping ``[start, end]``: from the last
    passing calibration or in-tolerance grab before a drifted grab (at most 30 days before it)
    to the first passing calibration after it (None: still drifting), with the check."""
    out = []
    for c in checks(conn, sensor_id=sensor_id):
        if not c["drifted"]:
            continue
        before = conn.execute(
            "SELECT greatest((SELECT max(performed_at) FROM calibrations WHERE sensor_id = %(s)s AND result = 'pass' "
            "AND performed_at < %(t)s), (SELECT max(taken_at) FROM grab_checks WHERE sensor_id = %(s)s "
            "AND NOT drifted AND sensor_value IS NOT NULL AND taken_at < %(t)s))",
            {"s": sensor_id, "t": c["taken_at"]}).fetchone()[0]
        begin = max(before, c["taken_at"] - timedelta(days=30)) if before else c["taken_at"] - timedelta(days=30)
        fixed = conn.execute("SELECT min(performed_at) FROM calibrations WHERE sensor_id = %s AND result = 'pass' "
                             "AND performed_at > %s", (sensor_id, c["taken_at"])).fetchone()[0]
        if begin <= end and (fixed is None or fixed >= start):
            out.append({"from": begin, "until": fixed, "check": c})
    return out
