"""Inspections of industrial users (40 CFR 403.8(f)(2)(v), counted in the
annual report under 40 CFR 403.12(i)).

A visit record: when, who inspected, the user's representative, what kind of visit, whether
samples were taken, the checklist answered item by item (``ok``, ``deficient``, ``n/a``, each
with a note), findings in words, grab readings taken (a field pH or temperature: compared
with the live sensor, :mod:`field.drift`), and photos from the inspector's phone
(:mod:`field.photos`). The checklist is the config's ``[[field.checklist]]`` where it has one,
else the rule pack's ``[[checklist]]`` (e.g. Palmyra §13.51 grease interceptors "maintained
by the owner ... in continuous, efficient operation", Webster WI §240 (19) interceptor
cleaning records). Each deficient item is a finding for enforcement
(:mod:`enforcement.fieldwork`).
"""

from __future__ import annotations

import json
from datetime import datetime

from foundation.actor import Actor
from foundation.errors import InputError

from field import drift, photos
from field.common import audit, db_now, iso, not_in_future, site as site_row, village_zone

KINDS = ("routine", "demand", "follow-up", "complaint")
ANSWERS = ("ok", "deficient", "n/a")


def checklist(conn, site: str, cfg) -> list[dict]:
    """The items to check at ``site``: ``[{item, citation, words}]`` (the config's, else its pack's)."""
    if cfg is not None and cfg.field.checklist:
        return [{"item": c.item, "citation": c.citation or "", "words": ""} for c in cfg.field.checklist]
    from limits.packs import load_pack
    srow = site_row(conn, site)
    return [{"item": c.item, "citation": c.citation, "words": c.words} for c in load_pack(srow[3]).checklist]


def record(conn, site: str, *, actor: Actor, cfg, answers: list[dict], visited_at: datetime | None = None,
           inspector: str | None = None, representative: str | None = None, kind: str = "routine",
           sampled: bool = False, findings: str | None = None, readings: dict | None = None,
           photo_files: list[tuple[bytes, str | None]] = (), key: str | None = None) -> dict:
    """Record an inspection of ``site``.

    Parameters
    ----------
    answers : list of dict
        ``{"item", "answer", "note"}`` per checklist item (:func:`checklist`; an item not
        answered is ``n/a``); ``answer`` one of :data:`ANSWERS`.
    readings : dict, optional
        Grab readings taken at the visit: ``{"ph": 7.1, "temperature": 68.0}`` [pH, degF].
    photo_files : list of (bytes, caption)
        Photos as uploaded (each checked and re-encoded by :func:`field.photos.clean`).
    key : str, optional
        A form's idempotency key: the same key records one visit (the first's id is returned).

    Returns
    -------
    dict
        The inspection (:func:`inspection`), ``deficient`` items among its checklist.
    """
    if kind not in KINDS:
        raise InputError(f"--kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    items = {c["item"]: c for c in checklist(conn, site, cfg)}
    given = {a["item"]: a for a in answers}
    unknown = [i for i in given if i not in items]
    if unknown:
        raise InputError(f"unknown checklist item {unknown[0]!r} (items: {'; '.join(items) or 'none'})")
    rows = []
    for item, c in items.items():
        a = given.get(item, {})
        ans = a.get("answer") or "n/a"
        if ans not in ANSWERS:
            raise InputError(f"checklist item {item!r}: expected one of {', '.join(ANSWERS)}, got {ans!r}")
        note = (a.get("note") or "").strip() or None
        if ans == "deficient" and not note:
            raise InputError(f"checklist item {item!r} is deficient: say what was found (a note)")
        rows.append({"item": item, "citation": c["citation"], "answer": ans, "note": note})
    cleaned = [(photos.clean(data, cfg.field.photo_max_bytes, cfg.field.photo_max_pixels), caption)
               for data, caption in photo_files]
    srow = site_row(conn, site)
    with conn.transaction():
        if key is not None:
            seen = conn.execute("SELECT id FROM inspections WHERE key = %s", (key,)).fetchone()
            if seen is not None:
                return {**inspection(conn, seen[0]), "again": True}
        now = db_now(conn)
        at = visited_at or now
        not_in_future(at, now, village_zone(srow[3]), "date of the visit", "a visit is recorded once it took place")
        iid = conn.execute(
            "INSERT INTO inspections (site_id, visited_at, inspector, representative, kind, sampled, checklist, "
            "findings, recorded_by, key) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (srow[0], at, (inspector or actor.display).strip(), (representative or "").strip() or None, kind,
             bool(sampled), json.dumps(rows), (findings or "").strip() or None, actor.audit_name, key)).fetchone()[0]
        for p, caption in cleaned:
            _store_photo(conn, iid, p, caption, actor)
        for parameter, value in (readings or {}).items():
            if value is not None:
                drift.record_field_reading(conn, srow[1], parameter, value, actor=actor, taken_at=at,
                                           inspection_id=iid, note=f"inspection {iid}")
        audit(conn, actor, "inspection-record", f"inspection:{iid}",
              {"site": srow[1], "visited_at": iso(at), "deficient": [r["item"] for r in rows if r["answer"] == "deficient"],
               "photos": len(cleaned)})
    return inspection(conn, iid)


def _store_photo(conn, inspection_id: int, p: "photos.Photo", caption: str | None, actor: Actor) -> int:
    pid = conn.execute("INSERT INTO inspection_photos (inspection_id, media_type, content, bytes, width, height, sha256, "
                       "caption, uploaded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                       (inspection_id, p.media_type, p.content, len(p.content), p.width, p.height, p.sha256,
                        (caption or "").strip()[:300] or None, actor.audit_name)).fetchone()[0]
    audit(conn, actor, "inspection-photo", f"inspection:{inspection_id}",
          {"photo": pid, "bytes": len(p.content), "sha256": p.sha256})
    return pid


def add_photo(conn, inspection_id: int, data: bytes, caption: str | None, *, actor: Actor, cfg) -> dict:
    """Add a photo to an inspection recorded already."""
    p = photos.clean(data, cfg.field.photo_max_bytes, cfg.field.photo_max_pixels)
    with conn.transaction():
        inspection(conn, inspection_id)
        pid = _store_photo(conn, inspection_id, p, caption, actor)
    return {"id": pid, "inspection_id": inspection_id, "bytes": len(p.content), "media_type": p.media_type}


def photo(conn, photo_id: int) -> dict:
    """A stored photo: ``media_type``, ``content``, ``site_id``, ``inspection_id``."""
    r = conn.execute("SELECT p.media_type, p.content, i.site_id, p.inspection_id, p.caption FROM inspection_photos p "
                     "JOIN inspections i ON i.id = p.inspection_id WHERE p.id = %s", (photo_id,)).fetchone()
    if r is None:
        raise InputError(f"no photo {photo_id}")
    return {"media_type": r[0], "content": bytes(r[1]), "site_id": r[2], "inspection_id": r[3], "caption": r[4]}


COLS = ("id", "site_id", "site", "site_name", "visited_at", "inspector", "representative", "kind", "sampled",
        "checklist", "findings", "recorded_by", "recorded_at")
SQL = """SELECT i.id, i.site_id, s.key, s.name, i.visited_at, i.inspector, i.representative, i.kind, i.sampled,
                i.checklist, i.findings, i.recorded_by, i.recorded_at
         FROM inspections i JOIN sites s ON s.id = i.site_id"""


def _with_extras(conn, d: dict) -> dict:
    d["photos"] = [dict(zip(("id", "media_type", "bytes", "width", "height", "caption"), r)) for r in conn.execute(
        "SELECT id, media_type, bytes, width, height, caption FROM inspection_photos WHERE inspection_id = %s "
        "ORDER BY id", (d["id"],)).fetchall()]
    d["readings"] = [dict(zip(("id", "parameter", "value", "taken_at"), r)) for r in conn.execute(
        "SELECT id, parameter, value, taken_at FROM field_readings WHERE inspection_id = %s ORDER BY id",
        (d["id"],)).fetchall()]
    d["deficient"] = [c for c in d["checklist"] if c["answer"] == "deficient"]
    return d


def inspection(conn, inspection_id: int) -> dict:
    r = conn.execute(SQL + " WHERE i.id = %s", (inspection_id,)).fetchone()
    if r is None:
        raise InputError(f"no inspection {inspection_id} (sewerwatch inspections list shows them)")
    return _with_extras(conn, dict(zip(COLS, r)))


def list_inspections(conn, since: datetime | None = None, until: datetime | None = None,
                     site: str | None = None) -> list[dict]:
    rows = conn.execute(SQL + " WHERE (%(a)s::timestamptz IS NULL OR i.visited_at >= %(a)s) AND "
                        "(%(b)s::timestamptz IS NULL OR i.visited_at < %(b)s) AND (%(s)s::text IS NULL OR s.key = %(s)s) "
                        "ORDER BY i.visited_at, i.id", {"a": since, "b": until, "s": site}).fetchall()
    return [_with_extras(conn, dict(zip(COLS, r))) for r in rows]
