"""The instrument register: each sensor's instrument, its calibration
interval and its history.

An instrument is what measures at a sensor: make, model, serial number, range, installed
date and owner (the utility or the industrial user: Palmyra §13.52(3) "The metering devices
shall be owned and maintained by the property owner or user"; Webster NY §113-75 "All flow
measuring devices, if used, shall be calibrated annually at the owner's expense"). A new
instrument at a sensor (another serial number) is a new row and the one it replaces gets its
removed date, so the register keeps the history. The config's ``[[instruments]]`` are written
by ``sewerwatch db migrate`` (:func:`sync`); ``sewerwatch instruments set`` records a change.

**Calibration interval.** Four sources can set one, and the shortest applies (the stricter,
as between a permit and the ordinance): the site's permit (``[[calibration]]``), the
ordinance (a pack definition ``calibration-interval-<parameter>``, e.g. webster-ny's
flow meters "calibrated annually"), the instrument's own ``calibration_interval_days`` and the
utility's ``[field] calibration_days`` per parameter. :func:`interval` says which applies and
why.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from foundation.actor import Actor
from foundation.errors import InputError

from field.common import all_sensors, audit, sensor

COLS = ("id", "sensor_id", "make", "model", "serial", "range_low", "range_high", "range_unit", "owner", "installed",
        "removed", "calibration_interval_days", "note", "source", "recorded_by", "recorded_at")
OWNERS = ("utility", "industrial-user")
#: Days in a pack definition's unit.
UNIT_DAYS = {"days": 1, "day": 1, "weeks": 7, "months": 30, "years": 365, "year": 365}
#: The fields an instrument record has (besides its sensor).
FIELDS = ("make", "model", "serial", "range_low", "range_high", "owner", "installed", "calibration_interval_days",
          "note")


@dataclass(frozen=True)
class Interval:
    """A sensor's calibration interval and where it comes from."""

    days: int
    source: str            # "permit", "ordinance", "instrument" or "utility"
    citation: str          # in words: "Permit PAL-IU-2026-02, condition 6", "Village of Webster (NY) Code §113-75C ..."
    words: str = ""
    others: tuple = ()     # the other sources' (days, source, citation), longer or equal


def _row(r) -> dict:
    return dict(zip(COLS, r))


def current(conn, sensor_id: int) -> dict | None:
    """The instrument at a sensor now, or None."""
    r = conn.execute(f"SELECT {', '.join(COLS)} FROM instruments WHERE sensor_id = %s AND removed IS NULL",
                     (sensor_id,)).fetchone()
    return None if r is None else _row(r)


def history(conn, sensor_id: int) -> list[dict]:
    """Every instrument a sensor has had, newest first."""
    return [_row(r) for r in conn.execute(
        f"SELECT {', '.join(COLS)} FROM instruments WHERE sensor_id = %s ORDER BY recorded_at DESC, id DESC",
        (sensor_id,)).fetchall()]


def _same_instrument(old: dict, new: dict) -> bool:
    return (old.get("serial") or None) == (new.get("serial") or None) and \
        (old.get("make") or None, old.get("model") or None) == (new.get("make") or None, new.get("model") or None)


def set_instrument(conn, sensor_key: str, values: dict, *, actor: Actor, source: str | None = None,
                   on: date | None = None) -> dict:
    """Record the instrument at ``sensor_key`` (``<site>/<name>``).

    The same instrument (make, model and serial unchanged) is updated in place; another one
    replaces it: the old row gets ``removed`` (``on``, default today) and a new row begins.
    Returns the current row.
    """
    bad = sorted(set(values) - set(FIELDS))
    if bad:
        raise InputError(f"unknown instrument field(s) {', '.join(bad)} (known: {', '.join(FIELDS)})")
    if values.get("owner") is not None and values["owner"] not in OWNERS:
        raise InputError(f"owner: expected one of {', '.join(OWNERS)}, got {values['owner']!r}")
    days = values.get("calibration_interval_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days <= 0):
        raise InputError(f"calibration interval: expected a whole number of days > 0, got {days!r}")
    lo, hi = values.get("range_low"), values.get("range_high")
    if lo is not None and hi is not None and hi <= lo:
        raise InputError(f"range: the high end {hi:g} is not above the low end {lo:g}")
    source = source or ("web" if actor.via == "web" else "cli")
    s = sensor(conn, sensor_key)
    with conn.transaction():
        old = current(conn, s.id)
        merged = {**({k: old[k] for k in FIELDS} if old else {}), **{k: v for k, v in values.items() if v is not None}}
        merged.setdefault("owner", "industrial-user")
        if old is not None and _same_instrument(old, merged):
            changed = {k: [old[k], merged[k]] for k in FIELDS if old.get(k) != merged.get(k)}
            if not changed:
                return old
            conn.execute("UPDATE instruments SET " + ", ".join(f"{k} = %s" for k in FIELDS) + ", range_unit = %s "
                         "WHERE id = %s", [merged.get(k) for k in FIELDS] + [s.unit, old["id"]])
            audit(conn, actor, "instrument-change", f"sensor:{s.id}", {"sensor": s.key, "changed": changed})
        else:
            if old is not None:
                conn.execute("UPDATE instruments SET removed = coalesce(%s, current_date) WHERE id = %s",
                             (on, old["id"]))
            if old is not None and values.get("installed") is None:
                merged["installed"] = on or date.today()
            conn.execute("INSERT INTO instruments (sensor_id, " + ", ".join(FIELDS) + ", range_unit, source, "
                         "recorded_by) VALUES (%s, " + ", ".join(["%s"] * len(FIELDS)) + ", %s, %s, %s)",
                         [s.id] + [merged.get(k) for k in FIELDS] + [s.unit, source, actor.audit_name])
            audit(conn, actor, "instrument-install", f"sensor:{s.id}",
                  {"sensor": s.key, "replaces": old["id"] if old else None, **{k: merged.get(k) for k in FIELDS}})
    return current(conn, s.id)


def sync(conn, cfg, actor: Actor | None = None) -> dict:
    """Write the config's ``[[instruments]]`` into the register (``sewerwatch db migrate``):
    a changed one is recorded as :func:`set_instrument` does; returns counts."""
    actor = actor or Actor.system()
    n = 0
    for ins in cfg.instruments:
        values = {k: getattr(ins, k) for k in FIELDS}
        before = current(conn, sensor(conn, ins.sensor).id)
        after = set_instrument(conn, ins.sensor, values, actor=actor, source="config")
        n += before is None or before != after
    return {"instruments": len(cfg.instruments), "changed": n}


def _definition_days(pack, parameter: str):
    try:
        rule = pack.rule(f"calibration-interval-{parameter}")
    except KeyError:
        return None
    per = UNIT_DAYS.get(rule.unit)
    if per is None:
        return None
    return int(round(rule.limit * per)), rule


def interval(s, instrument: dict | None, permit, pack, cfg) -> Interval | None:
    """The calibration interval of sensor ``s`` (:class:`field.common.SensorRow`): the
    shortest the permit, the ordinance, the instrument and the utility set (None: none set)."""
    found = []
    if permit is not None:
        for c in getattr(permit, "calibration", ()):
            if s.parameter in c.parameters:
                found.append((c.every_days, "permit", permit.cite(c.condition), c.words or ""))
    d = _definition_days(pack, s.parameter) if pack is not None else None
    if d is not None:
        found.append((d[0], "ordinance", d[1].citation, d[1].words))
    if instrument is not None and instrument.get("calibration_interval_days"):
        found.append((int(instrument["calibration_interval_days"]), "instrument", "the instrument register", ""))
    own = (cfg.field.calibration_days or {}).get(s.parameter) if cfg is not None else None
    if own:
        found.append((int(own), "utility", "[field] calibration_days", ""))
    if not found:
        return None
    found.sort(key=lambda x: x[0])
    days, source, citation, words = found[0]
    return Interval(days, source, citation, words, tuple((f[0], f[1], f[2]) for f in found[1:]))


def register(conn, cfg=None) -> list[dict]:
    """Every sensor with its instrument (or None) and its calibration interval."""
    from limits.packs import load_pack
    from limits.permit_store import current_permits

    permits = current_permits(conn)
    out = []
    packs: dict = {}
    for s in all_sensors(conn):
        ins = current(conn, s.id)
        pk = packs.setdefault(s.pack, load_pack(s.pack)) if s.pack else None
        iv = interval(s, ins, permits.get(s.site), pk, cfg)
        out.append({"sensor": s, "instrument": ins, "interval": iv})
    return out
