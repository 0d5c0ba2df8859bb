"""Legal holds on an industrial user: while one is active, retention deletes nothing of the site's.

``sewerwatch hold add SITE --reason``, ``hold release SITE --reason``, ``hold list``. Storage
retention (``sewerwatch db maintain`` and ``run``) reads the active holds: the site's raw
readings, evidence and one-minute aggregates stay past every retention setting until the
hold is released. 40 CFR 403.12(o)(2): records are kept beyond three years "during the course
of any unresolved litigation regarding the Industrial User or POTW, or when requested by the
Director or the Approval Authority". Each placing and release is a row of ``audit_log``.
"""

from __future__ import annotations

import json

from enforcement.findings import site
from foundation.actor import Actor
from foundation.errors import InputError

COLUMNS = ("id", "site", "reason", "placed_by", "placed_at", "released_by", "released_at", "release_reason")


def _rows(conn, where: str = "TRUE", params=()) -> list[dict]:
    return [dict(zip(COLUMNS, r)) for r in conn.execute(
        "SELECT h.id, s.key, h.reason, h.placed_by, h.placed_at, h.released_by, h.released_at, h.release_reason "
        f"FROM legal_holds h JOIN sites s ON s.id = h.site_id WHERE {where} ORDER BY h.placed_at, h.id",
        params).fetchall()]


def holds(conn, active_only: bool = True) -> list[dict]:
    """The legal holds (active ones only unless ``active_only`` is False), oldest first."""
    return _rows(conn, "h.released_at IS NULL" if active_only else "TRUE")


def add(conn, site_key: str, reason: str, *, actor: Actor) -> dict:
    """Place a legal hold on ``site_key`` (audited ``legal-hold.add``).

    Raises
    ------
    foundation.errors.InputError
        For an unknown site, an empty reason, or a site already on hold (naming that hold).
    """
    if not (reason or "").strip():
        raise InputError("--reason: say why the records are held (the case, the request)")
    s = site(conn, site_key)
    with conn.transaction():
        held = _rows(conn, "h.site_id = %s AND h.released_at IS NULL", (s.id,))
        if held:
            h = held[0]
            raise InputError(f"site {site_key!r} is on hold already since {h['placed_at']:%Y-%m-%d} "
                             f"({h['reason']}, placed by {h['placed_by']})")
        hid = conn.execute("INSERT INTO legal_holds (site_id, reason, placed_by) VALUES (%s, %s, %s) RETURNING id",
                           (s.id, reason.strip(), actor.audit_name)).fetchone()[0]
        _audit(conn, actor, "legal-hold.add", site_key, {"hold": hid, "reason": reason.strip()})
    return _rows(conn, "h.id = %s", (hid,))[0]


def release(conn, site_key: str, reason: str, *, actor: Actor) -> dict:
    """Release the active legal hold on ``site_key`` (audited ``legal-hold.release``).

    Raises
    ------
    foundation.errors.InputError
        For an unknown site, an empty reason, or a site not on hold.
    """
    if not (reason or "").strip():
        raise InputError("--reason: say why the hold ends (the case closed, the request withdrawn)")
    s = site(conn, site_key)
    with conn.transaction():
        row = conn.execute("UPDATE legal_holds SET released_by = %s, released_at = now(), release_reason = %s "
                           "WHERE site_id = %s AND released_at IS NULL RETURNING id",
                           (actor.audit_name, reason.strip(), s.id)).fetchone()
        if row is None:
            raise InputError(f"site {site_key!r} is not on hold")
        _audit(conn, actor, "legal-hold.release", site_key, {"hold": row[0], "reason": reason.strip()})
    return _rows(conn, "h.id = %s", (row[0],))[0]


def _audit(conn, actor: Actor, action: str, site_key: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, f"site:{site_key}", json.dumps({"via": actor.via, **detail})))
