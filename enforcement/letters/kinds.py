"""What each kind of letter is about, and what it gives its template.

Every letter knows (:func:`context`): ``letterhead`` (``village``, ``lines``, ``signed_by``,
``signer_title``), ``date`` (the issue date in words) and ``issued_on``, ``number`` (the
letter's number; ``PREVIEW`` in a preview), ``user`` (``key``, ``name``), ``to`` (the
addressee from the address book: ``name``, ``title``, ``lines``, ``missing``) and
``addressee`` (its block, drawn), ``permit`` (the current permit: ``number``, ``effective``,
``expires``, ``term_end``, ``notice_by``; or none), ``subject`` (the subject line) and
``about`` (what the person typed, where the kind takes it). Besides, per kind:

============================  ==========================================  =================================
kind                          what it needs, and adds                     the same subject (issued once)
============================  ==========================================  =================================
notice                        an issued notice of violation: ``notice``,  the notice
                              ``evidence`` (the program's drawing)
order                         an issued order (any step after a notice    the order
                              of violation): the same
sampling-reminder             the month: ``samples`` (the sampling        the month
                              events planned for it), ``month``
permit-renewal-reminder       the current permit (``permit``)             the permit's term (number, end)
warning-letter, the utility's ``about``: what the letter is about, typed  the same words (case and spaces
own kinds                                                                 aside)
============================  ==========================================  =================================
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

from foundation.errors import InputError

#: Kinds made from a notice: kind -> which notices (the guide's action of the notice).
FROM_NOTICE = {"notice": "notice of violation", "order": "order"}
#: The months' names, for dates in words.
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@dataclass(frozen=True)
class Subject:
    """What a letter is about: ``key`` (unique per kind and user), ``words`` (its subject
    line) and what the kind adds to the template's context (``extra``)."""

    key: str
    words: str
    extra: dict


def in_words(d: date) -> str:
    """``December 7, 2026``."""
    return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"


def _notice(conn, kind: str, site_id: int, number: str | None) -> Subject:
    from enforcement.documents.notice_page import evidence_html, response_due
    from enforcement.letters.rendering import as_markup

    if not number:
        raise InputError(f"a letter of kind {kind} is made from a notice: give its number (such as NOV-2026-001)")
    row = conn.execute("SELECT number, site_id, action, state, issued_on, document FROM notices WHERE number = %s",
                       (number.strip(),)).fetchone()
    if row is None:
        raise InputError(f"no notice {number.strip()!r}")
    num, sid, action, state, issued_on, doc = row
    if sid != site_id:
        raise InputError(f"notice {num} is not addressed to this industrial user")
    if state == "drafted":
        raise InputError(f"notice {num} is a draft: a letter is made from a notice once it is issued")
    is_nov = action == "notice-of-violation"
    if (kind == "notice") != is_nov:
        raise InputError(f"{num} is {'a notice of violation' if is_nov else 'an order'}: "
                         f"make a letter of kind {'notice' if is_nov else 'order'} from it")
    due = response_due(doc, issued_on)
    days = doc["days_of_violation"]
    n = {"number": num, "title": doc["title"], "issued_on": in_words(issued_on) if issued_on else "",
         "action": doc["action"]["words"], "finding": doc["finding"]["summary"], "finding_words": doc["finding_words"],
         "citation": doc["requirement"]["citation"], "requirement": doc["requirement"]["words"],
         "days": days["days"], "dates": ", ".join(days.get("dates") or ()),
         "corrective_action": doc["corrective_action"], "report_demanded": doc["report_demanded"],
         "respond_within_days": doc["respond_within_days"], "respond_by": in_words(due) if due else ""}
    return Subject(num, f"{doc['title']} {num}", {"notice": n, "evidence": as_markup(evidence_html(doc))})


def _sampling(conn, site_key: str, month: str | None, today: date, tz: str) -> Subject:
    from enforcement.periods import add_months
    from enforcement.sampling_plan import month_of
    from foundation import moments
    from lab.sampling import events

    first = month_of(month) if month else today.replace(day=1)
    zone = ZoneInfo(tz)
    evs = [ev for ev in events.listing(conn, moments.midnight(first, zone),
                                       moments.midnight(add_months(first, 1), zone), site_key)
           if ev.state == "planned"]
    label = f"{MONTHS[first.month - 1]} {first.year}"
    if not evs:
        raise InputError(f"no samples planned for this industrial user in {label}: plan them first "
                         "(the Sampling page, or sewerwatch sampling plan)")
    samples = [{"sample_id": ev.sample_key, "day": in_words(ev.planned_at.astimezone(zone).date()),
                "time": ev.planned_at.astimezone(zone).strftime("%H:%M"), "point": ev.point,
                "type": ev.sample_type, "by": "the industrial user" if ev.sampler == "user" else "the utility",
                "parameters": ", ".join(events.analyte_name(p) for p in ev.parameters),
                "laboratory": ev.laboratory or ""} for ev in evs]
    return Subject(first.strftime("%Y-%m"), f"Samples due in {label}", {"samples": samples, "month": label})


def _renewal(permit: dict | None) -> Subject:
    if permit is None:
        raise InputError("this industrial user has no permit on file: a permit renewal reminder needs one")
    return Subject(f"{permit['number']}:{permit['term_end_iso']}",
                   f"Renewal of permit {permit['number']}, term ending {permit['term_end']}", {})


def _about(kind: str, about: str | None) -> Subject:
    words = " ".join(str(about or "").split())
    if not words:
        raise InputError(f"a letter of kind {kind} needs what it is about (its subject line)")
    if len(words) > 200:
        raise InputError("what the letter is about: longer than 200 characters")
    return Subject(words.lower(), words, {"about": words})


def permit_of(conn, site_key: str, today: date) -> dict | None:
    """The user's current permit as a letter reads it (None where none is on file)."""
    from limits.permit_store import current_permits
    from limits.permits import renewal

    p = current_permits(conn).get(site_key)
    if p is None:
        return None
    r = renewal(p, today)
    return {"number": p.number, "effective": in_words(p.effective), "expires": in_words(p.expires),
            "term_end": in_words(r.term_end), "term_end_iso": r.term_end.isoformat(),
            "notice_by": in_words(r.notice_by) if r.notice_by else "", "days_left": r.days_left}


def subject(conn, kind: str, *, site_id: int, site_key: str, today: date, tz: str, permit: dict | None,
            notice: str | None = None, month: str | None = None, about: str | None = None) -> Subject:
    """What a letter of ``kind`` is about, and what it adds (see the module's table).

    Raises
    ------
    InputError
        What the kind needs is not given or not found, in words.
    """
    if kind in FROM_NOTICE:
        return _notice(conn, kind, site_id, notice)
    if kind == "sampling-reminder":
        return _sampling(conn, site_key, month, today, tz)
    if kind == "permit-renewal-reminder":
        return _renewal(permit)
    return _about(kind, about)


def sample_about(kind: str) -> str:
    """What a preview says a letter is about where the person typed nothing."""
    return f"(what this {kind.replace('-', ' ')} is about)"


def needs(kind: str) -> str:
    """What the kind needs besides the industrial user, in words (the office's form, --help)."""
    if kind in FROM_NOTICE:
        return f"the number of an issued {FROM_NOTICE[kind]}"
    if kind == "sampling-reminder":
        return "the month of the samples planned"
    if kind == "permit-renewal-reminder":
        return "nothing more: the user's current permit"
    return "what the letter is about"

