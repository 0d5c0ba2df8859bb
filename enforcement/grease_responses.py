"""A grease notice answered and escalated, as an industrial user's notice is
(:mod:`enforcement.notices`, :mod:`enforcement.escalation`): the establishment's response
recorded (once, not before the notice nor after today), and the guide's next step for the
same finding issued when the notice went unanswered by its deadline, or was answered and the
response is found inadequate (a note says why). The ladder is the grease guide's
(``enforcement/guides/grease-erp.toml``, ``[[responses]]``: warning letter, notice of
violation, notice of forfeiture); after its last step there is none (the village's attorney).
A notice is escalated once: a second escalation is refused naming the notice it led to.

``sewerwatch fog notices respond|escalate`` and the office's establishment page call these
functions (columns of ``fog_notices``, migration ``0330_grease_missing_responses.sql``).
"""

from __future__ import annotations

from datetime import date

from enforcement import grease_notices as gn
from enforcement.grease_guide import GreaseGuide
from foundation.errors import InputError


def _locked(conn, number: str) -> dict:
    row = conn.execute("SELECT id FROM fog_notices WHERE number = %s FOR UPDATE", (str(number).strip(),)).fetchone()
    if row is None:
        raise InputError(f"no grease notice {str(number).strip()!r} (sewerwatch fog notices list shows them)")
    return gn.pdf(conn, row[0])[0]


def standing(n: dict) -> str:
    """Where notice ``n`` stands, in words."""
    if n["escalated_to"]:
        return f"escalated on {n['escalated_on']}"
    if n["response_received_on"]:
        return f"answered on {n['response_received_on']}"
    return f"response due {n['response_due']}"


def respond(conn, number: str, received_on: date, note: str, actor, today: date) -> dict:
    """Record the establishment's response to notice ``number``, received ``received_on``.

    Raises
    ------
    InputError
        No such notice; a response recorded already (naming its day); a day before the notice
        or after ``today``; a notice escalated already.
    """
    from fog import store

    n = _locked(conn, number)
    if n["response_received_on"]:
        raise InputError(f"{n['title'].lower()} {n['number']} was answered on {n['response_received_on']} already "
                         f"(recorded by {n['response_by']}): nothing was saved")
    if n["escalated_to"]:
        raise InputError(f"{n['title'].lower()} {n['number']} was escalated on {n['escalated_on']}: a response "
                         "now answers the notice that followed it")
    if received_on < n["issued_on"]:
        raise InputError(f"received on: {received_on} is before the notice was issued ({n['issued_on']})")
    if received_on > today:
        raise InputError(f"received on: {received_on} is after today ({today}); record a response once it is "
                         "received")
    who = store.actor_name(actor)
    conn.execute("UPDATE fog_notices SET response_received_on = %s, response_note = %s, response_by = %s "
                 "WHERE id = %s", (received_on, (note or "").strip()[:2000], who, n["id"]))
    late = n["response_due"] is not None and received_on > n["response_due"]
    store._audit(conn, actor, "fog.notice.respond", n["number"], {"received_on": received_on, "late": late})
    return {**n, "response_received_on": received_on, "response_note": (note or "").strip(), "response_by": who,
            "late": late}


def next_step(guide: GreaseGuide, n: dict):
    """The guide's step after notice ``n``'s for its kind of finding, or None."""
    for kinds, steps in guide.responses:
        if n["finding_kind"] in kinds and n["step"] in steps:
            i = steps.index(n["step"])
            return guide.steps[steps[i + 1]] if i + 1 < len(steps) else None
    return None


def plan(conn, guide: GreaseGuide, n: dict, on: date, note: str = "") -> dict:
    """What escalating notice ``n`` on ``on`` issues, and why: ``to`` (the guide's step),
    ``reason`` (in words, from the notice's dates). Refused, in one line, when the guide's
    condition does not hold or it was escalated already (naming the notice it led to)."""
    if n["escalated_to"]:
        later = gn.pdf(conn, n["escalated_to"])[0]
        raise InputError(f"{n['title'].lower()} {n['number']} was escalated already: {later['title'].lower()} "
                         f"{later['number']} (issued {later['issued_on']}) carries it on")
    to = next_step(guide, n)
    if to is None:
        raise InputError(f"{n['number']} is a {n['title'].lower()}: the grease guide has no step after it (refer it "
                         "to the village's attorney)")
    if n["response_received_on"]:
        if not (note or "").strip():
            raise InputError(f"{n['number']} was answered on {n['response_received_on']}: escalating it needs a note "
                             "saying why the response is inadequate")
        reason = (f"It was answered on {n['response_received_on']}, and the response is found inadequate: "
                  f"{note.strip().rstrip('.')}.")
    else:
        if n["response_due"] is not None and on <= n["response_due"]:
            raise InputError(f"{n['number']}: its response is due {n['response_due']}; it is escalated once that day "
                             "has passed without a response, or after a response is recorded and found inadequate")
        reason = f"No response was received by its deadline, {n['response_due']}."
    return {"to": to, "reason": reason}


def escalate(conn, number: str, *, on: date, note: str = "", actor, today: date, letterhead, pack: str, rules,
             guide: GreaseGuide) -> tuple[dict, dict]:
    """Escalate notice ``number`` on ``on`` (the village's day, not after ``today``): issue the
    guide's next step for the same finding (:func:`plan`) and mark the notice escalated to it;
    under the notice's row lock, so a second escalation is refused naming the first. Returns
    the notice and the new one (with its ``pdf``)."""
    from fog import store

    if on > today:
        raise InputError(f"escalated on: {on} is after today ({today})")
    n = _locked(conn, number)
    p = plan(conn, guide, n, on, note)
    est = store.establishment(conn, rules, today, n["establishment_id"])
    found = gn.proposals(conn, guide, est)
    prop = next((q for q in found if q["key"] == n["finding_key"]), None)
    if prop is None:
        raise InputError(f"{n['number']}: its finding is no longer among {est['name']}'s (nothing was issued)")
    new = gn.store_notice(conn, est, {**prop, "step": p["to"]}, found, today=on, actor=actor, letterhead=letterhead,
                          pack=pack, rules=rules, guide=guide,
                          escalated_from={**n, "reason": p["reason"]})
    conn.execute("UPDATE fog_notices SET escalated_to = %s, escalated_on = %s, escalation_note = %s WHERE id = %s",
                 (new["id"], on, (note or "").strip()[:2000], n["id"]))
    store._audit(conn, actor, "fog.notice.escalate", n["number"], {"to": new["number"], "reason": p["reason"]})
    return {**n, "escalated_to": new["id"], "escalated_on": on}, new
