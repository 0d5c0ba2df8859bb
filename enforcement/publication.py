"""The annual publication of the users in significant noncompliance, as a recorded act.

40 CFR 403.8(f)(2)(viii): the control authority shall "publish annually, in a newspaper(s) of
general circulation that provides meaningful public notice within the jurisdictions served by
the POTW, a list of the Industrial Users which, at any time during the previous twelve months,
were in significant noncompliance". :func:`enforcement.annual.snc_list` makes the list; this
module records that it was published: the newspaper, the day, the page (a PDF, or a photo of
the printed page) and the users it named (``snc_publications``). The ICIS-NPDES element
``SIUsSNCPublishedNewspaper`` counts the significant users named by a publication recorded for
the year (:func:`enforcement.program.performance_summary`); the annual report shows the list and
whether it was published.

:func:`record` is the one function the office's form and ``sewerwatch report publish`` call.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime, timezone

from foundation.actor import Actor
from foundation.errors import InputError

#: The largest page accepted [bytes] (a scanned newspaper page or a phone's photo).
PAGE_MAX = 20 * 1024 * 1024

#: What a page may be, by its first bytes.
_MAGIC = ((b"%PDF-", "application/pdf"), (b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG\r\n\x1a\n", "image/png"))


def media_type(page: bytes) -> str:
    """The page's media type from its first bytes; an :class:`InputError` for anything but a
    PDF, a JPEG or a PNG."""
    for magic, kind in _MAGIC:
        if page.startswith(magic):
            return kind
    raise InputError("the page: expected a PDF or a photo (JPEG or PNG) of the printed page, got "
                     + ("an empty file" if not page else "something else"))


def record(conn, year: int, newspaper: str, published_on: date, page: bytes, page_name: str,
           sites: list[str] | None, *, listed: list[str], actor: Actor, today: date | None = None) -> dict:
    """Record that the year's list was published.

    Parameters
    ----------
    conn : psycopg.Connection
        Owner-role connection.
    year : int
        The year whose list it is (its SNC periods end in it).
    newspaper : str
        The newspaper's name as it prints it.
    published_on : date
        The day the list appeared (not before the year began, not after ``today``).
    page : bytes
        The printed page: a PDF, or a JPEG or PNG photo (at most :data:`PAGE_MAX` bytes).
    page_name : str
        The file's name as uploaded (kept for the download).
    sites : list of str or None
        The users the publication named (site ids); None: every user on the year's list.
    listed : list of str
        The users on the year's list (:func:`enforcement.annual.snc_list`, its ``users``): a
        publication names only users on it.
    actor : foundation.actor.Actor
        Who records it.
    today : date, optional
        The village's present day (default: the UTC date).

    Returns
    -------
    dict
        The publication as :func:`publications` gives it.
    """
    today = today or datetime.now(timezone.utc).date()
    newspaper = (newspaper or "").strip()
    if not newspaper or len(newspaper) > 200:
        raise InputError("newspaper: give the newspaper's name (1 to 200 characters)")
    if published_on < date(year, 1, 1):
        raise InputError(f"published on {published_on.isoformat()}: before {year} began, so it cannot be the list "
                         f"of {year}")
    if published_on > today:
        raise InputError(f"published on {published_on.isoformat()}: that day has not come (today is "
                         f"{today.isoformat()}); record the publication once the paper is out")
    if len(page) > PAGE_MAX:
        raise InputError(f"the page: {len(page):,} bytes, more than the {PAGE_MAX // (1024 * 1024)} MB accepted")
    kind = media_type(page)
    if not listed:
        raise InputError(f"no user was in significant noncompliance in {year}: there is no list to publish")
    named = list(dict.fromkeys(listed if sites is None else sites))
    if not named:
        raise InputError("the users named: choose at least one user the publication named")
    stray = [s for s in named if s not in listed]
    if stray:
        raise InputError(f"{stray[0]} is not on the {year} list of users in significant noncompliance")
    ids = dict(conn.execute("SELECT key, id FROM sites WHERE key = ANY(%s)", (named,)).fetchall())
    with conn.transaction():
        before = conn.execute("SELECT recorded_by, recorded_at FROM snc_publications WHERE year = %s AND "
                              "newspaper = %s AND published_on = %s", (year, newspaper, published_on)).fetchone()
        if before:
            raise InputError(f"the {year} list's publication in {newspaper} on {published_on.isoformat()} is already "
                             f"recorded (by {before[0]}, {before[1].astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC)")
        pid = conn.execute(
            "INSERT INTO snc_publications (year, newspaper, published_on, media_type, page, page_name, bytes, sha256, "
            "recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (year, newspaper, published_on, kind, page, (page_name or "page")[:200], len(page),
             hashlib.sha256(page).hexdigest(), actor.audit_name)).fetchone()[0]
        for s in named:
            conn.execute("INSERT INTO snc_publication_users (publication_id, site_id) VALUES (%s, %s)", (pid, ids[s]))
        conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                     (actor.audit_name, "snc-list-published", f"snc_publication:{pid}",
                      json.dumps({"via": actor.via, "year": year, "newspaper": newspaper,
                                  "published_on": published_on.isoformat(), "sites": named})))
    return next(p for p in publications(conn, year) if p["id"] == pid)


def publications(conn, year: int) -> list[dict]:
    """The publications recorded for a year's list, earliest first: ``id``, ``year``,
    ``newspaper``, ``published_on`` (ISO date), ``media_type``, ``page_name``, ``bytes``,
    ``recorded_by``, ``recorded_at``, ``sites`` and ``names`` (the users named)."""
    rows = conn.execute(
        "SELECT p.id, p.newspaper, p.published_on, p.media_type, p.page_name, p.bytes, p.recorded_by, p.recorded_at, "
        "coalesce(array_agg(s.key ORDER BY s.key) FILTER (WHERE s.key IS NOT NULL), '{}'), "
        "coalesce(array_agg(s.name ORDER BY s.key) FILTER (WHERE s.key IS NOT NULL), '{}') "
        "FROM snc_publications p LEFT JOIN snc_publication_users u ON u.publication_id = p.id "
        "LEFT JOIN sites s ON s.id = u.site_id WHERE p.year = %s GROUP BY p.id ORDER BY p.published_on, p.id",
        (year,)).fetchall()
    return [{"id": r[0], "year": year, "newspaper": r[1], "published_on": r[2].isoformat(), "media_type": r[3],
             "page_name": r[4], "bytes": r[5], "recorded_by": r[6], "recorded_at": r[7].isoformat(),
             "sites": list(r[8]), "names": list(r[9])} for r in rows]


def page(conn, publication_id: int) -> tuple[str, str, bytes, int]:
    """A publication's page: its media type, file name, bytes and year."""
    row = conn.execute("SELECT media_type, page_name, page, year FROM snc_publications WHERE id = %s",
                       (publication_id,)).fetchone()
    if row is None:
        raise InputError(f"no publication {publication_id} is recorded")
    return row[0], row[1], bytes(row[2]), row[3]
