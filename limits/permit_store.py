"""Discharge permits in the database: every version, who changed what, and each site's
current permit (table ``permits``, migration ``0080_permits.sql``).

``permits`` is append-only: importing a permit file whose content differs from the stored
version adds version n+1, and ``audit_log`` gets ``permit.import`` (the first version) or
``permit.change`` with the actor, the reason and every key that changed (old and new
value). Importing the same content again changes nothing.
"""

from __future__ import annotations

import re

import getpass
import json
from datetime import date

from foundation.actor import Actor
from foundation.errors import Conflict, InputError
from limits.packs import load_pack
from limits.permits import Permit, parse_permit

CURRENT_SQL = """SELECT DISTINCT ON (p.site_id) s.key, s.pack, p.number, p.version, p.document, p.source,
                        p.entered_by, p.entered_at
                 FROM permits_current p JOIN sites s ON s.id = p.site_id
                 ORDER BY p.site_id, p.effective DESC, p.entered_at DESC"""


def _flat(x, prefix: str = "") -> dict:
    """Dotted paths of a permit document; arrays of tables keyed by their condition or number."""
    out = {}
    if isinstance(x, dict):
        for k, v in x.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(x, list) and x and all(isinstance(v, dict) for v in x):
        for i, v in enumerate(x):
            tag = v.get("condition", v.get("number", i))
            out.update(_flat(v, f"{prefix}[{tag}]"))
    else:
        out[prefix] = x
    return out


def changes(old: dict, new: dict) -> list[dict]:
    """What changed between two permit documents: ``key``, ``old``, ``new`` per dotted key
    (``limits[3(a)].daily_maximum``)."""
    a, b = _flat(old), _flat(new)
    return [{"key": k, "old": a.get(k), "new": b.get(k)} for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


#: How the keys of a permit document read (:func:`readable`).
KEY_WORDS = {"daily_maximum": "daily maximum", "monthly_average": "monthly average",
             "daily_maximum_lb": "daily maximum loading [lb/day]", "minimum": "minimum", "maximum": "maximum",
             "words": "words", "unit": "unit", "analyte": "analyte", "parameter": "parameter", "issued": "issued",
             "effective": "takes effect", "expires": "term ends", "issued_by": "issued by", "note": "note",
             "renewal.notice_given": "renewal: notice given", "renewal.automatic": "renewal: automatic",
             "renewal.term_years": "renewal: term [years]", "renewal.notice_days": "renewal: notice [days]",
             "renewal.note": "renewal: note", "flow.average_daily_gpd": "average daily flow [gal/day]",
             "flow.maximum_daily_gpd": "maximum daily flow [gal/day]", "parameters": "parameters",
             "sample_type": "sample type", "frequency.times": "samples", "frequency.per": "per", "frequency": "frequency"}
_SECTION = {"limits": "limit, condition", "monitoring": "monitoring, condition", "conditions": "condition"}


def readable(key: str) -> str:
    """A dotted key of :func:`changes` in words: ``limits[3(a)].daily_maximum`` ->
    ``limit, condition 3(a): daily maximum``."""
    head, sep, rest = key.partition("].")
    if sep and "[" in head:
        section, tag = head.split("[", 1)
        return f"{_SECTION.get(section, section)} {tag}: {KEY_WORDS.get(rest, rest.replace('_', ' '))}"
    if key.endswith("]") and "[" in key:
        section, tag = key[:-1].split("[", 1)
        return f"{_SECTION.get(section, section)} {tag}"
    return KEY_WORDS.get(key, key.replace("_", " ").replace(".", ": "))


_KEY_PATH = re.compile(r"\b[a-z_]+(?:\[[^\]]+\])?(?:\.[a-z_]+)+\b")


def in_words(message: str) -> str:
    """A refusal of a permit's check with each dotted key in it said in words
    (``flow.maximum_daily_gpd`` is "maximum daily flow"), for the office's form."""
    return _KEY_PATH.sub(lambda m: readable(m.group(0)), message)


def import_permit(conn, permit: Permit, *, actor: Actor | str | None = None, reason: str | None = None,
                  expected_version: int | None = None, new: bool = False) -> dict:
    """Store ``permit`` as a new version if it differs from the stored one (one transaction).

    ``actor``: who enters it (an :class:`foundation.actor.Actor`, or a name; default the
    operating-system user). ``expected_version``: the version an edit was made from
    (optimistic concurrency, ``permit import --expect-version N``, the
    office's permit form); when another version was stored meanwhile nothing is stored and
    :class:`foundation.errors.Conflict` says who stored which version when. Saves of one
    permit are serialised (an advisory lock on its number), so two at once cannot both win.
    ``new``: a new permit (the office's New permit form): refused when its number is stored.

    Returns
    -------
    dict
        ``number``, ``site``, ``version``, ``status`` (``stored``, ``changed`` or
        ``unchanged``) and ``changes`` (:func:`changes`).

    Raises
    ------
    InputError
        An unknown site, or a permit number already held by another site.
    Conflict
        ``expected_version`` is not the version stored now.
    """
    via = actor.via if isinstance(actor, Actor) else "cli"
    actor = actor.audit_name if isinstance(actor, Actor) else (actor or getpass.getuser())
    doc = permit.as_document()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"permit:{permit.number}",))
        row = conn.execute("SELECT id FROM sites WHERE key = %s", (permit.site,)).fetchone()
        if row is None:
            known = [k for (k,) in conn.execute("SELECT key FROM sites ORDER BY key").fetchall()]
            raise InputError(f"{permit.path}: site: unknown site {permit.site!r} (sites: {', '.join(known) or 'none'}; "
                             "sync the config first: sewerwatch db migrate)")
        site_id = row[0]
        cur = conn.execute("SELECT version, document, site_id FROM permits_current WHERE number = %s",
                           (permit.number,)).fetchone()
        if cur is not None and cur[2] != site_id:
            raise InputError(f"{permit.path}: number: permit {permit.number} is another site's "
                             "(§13.54(5): a permit is not transferred)")
        if new and cur is not None:
            raise InputError(f"Permit number: permit {permit.number} exists already (version {cur[0]}, "
                             f"{'this' if cur[2] == site_id else 'another'} user's): give the new permit a number "
                             "of its own, or edit that one on its page")
        if expected_version is not None and (cur[0] if cur is not None else 0) != expected_version:
            by, at = conn.execute("SELECT entered_by, entered_at FROM permits WHERE number = %s AND version = %s",
                                  (permit.number, cur[0])).fetchone() if cur is not None else ("nobody", "")
            raise Conflict(f"permit {permit.number}", expected_version, cur[0] if cur is not None else 0, by,
                           at if hasattr(at, "astimezone") else str(at))
        diff = changes(cur[1], doc) if cur is not None else []
        if cur is not None and not diff:
            return {"number": permit.number, "site": permit.site, "version": cur[0], "status": "unchanged",
                    "changes": []}
        version = 1 if cur is None else cur[0] + 1
        conn.execute(
            "INSERT INTO permits (number, version, site_id, issued, effective, expires, document, source, entered_by, "
            "reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (permit.number, version, site_id, permit.issued, permit.effective, permit.expires, json.dumps(doc),
             permit.path, actor, reason))
        action = "permit.import" if cur is None else "permit.change"
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                     (actor, action, f"permit:{permit.number}",
                      json.dumps({"version": version, "site": permit.site, "source": permit.path, "reason": reason,
                                  "changes": diff, "via": via}, default=str)))
    return {"number": permit.number, "site": permit.site, "version": version,
            "status": "stored" if cur is None else "changed", "changes": diff}


def permit_of_site(conn, data: dict, name: str) -> Permit:
    """A permit document read with its site's pack (where the permit names none, the pack's
    renewal terms apply), as ``permit import`` reads a file and the office an upload or its form."""
    permit = parse_permit(data, name)
    row = conn.execute("SELECT pack FROM sites WHERE key = %s", (permit.site,)).fetchone()
    return parse_permit(data, name, load_pack(row[0])) if row is not None else permit


def current_permits(conn) -> dict[str, Permit]:
    """Each site's current permit (the latest version of its permit with the latest
    effective date), read with the site's pack: site key -> :class:`Permit`."""
    out = {}
    for key, pack, number, version, doc, source, _by, _at in conn.execute(CURRENT_SQL).fetchall():
        out[key] = parse_permit(doc, f"permit {number} version {version}", load_pack(pack))
    return out


def versions(conn, number: str) -> list[dict]:
    """Every stored version of permit ``number``, oldest first, with who entered it and why."""
    rows = conn.execute(
        "SELECT p.version, s.key, p.entered_by, p.entered_at, p.reason, p.source, p.document FROM permits p "
        "JOIN sites s ON s.id = p.site_id WHERE p.number = %s ORDER BY p.version", (number,)).fetchall()
    return [{"version": v, "site": k, "entered_by": by, "entered_at": at.isoformat(), "reason": why, "source": src,
             "document": doc} for v, k, by, at, why, src, doc in rows]


def history(conn, number: str) -> list[dict]:
    """The audit trail of permit ``number``: who imported or changed it, when, and what."""
    rows = conn.execute("SELECT at, actor, action, detail FROM audit_log WHERE object = %s ORDER BY at, id",
                        (f"permit:{number}",)).fetchall()
    return [{"at": at.isoformat(), "actor": actor, "action": action, **detail} for at, actor, action, detail in rows]


def list_permits(conn) -> list[dict]:
    """Every permit's current version: number, site, dates, version."""
    rows = conn.execute(
        "SELECT p.number, s.key, p.version, p.issued, p.effective, p.expires, p.entered_by, p.entered_at "
        "FROM permits_current p JOIN sites s ON s.id = p.site_id ORDER BY s.key, p.number").fetchall()
    return [{"number": n, "site": k, "version": v, "issued": i.isoformat(), "effective": e.isoformat(),
             "expires": x.isoformat(), "entered_by": by, "entered_at": at.isoformat()}
            for n, k, v, i, e, x, by, at in rows]


def as_date(x) -> date:
    """A date from a ``date`` or ISO text."""
    return x if isinstance(x, date) else date.fromisoformat(str(x))
