"""The mailing tests' village: the round village (tests/web_round.py) with two notices of
violation issued to the plater (the copper and the cyanide results of 2026-02-04 above the
permit's daily maxima, 1.6 > 1.0 and 0.62 > 0.2 mg/l), the quarters 2026Q1 and 2026Q2 billed
(tests/statements_support.py), and the address book:

- the plater's authorised representative Rae Rep has rae@plating.example (the notices go
  there, delivered);
- the plater's billing contact Sam Ortiz has ap@plating.example, which the mail server
  refuses (550): the plater's bill bounces;
- the candy maker's billing contact Cy Counter has no e-mail address, and a billing address:
  the candy maker's bills go on paper, in one envelope.

Also a delivery-status notification (RFC 3464) for a message, as a mail server writes it.
"""

from __future__ import annotations

from datetime import date

import statements_support as ss
from enforcement_support import run

REP, AP = "rae@plating.example", "ap@plating.example"


def ok(t, db, *args) -> str:
    r = run(t, db, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def add_contacts(t, db) -> None:
    ok(t, db, "contacts", "add", "plating", "--name", "Rae Rep", "--roles", "representative", "--email", REP)
    ok(t, db, "contacts", "address", "plating", "mailing", "--street", "9 Mill St", "--city", "Palmyra", "--state",
       "WI", "--zip", "53156")
    ok(t, db, "contacts", "add", "plating", "--name", "Sam Ortiz", "--roles", "billing", "--email", AP)
    ok(t, db, "contacts", "add", "candy", "--name", "Cy Counter", "--roles", "billing")
    ok(t, db, "contacts", "address", "candy", "billing", "--street", "PO Box 7", "--city", "Palmyra", "--state", "WI",
       "--zip", "53156")


def issue_notices(t, db) -> list[str]:
    """Two notices drafted and issued on 2026-03-02 from the plater's first two violations;
    their numbers."""
    with db.connect() as conn:
        vids = [v for (v,) in conn.execute(
            "SELECT v.id FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'plating' "
            "AND v.parameter IN ('cu', 'cn') ORDER BY v.parameter DESC, v.start_time").fetchall()]
    numbers = []
    for vid in vids[:2]:
        ok(t, db, "notice", "draft", "--violation", str(vid), "--on", "2026-03-02", "--out", "n")
    with db.connect() as conn:
        numbers = [n for (n,) in conn.execute("SELECT number FROM notices ORDER BY id").fetchall()]
    for n in numbers:
        ok(t, db, "notice", "issue", n, "--on", "2026-03-02", "--out", "n")
    return numbers


def bill(t, db) -> dict:
    ss.files(t)
    ss.bill_quarter(t, db, "2026Q1", date(2026, 4, 10))
    ss.bill_quarter(t, db, "2026Q2", date(2026, 7, 10))
    return ss.issued(t, db)


def dsn(message_id: str, recipient: str, *, action: str = "failed") -> bytes:
    """A delivery-status notification about ``message_id`` to ``recipient`` (RFC 3464 §2)."""
    return (
        "From: Mail Delivery System <MAILER-DAEMON@mx.plating.example>\r\n"
        f"To: office@palmyra.example\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="BOUND"\r\n\r\n'
        "--BOUND\r\nContent-Type: text/plain\r\n\r\nThe mail system could not deliver your message.\r\n"
        "--BOUND\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.plating.example\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: {action}\r\nStatus: 5.2.2\r\n"
        "Diagnostic-Code: smtp; 552 5.2.2 mailbox full\r\n\r\n"
        "--BOUND\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"From: office@palmyra.example\r\nTo: {recipient}\r\nMessage-ID: {message_id}\r\n"
        "Subject: a notice\r\n\r\n--BOUND--\r\n").encode()
