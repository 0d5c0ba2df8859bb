"""Batches of issued documents to mail: made from a choice, reviewed, then sent once.

A batch is made (:func:`make`) from a choice: every issued document not yet sent, the bills
of one bill run, or documents named one by one; a document already sent successfully is
left out of the first two and refused when named, unless named as a re-send with a reason.
Each document is addressed when the batch is made (:func:`address`): the contact of the
document's role from the address book (:mod:`identity.contacts`) goes by e-mail, or on paper
when the contact has no e-mail address or prefers paper (:func:`set_paper`), or nowhere when
no contact or address is on file. The review (:func:`batch`) lists each of them; sending is
:func:`ereport.mailing.send.send`.

Everything is in the tables of migration ``0320_mailing.sql``; making a batch and a contact's
preference are in the audit log.
"""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

from ereport.mailing.kinds import ADDRESS_OF_ROLE, KINDS, kind, parse_ref
from foundation.actor import Actor
from foundation.errors import InputError
from identity import contacts

#: channel -> its words.
CHANNELS = {"email": "e-mail", "paper": "paper", "none": "no address on file"}
#: outcome -> its words.
OUTCOMES = {"sent": "sent", "bounced": "bounced", "failed": "not sent"}


class AlreadySent(InputError):
    """The batch was sent before, or a document named was sent before (the text says when)."""


def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def local(t: datetime | None, tz: str) -> str:
    """``t`` as the village's clock reads it (``2026-06-01 09:15``)."""
    return t.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M") if t else ""


# -- the address book's preference ---------------------------------------------------------

def set_paper(conn, contact_id: int, paper: bool, *, actor: Actor) -> None:
    """Record that contact ``contact_id`` wants documents on paper (``paper``) or by e-mail."""
    contacts.contact(conn, contact_id)          # an unknown contact: InputError naming it
    conn.execute("INSERT INTO contact_mail_preferences (contact_id, paper, recorded_by) VALUES (%s, %s, %s)",
                 (contact_id, paper, actor.audit_name))
    _audit(conn, actor, "contact.mail-preference", f"contact:{contact_id}", {"paper": paper})


def prefers_paper(conn, contact_id: int) -> bool:
    row = conn.execute("SELECT paper FROM contact_mail_preferences WHERE contact_id = %s "
                       "ORDER BY recorded_at DESC LIMIT 1", (contact_id,)).fetchone()
    return bool(row and row[0])


# -- addressing ----------------------------------------------------------------------------

def address(conn, d: dict) -> dict:
    """Whom document ``d`` (a kind's :attr:`~ereport.mailing.kinds.Kind.describe`) goes to and
    how: ``recipient``, ``contact_id``, ``person``, ``email``, ``lines``, ``channel`` (email,
    paper, none) and ``why`` (in words, when not e-mail)."""
    if d.get("to"):
        to = d["to"]
        out = {"recipient": to["recipient"], "contact_id": None, "person": to.get("person"),
               "email": to.get("email"), "lines": list(to.get("lines") or ())}
        missing = []
    else:
        role = d["contact_role"]
        _, name = contacts.site_of(conn, d["site"])
        a = contacts.addressee(conn, d["site"], role, ADDRESS_OF_ROLE.get(role, "mailing"))
        people = sorted((c for c in contacts.contacts_of(conn, d["site"]) if role in c["roles"]), key=lambda c: c["id"])
        out = {"recipient": name, "contact_id": people[0]["id"] if people else None, "person": a.name,
               "email": a.email, "lines": list(a.lines)}
        missing = list(a.missing)
    paper = out["contact_id"] is not None and prefers_paper(conn, out["contact_id"])
    if out["email"] and not paper:
        out.update(channel="email", why=None)
    elif out["lines"]:
        out.update(channel="paper", why="prefers paper" if paper else "no e-mail address on file")
    else:
        out.update(channel="none", why="; ".join(missing) or "no e-mail or postal address on file")
    return out


# -- what was sent -------------------------------------------------------------------------

_SCOLS = ("id", "item_id", "kind", "document_id", "to_address", "message_id", "sent_at", "outcome", "detail",
          "bounced_at", "bounce_reason", "batch_id")


def sendings_of(conn, kind_name: str, document_id: int) -> list[dict]:
    """Every sending of one document, oldest first (``outcome_words``, ``bounced_at``)."""
    rows = conn.execute(f"SELECT {', '.join('s.' + c for c in _SCOLS[:-1])}, i.batch_id FROM mail_sendings s "
                        "JOIN mail_batch_items i ON i.id = s.item_id WHERE s.kind = %s AND s.document_id = %s "
                        "ORDER BY s.sent_at, s.id", (kind_name, int(document_id))).fetchall()
    return [{**dict(zip(_SCOLS, r)), "outcome_words": OUTCOMES[r[7]]} for r in rows]


def sent_before(conn, kind_name: str, document_id: int, *, exclude_batch: int | None = None) -> dict | None:
    """The first successful sending of a document (e-mail not bounced, or on the paper list
    of a batch sent), or None."""
    row = conn.execute(
        "SELECT s.sent_at, s.to_address, i.batch_id FROM mail_sendings s JOIN mail_batch_items i ON i.id = s.item_id "
        "WHERE s.kind = %s AND s.document_id = %s AND s.outcome = 'sent' AND s.bounced_at IS NULL "
        "AND i.batch_id IS DISTINCT FROM %s "
        "UNION ALL SELECT b.sent_at, 'paper', b.id FROM mail_batch_items i JOIN mail_batches b ON b.id = i.batch_id "
        "WHERE i.kind = %s AND i.document_id = %s AND i.channel = 'paper' AND b.sent_at IS NOT NULL "
        "AND b.id IS DISTINCT FROM %s ORDER BY 1 LIMIT 1",
        (kind_name, int(document_id), exclude_batch, kind_name, int(document_id), exclude_batch)).fetchone()
    return dict(zip(("sent_at", "to", "batch_id"), row)) if row else None


# -- making a batch ------------------------------------------------------------------------

def _bill_run_ids(conn, run_id: int) -> list[int]:
    if conn.execute("SELECT 1 FROM bill_runs WHERE id = %s", (run_id,)).fetchone() is None:
        raise InputError(f"no bill run {run_id} (sewerwatch bills runs shows them)")
    ids = [i for (i,) in conn.execute("SELECT id FROM bills WHERE run_id = %s AND superseded_by IS NULL ORDER BY id",
                                      (run_id,)).fetchall()]
    if not ids:
        raise InputError(f"bill run {run_id} has no bills issued")
    return ids


def _resolve(conn, name: str, ref: str) -> int:
    if name == "notice":
        from enforcement import notices
        return notices.notice(conn, ref)["id"]
    if name == "grease-notice" and not ref.isdigit():
        from enforcement import grease_notices
        return grease_notices.pdf(conn, ref)[0]["id"]
    if not ref.isdigit():
        raise InputError(f"{name} {ref!r}: expected its number, such as {name}:12")
    return int(ref)


def choose(conn, *, unsent: bool = False, bill_run: int | None = None, documents=(), resend=(),
           reason: str | None = None) -> tuple[str, list[tuple[str, int, str | None]]]:
    """The choice in words and its documents ``(kind, id, resend reason)``.

    Raises
    ------
    InputError
        Nothing chosen; a document unknown or not issued; a document named that was sent
        before (:class:`AlreadySent`, naming when and to whom) unless it is a re-send; a
        re-send without a reason.
    """
    picked: list[tuple[str, int, str | None]] = []
    words = []
    if unsent:
        words.append("every issued document not yet sent")
        for name, k in KINDS.items():
            picked += [(name, i, None) for i in k.issued(conn) if sent_before(conn, name, i) is None]
    if bill_run is not None:
        words.append(f"the bills of bill run {bill_run} not yet sent")
        picked += [("bill", i, None) for i in _bill_run_ids(conn, bill_run) if sent_before(conn, "bill", i) is None]
    for text in documents:
        name, ref = parse_ref(text)
        i = _resolve(conn, name, ref)
        kind(name).describe(conn, i)            # unknown or not issued: InputError naming it
        before = sent_before(conn, name, i)
        if before:
            raise AlreadySent(f"{text} was sent to {before['to']} on {before['sent_at']:%Y-%m-%d} (batch "
                              f"{before['batch_id']}): name it as a re-send with a reason to send it again")
        picked.append((name, i, None))
    if resend:
        why = " ".join(str(reason or "").split())
        if not why:
            raise InputError("re-send: a reason is needed (why the document goes again)")
        for text in resend:
            name, ref = parse_ref(text)
            i = _resolve(conn, name, ref)
            kind(name).describe(conn, i)
            picked.append((name, i, why[:300]))
    if documents or resend:
        words.append("documents chosen one by one")
    if not words:
        raise InputError("a batch needs a choice: every document not yet sent, a bill run, or documents by number")
    seen, out = set(), []
    for p in picked:
        if (p[0], p[1]) not in seen:
            seen.add((p[0], p[1]))
            out.append(p)
    return "; ".join(words), out


def make(conn, *, actor: Actor, unsent: bool = False, bill_run: int | None = None, documents=(), resend=(),
         reason: str | None = None) -> dict:
    """Make a batch of the chosen documents (:func:`choose`), each addressed (:func:`address`);
    the batch to review (:func:`batch`).

    Raises
    ------
    InputError
        As :func:`choose`; or nothing left to mail.
    """
    with conn.transaction():
        words, picked = choose(conn, unsent=unsent, bill_run=bill_run, documents=documents, resend=resend,
                               reason=reason)
        if not picked:
            raise InputError(f"nothing to mail: {words} is empty (every one was sent already)")
        bid = conn.execute("INSERT INTO mail_batches (choice, made_by) VALUES (%s, %s) RETURNING id",
                           (words, actor.audit_name)).fetchone()[0]
        for name, i, why in picked:
            d = kind(name).describe(conn, i)
            a = address(conn, d)
            sid = conn.execute("SELECT id FROM sites WHERE key = %s", (d["site"],)).fetchone() if d["site"] else None
            conn.execute(
                "INSERT INTO mail_batch_items (batch_id, kind, document_id, number, title, site_id, recipient, "
                "contact_id, person, email, lines, channel, why, resend_reason) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (bid, name, i, d["number"], d["title"], sid[0] if sid else None, a["recipient"], a["contact_id"],
                 a["person"], a["email"], json.dumps(a["lines"]), a["channel"], a["why"], why))
        _audit(conn, actor, "mail.batch", f"mail-batch:{bid}", {"choice": words, "documents": len(picked)})
    return batch(conn, bid)


# -- reading -------------------------------------------------------------------------------

_BCOLS = ("id", "choice", "made_at", "made_by", "sent_at", "sent_by", "finished_at")
_ICOLS = ("id", "batch_id", "kind", "document_id", "number", "title", "site_id", "recipient", "contact_id", "person",
          "email", "lines", "channel", "why", "resend_reason", "skipped")


def batch(conn, batch_id: int) -> dict:
    """Batch ``batch_id`` for its review: its items (each with ``kind_words``, ``page``,
    ``sendings``), ``by_channel`` (channel -> its items) and ``counts``."""
    row = conn.execute(f"SELECT {', '.join(_BCOLS)} FROM mail_batches WHERE id = %s", (batch_id,)).fetchone()
    if row is None:
        raise InputError(f"no mail batch {batch_id} (sewerwatch mail batch list shows them)")
    b = dict(zip(_BCOLS, row))
    items = [dict(zip(_ICOLS, r)) for r in conn.execute(
        f"SELECT {', '.join(_ICOLS)} FROM mail_batch_items WHERE batch_id = %s ORDER BY recipient, kind, number, id",
        (batch_id,)).fetchall()]
    for it in items:
        k = KINDS.get(it["kind"])
        it["kind_words"] = k.words if k else it["kind"]
        it["page"] = k.page.format(id=it["document_id"]) if k else None
        it["channel_words"] = CHANNELS[it["channel"]]
        it["sendings"] = [dict(zip(_SCOLS, r)) | {"outcome_words": OUTCOMES[r[7]]} for r in conn.execute(
            f"SELECT {', '.join(_SCOLS[:-1])}, %s FROM mail_sendings WHERE item_id = %s ORDER BY id",
            (batch_id, it["id"])).fetchall()]
    b["items"] = items
    b["by_channel"] = {c: [it for it in items if it["channel"] == c] for c in CHANNELS}
    b["counts"] = {c: len(v) for c, v in b["by_channel"].items()}
    b["state"] = "sent" if b["finished_at"] else "sending" if b["sent_at"] else "to review"
    return b


def list_batches(conn, limit: int = 100) -> list[dict]:
    """The batches, newest first, with how many documents by channel and sendings by outcome."""
    rows = conn.execute(
        f"SELECT {', '.join('b.' + c for c in _BCOLS)}, "
        "(SELECT count(*) FROM mail_batch_items i WHERE i.batch_id = b.id), "
        "(SELECT count(*) FROM mail_batch_items i WHERE i.batch_id = b.id AND i.channel = 'paper'), "
        "(SELECT count(*) FROM mail_sendings s JOIN mail_batch_items i ON i.id = s.item_id "
        " WHERE i.batch_id = b.id AND (s.outcome <> 'sent' OR s.bounced_at IS NOT NULL)) "
        "FROM mail_batches b ORDER BY b.id DESC LIMIT %s", (limit,)).fetchall()
    out = []
    for r in rows:
        b = dict(zip(_BCOLS + ("documents", "paper", "trouble"), r))
        b["state"] = "sent" if b["finished_at"] else "sending" if b["sent_at"] else "to review"
        out.append(b)
    return out
