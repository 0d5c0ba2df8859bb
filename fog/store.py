"""The grease program's records: establishments and their devices, haulers, pump-outs; and
what the office and the command line read of them (the list, one establishment, what is
due). Each function is the one ``sewerwatch fog ...`` and the office's Grease pages call.

CSV imports are in :mod:`fog.imports`; findings are worked out on read (:mod:`fog.findings`).
"""

from __future__ import annotations

import json
from datetime import date

from foundation.actor import Actor
from foundation.errors import InputError
from fog.findings import schedule
from fog.rules import CATEGORIES, Rules  # noqa: F401 - CATEGORIES: the licence list's, named here as before

DEVICE_KINDS = ("interceptor", "hydromechanical trap", "automatic unit", "sand/oil separator")


def actor_name(actor) -> str:
    """What ``recorded_by`` holds for ``actor`` (an :class:`~foundation.actor.Actor` or a name)."""
    return actor.audit_name if isinstance(actor, Actor) else str(actor)


def _audit(conn, actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor_name(actor), action, obj, json.dumps(detail, default=str)))


# -- haulers -------------------------------------------------------------------------------

def add_hauler(conn, company: str, licence: str, actor) -> dict:
    """Register a grease hauler.

    Raises
    ------
    InputError
        An empty company or licence, or a company or licence registered already (naming it).
    """
    company, licence = (company or "").strip(), (licence or "").strip()
    if not company or not licence:
        raise InputError("a hauler needs its company name and its licence number")
    same = conn.execute("SELECT company, licence FROM fog_haulers WHERE lower(company) = lower(%s) OR licence = %s",
                        (company, licence)).fetchone()
    if same:
        raise InputError(f"{same[0]} (licence {same[1]}) is registered already: nothing was saved")
    hid = conn.execute("INSERT INTO fog_haulers (company, licence, recorded_by) VALUES (%s, %s, %s) RETURNING id",
                       (company, licence, actor_name(actor))).fetchone()[0]
    _audit(conn, actor, "fog.hauler.add", company, {"licence": licence})
    return {"id": hid, "company": company, "licence": licence}


def haulers(conn) -> list[dict]:
    """Every registered hauler, by company."""
    rows = conn.execute("SELECT id, company, licence, recorded_at FROM fog_haulers ORDER BY company").fetchall()
    return [dict(zip(("id", "company", "licence", "recorded_at"), r)) for r in rows]


def find_hauler(conn, name: str):
    """The registered hauler whose company or licence is ``name`` (case aside), or None."""
    row = conn.execute("SELECT id, company FROM fog_haulers WHERE lower(company) = lower(%s) OR licence = %s",
                       (name.strip(), name.strip())).fetchone()
    return row


# -- pump-outs -----------------------------------------------------------------------------

def _device_of(conn, licence: str, label: str | None):
    est = conn.execute("SELECT id, name FROM fog_establishments WHERE licence = %s", (licence.strip(),)).fetchone()
    if est is None:
        raise InputError(f"no establishment with licence {licence.strip()!r}")
    devs = conn.execute("SELECT id, label FROM fog_devices WHERE establishment_id = %s ORDER BY label",
                        (est[0],)).fetchall()
    if label:
        hit = [d for d in devs if d[1].lower() == label.strip().lower()]
        if not hit:
            raise InputError(f"{est[1]} has no device {label.strip()!r} (its devices: "
                             f"{', '.join(d[1] for d in devs) or 'none'})")
        return est, hit[0]
    if len(devs) != 1:
        raise InputError(f"{est[1]} has {len(devs)} devices ({', '.join(d[1] for d in devs)}): name the device")
    return est, devs[0]


def _number(value, what: str, unit: str) -> float:
    try:
        v = float(str(value).strip())
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a number of {unit}, got {value!r}") from None
    if not v >= 0 or v == float("inf"):
        raise InputError(f"{what}: expected a number of {unit} of 0 or more, got {value!r}")
    return v


def _day(value, what: str) -> date:
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-03-01, got {value!r}") from None


#: Each field of a pump-out report in the words a refusal names it by.
FIELD_WORDS = {"establishment": "establishment", "date": "date", "hauler": "hauler", "gallons": "gallons",
               "fog_depth_in": "FOG depth", "solids_depth_in": "solids depth",
               "receiving_facility": "receiving facility", "manifest": "manifest"}


def check_pumpout(conn, rec: dict, today: date | None = None) -> dict:
    """A pump-out report checked and resolved (the establishment, device and hauler found),
    ready for :func:`add_pumpout`; nothing stored.

    Parameters
    ----------
    rec : dict
        ``establishment`` (its licence number), ``device`` (its label; may be empty when the
        establishment has one), ``date``, ``hauler`` (company or licence), ``gallons``
        [gal], ``fog_depth_in`` and ``solids_depth_in`` [in], ``receiving_facility``,
        ``manifest``.
    today : datetime.date, optional
        The village's day (in its time zone): a pump-out dated after it is refused, a report
        being of something done. None: the date is not compared (a caller that has no day).

    Raises
    ------
    InputError
        A field missing or not a number or a date, an unknown establishment or device, a
        manifest number recorded already (naming the pump-out that has it), a date after
        ``today``.
    """
    for key in ("establishment", "date", "hauler", "gallons", "fog_depth_in", "solids_depth_in",
                "receiving_facility", "manifest"):
        if str(rec.get(key) or "").strip() == "":
            raise InputError(f"{FIELD_WORDS[key]}: missing")
    est, dev = _device_of(conn, str(rec["establishment"]), str(rec.get("device") or "").strip() or None)
    manifest = str(rec["manifest"]).strip()
    same = conn.execute("SELECT p.id, p.pumped_on, e.name, d.label, p.hauler_name FROM fog_pumpouts p "
                        "JOIN fog_devices d ON d.id = p.device_id JOIN fog_establishments e ON e.id = d.establishment_id "
                        "WHERE p.manifest = %s", (manifest,)).fetchone()
    if same:
        raise InputError(f"manifest {manifest} is recorded already: {same[2]}, {same[3]}, pumped on {same[1]} "
                         f"by {same[4]}: nothing was saved")
    hauler = find_hauler(conn, str(rec["hauler"]))
    pumped_on = _day(rec["date"], "date")
    if today is not None and pumped_on > today:
        raise InputError(f"date: {pumped_on} is after today ({today}); record a pump-out once it is done")
    return {"device_id": dev[0], "establishment": est[1], "device": dev[1],
            "hauler_id": hauler[0] if hauler else None,
            "hauler_name": hauler[1] if hauler else str(rec["hauler"]).strip(),
            "pumped_on": pumped_on,
            "gallons": _number(rec["gallons"], "gallons", "gallons"),
            "fog_depth_in": _number(rec["fog_depth_in"], "FOG depth", "inches"),
            "solids_depth_in": _number(rec["solids_depth_in"], "solids depth", "inches"),
            "receiving_facility": str(rec["receiving_facility"]).strip(), "manifest": manifest}


def add_pumpout(conn, rec: dict, actor, source: str = "cli", *, today: date) -> dict:
    """Record a pump-out report (:func:`check_pumpout`'s fields); a hauler not registered is
    recorded as named (a finding). ``today`` is the village's day: a pump-out dated after it
    is refused (the command line, the office's form, a hauler's file and the portal alike).
    Returns the stored row with its ``id``."""
    p = check_pumpout(conn, rec, today)
    p["id"] = conn.execute(
        "INSERT INTO fog_pumpouts (device_id, hauler_id, hauler_name, pumped_on, gallons, fog_depth_in, "
        "solids_depth_in, receiving_facility, manifest, source, recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, "
        "%s, %s, %s, %s) RETURNING id",
        (p["device_id"], p["hauler_id"], p["hauler_name"], p["pumped_on"], p["gallons"], p["fog_depth_in"],
         p["solids_depth_in"], p["receiving_facility"], p["manifest"], source, actor_name(actor))).fetchone()[0]
    _audit(conn, actor, "fog.pumpout.add", p["manifest"], {"device": p["device_id"], "on": p["pumped_on"]})
    return p


# -- reading -------------------------------------------------------------------------------

_DEV = ("id", "establishment_id", "label", "kind", "capacity_gal", "liquid_depth_in", "location", "installed_on",
        "interval_days", "registered_on")
_PUMP = ("id", "device_id", "hauler_id", "hauler_name", "pumped_on", "gallons", "fog_depth_in", "solids_depth_in",
         "receiving_facility", "manifest", "source")
_EST = ("id", "licence", "name", "address", "contact", "category", "segment")


def _judged(conn, rules: Rules, as_of: date, where: str = "", params: tuple = ()) -> list[dict]:
    """The establishments (``where`` on ``e``) with their devices, each device's pump-outs and
    schedule (:func:`fog.findings.schedule`), and the blockages traced to them
    (:func:`fog.blockage_findings.findings_of`) and the devices found missing
    (:func:`fog.missing_devices.findings_of`) among their findings."""
    from fog.blockage_findings import findings_of
    from fog.missing_findings import findings_of as missing_of

    ests = [dict(zip(_EST, r)) for r in conn.execute(
        f"SELECT {', '.join('e.' + c for c in _EST)} FROM fog_establishments e {where} ORDER BY e.name, e.id",
        params).fetchall()]
    ids = [e["id"] for e in ests]
    devs = [dict(zip(_DEV, r)) for r in conn.execute(
        f"SELECT {', '.join(_DEV)} FROM fog_devices WHERE establishment_id = ANY(%s) ORDER BY label", (ids,)).fetchall()]
    pumps: dict[int, list] = {}
    for r in conn.execute(f"SELECT {', '.join('p.' + c for c in _PUMP)} FROM fog_pumpouts p JOIN fog_devices d "
                          "ON d.id = p.device_id WHERE d.establishment_id = ANY(%s) ORDER BY p.pumped_on, p.id",
                          (ids,)).fetchall():
        p = dict(zip(_PUMP, r))
        pumps.setdefault(p["device_id"], []).append(p)
    by_est: dict[int, list] = {}
    for d in devs:
        d["pumpouts"] = pumps.get(d["id"], [])
        d["schedule"] = schedule(d, d["pumpouts"], rules, as_of)
        by_est.setdefault(d["establishment_id"], []).append(d)
    traced = findings_of(conn, ids, as_of)
    for est_id, found in missing_of(conn, ids, as_of).items():
        traced.setdefault(est_id, []).extend(found)
    for e in ests:
        e["devices"] = by_est.get(e["id"], [])
        e["findings"] = sorted([*((d, f) for d in e["devices"] for f in d["schedule"].findings),
                                *traced.get(e["id"], [])],
                               key=lambda df: (df[1].on, df[0]["label"]))
        e["overdue_days"] = max((d["schedule"].overdue_days for d in e["devices"]), default=0)
        e["next_due"] = min((d["schedule"].due_on for d in e["devices"]), default=None)
    return ests


def establishments(conn, rules: Rules, as_of: date, search: str | None = None) -> list[dict]:
    """The establishments whose name, address or licence holds ``search`` (all without it),
    overdue first (most days first), then by name; each with its devices, findings,
    ``overdue_days`` and ``next_due`` as of ``as_of``."""
    where, params = "", ()
    if search and search.strip():
        like = "%" + search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where, params = "WHERE e.name ILIKE %s OR e.address ILIKE %s OR e.licence ILIKE %s", (like, like, like)
    ests = _judged(conn, rules, as_of, where, params)
    return sorted(ests, key=lambda e: (-e["overdue_days"], e["name"].lower(), e["id"]))


def establishment(conn, rules: Rules, as_of: date, key) -> dict:
    """One establishment by its licence number or its id, with its devices, pump-outs
    (newest first on each device) and findings as of ``as_of``.

    Raises
    ------
    InputError
        No establishment with that licence (or id).
    """
    text = str(key).strip()
    where, params = "WHERE e.licence = %s", (text,)
    if isinstance(key, int):
        where, params = "WHERE e.id = %s", (key,)
    found = _judged(conn, rules, as_of, where, params)
    if not found:
        raise InputError(f"no establishment with licence {text!r} (sewerwatch fog list shows them)")
    return found[0]


def due(conn, rules: Rules, as_of: date, within_days: int = 0) -> list[dict]:
    """The devices overdue as of ``as_of``, or due within ``within_days`` of it [days]: most
    overdue first. Each: the establishment's licence, name and address, the device's label,
    ``due_on``, ``overdue_days``, ``interval_days``, ``last_pumped``."""
    out = []
    for e in _judged(conn, rules, as_of):
        for d in e["devices"]:
            s = d["schedule"]
            if (s.due_on - as_of).days <= within_days:
                out.append({"licence": e["licence"], "name": e["name"], "address": e["address"],
                            "establishment_id": e["id"], "device": d["label"], "due_on": s.due_on,
                            "overdue_days": s.overdue_days, "interval_days": s.interval_days,
                            "last_pumped": s.last_pumped})
    return sorted(out, key=lambda r: (r["due_on"], r["name"].lower(), r["device"]))


def counts(conn, rules: Rules, year: int, as_of: date) -> dict:
    """What the program reports for ``year`` (the annual report): establishments and devices
    on record at its end, pump-outs and grease inspections in it, the findings of each kind dated in it (the overdue
    devices as of ``as_of`` or the year's end, whichever is earlier); the sewer crew's grease
    blockages found in it (:func:`fog.blockage_findings.counts`); the notices issued in it, by step
    (``actions``: title -> count, the grease program's enforcement)."""
    from fog.blockage_findings import counts as blockage_counts

    end = min(as_of, date(year, 12, 31))
    ests = _judged(conn, rules, end)
    found = [f for e in ests for _, f in e["findings"] if f.on.year == year]
    return {"year": year, "as_of": end, "establishments": len(ests),
            "devices": sum(len(e["devices"]) for e in ests),
            "pumpouts": sum(1 for e in ests for d in e["devices"] for p in d["pumpouts"]
                            if p["pumped_on"].year == year and p["pumped_on"] <= end),
            "findings": {k: sum(1 for f in found if f.kind == k) for k in
                         ("too late", "overdue", "over capacity", "unregistered hauler", "missing device")},
            "inspections": conn.execute("SELECT count(*) FROM fog_inspections WHERE inspected_on BETWEEN %s AND %s",
                                        (date(year, 1, 1), end)).fetchone()[0],
            **blockage_counts(conn, year, end),
            "actions": dict(conn.execute(
                "SELECT title, count(*) FROM fog_notices WHERE issued_on BETWEEN %s AND %s GROUP BY title "
                "ORDER BY title", (date(year, 1, 1), end)).fetchall())}
