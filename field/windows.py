"""Maintenance windows: opened, closed, approved, listed.

A window says "this instrument (or every instrument of this site) is being calibrated,
cleaned or repaired": its readings are stored with :data:`foundation.quality.MAINTENANCE`
and no path judges or sums them (:mod:`foundation.windows` decides which readings a window
covers; this module keeps the windows). A window has a reason and a person, and where it
came from: the command line, the office (the sensor's page), a device's MQTT message or a
Modbus status bit (those two are recorded by the collectors' writer,
``device_window()`` of migration 0160).

**After the fact.** A window may start up to ``[field] window_grace_s`` (60 s) before it is
recorded. One that reaches further back over readings already judged (stored with quality
0 before it was recorded) hides what was judged, so it waits for a second person's approval
(``approval = 'pending'``): until approved it excludes nothing; the approver must be someone
else than whoever opened it. Approved, its readings are marked and ``sewerwatch run`` judges
them again (its episodes there withdrawn). Every window, approved, pending or rejected,
appears in ``check``'s output and in the annual report, so no exclusion is hidden.

Stored readings are marked when a window comes into effect (an UPDATE of ``readings``,
``quality`` 0/1/2 -> 3 over the window); readings arriving while it is open are marked by the
collectors as they store them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from foundation.actor import Actor
from foundation.errors import InputError
from foundation.quality import MAINTENANCE
from foundation.units import PHYSICAL_RANGE

from field.common import audit, db_now, iso, sensor, sensors_of_site, site as site_row

#: Reasons people give (any text is taken; these are offered as buttons).
REASONS = ("calibration", "cleaning", "repair", "inspection", "other")
#: Where a window can come from.
SOURCES = ("cli", "web", "mqtt", "modbus")

COLS = ("id", "site", "site_name", "sensor", "start", "end", "reason", "person", "opened_by", "closed_by", "source",
        "device", "approval", "approved_by", "approved_at", "approval_note", "judged_readings", "recorded_at",
        "sensor_id", "site_id", "parameter")
LIST_SQL = """SELECT w.id, si.key, si.name, se.name, w.start_time, w.end_time, w.reason, w.person, w.opened_by,
                     w.closed_by, w.source, w.device, w.approval, w.approved_by, w.approved_at, w.approval_note,
                     w.judged_readings, w.recorded_at, w.sensor_id, w.site_id, se.parameter
              FROM maintenance_windows w JOIN sites si ON si.id = w.site_id
              LEFT JOIN sensors se ON se.id = w.sensor_id"""


@dataclass(frozen=True)
class Settings:
    """What the window rules need of ``[field]``."""

    grace_s: float = 60.0
    limit_h: float = 2.0

    @classmethod
    def of(cls, cfg) -> "Settings":
        f = cfg.field
        return cls(f.window_grace_s, f.window_limit_h)


def _rows(conn, where: str = "TRUE", params=()) -> list[dict]:
    rows = conn.execute(f"{LIST_SQL} WHERE {where} ORDER BY w.start_time, w.id", params).fetchall()
    out = []
    for r in rows:
        d = dict(zip(COLS, r))
        d["scope"] = f"{d['site']}/{d['sensor']}" if d["sensor"] else f"{d['site']} (the whole site)"
        d["in_effect"] = d["approval"] in ("not-needed", "approved")
        d["open"] = d["end"] is None
        out.append(d)
    return out


def window(conn, window_id: int) -> dict:
    rows = _rows(conn, "w.id = %s", (window_id,))
    if not rows:
        raise InputError(f"no maintenance window {window_id} (sewerwatch maintenance list shows them)")
    return rows[0]


def list_windows(conn, since: datetime | None = None, until: datetime | None = None, site: str | None = None,
                 open_only: bool = False) -> list[dict]:
    """Windows overlapping ``[since, until)`` (every one without bounds), oldest first."""
    return _rows(conn, "(%(a)s::timestamptz IS NULL OR w.end_time IS NULL OR w.end_time >= %(a)s) "
                       "AND (%(b)s::timestamptz IS NULL OR w.start_time < %(b)s) "
                       "AND (%(s)s::text IS NULL OR si.key = %(s)s) AND (NOT %(o)s OR w.end_time IS NULL)",
                 {"a": since, "b": until, "s": site, "o": open_only})


def _scope(conn, site: str, sensors) -> tuple[tuple, list]:
    """The site row and the sensors a window of ``site`` covers (names; none: the whole site)."""
    srow = site_row(conn, site)
    if not sensors:
        return srow, []
    rows = []
    for name in sensors:
        s = sensor(conn, f"{site}/{name}") if "/" not in name else sensor(conn, name)
        if s.site_id != srow[0]:
            raise InputError(f"sensor {s.key} is not at site {site!r}")
        rows.append(s)
    return srow, rows


def _covered_ids(conn, site_id: int, sensor_rows) -> list[int]:
    return [s.id for s in (sensor_rows or sensors_of_site(conn, site_id))]


def mark_stored(conn, sensor_ids: list[int], start: datetime, end: datetime | None) -> int:
    """Mark the stored readings of ``sensor_ids`` in ``[start, end)`` (to the newest while
    open) with :data:`~foundation.quality.MAINTENANCE`; returns how many changed."""
    cur = conn.execute("UPDATE readings SET quality = %s WHERE sensor_id = ANY(%s) AND time >= %s "
                       "AND (%s::timestamptz IS NULL OR time < %s) AND quality <> %s",
                       (MAINTENANCE, sensor_ids, start, end, end, MAINTENANCE))
    return cur.rowcount


def unmark_stored(conn, sensor_ids: list[int], start: datetime) -> int:
    """Readings of ``sensor_ids`` from ``start`` on marked as in a window that no longer
    covers them get their own code back: out of the physical range 1, no number 2, else 0
    (:mod:`foundation.quality`)."""
    cases = " ".join(f"WHEN se.parameter = '{p}' AND (r.value < {lo!r} OR r.value > {hi!r}) THEN 1"
                     for p, (lo, hi) in PHYSICAL_RANGE.items() if hi != float("inf")) + " " + " ".join(
        f"WHEN se.parameter = '{p}' AND r.value < {lo!r} THEN 1" for p, (lo, hi) in PHYSICAL_RANGE.items()
        if hi == float("inf"))
    cur = conn.execute(f"UPDATE readings r SET quality = CASE WHEN r.value IS NULL OR r.value = 'NaN'::float8 "
                       f"OR r.value IN ('Infinity'::float8, '-Infinity'::float8) THEN 2 {cases} ELSE 0 END "
                       "FROM sensors se WHERE se.id = r.sensor_id AND r.sensor_id = ANY(%s) AND r.time >= %s "
                       "AND r.quality = %s", (sensor_ids, start, MAINTENANCE))
    return cur.rowcount


def _judged(conn, sensor_ids: list[int], start: datetime, before: datetime) -> int:
    """Readings of ``sensor_ids`` stored good (so judged) in ``[start, before)``."""
    return conn.execute("SELECT count(*) FROM readings WHERE sensor_id = ANY(%s) AND time >= %s AND time < %s "
                        "AND quality = 0", (sensor_ids, start, before)).fetchone()[0]


def open_window(conn, site: str, sensors=None, *, reason: str, actor: Actor, start: datetime | None = None,
                source: str | None = None, person: str | None = None, settings: Settings = Settings()) -> list[dict]:
    """Open a maintenance window on sensors of ``site`` (``sensors`` names; none: the whole site).

    Parameters
    ----------
    start : datetime, optional
        When it began (default: now). Further back than ``settings.grace_s`` over readings
        already judged, it waits for a second person's approval.
    source : str, optional
        ``cli`` or ``web`` (default: the actor's face).
    person : str, optional
        Who is doing the work (default: the actor's name as records show it).

    Returns
    -------
    list of dict
        The windows opened (one for the site, or one per sensor), as :func:`window` gives them.

    Raises
    ------
    InputError
        No reason, an unknown site or sensor, a start in the future, or a sensor already in
        an open window (it names that window).
    """
    reason = (reason or "").strip()
    if not reason:
        raise InputError("a maintenance window needs a reason (e.g. calibration, cleaning)")
    source = source or ("web" if actor.via == "web" else "cli")
    if source not in ("cli", "web"):
        raise InputError(f"source: expected cli or web, got {source!r} (devices open windows by MQTT or Modbus)")
    with conn.transaction():
        now = db_now(conn)
        start = now if start is None else start
        if start > now + timedelta(seconds=5):
            raise InputError(f"--at: {start.isoformat()} is in the future (a window starts now or earlier)")
        srow, rows = _scope(conn, site, sensors)
        ids = _covered_ids(conn, srow[0], rows)
        clash = _rows(conn, "w.end_time IS NULL AND w.approval <> 'rejected' AND w.site_id = %s AND "
                            "(w.sensor_id IS NULL OR w.sensor_id = ANY(%s) OR %s)", (srow[0], ids, not rows))
        if clash:
            c = clash[0]
            raise InputError(f"{c['scope']} is in maintenance window {c['id']} already (since {iso(c['start'])}, "
                             f"{c['reason']}, {c['person']}): end it first (sewerwatch maintenance end {c['id']})")
        judged = 0
        grace = timedelta(seconds=settings.grace_s)
        if start < now - grace:
            judged = _judged(conn, ids, start, now - grace)
        approval = "pending" if judged else "not-needed"
        made = []
        for s in (rows or [None]):
            wid = conn.execute(
                "INSERT INTO maintenance_windows (site_id, sensor_id, start_time, reason, person, opened_by, source, "
                "approval, judged_readings, recorded_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (srow[0], s.id if s else None, start, reason, person or actor.display, actor.audit_name, source,
                 approval, judged, now)).fetchone()[0]
            audit(conn, actor, "maintenance-open", f"window:{wid}",
                  {"site": srow[1], "sensor": s.name if s else None, "start": iso(start), "reason": reason,
                   "approval": approval, "judged_readings": judged})
            made.append(wid)
        if approval == "not-needed":
            mark_stored(conn, ids, start, None)
    return [window(conn, w) for w in made]


def close_window(conn, window_id: int, *, actor: Actor, end: datetime | None = None) -> dict:
    """End an open window (at ``end``, default now). Readings stored after its end keep
    their own quality code again."""
    with conn.transaction():
        w = window(conn, window_id)
        if not w["open"]:
            raise InputError(f"maintenance window {window_id} ({w['scope']}) ended already at {iso(w['end'])}")
        now = db_now(conn)
        end = now if end is None else end
        if end < w["start"]:
            raise InputError(f"--at: {end.isoformat()} is before the window began ({iso(w['start'])})")
        if end > now + timedelta(seconds=5):
            raise InputError(f"--at: {end.isoformat()} is in the future")
        conn.execute("UPDATE maintenance_windows SET end_time = %s, closed_by = %s WHERE id = %s",
                     (end, actor.audit_name, window_id))
        if w["in_effect"]:
            ids = [w["sensor_id"]] if w["sensor_id"] else _covered_ids(conn, w["site_id"], None)
            # marked while open by the collectors: after the end they are what they were
            unmark_stored(conn, ids, end)
            mark_stored(conn, ids, w["start"], end)
            for o in _rows(conn, "w.id <> %s AND w.site_id = %s AND w.approval IN ('not-needed', 'approved') AND "
                                 "(w.end_time IS NULL OR w.end_time > %s)", (window_id, w["site_id"], end)):
                oids = [o["sensor_id"]] if o["sensor_id"] else _covered_ids(conn, o["site_id"], None)
                mark_stored(conn, [i for i in oids if i in ids], max(o["start"], end), o["end"])
        audit(conn, actor, "maintenance-close", f"window:{window_id}", {"end": iso(end), "scope": w["scope"]})
    return window(conn, window_id)


def _decide(conn, window_id: int, actor: Actor, note: str | None, approve: bool) -> dict:
    with conn.transaction():
        w = window(conn, window_id)
        if w["approval"] != "pending":
            raise InputError(f"maintenance window {window_id} awaits no approval (it is {w['approval']})")
        if actor.audit_name == w["opened_by"]:
            raise InputError(f"maintenance window {window_id} was opened by {w['opened_by']}: a second person must "
                             "approve or reject it")
        conn.execute("UPDATE maintenance_windows SET approval = %s, approved_by = %s, approved_at = now(), "
                     "approval_note = %s WHERE id = %s",
                     ("approved" if approve else "rejected", actor.audit_name, note, window_id))
        if approve:
            ids = [w["sensor_id"]] if w["sensor_id"] else _covered_ids(conn, w["site_id"], None)
            mark_stored(conn, ids, w["start"], w["end"])
        audit(conn, actor, "maintenance-approve" if approve else "maintenance-reject", f"window:{window_id}",
              {"scope": w["scope"], "start": iso(w["start"]), "end": iso(w["end"]), "note": note,
               "opened_by": w["opened_by"], "judged_readings": w["judged_readings"]})
    return window(conn, window_id)


def approve(conn, window_id: int, *, actor: Actor, note: str | None = None) -> dict:
    """Approve a window opened after the fact (by someone else than whoever opened it): its
    readings are marked and no longer judged."""
    return _decide(conn, window_id, actor, note, True)


def reject(conn, window_id: int, *, actor: Actor, note: str | None = None) -> dict:
    """Reject a window opened after the fact: it excludes nothing (it stays on record)."""
    return _decide(conn, window_id, actor, note, False)


def open_too_long(conn, limit_h: float) -> list[dict]:
    """Windows in effect open longer than ``limit_h`` hours (each raises an alert in ``run``)."""
    return _rows(conn, "w.end_time IS NULL AND w.approval IN ('not-needed', 'approved') "
                       "AND w.start_time < now() - make_interval(secs => %s)", (limit_h * 3600.0,))


def pending(conn) -> list[dict]:
    """Windows awaiting a second person's approval."""
    return _rows(conn, "w.approval = 'pending'")


def as_json(w: dict) -> dict:
    """A window as JSON-ready data (times ISO-8601 UTC)."""
    return {k: (iso(v) if isinstance(v, datetime) else v) for k, v in w.items()}
