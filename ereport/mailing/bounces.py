"""Bounces reported later: delivery-status notifications (RFC 3464, ``multipart/report;
report-type=delivery-status``) read from a mailbox file or ``.eml`` files the clerk gives
(``sewerwatch mail bounces FILE...``), each matched to its sending by the original message's
Message-ID (in the returned headers, ``text/rfc822-headers``, or the returned message,
``message/rfc822``). A notification whose recipient failed (``Action: failed``) marks the
sending bounced with the status and the server's diagnostic; one that matches no sending,
or is not a delivery-status notification, is listed and kept as a dead letter with the
reason (``source`` ``mail-bounce``). A notification read twice changes nothing the second
time.
"""

from __future__ import annotations

import email
import email.policy
import json
import mailbox
from email.message import EmailMessage
from pathlib import Path

from ereport.mailing.batches import _audit
from ereport.mailing.kinds import KINDS
from foundation.actor import Actor
from foundation.errors import InputError


def messages_of(path: str | Path) -> list[tuple[str, bytes]]:
    """(where, raw bytes) of every message in a file: a mailbox (``From `` lines) or one message.

    Raises
    ------
    InputError
        The file cannot be read.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"mail bounces: cannot read {path}: {exc.strerror}") from None
    if raw.startswith(b"From "):
        box = mailbox.mbox(str(p), create=False)
        try:
            return [(f"{p.name} message {n}", m.as_bytes()) for n, m in enumerate(box, 1)]
        finally:
            box.close()
    return [(p.name, raw)]


def _fields(block: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in block.replace("\r\n", "\n").split("\n"):
        if ":" in line and not line[:1].isspace():
            k, _, v = line.partition(":")
            out.setdefault(k.strip().lower(), v.strip())
    return out


def read_dsn(raw: bytes) -> dict:
    """What a delivery-status notification says: ``message_id`` (the original's), and
    ``recipients`` (each ``recipient``, ``action``, ``status``, ``diagnostic``).

    Raises
    ------
    InputError
        Not a delivery-status notification, or it names no original Message-ID.
    """
    msg: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)
    if msg.get_content_type() != "multipart/report" or msg.get_param("report-type") != "delivery-status":
        raise InputError(f"not a mail server's report of undelivered mail (a {msg.get_content_type()} message, "
                         f"subject {str(msg['subject'] or '')[:60]!r})")
    recipients, mid = [], None
    for part in msg.iter_parts():
        ctype = part.get_content_type()
        if ctype == "message/delivery-status":
            payload = part.get_payload()
            blocks = ([str(p) for p in payload] if isinstance(payload, list) else str(payload).split("\n\n"))
            for block in blocks:
                f = _fields(block)
                if "final-recipient" in f or "original-recipient" in f:
                    rcpt = (f.get("final-recipient") or f.get("original-recipient")).split(";")[-1].strip()
                    recipients.append({"recipient": rcpt, "action": f.get("action", "").lower(),
                                       "status": f.get("status", ""), "diagnostic": f.get("diagnostic-code", "")})
        elif ctype in ("text/rfc822-headers", "message/rfc822"):
            if ctype == "message/rfc822":
                inner = part.get_payload()[0] if isinstance(part.get_payload(), list) else part.get_content()
                mid = mid or inner.get("Message-ID")
            else:
                mid = mid or _fields(part.get_content()).get("message-id")
    if not mid:
        raise InputError("the notification returns no Message-ID of the original message")
    return {"message_id": mid.strip(), "recipients": recipients}


def _dead(conn, where: str, raw: bytes, reason: str) -> None:
    conn.execute("INSERT INTO dead_letters (source, topic, payload, reason, detail) VALUES (%s, %s, %s, %s, %s)",
                 ("mail-bounce", where, raw, reason, json.dumps({"file": where})))


def import_bounces(conn, files, *, actor: Actor) -> dict:
    """Read the notifications of ``files`` and mark the sendings they name bounced.

    Returns
    -------
    dict
        ``bounced`` (the sendings marked: number, to, status, reason), ``again`` (already
        marked), ``delivered`` (a notification that says delivered or delayed), ``unmatched``
        (where, reason: kept as dead letters).
    """
    out = {"bounced": [], "again": [], "delivered": [], "unmatched": []}
    for path in files:
        for where, raw in messages_of(path):
            with conn.transaction():
                try:
                    dsn = read_dsn(raw)
                except InputError as exc:
                    _dead(conn, where, raw, str(exc))
                    out["unmatched"].append({"where": where, "reason": str(exc)})
                    continue
                row = conn.execute(
                    "SELECT s.id, s.to_address, s.bounced_at, i.kind, i.number FROM mail_sendings s "
                    "JOIN mail_batch_items i ON i.id = s.item_id WHERE s.message_id = %s FOR UPDATE",
                    (dsn["message_id"],)).fetchone()
                if row is None:
                    reason = f"no message sent by the office has the Message-ID {dsn['message_id']}"
                    _dead(conn, where, raw, reason)
                    out["unmatched"].append({"where": where, "reason": reason})
                    continue
                sid, to, bounced_at, kind_name, number = row
                failed = [r for r in dsn["recipients"] if r["action"] == "failed"]
                words = KINDS[kind_name].words if kind_name in KINDS else kind_name
                said = {"where": where, "sending": sid, "to": to, "document": f"{words} {number}"}
                if not failed:
                    out["delivered"].append({**said, "action": ", ".join(r["action"] for r in dsn["recipients"])})
                    continue
                if bounced_at is not None:
                    out["again"].append(said)
                    continue
                r = failed[0]
                reason = " ".join(x for x in (r["status"], r["diagnostic"]) if x) or "delivery failed"
                conn.execute("UPDATE mail_sendings SET bounced_at = now(), bounce_reason = %s WHERE id = %s",
                             (reason[:500], sid))
                _audit(conn, actor, "mail.bounce", f"mail-sending:{sid}", {"reason": reason, "file": where})
                out["bounced"].append({**said, "reason": reason})
    return out
