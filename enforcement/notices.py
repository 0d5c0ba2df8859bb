"""Notices of violation and the orders after them: drafted from a finding, issued, answered,
closed or escalated, every step in the database with its audit trail.

Drafting (:func:`draft`) gathers everything the notice says into one JSON document stored
with it (``notices.document``): the user and its permit, the finding, the ordinance's words
and citation, the evidence (the episode's readings for a chart with the limit drawn, or the
lab results with the laboratory and sample ids, or the report or schedule data), the days
of violation, the forfeiture range the ordinance sets for them, the action, corrective
action, report demanded and days to respond from the enforcement response guide
(:mod:`enforcement.guide`), and the letterhead. The HTML and PDF are drawn from that
document alone (:mod:`enforcement.documents.notice_page`): the same document and issue date
give the same bytes.

Lifecycle (``notices.state``; each change a row of ``notice_events`` and ``audit_log``)::

    drafted ──issue──▶ issued ──response──▶ response-received ──close──▶ closed
                          │  └────────────────close────────────────────▶ closed
                          └──escalate (unanswered by the deadline, or answered inadequately)──▶ escalated
                                 └─▶ a new notice, drafted: the guide's next action

A notice's recurrence is 1 + the notices issued to the same user for the same kind of finding
in the guide's window before it (escalations do not count: they continue a notice).

Before it is issued, the free-text parts the guide's action allows (its ``editable`` list:
the corrective action, the report demanded, remarks) may be edited (:func:`edit`); each edit
names the revision it was made from, so two people editing one draft get
:class:`foundation.errors.Conflict` instead of a silent overwrite. Issuing may name the
revision the issuer read (the office's form always does, ``notice issue --revision N`` on
the command line): an edit saved meanwhile refuses the issue the same way, nothing issued,
so a notice is issued only as its issuer saw it (:func:`changes_since` says what changed).

Who acts: every step takes ``actor`` (:class:`foundation.actor.Actor`: the signed-in account
of the office, the operating-system user of the command line); the audit trail names it and
the face it came through. ``by`` (a name, the command line's ``--by``) stays for scripts.
Each step locks the notice's row, so a second click on "issue" waits for the first and is
then refused: one notice is issued once.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo


from foundation.actor import Actor
from foundation.errors import Conflict, InputError
from identity.contacts import addressee
from enforcement import findings as fnd
from enforcement.forfeitures import forfeitures, is_inhibiting
from enforcement.guide import Guide
# what a notice says, gathered from the records (cite, days_of_violation, alert_violations: read from here too)
from enforcement.notice_evidence import (alert_violations, as_the_municipality, cite, cite_rule,  # noqa: F401
                                         days_of_violation, ordinance_title, subject_of_finding,
                                         subject_of_violations)
from lab.documents.pdf import Letterhead
from limits.permit_store import current_permits
from limits.packs import load_pack

STATES = ("drafted", "issued", "response-received", "closed", "escalated")
#: state -> the states an event may move it to
TRANSITIONS = {"drafted": ("issued",), "issued": ("response-received", "closed", "escalated"),
               "response-received": ("closed", "escalated"), "closed": (), "escalated": ()}
#: what each kind of finding is, in the notice's words
KIND_WORDS = {"violation": "a discharge limit exceeded, as measured at the control manhole",
              "lab-violation": "a discharge limit exceeded, as a laboratory measured it",
              **{k: v[0] for k, v in fnd.KINDS.items()}}


def recurrence(conn, site_id: int, kind: str, on: date, window_days: int) -> int:
    """1 + the notices (not escalations) issued to the user for the same kind of finding in the
    ``window_days`` before ``on``."""
    n = conn.execute("SELECT count(*) FROM notices WHERE site_id = %s AND finding_kind = %s AND escalated_from IS NULL "
                     "AND issued_on IS NOT NULL AND issued_on > %s AND issued_on <= %s",
                     (site_id, kind, on - timedelta(days=window_days), on)).fetchone()[0]
    return int(n) + 1


def _number(conn, prefix: str, year: int) -> str:
    like = f"{prefix}-{year}-%"
    n = conn.execute("SELECT count(*) FROM notices WHERE number LIKE %s", (like,)).fetchone()[0]
    return f"{prefix}-{year}-{n + 1:03d}"


def who(by: str | None = None, actor: Actor | None = None) -> Actor:
    """Who acts: ``actor``, else ``by`` named on the command line, else the operating-system user."""
    if actor is not None:
        return actor
    return Actor(by, "cli") if by else Actor.os_user()


def _event(conn, notice_id: int, event: str, from_state: str | None, to_state: str | None, by: Actor | str,
           note: str | None = None, detail: dict | None = None, at: datetime | None = None) -> None:
    if isinstance(by, str):      # sewerwatch itself (due.raise_alerts), or a name from a script
        by = Actor(by, "system" if by == "sewerwatch" else "cli")
    conn.execute("INSERT INTO notice_events (notice_id, at, actor, event, from_state, to_state, note, detail) "
                 "VALUES (%s, coalesce(%s, now()), %s, %s, %s, %s, %s, %s)",
                 (notice_id, at, by.audit_name, event, from_state, to_state, note,
                  json.dumps({**(detail or {}), "via": by.via}, default=str)))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (by.audit_name, f"notice.{event}", f"notice:{notice_id}",
                  json.dumps({"from": from_state, "to": to_state, "note": note, **(detail or {}), "via": by.via},
                             default=str)))


def draft(conn, guide: Guide, head: Letterhead, drafted_on: date, *, violation_id: int | None = None,
          finding_id: int | None = None, alert_id: int | None = None, by: str | None = None,
          escalated_from: dict | None = None, actor: Actor | None = None) -> dict:
    """Draft a notice from a violation, a violation alert (all the episodes it covers) or a
    finding; store it (state ``drafted``); return it.

    Parameters
    ----------
    guide : Guide
        Picks the action, days to respond, corrective action and report demanded.
    head : Letterhead
        The village, its letterhead and who signs (kept in the document).
    drafted_on : date
        The local day of drafting (recurrence counts the notices issued before it).
    escalated_from : dict, optional
        The notice this one escalates (its row, :func:`notice`): the guide's escalation of
        its action applies instead of a response row.
    actor : Actor, optional
        Who drafts it (the audit trail); ``by`` names one from the command line.
    """
    by = who(by, actor)
    if sum(x is not None for x in (violation_id, finding_id, alert_id)) != 1:
        raise InputError("give one of --violation ID, --alert ID or --finding ID")
    if escalated_from is not None and escalated_from["document"]["finding"].get("alert_id"):
        alert_id, violation_id = escalated_from["document"]["finding"]["alert_id"], None
    if alert_id is not None:
        vs = alert_violations(conn, alert_id)
        subject = subject_of_violations(conn, vs, alert_id)
        s = fnd.site(conn, vs[0]["site"])
    elif violation_id is not None:
        v = fnd.violation(conn, violation_id)
        subject = subject_of_violations(conn, [v])
        s = fnd.site(conn, v["site"])
    else:
        f = fnd.finding(conn, finding_id)
        s = fnd.site(conn, f["site"])
        subject = subject_of_finding(conn, f, s.pack)
    kind = subject["kind"]
    if escalated_from is not None:
        esc = guide.escalation(escalated_from["action"])
        if esc is None:
            raise InputError(f"notice {escalated_from['number']} is a {escalated_from['action']}: the guide "
                             f"({guide.path}) has no step after it")
        action, days, rec = esc.to, esc.respond_within_days, escalated_from["recurrence"]
        prev = escalated_from["document"]
        corrective, report_ = prev["corrective_action"], prev["report_demanded"]
        guide_row = esc.where
    else:
        rec = recurrence(conn, s.id, kind, drafted_on, guide.recurrence_window_days)
        row = guide.response(kind, rec)
        action, days, corrective, report_, guide_row = (row.action, row.respond_within_days, row.corrective_action,
                                                        row.report, row.where)
    pack = load_pack(s.pack)
    said = as_the_municipality(pack)
    permit = current_permits(conn).get(s.key)
    inhibiting = is_inhibiting(kind, subject["rule"])
    forf = forfeitures(s.pack, subject["days"]["days"], inhibiting=inhibiting, cite=cite_rule)
    number = _number(conn, action.prefix, drafted_on.year)
    doc = {
        "number": number, "title": action.title,
        "action": {"id": action.id, "title": action.title, "words": said(action.words)},
        "letterhead": {"village": head.village, "lines": list(head.lines), "signed_by": head.signed_by,
                       "signer_title": head.signer_title},
        "ordinance": ordinance_title(pack),
        "site": {"key": s.key, "name": s.name, "permit": permit.number if permit else None, "sic": s.sic},   # the stored permit, never the config's
        # the authorised representative at the mailing address, from the office's address book
        "addressee": addressee(conn, s.key, "representative", "mailing").as_json(),
        "finding": {k: subject.get(k) for k in ("ref", "kind", "rule", "summary", "occurred", "violation_ids",
                                                 "alert_id")},
        "finding_words": subject.get("finding_words") or KIND_WORDS[kind],
        "requirement": subject["requirement"],
        "evidence": subject["evidence"],
        "days_of_violation": subject["days"],
        "forfeitures": [x.as_json() for x in forf],
        "forfeiture_note": None if forf else (f"The {ordinance_title(pack)} states no amount of forfeiture; "
                                              "its penalty provisions apply."),
        "corrective_action": said(corrective), "report_demanded": said(report_), "remarks": None,
        "respond_within_days": days,
        "recurrence": rec, "guide": {"name": guide.name, "row": guide_row},
        "timezone": pack.timezone,
        "escalated_from": ({"number": escalated_from["number"], "title": escalated_from["document"]["title"],
                            "issued_on": escalated_from["issued_on"].isoformat() if escalated_from["issued_on"] else None,
                            "response_due": escalated_from["response_due"].isoformat()
                            if escalated_from["response_due"] else None}
                           if escalated_from else None),
    }
    with conn.transaction():
        if escalated_from is None:      # one notice per subject: the next is drafted by escalating it
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('notice-draft'), %s)", (s.id,))
            if subject["finding_id"] is not None:
                refuse_if_covered(conn, f"finding {subject['finding_id']}", finding_id=subject["finding_id"])
            else:
                refuse_if_covered(conn, f"alert {alert_id}" if alert_id else f"violation {subject['violation_id']}",
                                  violation_ids=subject["violation_ids"], alert_id=alert_id)
        nid = conn.execute(
            "INSERT INTO notices (number, site_id, violation_id, finding_id, action, finding_kind, recurrence, "
            "respond_within_days, drafted_on, escalated_from, document) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (number, s.id, subject["violation_id"], subject["finding_id"], action.id, kind, rec, days, drafted_on,
             escalated_from["id"] if escalated_from else None, json.dumps(doc))).fetchone()[0]
        _event(conn, nid, "drafted", None, "drafted", by,
               detail={"number": number, "finding": subject["ref"], "action": action.id, "recurrence": rec})
    return notice(conn, nid)


NOTICE_COLS = ("id", "number", "site", "site_name", "violation_id", "finding_id", "action", "finding_kind",
               "recurrence", "state", "respond_within_days", "drafted_on", "issued_on", "response_due",
               "response_received_on", "closed_on", "escalated_from", "escalated_to", "document", "pdf_sha256",
               "revision", "penalty_dollars", "penalty_collected_on", "site_id")


def _notice_rows(conn, where: str, params=()) -> list[dict]:
    rows = conn.execute(
        "SELECT n.id, n.number, s.key, s.name, n.violation_id, n.finding_id, n.action, n.finding_kind, n.recurrence, "
        "n.state, n.respond_within_days, n.drafted_on, n.issued_on, n.response_due, n.response_received_on, "
        "n.closed_on, n.escalated_from, n.escalated_to, n.document, n.pdf_sha256, n.revision, "
        "n.penalty_dollars::float8, n.penalty_collected_on, n.site_id "
        f"FROM notices n JOIN sites s ON s.id = n.site_id WHERE {where} ORDER BY n.id", params).fetchall()
    return [dict(zip(NOTICE_COLS, r)) for r in rows]


def notice(conn, ref: int | str) -> dict:
    """A notice by id or number."""
    rows = (_notice_rows(conn, "n.id = %s", (int(ref),)) if str(ref).isdigit()
            else _notice_rows(conn, "n.number = %s", (str(ref),)))
    if not rows:
        raise InputError(f"no notice {ref} (sewerwatch notice list shows them)")
    return rows[0]


def list_notices(conn, site_key: str | None = None, states: tuple[str, ...] | None = None) -> list[dict]:
    return [n for n in _notice_rows(conn, "(%s::text IS NULL OR s.key = %s)", (site_key, site_key))
            if states is None or n["state"] in states]


#: the kinds of finding a notice drafted from a violation (or a violation alert) has
VIOLATION_KINDS = ("violation", "lab-violation")


def covering(conn, *, violation_ids=(), finding_id: int | None = None, alert_id: int | None = None) -> list[dict]:
    """The notices drafted from these violations, this alert or this finding, with those
    their escalations drafted, oldest first (:func:`notice` rows).

    A notice from a violation alert covers every episode the alert covered (its document's
    ``violation_ids``); a notice drafted from a recorded finding (e.g. interference) linked to
    a violation covers that finding, not the violation's own limit.
    """
    ids = [int(i) for i in violation_ids if i is not None]
    where = ("(n.finding_kind = ANY(%(kinds)s) AND (n.violation_id = ANY(%(v)s) OR EXISTS (SELECT 1 FROM "
             "jsonb_array_elements_text(CASE jsonb_typeof(n.document->'finding'->'violation_ids') WHEN 'array' "
             "THEN n.document->'finding'->'violation_ids' ELSE '[]'::jsonb END) x WHERE x::int = ANY(%(v)s)) "
             "OR (jsonb_typeof(n.document->'finding'->'alert_id') = 'number' "
             "AND (n.document->'finding'->>'alert_id')::int = %(a)s))) "
             "OR (%(f)s::int IS NOT NULL AND n.finding_id = %(f)s)")
    return _notice_rows(conn, where, {"kinds": list(VIOLATION_KINDS), "v": ids, "a": alert_id, "f": finding_id})


def standing(n: dict) -> str:
    """Where notice ``n`` stands, in words: ``issued 2026-03-02, response due 2026-04-01``."""
    s = n["state"]
    if s == "drafted":
        return f"drafted {n['drafted_on']}, not issued"
    if s == "issued":
        return f"issued {n['issued_on']}, response due {n['response_due']}"
    if s == "response-received":
        return f"issued {n['issued_on']}, response received {n['response_received_on']}"
    if s == "closed":
        return f"closed {n['closed_on']}"
    return "escalated"


def refuse_if_covered(conn, ref: str, **which) -> None:
    """Raise :class:`foundation.errors.InputError` when a notice covers the subject ``ref``
    (``violation 12``, ``alert 3``, ``finding 5``; ``which`` as :func:`covering`), naming the
    latest notice of its chain: a second notice is drafted only by escalating that one."""
    ns = covering(conn, **which)
    if ns:
        n = ns[-1]
        raise InputError(f"{ref} has a notice already: {n['document']['title'].lower()} {n['number']} "
                         f"({standing(n)}); the next notice for it is drafted only by escalating {n['number']}")


def events(conn, notice_id: int) -> list[dict]:
    rows = conn.execute("SELECT at, actor, event, from_state, to_state, note, detail FROM notice_events "
                        "WHERE notice_id = %s ORDER BY at, id", (notice_id,)).fetchall()
    return [dict(zip(("at", "actor", "event", "from", "to", "note", "detail"), r)) for r in rows]


def _move(n: dict, to: str) -> None:
    if to not in TRANSITIONS[n["state"]]:
        allowed = ", ".join(TRANSITIONS[n["state"]]) or "nothing: it is final"
        raise InputError(f"notice {n['number']} is {n['state']}: it can go to {allowed}, not {to}")


def _issuable(conn, n: dict, expected_revision: int | None) -> None:
    """Refuse to issue notice ``n`` (its row locked) unless it is drafted and, when the
    revision the person read is given, still at that revision."""
    if n["state"] != "drafted":
        raise InputError(f"notice {n['number']} is {n['state']}: only a drafted notice is issued"
                         + (f" (it was issued {n['issued_on']})" if n["issued_on"] else ""))
    if expected_revision is not None:
        _same_revision(conn, n, expected_revision, "issue")


def _same_revision(conn, n: dict, expected: int, doing: str) -> None:
    """Raise :class:`foundation.errors.Conflict` when notice ``n`` (its row locked) is no
    longer at revision ``expected``, naming who saved its current revision and when (the
    edit that made it, else its last event)."""
    if n["revision"] == expected:
        return
    last = conn.execute("SELECT actor, at FROM notice_events WHERE notice_id = %s ORDER BY coalesce(event = 'edited' "
                        "AND detail->>'revision' = %s, false) DESC, at DESC, id DESC LIMIT 1",
                        (n["id"], str(n["revision"]))).fetchone()
    raise Conflict(f"notice {n['number']}", expected, n["revision"], last[0] if last else "someone",
                   last[1] if last else "an unknown time", doing=doing)


def _locked(conn, ref) -> dict:
    """The notice ``ref``, its row locked until the caller's transaction ends (a second
    request acting on it waits, then sees what the first did)."""
    n = notice(conn, ref)
    conn.execute("SELECT 1 FROM notices WHERE id = %s FOR UPDATE", (n["id"],))
    return notice(conn, n["id"])


def issue(conn, ref, issued_on: date, *, by: str | None = None, pdf: bytes | None = None,
          actor: Actor | None = None, expected_revision: int | None = None) -> dict:
    """Issue a drafted notice on ``issued_on``: its response is due ``respond_within_days`` later.

    Parameters
    ----------
    pdf : bytes, optional
        The document as issued (its SHA-256 is kept, so ``notice pdf`` can show the same
        bytes again); :func:`issue_rendered` renders it.
    expected_revision : int, optional
        The revision the issuer read: another one saved meanwhile raises
        :class:`foundation.errors.Conflict` and nothing is issued (an issued notice is the
        text its issuer reviewed). None issues the current revision.

    Returns
    -------
    dict
        The notice, issued; its ``issued`` event names the revision issued.
    """
    by = who(by, actor)
    with conn.transaction():
        n = _locked(conn, ref)
        _issuable(conn, n, expected_revision)
        due = issued_on + timedelta(days=n["respond_within_days"])
        sha = hashlib.sha256(pdf).hexdigest() if pdf else None
        conn.execute("UPDATE notices SET state = 'issued', issued_on = %s, response_due = %s, pdf_sha256 = %s "
                     "WHERE id = %s", (issued_on, due, sha, n["id"]))
        _event(conn, n["id"], "issued", n["state"], "issued", by,
               detail={"issued_on": issued_on.isoformat(), "response_due": due.isoformat(), "pdf_sha256": sha,
                       "revision": n["revision"]})
    return notice(conn, n["id"])


def issue_rendered(conn, ref, issued_on: date, *, by: str | None = None, actor: Actor | None = None,
                   expected_revision: int | None = None) -> tuple[dict, str, bytes]:
    """Issue a drafted notice with its document rendered for the issue date: the notice,
    its HTML and its PDF (what ``sewerwatch notice issue`` writes and the office offers).
    ``expected_revision`` as :func:`issue`: checked once, before the document is rendered,
    under the row's lock, which :func:`issue` takes again in the same transaction."""
    from enforcement.documents.notice_page import render   # WeasyPrint: only when a document is made

    with conn.transaction():
        n = _locked(conn, ref)
        _issuable(conn, n, expected_revision)
        page, pdf = render(n["document"], issued_on)
        return issue(conn, n["id"], issued_on, by=by, pdf=pdf, actor=actor), page, pdf


def respond(conn, ref, received_on: date, *, by: str | None = None, note: str | None = None,
            actor: Actor | None = None) -> dict:
    """Record the user's response to an issued notice."""
    by = who(by, actor)
    with conn.transaction():
        n = _locked(conn, ref)
        _move(n, "response-received")
        if n["issued_on"] is not None and received_on < n["issued_on"]:
            raise InputError(f"received on: {received_on} is before notice {n['number']} was issued "
                             f"({n['issued_on']}): a response comes after the notice")
        today = datetime.now(ZoneInfo(n["document"].get("timezone") or "UTC")).date()
        if received_on > today:
            raise InputError(f"received on: {received_on} is in the future (today is {today} in the village): "
                             "a response is recorded once it is received")
        conn.execute("UPDATE notices SET state = 'response-received', response_received_on = %s WHERE id = %s",
                     (received_on, n["id"]))
        late = n["response_due"] is not None and received_on > n["response_due"]
        _event(conn, n["id"], "response-received", n["state"], "response-received", by, note,
               detail={"received_on": received_on.isoformat(), "late": late})
    return notice(conn, n["id"])


def close(conn, ref, closed_on: date, *, by: str | None = None, note: str | None = None,
          actor: Actor | None = None) -> dict:
    """Close a notice (the violation corrected, the response accepted)."""
    by = who(by, actor)
    with conn.transaction():
        n = _locked(conn, ref)
        _move(n, "closed")
        if n["state"] == "issued" and not note:
            raise InputError(f"notice {n['number']} has no response recorded: closing it needs a note saying why")
        conn.execute("UPDATE notices SET state = 'closed', closed_on = %s WHERE id = %s", (closed_on, n["id"]))
        _event(conn, n["id"], "closed", n["state"], "closed", by, note, detail={"closed_on": closed_on.isoformat()})
    return notice(conn, n["id"])


#: The free-text parts of a notice an action may allow to be edited (the guide's ``editable``).
EDITABLE = {"corrective_action": "Corrective action required", "report_demanded": "Report required",
            "remarks": "Remarks"}
#: Longest text of an edited part [characters].
EDIT_MAX = 4000


def editable(n: dict, guide: Guide) -> tuple[str, ...]:
    """The parts of notice ``n`` its guide lets a person edit: none once it is issued."""
    if n["state"] != "drafted":
        return ()
    action = guide.actions.get(n["action"])
    return tuple(k for k in (action.editable if action else ()) if k in EDITABLE)


def _clean(field: str, text: str | None) -> str | None:
    text = (text or "").replace("\r\n", "\n").strip()
    bad = next((c for c in text if ord(c) < 32 and c not in "\n\t"), None)
    if bad is not None:
        raise InputError(f"{EDITABLE[field]}: contains a control character (code {ord(bad)})")
    if len(text) > EDIT_MAX:
        raise InputError(f"{EDITABLE[field]}: {len(text)} characters, at most {EDIT_MAX}")
    if not text and field != "remarks":
        raise InputError(f"{EDITABLE[field]}: cannot be empty (the guide's words are a starting point: edit them)")
    return text or None


def edit(conn, ref, changes: dict[str, str | None], *, expected_revision: int, guide: Guide,
         by: str | None = None, actor: Actor | None = None) -> dict:
    """Edit the free-text parts of a drafted notice that its guide's action allows.

    Parameters
    ----------
    changes : dict
        part -> its new text (:data:`EDITABLE`); parts not given are kept.
    expected_revision : int
        The revision the edit was made from; another one stored meanwhile raises
        :class:`foundation.errors.Conflict` and nothing is saved.

    Returns
    -------
    dict
        The notice, its ``revision`` one more (unchanged when no text changed).
    """
    by = who(by, actor)
    with conn.transaction():
        n = _locked(conn, ref)
        _same_revision(conn, n, expected_revision, "edit")
        allowed = editable(n, guide)
        if n["state"] != "drafted":
            raise InputError(f"notice {n['number']} is {n['state']}: only a draft is edited (its issued words stand)")
        unknown = [k for k in changes if k not in EDITABLE]
        if unknown:
            raise InputError(f"notice {n['number']}: no editable part {unknown[0]!r} (parts: {', '.join(EDITABLE)})")
        refused = [k for k in changes if k not in allowed]
        if refused:
            raise InputError(f"notice {n['number']}: the guide ({guide.path}) does not allow editing "
                             f"{EDITABLE[refused[0]].lower()} of a {n['document']['title'].lower()}"
                             + (f" (it allows: {', '.join(EDITABLE[k].lower() for k in allowed)})" if allowed else ""))
        doc = dict(n["document"])
        changed = {}
        for k, text in changes.items():
            new = _clean(k, text)
            if new != doc.get(k):
                changed[k] = {"before": doc.get(k), "after": new}
                doc[k] = new
        if not changed:
            return n
        conn.execute("UPDATE notices SET document = %s, revision = revision + 1 WHERE id = %s",
                     (json.dumps(doc), n["id"]))
        _event(conn, n["id"], "edited", "drafted", "drafted", by,
               detail={"revision": n["revision"] + 1, "changes": changed})
    return notice(conn, n["id"])


def changes_since(conn, notice_id: int, revision: int) -> list[dict]:
    """The edits saved after revision ``revision`` of a notice, oldest first, one row per part
    changed: ``revision`` (the one the edit made), ``by``, ``at``, ``part``, ``label``,
    ``before``, ``after`` (what a person who read ``revision`` has not seen)."""
    rows = conn.execute("SELECT actor, at, detail FROM notice_events WHERE notice_id = %s AND event = 'edited' "
                        "AND (detail->>'revision')::int > %s ORDER BY at, id", (notice_id, revision)).fetchall()
    return [{"revision": d["revision"], "by": who_, "at": at, "part": k, "label": EDITABLE.get(k, k),
             "before": c["before"], "after": c["after"]}
            for who_, at, d in rows for k, c in d["changes"].items()]


def record_penalty(conn, ref, dollars: float, collected_on: date, *, by: str | None = None,
                   note: str | None = None, actor: Actor | None = None) -> dict:
    """Record a penalty or fine collected on an issued notice (the annual report and the
    ICIS-NPDES performance summary count them)."""
    by = who(by, actor)
    if isinstance(dollars, bool) or not isinstance(dollars, (int, float)) or not 0 < dollars < 1e9:
        raise InputError(f"penalty: expected dollars above 0, got {dollars!r}")
    with conn.transaction():
        n = _locked(conn, ref)
        if n["issued_on"] is None:
            raise InputError(f"notice {n['number']} is {n['state']}: a penalty is collected on an issued notice")
        conn.execute("UPDATE notices SET penalty_dollars = %s, penalty_collected_on = %s WHERE id = %s",
                     (round(float(dollars), 2), collected_on, n["id"]))
        _event(conn, n["id"], "penalty-collected", n["state"], n["state"], by, note,
               detail={"dollars": round(float(dollars), 2), "collected_on": collected_on.isoformat(),
                       "before": n["penalty_dollars"]})
    return notice(conn, n["id"])


def next_step(n: dict, guide: Guide, today: date) -> dict | None:
    """What the guide says comes next for notice ``n``, with its deadline, in words.

    Returns
    -------
    dict or None
        ``what`` (a sentence), ``deadline`` (a date or None), ``overdue`` (bool), ``action``
        (the guide's next action id or None). None for a closed notice.
    """
    state = n["state"]
    esc = guide.escalation(n["action"])
    nxt = (f"the guide's next step is {esc.to.title.lower()} (respond within {esc.respond_within_days} days of "
           f"its issue)") if esc else "the guide has no step after it: refer it to the village's attorney"
    if state == "drafted":
        return {"what": f"Issue it: the user then has {n['respond_within_days']} days to respond.", "deadline": None,
                "overdue": False, "action": None}
    if state == "issued":
        due = n["response_due"]
        overdue = due is not None and today > due
        head = (f"No response by its deadline ({due}): " if overdue else f"The response is due {due}; if none comes by then, ")
        return {"what": head + nxt + ".", "deadline": due, "overdue": overdue, "action": esc.to.id if esc else None}
    if state == "response-received":
        return {"what": "Review the response: close the notice when the corrective action is verified, or escalate "
                        f"it when the response is inadequate ({nxt}).", "deadline": None, "overdue": False,
                "action": esc.to.id if esc else None}
    if state == "escalated":
        return {"what": "Escalated: the next notice carries it on.", "deadline": None, "overdue": False,
                "action": n["document"].get("title")}
    return None


def unanswered(conn, today: date) -> list[dict]:
    """Issued notices whose response deadline passed before ``today`` without a response."""
    return [n for n in list_notices(conn, states=("issued",))
            if n["response_due"] is not None and today > n["response_due"]]
