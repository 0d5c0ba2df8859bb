"""The state's electronic report (ICIS-NPDES) as EPA reads it: who submits it, whether its
year is over, and what the state's reviewer will question.

- :func:`submitter`: the submission header's ``Id`` (the user id of the utility's EPA CDX
  account, ``[enforcement.program] submitter_id``), ``Organization``
  (``submitter_organization``, default the utility's name) and ``Author`` (a person, by name:
  the signed-in account in the office, the staff account of the operating-system user or
  ``--by`` on the command line, :func:`staff_author`). Anything missing is a one-line error
  before anything is written.
- :func:`year_state`: a summary for a year not yet over in the village's time zone is a draft
  (:func:`draft_note`); one for a year not begun is refused.
- :func:`checklist`: what the state will ask about the year (users in significant
  noncompliance without an enforcement action, significant users without a permit in force,
  not sampled by the village, not inspected; penalties recorded without the day they were
  collected). Each is a line with its user and a link to the office page where it is settled;
  none blocks the file.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import NamedTuple

from foundation.errors import InputError


class Submitter(NamedTuple):
    """The submission header's people: ``id`` (CDX account), ``organization``, ``author``."""

    id: str
    organization: str
    author: str


def submitter(program, utility: str, author: str | None) -> Submitter:
    """The header of a submission, from the program's facts and the person preparing it.

    Parameters
    ----------
    program : enforcement.settings.Program
        ``[enforcement.program]``.
    utility : str
        ``[utility] name`` (the organisation when ``submitter_organization`` is not set).
    author : str or None
        The person's name (:func:`staff_author`, or a signed-in account's full name).
    """
    if not program.submitter_id:
        raise InputError("[enforcement.program] submitter_id is not set: the state's report names the user id of "
                         "the utility's EPA CDX account it is submitted under (the header's Id)")
    if not author or not author.strip():
        raise InputError("the author is not known: the state's report names the person who prepares it")
    return Submitter(program.submitter_id, program.submitter_organization or utility, author.strip())


def staff_author(conn, username: str) -> str:
    """The full name of the office's staff account ``username`` (enabled), for the header's
    ``Author`` on the command line; an :class:`InputError` naming the account otherwise."""
    row = conn.execute("SELECT full_name, kind, disabled_at FROM web_accounts WHERE username = %s",
                       (username,)).fetchone()
    if row is None:
        raise InputError(f"no staff account {username!r}: the state's report names its author by a staff account "
                         "(sewerwatch users add, or --by ACCOUNT)")
    if row[1] != "staff":
        raise InputError(f"account {username!r} is an industrial user's: the author is one of the utility's staff")
    if row[2] is not None:
        raise InputError(f"account {username!r} is disabled: the author is an enabled staff account")
    return row[0]


def year_state(year: int, tz, now: datetime | None = None) -> str:
    """``over``, ``open`` (the year is under way in the village's time zone ``tz``) or
    ``ahead`` (not begun)."""
    today = (now or datetime.now(timezone.utc)).astimezone(tz).date()
    if today > date(year, 12, 31):
        return "over"
    if today < date(year, 1, 1):
        return "ahead"
    return "open"


def draft_note(year: int, tz, now: datetime | None = None) -> str:
    """Why a summary of ``year`` made now is a draft, in words."""
    today = (now or datetime.now(timezone.utc)).astimezone(tz).date()
    return (f"the year {year} is not over (made {today.isoformat()} in the village): its figures cover "
            f"{year}-01-01 to {today.isoformat()}, not the whole year")


def check_year(year: int, tz, draft: bool, now: datetime | None = None) -> str | None:
    """The draft note for a year not over (with ``draft``), None for a year over; an
    :class:`InputError` for a year not over without ``draft`` or not begun."""
    state = year_state(year, tz, now)
    if state == "ahead":
        raise InputError(f"{year} has not begun in the village: there is nothing to report")
    if state == "open":
        if not draft:
            today = (now or datetime.now(timezone.utc)).astimezone(tz).date()
            raise InputError(f"{year} is not over in the village (today is {today.isoformat()}): its summary would "
                             "count part of the year as the whole; make a draft (--draft) or wait for the year's end")
        return draft_note(year, tz, now)
    return None


#: The checklist's kinds, in the order a page lists them: the heading of each.
CHECKS = {
    "snc-without-action": "Users in significant noncompliance without an enforcement action",
    "no-permit": "Significant users without a discharge permit in force at the year's end",
    "not-sampled": "Significant users the village did not sample in the year",
    "not-inspected": "Significant users not inspected in the year",
    "penalty-no-date": "Penalties recorded without the day they were collected",
}


def checklist(rep: dict) -> list[dict]:
    """What the state's reviewer will question in the year's summary.

    Parameters
    ----------
    rep : dict
        The annual report with its ``performance_summary`` (:func:`enforcement.annual.annual_report`).

    Returns
    -------
    list of dict
        ``kind`` (a key of :data:`CHECKS`), ``site``, ``name`` (the user), ``words`` (the
        line, in words) and ``link`` (the office's page that settles it, relative to the office).
    """
    from enforcement.program import _inspections   # the same test the summary counts with

    ps = rep.get("performance_summary") or {}
    siu = ps.get("significant_users") or []
    users = {u["site"]: u for u in rep["users"]}
    year = rep["year"]
    out: list[dict] = []

    def add(kind: str, site: str, words: str, link: str):
        out.append({"kind": kind, "site": site, "name": users[site]["name"] if site in users else site,
                    "words": words, "link": link})

    for u in rep["snc"]["users"]:
        s = u["site"]
        acts = [n for n in users.get(s, {}).get("notices", []) if n.get("issued_on")
                and date.fromisoformat(n["issued_on"]).year == year]
        if not acts:
            periods = ", ".join(p["period"] for p in u["periods"])
            crit = ", ".join(sorted({f"({c['criterion']})" for p in u["periods"] for c in p["criteria"]}))
            add("snc-without-action", s, f"in significant noncompliance in {periods} under {crit}; no notice or "
                "order issued in the year", f"/sites/{s}")
    for s in siu:
        u = users[s]
        if not u.get("permit_in_force_at_year_end"):
            why = "no discharge permit on record" if not u.get("permit") else \
                f"permit {u['permit']} not in force on {year}-12-31"
            add("no-permit", s, why, f"/permits/{u['permit']}" if u.get("permit") else "/permits")
    for s in siu:
        u = users[s]
        if not u.get("samples_by_potw"):
            own = u.get("samples_taken", 0)
            add("not-sampled", s, "no sample taken by the village or its contractor" + (
                f" ({own} sample{'s' if own != 1 else ''} of the user's own)" if own else ""), f"/sites/{s}")
    for s in siu:
        if not _inspections(users[s]):
            add("not-inspected", s, "no inspection recorded", f"/inspections/new?site={s}")
    for u in rep["users"]:
        for n in u["notices"]:
            if n.get("penalty_dollars") and not n.get("penalty_collected_on"):
                add("penalty-no-date", u["site"], f"notice {n['number']}: a penalty of ${n['penalty_dollars']:,.2f} "
                    "without the day it was collected", f"/notices?site={u['site']}")
    order = list(CHECKS)
    out.sort(key=lambda i: (order.index(i["kind"]), i["name"]))
    return out


def checklist_text(items: list[dict], year: int, base: str = "") -> str:
    """The checklist as the command line prints it, under the heading of each kind (``base``:
    the office's address, if known)."""
    if not items:
        return f"{year}: nothing the state's reviewer is likely to question"
    lines = [f"{year}: what the state's reviewer will question ({len(items)}; none stops the file)"]
    for kind, heading in CHECKS.items():
        mine = [i for i in items if i["kind"] == kind]
        if mine:
            lines.append(heading)
            lines += [f"  {i['name']}: {i['words']}  {base}{i['link']}" for i in mine]
    return "\n".join(lines)
