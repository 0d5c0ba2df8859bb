"""Escalation only on purpose: what escalating a notice drafts and why.

A violation, a violation alert or a finding answered by a notice is answered once: drafting
a second notice from it is refused by :func:`enforcement.notices.draft` itself
(:func:`enforcement.notices.refuse_if_covered`), naming the notice that exists. Without this a
second draft counted the first notice as a recurrence and the guide's row for a second finding
of the kind picked the next action (an administrative order for the same copper result). The
guide's next step after a notice is drafted only by escalating that notice (:func:`escalate`),
and only when the guide's condition for it holds (:func:`plan`): the notice went unanswered by
its deadline, or its response was recorded and is found inadequate (a note says why). The plan
states the reason and the guide's own words (``reason`` of its ``[[escalations]]`` row) before
anything is drafted: the office shows it on a confirmation page, ``sewerwatch notice escalate``
prints it. A notice is escalated once: a second escalation is refused naming the order it led to.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from foundation.actor import Actor
from foundation.errors import InputError
from enforcement import notice_evidence
from enforcement import notices as nt
from enforcement.guide import Guide
from lab.documents.pdf import Letterhead

def _refuse_twice(conn, n: dict) -> None:
    later = nt.notice(conn, n["escalated_to"]) if n["escalated_to"] else None
    if later is None:
        raise InputError(f"notice {n['number']} is escalated already")
    raise InputError(f"notice {n['number']} was escalated already: {later['document']['title'].lower()} "
                     f"{later['number']} ({nt.standing(later)}) carries it on")


def plan(conn, n: dict, guide: Guide, on: date) -> dict:
    """What escalating notice ``n`` on local day ``on`` drafts, and why; refused (an
    :class:`foundation.errors.InputError`, one line) when the guide's condition does not hold.

    The guide's ladder (``[[escalations]]``, enforcement/guides/epa-erp.toml after EPA's
    Enforcement Response Plan guidance, 1989; 40 CFR 403.8(f)(5)) follows a notice with the
    next action when it went unanswered by its deadline, or was answered inadequately.

    Returns
    -------
    dict
        ``to`` (the guide's :class:`enforcement.guide.Action`), ``respond_within_days``
        [days], ``reason`` (why, from the notice's dates), ``guide_reason`` (the guide's words,
        or None), ``row`` (the guide's row), ``unanswered`` (bool), ``needs_note`` (a response
        was recorded: escalating says why it is inadequate).
    """
    state = n["state"]
    if state == "escalated":
        _refuse_twice(conn, n)
    nt._move(n, "escalated")         # a draft or a closed notice: the lifecycle's own refusal
    esc = guide.escalation(n["action"])
    if esc is None:
        raise InputError(f"notice {n['number']} is a {n['document']['title'].lower()}: the enforcement response guide "
                         "has no step after it (refer it to the village's attorney)")
    if state == "issued":
        due = n["response_due"]
        if due is not None and on <= due:
            raise InputError(f"notice {n['number']}: its response is due {due}; it is escalated once that day has "
                             "passed without a response, or after a response is recorded and found inadequate")
        reason = (f"{n['number']}, issued {n['issued_on']}, had no response recorded by its deadline, {due}."
                  if due is not None else f"{n['number']}, issued {n['issued_on']}, has no response recorded.")
        unanswered = True
    else:
        reason = (f"{n['number']}, issued {n['issued_on']}, was answered on {n['response_received_on']}, "
                  "and the response is found inadequate.")
        unanswered = False
    from enforcement.findings import site
    from limits.packs import load_pack

    said = notice_evidence.as_the_municipality(load_pack(site(conn, n["site"]).pack))
    return {"to": esc.to, "respond_within_days": esc.respond_within_days, "reason": reason,
            "guide_reason": said(esc.reason), "row": esc.where, "guide": guide.name, "unanswered": unanswered,
            "needs_note": not unanswered}


def escalate(conn, ref, on: date, guide: Guide, head: Letterhead, *, by: str | None = None,
             note: str | None = None, actor: Actor | None = None) -> tuple[dict, dict]:
    """Escalate a notice as :func:`plan` allows: mark it ``escalated`` and draft the guide's
    next action (:func:`enforcement.notices.draft`); return both. Under the notice's row
    lock, so two confirmations draft one order and the second is refused naming it."""
    by = nt.who(by, actor)
    with conn.transaction():
        n = nt._locked(conn, ref)
        today = datetime.now(ZoneInfo(n["document"].get("timezone") or "UTC")).date()
        if on > today:        # a day ahead would pass the deadline before it has passed
            raise InputError(f"escalated on: {on} is in the future (today is {today} in the village)")
        p = plan(conn, n, guide, on)      # the lifecycle's move checked there too
        if p["needs_note"] and not (note or "").strip():
            raise InputError(f"notice {n['number']} has a response recorded ({n['response_received_on']}): "
                             "escalating it needs a note saying why the response is inadequate")
        new = nt.draft(conn, guide, head, on, violation_id=n["violation_id"], finding_id=n["finding_id"],
                       escalated_from=n, actor=by)
        conn.execute("UPDATE notices SET state = 'escalated', escalated_to = %s WHERE id = %s", (new["id"], n["id"]))
        nt._event(conn, n["id"], "escalated", n["state"], "escalated", by,
                  note or ("unanswered by its deadline" if p["unanswered"] else None),
                  detail={"to": new["number"], "action": new["action"], "unanswered": p["unanswered"],
                          "reason": p["reason"]})
    return nt.notice(conn, n["id"]), new
