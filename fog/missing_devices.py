"""A grease removal device missing at an establishment, as its finding (kind ``missing
device``): an establishment of a category the ordinance requires an interceptor of found with
none, or a device on record found not there. Palmyra §13.51 (seed ``003_44f871d49a02d8f5.txt``):
"Grease, oil and sand interceptors shall be provided at restaurants, repair garages, gasoline
stations, car washes and other industrial or commercial establishments for the proper handling
of liquid wastes containing grease in excessive amounts". The categories that need one are the
rule pack's (``[program] requires_device``, :class:`fog.rules.Rules`).

An inspector or the office records it (:func:`record`: ``sewerwatch fog missing add``);
:mod:`fog.store` reads it among the establishment's findings (:func:`fog.missing_findings.findings_of`), and the
grease guide answers it as it answers the others (``enforcement/guides/grease-erp.toml``).
Migration ``0330_grease_missing_responses.sql`` (``fog_missing_devices``).
"""

from __future__ import annotations

from datetime import date

from foundation.errors import InputError
from fog import store
from fog.missing_findings import NO_DEVICE
from fog.rules import Rules


def record(conn, rules: Rules, establishment, *, found_on, device: str | None = None, notes: str = "",
           actor, today: date, source: str = "cli") -> dict:
    """Record that ``establishment`` (its licence, or its id) has no grease removal device
    (``device`` empty), or that its device ``device`` (the label on record) is not there.

    Parameters
    ----------
    found_on : date or str
        The day it was found (an inspection's day); not after ``today``.
    today : datetime.date
        The village's day.

    Raises
    ------
    InputError
        No such establishment or device; a date missing, unreadable or after today; no device
        named for an establishment of a category that needs none, or for one that has devices
        on record (name the one that is not there); found already that day (naming the record).
    """
    where, arg = ("id = %s", establishment) if isinstance(establishment, int) else \
        ("licence = %s", str(establishment or "").strip())
    est = conn.execute(f"SELECT id, licence, name, category FROM fog_establishments WHERE {where}", (arg,)).fetchone()
    if est is None:
        raise InputError(f"no establishment with licence {arg!r} (sewerwatch fog list shows them)")
    if not str(found_on or "").strip():
        raise InputError("found on: missing")
    day = found_on if isinstance(found_on, date) else store._day(found_on, "found on")
    if day > today:
        raise InputError(f"found on: {day} is after today ({today}); record what was found once it is found")
    label = str(device or "").strip()
    dev_id = None
    if label:
        _, dev = store._device_of(conn, est[1], label)
        dev_id, label = dev[0], dev[1]
    else:
        has = [r[0] for r in conn.execute("SELECT label FROM fog_devices WHERE establishment_id = %s ORDER BY label",
                                          (est[0],)).fetchall()]
        if has:
            raise InputError(f"{est[2]} has {', '.join(has)} on record: name the device that is not there")
        if est[3] not in rules.requires_device:
            raise InputError(f"{est[2]}: the ordinance requires no interceptor of its category ({est[3]})")
    same = conn.execute("SELECT recorded_by, recorded_at FROM fog_missing_devices WHERE establishment_id = %s AND "
                        "coalesce(device_id, 0) = %s AND found_on = %s", (est[0], dev_id or 0, day)).fetchone()
    if same:
        raise InputError(f"{est[2]}: {label or NO_DEVICE} was recorded missing on {day} already (by {same[0]}): "
                         "nothing was saved")
    mid = conn.execute("INSERT INTO fog_missing_devices (establishment_id, device_id, found_on, notes, source, "
                       "recorded_by) VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                       (est[0], dev_id, day, str(notes or "").strip()[:2000], source,
                        store.actor_name(actor))).fetchone()[0]
    store._audit(conn, actor, "fog.missing-device.add", est[1], {"device": label or None, "on": day})
    return {"id": mid, "licence": est[1], "name": est[2], "device": label or None, "found_on": day}
