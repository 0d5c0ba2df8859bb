"""A grease hauler's own part of the program: the devices it was hired for, its own pump-out
reports, and a report filed from the portal. The portal's pages for a hauler's account and
``sewerwatch fog hauler assign|devices`` call these functions.

**Hired.** A hauler was hired for a device when staff assigned it to the device
(:func:`assign`), or when a pump-out of the device is on record under the hauler's name (it
pumped it before: entered by staff, imported from its file, or reported by itself). A hauler
may report only the devices it was hired for, and sees of them only what it needs to report
(the establishment, the device, its own last pump-out); it never sees another hauler's reports.

**A report from the portal** is checked and stored by :func:`fog.store.add_pumpout`, the
function of ``sewerwatch fog pumpout add`` and of the office's form, with the hauler named by
its account (never typed), and a date that may not be after the day it is filed.
"""

from __future__ import annotations

from datetime import date

from foundation.errors import InputError
from fog import store
from fog.rules import Rules

#: The fields a hauler types on the portal's form, as :func:`fog.store.check_pumpout` names them.
FIELDS = ("date", "gallons", "fog_depth_in", "solids_depth_in", "receiving_facility", "manifest")


def hauler(conn, hauler_id: int) -> dict:
    """The registered hauler ``hauler_id``: ``id``, ``company``, ``licence``."""
    row = conn.execute("SELECT id, company, licence FROM fog_haulers WHERE id = %s", (hauler_id,)).fetchone()
    if row is None:
        raise InputError(f"no registered hauler {hauler_id}")
    return dict(zip(("id", "company", "licence"), row))


def assign(conn, hauler_name: str, licence: str, device: str | None, actor) -> dict:
    """Staff assign hauler ``hauler_name`` (its company or licence) to a device of the
    establishment with business licence ``licence`` (``device``: its label; may be empty when
    the establishment has one): the hauler may then report it from the portal.

    Raises
    ------
    InputError
        An unknown hauler, establishment or device; the hauler assigned to the device already
        (naming when and by whom).
    """
    h = store.find_hauler(conn, hauler_name or "")
    if h is None:
        raise InputError(f"no registered hauler {hauler_name!r} (sewerwatch fog hauler list)")
    est, dev = store._device_of(conn, licence or "", (device or "").strip() or None)
    same = conn.execute("SELECT assigned_at::date, assigned_by FROM fog_hauler_devices WHERE hauler_id = %s AND "
                        "device_id = %s", (h[0], dev[0])).fetchone()
    if same:
        raise InputError(f"{h[1]} is assigned to {est[1]}, {dev[1]} already (on {same[0]} by {same[1]}): "
                         "nothing was saved")
    conn.execute("INSERT INTO fog_hauler_devices (hauler_id, device_id, assigned_by) VALUES (%s, %s, %s)",
                 (h[0], dev[0], store.actor_name(actor)))
    store._audit(conn, actor, "fog.hauler.assign", h[1], {"establishment": licence, "device": dev[1]})
    return {"hauler": h[1], "hauler_id": h[0], "establishment": est[1], "device": dev[1], "device_id": dev[0]}


def assigned(conn, establishment_id: int) -> dict[int, list[str]]:
    """The haulers staff assigned to each device of an establishment: device id -> companies."""
    out: dict[int, list[str]] = {}
    for did, company in conn.execute(
            "SELECT a.device_id, h.company FROM fog_hauler_devices a JOIN fog_haulers h ON h.id = a.hauler_id "
            "JOIN fog_devices d ON d.id = a.device_id WHERE d.establishment_id = %s ORDER BY h.company",
            (establishment_id,)).fetchall():
        out.setdefault(did, []).append(company)
    return out


_HIRED = ("device_id", "label", "kind", "capacity_gal", "liquid_depth_in", "establishment_id", "licence", "name",
          "address", "assigned", "last_pumped")


def devices(conn, hauler_id: int) -> list[dict]:
    """The devices hauler ``hauler_id`` was hired for (assigned by staff, or pumped by it
    before), by establishment and label: the device, its establishment, ``assigned`` (True
    when staff assigned it) and ``last_pumped`` (the hauler's own last pump-out of it, or None)."""
    rows = conn.execute(
        "SELECT d.id, d.label, d.kind, d.capacity_gal, d.liquid_depth_in, e.id, e.licence, e.name, e.address, "
        "EXISTS (SELECT 1 FROM fog_hauler_devices a WHERE a.hauler_id = %(h)s AND a.device_id = d.id), "
        "(SELECT max(p.pumped_on) FROM fog_pumpouts p WHERE p.hauler_id = %(h)s AND p.device_id = d.id) "
        "FROM fog_devices d JOIN fog_establishments e ON e.id = d.establishment_id "
        "WHERE d.id IN (SELECT device_id FROM fog_hauler_devices WHERE hauler_id = %(h)s "
        "UNION SELECT device_id FROM fog_pumpouts WHERE hauler_id = %(h)s) ORDER BY e.name, e.licence, d.label",
        {"h": hauler_id}).fetchall()
    return [dict(zip(_HIRED, r)) for r in rows]


_REPORT = ("id", "device_id", "pumped_on", "gallons", "fog_depth_in", "solids_depth_in", "receiving_facility",
           "manifest", "source", "recorded_at", "recorded_by", "label", "establishment_id", "licence", "name",
           "address", "hauler_id", "hauler_name")
_REPORT_SQL = ("SELECT p.id, p.device_id, p.pumped_on, p.gallons, p.fog_depth_in, p.solids_depth_in, "
               "p.receiving_facility, p.manifest, p.source, p.recorded_at, p.recorded_by, d.label, e.id, e.licence, "
               "e.name, e.address, p.hauler_id, p.hauler_name FROM fog_pumpouts p JOIN fog_devices d ON "
               "d.id = p.device_id JOIN fog_establishments e ON e.id = d.establishment_id ")


def reports(conn, hauler_id: int) -> list[dict]:
    """Hauler ``hauler_id``'s own pump-out reports (however they were recorded), newest first."""
    rows = conn.execute(_REPORT_SQL + "WHERE p.hauler_id = %s ORDER BY p.pumped_on DESC, p.id DESC",
                        (hauler_id,)).fetchall()
    return [dict(zip(_REPORT, r)) for r in rows]


def report(conn, rules: Rules, hauler_id: int, pumpout_id: int, as_of: date) -> dict | None:
    """Hauler ``hauler_id``'s own pump-out report ``pumpout_id`` with the findings about it
    (over capacity, pumped too late, pumped after it was due: :func:`fog.findings.schedule`
    over all the device's pump-outs, as the office sees them), or None when it is not the
    hauler's."""
    row = conn.execute(_REPORT_SQL + "WHERE p.id = %s AND p.hauler_id = %s", (pumpout_id, hauler_id)).fetchone()
    if row is None:
        return None
    p = dict(zip(_REPORT, row))
    e = store.establishment(conn, rules, max(as_of, p["pumped_on"]), p["establishment_id"])
    dev = next(d for d in e["devices"] if d["id"] == p["device_id"])
    p["device"] = {k: dev[k] for k in ("label", "kind", "capacity_gal", "liquid_depth_in")}
    p["findings"] = [f for f in dev["schedule"].findings if f.pumpout_id == p["id"]]
    return p


def file_report(conn, hauler_id: int, device_id, fields: dict, actor, today: date) -> dict:
    """A pump-out reported by hauler ``hauler_id`` from the portal, for one of the devices it
    was hired for: stored by :func:`fog.store.add_pumpout` (source ``portal``), the hauler
    named by its licence. Returns the stored row with its ``id``.

    Raises
    ------
    InputError
        A device it was not hired for (in words that say nothing of it), a date after
        ``today``, and whatever :func:`fog.store.check_pumpout` refuses (a field missing or
        not a number, a manifest number recorded already, naming the pump-out that has it).
    """
    try:
        did = int(str(device_id).strip())
    except ValueError:
        raise InputError("device: choose one of the devices you were hired for") from None
    mine = {d["device_id"]: d for d in devices(conn, hauler_id)}
    if did not in mine:
        raise InputError("device: choose one of the devices you were hired for")
    text = str(fields.get("date") or "").strip()
    if text:
        day = store._day(text, "date")
        if day > today:
            raise InputError(f"date: {day} is after today ({today}); report a pump-out once it is done")
    h, d = hauler(conn, hauler_id), mine[did]
    rec = {"establishment": d["licence"], "device": d["label"], "hauler": h["licence"],
           **{k: str(fields.get(k) or "").strip()[:200] for k in FIELDS}}
    return store.add_pumpout(conn, rec, actor, source="portal", today=today)
