"""Sending a reviewed batch: each e-mail item as one message with its PDF attached, each
sending logged (when, to whom, the Message-ID set on it, the outcome).

The mail server is the office's (``[web] mail_url``, the apprise ``mailto://`` or
``mailtos://`` URL invitations and receipts use), read by apprise's own parser
(``NotifyEmail.parse_url``: host, port, TLS mode, login, sender). The messages are built by
the standard library's :mod:`email` and handed over with :mod:`smtplib`, not through
``Apprise.notify``: the pinned apprise (2.x) writes a Message-ID of its own after any custom
header (a ``+Message-ID=`` argument would give the message two), and it reports a refused
recipient only as a failed notification. Here the Message-ID is ours (what a delivery-status
notification names later), and a recipient the server refuses at once (a 5xx answer) is a
bounce, a 4xx answer or a broken connection a failure to send again in another batch.

A batch is sent once: the first call marks it (``sent_at``) under its row's lock, and a
second is refused naming when it was sent (:class:`~ereport.mailing.batches.AlreadySent`).
Each sending is committed as it happens, so a batch stopped halfway keeps what went.
Sending is synchronous; ``progress`` is called after each message (the command line prints
it; the office's page waits for a batch of tens of messages to a local server).
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
import secrets
from email.utils import formataddr, formatdate
from typing import Callable

from ereport.mail import MailError, check_address, clean_header_text
from ereport.mailing.batches import AlreadySent, _audit, batch, local, sent_before
from ereport.mailing.kinds import KINDS, kind
from foundation.actor import Actor
from foundation.errors import InputError

#: Seconds to wait for the mail server [s].
TIMEOUT_S = 30


def server(url: str | None) -> dict:
    """The mail server of ``url`` (host, port, mode, user, password, sender) as apprise reads it.

    Raises
    ------
    MailError
        No mail server set up, or not a ``mailto://`` address with a sender.
    """
    from apprise.plugins.email import NotifyEmail

    if not url:
        raise MailError("no mail server is set up for the office (the mail address in the configuration)")
    parsed = NotifyEmail.parse_url(url)
    if not parsed:
        raise MailError("the mail server in the configuration is not one the office can use (a mailto:// address)")
    plugin = NotifyEmail(**parsed)
    sender = plugin.from_addr[1] if isinstance(plugin.from_addr, tuple) else plugin.from_addr
    return {"host": plugin.smtp_host, "port": int(plugin.port), "mode": str(plugin.secure_mode),
            "user": plugin.user, "password": plugin.password, "sender": sender,
            "verify": bool(plugin.verify_certificate)}


def _connect(s: dict) -> smtplib.SMTP:
    context = ssl.create_default_context()
    if not s["verify"]:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if s["mode"] == "ssl":
        smtp = smtplib.SMTP_SSL(s["host"], s["port"], timeout=TIMEOUT_S, context=context)
    else:
        smtp = smtplib.SMTP(s["host"], s["port"], timeout=TIMEOUT_S)
        if s["mode"] == "starttls":
            smtp.starttls(context=context)
    if s["user"] and s["password"]:
        smtp.login(s["user"], s["password"])
    return smtp


def message_id(batch_id: int, item: dict, sender: str) -> str:
    """A Message-ID of ours (RFC 5322 §3.6.4), unique by its random part, short enough never
    to be folded: ``<b7.bill.12.5f0c2a9e1d44@palmyra.example>``."""
    domain = sender.rpartition("@")[2] or "localhost"
    return f"<b{batch_id}.{item['kind']}.{item['document_id']}.{secrets.token_hex(6)}@{domain}>"


def message(item: dict, pdf: bytes, *, sender: str, utility: str, message_id: str) -> EmailMessage:
    """The message of one batch item: a short letter in plain text, the PDF attached."""
    k = KINDS.get(item["kind"])
    what = f"{item['title']} {item['number']}" if k is None or k.numbered else item["title"]
    m = EmailMessage()
    m["Subject"] = clean_header_text(f"{utility}: {what}")
    m["From"] = formataddr((clean_header_text(utility, 80), sender))
    m["To"] = formataddr((clean_header_text(item["person"] or item["recipient"], 80), item["email"]))
    m["Date"] = formatdate(localtime=True)
    m["Message-ID"] = message_id
    m.set_content(
        f"Dear {item['person'] or item['recipient']},\n\n"
        f"Attached is a document of {utility} to {item['recipient']}: {what}.\n"
        + (f"\nIt is sent again: {item['resend_reason']}\n" if item["resend_reason"] else "")
        + f"\nPlease read it and keep it with your records. Reply to this message with any question.\n\n{utility}\n")
    name = "".join(c if c.isalnum() or c in "-._" else "-" for c in f"{item['kind']}-{item['number']}") + ".pdf"
    m.add_attachment(pdf, maintype="application", subtype="pdf", filename=name)
    return m


def _log(conn, item: dict, to: str, mid: str, outcome: str, detail: str | None) -> None:
    with conn.transaction():
        conn.execute("INSERT INTO mail_sendings (item_id, kind, document_id, to_address, message_id, outcome, detail) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                     (item["id"], item["kind"], item["document_id"], to, mid, outcome, detail))


def _claim(conn, batch_id: int, actor: Actor, tz: str) -> dict:
    with conn.transaction():
        row = conn.execute("SELECT sent_at, sent_by FROM mail_batches WHERE id = %s FOR UPDATE", (batch_id,)).fetchone()
        if row is None:
            raise InputError(f"no mail batch {batch_id} (sewerwatch mail batch list shows them)")
        if row[0] is not None:
            raise AlreadySent(f"batch {batch_id} was sent on {local(row[0], tz)} by {row[1]}: a batch is sent once "
                              f"(make a new batch for what is still to send)")
        conn.execute("UPDATE mail_batches SET sent_at = now(), sent_by = %s WHERE id = %s", (actor.audit_name, batch_id))
        _audit(conn, actor, "mail.send", f"mail-batch:{batch_id}", {})
    return batch(conn, batch_id)


def _outcome(exc: Exception) -> tuple[str, str]:
    """(outcome, the server's answer) of a failed hand-over."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        code, text = next(iter(exc.recipients.values()))
    elif isinstance(exc, smtplib.SMTPResponseException):
        code, text = exc.smtp_code, exc.smtp_error
    else:
        return "failed", f"the mail server could not be reached: {exc}"
    words = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return ("bounced" if 500 <= int(code) < 600 else "failed"), f"{code} {words}".strip()


def send(conn, batch_id: int, *, mail_url: str | None, cfg, actor: Actor,
         progress: Callable[[int, int, dict, str], None] | None = None) -> dict:
    """Send batch ``batch_id`` (once) and return it with its sendings.

    Parameters
    ----------
    conn : psycopg.Connection
        In autocommit mode: each sending is committed when it is made.
    mail_url : str or None
        ``[web] mail_url``.
    cfg : foundation.config.Config
        The utility's name, time zone and letterhead (the bills' PDF).
    progress : callable, optional
        ``progress(done, total, item, outcome)`` after each e-mail item.

    Raises
    ------
    AlreadySent
        The batch was sent before (naming when and by whom).
    MailError
        No mail server set up (nothing is marked sent).
    """
    s = server(mail_url)                      # before the batch is marked: a missing server sends nothing
    from foundation.moments import village_zone

    tz = str(village_zone(cfg))
    b = _claim(conn, batch_id, actor, tz)
    todo = b["by_channel"]["email"]
    smtp = None
    try:
        for n, item in enumerate(todo, 1):
            before = None if item["resend_reason"] else sent_before(conn, item["kind"], item["document_id"],
                                                                    exclude_batch=batch_id)
            if before:
                why = f"sent to {before['to']} on {local(before['sent_at'], tz)} (batch {before['batch_id']})"
                conn.execute("UPDATE mail_batch_items SET skipped = %s WHERE id = %s", (why, item["id"]))
                if progress:
                    progress(n, len(todo), item, "skipped: " + why)
                continue
            mid = message_id(batch_id, item, s["sender"])
            try:
                to = check_address(item["email"])
                msg = message(item, kind(item["kind"]).pdf(conn, item["document_id"], cfg), sender=s["sender"],
                              utility=cfg.name, message_id=mid)
                if smtp is None:
                    smtp = _connect(s)
                smtp.send_message(msg, from_addr=s["sender"], to_addrs=[to])
                outcome, detail = "sent", None
            except (smtplib.SMTPException, OSError) as exc:
                outcome, detail = _outcome(exc)
                if isinstance(exc, (smtplib.SMTPServerDisconnected, OSError)):
                    smtp = None
            except InputError as exc:
                outcome, detail = "bounced", str(exc)
            _log(conn, item, item["email"], mid, outcome, detail)
            if progress:
                progress(n, len(todo), item, outcome + (f": {detail}" if detail else ""))
    finally:
        if smtp is not None:
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                pass
        conn.execute("UPDATE mail_batches SET finished_at = now() WHERE id = %s", (batch_id,))
    return batch(conn, batch_id)
