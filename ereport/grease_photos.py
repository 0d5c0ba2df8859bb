"""Photos of a grease pump-out, attached by the hauler to its own report in the portal, and
shown to the utility's staff on the establishment's page.

A photo is checked and re-encoded by :func:`field.photos.clean`, the field inspections' own
(JPEG, PNG or WebP by its bytes, at most ``[field] photo_max_bytes`` and ``photo_max_pixels``;
what is stored is the image Pillow wrote, without the camera's metadata). It is stored in
``fog_pumpout_photos`` (migration ``0280_grease_reminders_photos.sql``); the same photo twice
on one report is refused, naming when it was attached. Here, above both the grease program
and the field work, because it joins the two (:mod:`fog.haulers` says whose report it is).
"""

from __future__ import annotations

import json

from field.photos import clean
from foundation.errors import InputError

#: At most this many photos on one pump-out report.
MAX_PHOTOS = 6


def attach(conn, hauler_id: int, pumpout_id: int, data: bytes, *, max_bytes: int, max_pixels: int,
           actor) -> dict:
    """Attach a photo to hauler ``hauler_id``'s own pump-out report ``pumpout_id``.

    Parameters
    ----------
    data : bytes
        The upload as sent.
    max_bytes, max_pixels : int
        The bounds of a photo [bytes], [pixels] (``[field]`` of the config).
    actor : foundation.actor.Actor
        Who attaches it (the audit trail).

    Returns
    -------
    dict
        ``id``, ``media_type``, ``width`` and ``height`` [px] of the photo stored.

    Raises
    ------
    InputError
        A report that is not the hauler's (in words that say nothing of it), a photo refused by
        :func:`field.photos.clean`, the same photo on the report already, more than
        :data:`MAX_PHOTOS`.
    """
    mine = conn.execute("SELECT p.manifest FROM fog_pumpouts p WHERE p.id = %s AND p.hauler_id = %s",
                        (pumpout_id, hauler_id)).fetchone()
    if mine is None:
        raise InputError("no such report of yours")
    photo = clean(data, max_bytes, max_pixels)
    same = conn.execute("SELECT id FROM fog_pumpout_photos WHERE pumpout_id = %s AND sha256 = %s",
                        (pumpout_id, photo.sha256)).fetchone()
    if same:
        raise InputError(f"this photo is attached to the report of manifest {mine[0]} already: nothing was saved")
    n = conn.execute("SELECT count(*) FROM fog_pumpout_photos WHERE pumpout_id = %s", (pumpout_id,)).fetchone()[0]
    if n >= MAX_PHOTOS:
        raise InputError(f"the report has {n} photos, the most one report takes: nothing was saved")
    pid = conn.execute(
        "INSERT INTO fog_pumpout_photos (pumpout_id, media_type, content, width, height, sha256, added_by) VALUES "
        "(%s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (pumpout_id, photo.media_type, photo.content, photo.width, photo.height, photo.sha256,
         actor.audit_name)).fetchone()[0]
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, "fog.pumpout.photo", mine[0],
                  json.dumps({"photo": pid, "bytes": len(photo.content), "via": actor.via})))
    return {"id": pid, "media_type": photo.media_type, "width": photo.width, "height": photo.height}


def photos(conn, pumpout_ids: list[int]) -> dict[int, list[dict]]:
    """The photos of the pump-outs ``pumpout_ids`` (without their bytes): pump-out id ->
    [``id``, ``width``, ``height``, ``added_at``, ``added_by``], oldest first."""
    out: dict[int, list[dict]] = {}
    for pid, pump, w, h, at, by in conn.execute(
            "SELECT id, pumpout_id, width, height, added_at, added_by FROM fog_pumpout_photos WHERE pumpout_id = "
            "ANY(%s) ORDER BY id", (list(pumpout_ids),)).fetchall():
        out.setdefault(pump, []).append({"id": pid, "width": w, "height": h, "added_at": at, "added_by": by})
    return out


def photo(conn, photo_id: int) -> dict | None:
    """Photo ``photo_id`` with its bytes: ``media_type``, ``content``, ``pumpout_id``,
    ``hauler_id`` (whose report it is on) and ``establishment_id``; None when there is none."""
    row = conn.execute(
        "SELECT f.media_type, f.content, f.pumpout_id, p.hauler_id, d.establishment_id FROM fog_pumpout_photos f "
        "JOIN fog_pumpouts p ON p.id = f.pumpout_id JOIN fog_devices d ON d.id = p.device_id WHERE f.id = %s",
        (photo_id,)).fetchone()
    if row is None:
        return None
    return dict(zip(("media_type", "content", "pumpout_id", "hauler_id", "establishment_id"), row))
