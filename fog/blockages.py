"""The sewer crew's grease blockages and the hot spots they make: each report (the day, the
manhole or segment, what was found, by whom, the establishment it was traced to if any), the
manholes and segments by their count of blockages over a period with the establishments
upstream of them (those given that segment, ``fog_establishments.segment``); the
blockages traced to an establishment are its findings (kind ``blockage``,
:mod:`fog.blockage_findings`). ``sewerwatch fog blockage add|list``, ``fog hotspots``,
``fog segment`` and the office's Grease pages call these functions.

A blockage is a record of something found: a day after today in the village is refused.
The crew's CSV (:data:`FIELDS`) is imported as the licence list is (:mod:`fog.imports`): a
preview unless committed, each rejected row to the dead letters (``fog-blockage-import``)
with its reason.
"""

from __future__ import annotations

from datetime import date

from foundation.errors import InputError
from fog.imports import Report, _dead, _rows
from fog.store import _audit, _day, actor_name

#: The columns of a blockage report, as the CSV import and the forms name them.
FIELDS = ("date", "location", "found", "found_by", "establishment")
#: The dead letters' source of the rows of a blockage CSV that could not be used.
SOURCE = "fog-blockage-import"
#: Each field in the words a refusal names it by.
FIELD_WORDS = {"date": "date", "location": "manhole or segment", "found": "what was found", "found_by": "found by",
               "establishment": "establishment"}
_ROW = ("id", "found_on", "location", "found", "found_by", "establishment_id", "source", "recorded_by")


def _establishment_id(conn, licence: str):
    row = conn.execute("SELECT id, name FROM fog_establishments WHERE licence = %s", (licence.strip(),)).fetchone()
    if row is None:
        raise InputError(f"establishment: no establishment with licence {licence.strip()!r}")
    return row


def add_blockage(conn, rec: dict, actor, today: date, source: str = "cli") -> dict:
    """Record a grease blockage the sewer crew found.

    Parameters
    ----------
    rec : dict
        ``date`` (the day it was found), ``location`` (the manhole or segment), ``found``
        (what the crew found), ``found_by`` (who), ``establishment`` (the licence of the
        establishment it was traced to; empty when not traced).
    today : date
        The village's day: a blockage found after it is refused.

    Raises
    ------
    InputError
        A field missing, too long or not a date, a day after today, an unknown licence.
    """
    for key, most in (("date", 10), ("location", 60), ("found", 1000), ("found_by", 200)):
        text = str(rec.get(key) or "").strip()
        if not text:
            raise InputError(f"{FIELD_WORDS[key]}: missing")
        if len(text) > most:
            raise InputError(f"{FIELD_WORDS[key]}: at most {most} characters, got {len(text)}")
    on = _day(rec["date"], "date")
    if on > today:
        raise InputError(f"date: {on} is after today ({today}): a blockage is recorded once it was found")
    est = None
    if str(rec.get("establishment") or "").strip():
        est = _establishment_id(conn, str(rec["establishment"]))
    row = {"found_on": on, "location": str(rec["location"]).strip(), "found": str(rec["found"]).strip(),
           "found_by": str(rec["found_by"]).strip(), "establishment_id": est[0] if est else None,
           "establishment": est[1] if est else None, "source": source}
    row["id"] = conn.execute(
        "INSERT INTO fog_blockages (found_on, location, found, found_by, establishment_id, source, recorded_by) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (on, row["location"], row["found"], row["found_by"], row["establishment_id"], source,
         actor_name(actor))).fetchone()[0]
    _audit(conn, actor, "fog.blockage.add", row["location"], {"on": on, "establishment": row["establishment"]})
    return row


def import_blockages(conn, text: str, filename: str, actor, today: date, *, commit: bool = False) -> Report:
    """Import the crew's CSV of blockages (:data:`FIELDS`; ``establishment`` may be empty),
    each row checked as :func:`add_blockage` checks one entered by hand (in a savepoint:
    a row refused stores nothing). Without ``commit`` nothing is kept."""
    report = Report(filename)
    with conn.transaction(force_rollback=not commit):
        for line, row, raw in _rows(text, filename, FIELDS, tuple(f for f in FIELDS if f != "establishment")):
            try:
                if row is None:
                    raise InputError("more fields than the header has columns")
                with conn.transaction():
                    add_blockage(conn, row, actor, today, source=f"import {filename}")
            except InputError as exc:
                report.rejected.append((line, str(exc), raw))
                continue
            report.good.append(row)
        if commit:
            _dead(conn, SOURCE, report, actor)
            report.committed = True
    return report


def blockages(conn, since: date | None = None, until: date | None = None) -> list[dict]:
    """The blockages found from ``since`` to ``until`` (both days included; open ends without
    them), newest first, each with the name and licence of the establishment it was traced to."""
    rows = conn.execute(
        f"SELECT {', '.join('b.' + c for c in _ROW)}, e.name, e.licence FROM fog_blockages b "
        "LEFT JOIN fog_establishments e ON e.id = b.establishment_id "
        "WHERE (%s::date IS NULL OR b.found_on >= %s) AND (%s::date IS NULL OR b.found_on <= %s) "
        "ORDER BY b.found_on DESC, b.id DESC", (since, since, until, until)).fetchall()
    return [dict(zip(_ROW + ("establishment", "licence"), r)) for r in rows]


def hot_spots(conn, since: date, until: date) -> list[dict]:
    """The manholes and segments where blockages were found from ``since`` to ``until``
    (both included), the most blockages first (then the latest, then by name): each with
    ``location``, ``blockages`` [count], ``first`` and ``last`` day, ``traced`` (the names
    of the establishments blockages there were traced to) and ``upstream`` (the
    establishments given that segment: name, licence, address). Locations are matched case
    aside."""
    if since > until:
        raise InputError(f"the period: {since} is after {until}")
    spots: dict[str, dict] = {}
    for b in reversed(blockages(conn, since, until)):
        key = b["location"].lower()
        s = spots.setdefault(key, {"location": b["location"], "blockages": 0, "first": b["found_on"],
                                   "last": b["found_on"], "traced": [], "upstream": []})
        s["blockages"] += 1
        s["last"] = max(s["last"], b["found_on"])
        if b["establishment"] and b["establishment"] not in s["traced"]:
            s["traced"].append(b["establishment"])
    if spots:
        for lower, name, licence, address in conn.execute(
                "SELECT lower(segment), name, licence, address FROM fog_establishments "
                "WHERE lower(segment) = ANY(%s) ORDER BY name, id", (list(spots),)).fetchall():
            spots[lower]["upstream"].append({"name": name, "licence": licence, "address": address})
    return sorted(spots.values(), key=lambda s: (-s["blockages"], -s["last"].toordinal(), s["location"].lower()))


def set_segment(conn, licence: str, segment: str, actor) -> dict:
    """Give the establishment ``licence`` the sewer segment or manhole it drains to (empty:
    none). Returns its name and segment.

    Raises
    ------
    InputError
        An unknown licence, a segment longer than 60 characters.
    """
    segment = (segment or "").strip()
    if len(segment) > 60:
        raise InputError(f"segment: at most 60 characters, got {len(segment)}")
    est = _establishment_id(conn, licence)
    conn.execute("UPDATE fog_establishments SET segment = %s WHERE id = %s", (segment, est[0]))
    _audit(conn, actor, "fog.segment", licence.strip(), {"segment": segment})
    return {"name": est[1], "segment": segment}
