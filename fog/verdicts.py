"""An establishment's own word on the pump-outs reported for its devices: it confirms each, or
disputes it with a reason (a pump-out it says did not happen as reported). Its people do so in
the portal, with accounts of kind ``grease-establishment`` bound to the establishment; staff
read the disputes on the establishment's page. One verdict a report: a second is refused,
naming the first (``fog_pumpout_verdicts``, migration ``0280_grease_reminders_photos.sql``).

It serves Webster's (19) (seed ``000_68bc5aa0322c9423.txt``): the discharger "shall maintain
records of the dates and means of disposal", and Palmyra §13.51 (seed
``003_44f871d49a02d8f5.txt``): interceptors "maintained by the owner". An establishment sees
only its own devices and their reports.
"""

from __future__ import annotations

from foundation.errors import InputError
from fog import store

#: The longest reason of a dispute [characters].
REASON_MAX = 1000
_REPORT = ("id", "device_id", "label", "kind", "pumped_on", "hauler_name", "gallons", "fog_depth_in",
           "solids_depth_in", "receiving_facility", "manifest", "source", "verdict", "reason", "given_at", "given_by")


def establishment(conn, establishment_id: int) -> dict:
    """The establishment ``establishment_id``: ``id``, ``licence``, ``name``, ``address``."""
    row = conn.execute("SELECT id, licence, name, address FROM fog_establishments WHERE id = %s",
                       (establishment_id,)).fetchone()
    if row is None:
        raise InputError(f"no establishment {establishment_id}")
    return dict(zip(("id", "licence", "name", "address"), row))


def reports(conn, establishment_id: int) -> list[dict]:
    """The pump-outs reported for the establishment's devices (by anyone), newest first, each
    with its verdict (``verdict`` None when none is given yet)."""
    rows = conn.execute(
        "SELECT p.id, p.device_id, d.label, d.kind, p.pumped_on, p.hauler_name, p.gallons, p.fog_depth_in, "
        "p.solids_depth_in, p.receiving_facility, p.manifest, p.source, v.verdict, v.reason, v.given_at, v.given_by "
        "FROM fog_pumpouts p JOIN fog_devices d ON d.id = p.device_id LEFT JOIN fog_pumpout_verdicts v ON "
        "v.pumpout_id = p.id WHERE d.establishment_id = %s ORDER BY p.pumped_on DESC, p.id DESC",
        (establishment_id,)).fetchall()
    return [dict(zip(_REPORT, r)) for r in rows]


def give(conn, establishment_id: int, pumpout_id, verdict: str, reason: str | None, actor) -> dict:
    """The establishment's verdict on pump-out report ``pumpout_id``: ``confirmed``, or
    ``disputed`` with ``reason``.

    Raises
    ------
    InputError
        A report not of the establishment's devices (in words that say nothing of it), a
        dispute without a reason or with one too long, a verdict given already (naming it,
        when and by whom).
    """
    if verdict not in ("confirmed", "disputed"):
        raise InputError(f"verdict: confirmed or disputed, got {verdict!r}")
    try:
        pid = int(str(pumpout_id).strip())
    except ValueError:
        raise InputError("no such report of your devices") from None
    mine = conn.execute("SELECT p.manifest, p.pumped_on FROM fog_pumpouts p JOIN fog_devices d ON d.id = p.device_id "
                        "WHERE p.id = %s AND d.establishment_id = %s", (pid, establishment_id)).fetchone()
    if mine is None:
        raise InputError("no such report of your devices")
    text = " ".join(str(reason or "").split())
    if verdict == "disputed" and not text:
        raise InputError("reason: say what is wrong with the report (a dispute needs its reason)")
    if len(text) > REASON_MAX:
        raise InputError(f"reason: at most {REASON_MAX} characters, got {len(text)}")
    with conn.transaction():
        row = conn.execute("INSERT INTO fog_pumpout_verdicts (pumpout_id, verdict, reason, given_by) VALUES "
                           "(%s, %s, %s, %s) ON CONFLICT (pumpout_id) DO NOTHING RETURNING given_at",
                           (pid, verdict, text if verdict == "disputed" else "", store.actor_name(actor))).fetchone()
    if row is None:
        was = conn.execute("SELECT verdict, given_at::date, given_by FROM fog_pumpout_verdicts WHERE pumpout_id = %s",
                           (pid,)).fetchone()
        raise InputError(f"the pump-out of manifest {mine[0]} was {was[0]} already (on {was[1]} by {was[2]}): "
                         "nothing was saved")
    store._audit(conn, actor, f"fog.pumpout.{verdict}", mine[0], {"pumpout": pid, "reason": text or None})
    return {"pumpout_id": pid, "manifest": mine[0], "verdict": verdict, "reason": text}


def of_pumpouts(conn, pumpout_ids: list[int]) -> dict[int, dict]:
    """The verdicts given on pump-outs ``pumpout_ids``: pump-out id -> ``verdict``,
    ``reason``, ``given_at``, ``given_by`` (staff read them on the establishment's page)."""
    return {r[0]: dict(zip(("verdict", "reason", "given_at", "given_by"), r[1:])) for r in conn.execute(
        "SELECT pumpout_id, verdict, reason, given_at, given_by FROM fog_pumpout_verdicts WHERE pumpout_id = ANY(%s)",
        (list(pumpout_ids),)).fetchall()}
