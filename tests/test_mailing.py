"""Mailing issued documents through the command line against the real database and a real
SMTP server (aiosmtpd, ``alerts.catchers.MailCatcher``) that refuses one address (550).

The batch (tests/mailing_support.py): the plater's two notices (to Rae Rep, e-mail), the
plater's 2026Q2 bill (to Sam Ortiz, whose address the server refuses) and the candy maker's
2026Q1 and 2026Q2 bills (to Cy Counter, no e-mail: paper). Worked out by hand: 3 by e-mail,
2 on paper (one envelope), 0 with no address; sent: 2 messages received (both to Rae Rep,
each with its notice's PDF), 1 refused (a bounce); a later delivery-status notification for
the first notice makes it a bounce too; a notification naming a Message-ID never sent is a
dead letter. A new batch of everything not yet sent then holds the first notice (bounced),
the plater's two bills (one refused, one never sent) and nothing else: 3 documents.
"""

from __future__ import annotations

import email
import email.policy
import json
import re

import pytest

import mailing_support as ms
import web_round
from alerts.catchers import MailCatcher
from enforcement_support import run
from lab.documents.pdf import pdf_text


@pytest.fixture
def mail_db(services, round_village):
    yield from web_round.clone(services, round_village[0], "mailing")


@pytest.fixture
def catcher():
    m = MailCatcher(refuse={ms.AP}).start()
    yield m
    m.stop()


def _config(t, port: int) -> None:
    with open(t / "village.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[web]\nmail_url = "mailto://127.0.0.1:{port}?from=office@palmyra.example"\n')


def _batch(t, db, bid: int) -> dict:
    return json.loads(ms.ok(t, db, "mail", "batch", "review", str(bid), "--json"))


def test_a_batch_reviewed_sent_once_bounces_and_the_paper_list(mail_db, catcher, tmp_path):
    t, db = tmp_path, mail_db
    bills = ms.bill(t, db)
    _config(t, catcher.port)
    n1, n2 = ms.issue_notices(t, db)
    p2, c1, c2 = (bills[(s, q, "now")][0] for s, q in (("plating", "2026Q2"), ("candy", "2026Q1"), ("candy", "2026Q2")))

    # before the address book holds anyone: no address on file, said so
    out = ms.ok(t, db, "mail", "batch", "new", "--document", f"notice:{n1}")
    assert "no address on file: 1" in out and "no authorised representative or mailing address on file" in out

    ms.add_contacts(t, db)
    docs = [f"notice:{n1}", f"notice:{n2}", f"bill:{p2}", f"bill:{c1}", f"bill:{c2}"]
    out = ms.ok(t, db, "mail", "batch", "new", *[x for d in docs for x in ("--document", d)])
    bid = int(re.search(r"batch (\d+) \(to review\)", out).group(1))
    b = _batch(t, db, bid)
    assert b["counts"] == {"email": 3, "paper": 2, "none": 0}
    by = {(i["kind"], i["document_id"]): i for i in b["items"]}
    assert {i["email"] for i in b["by_channel"]["email"]} == {ms.REP, ms.AP}
    assert by[("bill", c1)]["channel"] == "paper" and by[("bill", c1)]["why"] == "no e-mail address on file"
    assert by[("bill", c1)]["lines"] == ["PO Box 7", "Palmyra, WI 53156"] and by[("bill", c1)]["person"] == "Cy Counter"
    assert "on paper: 2" in out and "PO Box 7" in out

    out = ms.ok(t, db, "mail", "batch", "send", str(bid))
    assert re.findall(r"^\[(\d)/3\]", out, re.M) == ["1", "2", "3"]          # progress, message by message
    assert "2 sent, 1 refused, 0 not sent" in out
    assert len(catcher.messages) == 2 and all(m["to"] == [ms.REP] for m in catcher.messages)
    b = _batch(t, db, bid)
    sent = {(i["kind"], i["document_id"]): i["sendings"] for i in b["items"] if i["sendings"]}
    for m in catcher.messages:
        msg = email.message_from_bytes(m["raw"], policy=email.policy.default)
        (att,) = list(msg.iter_attachments())
        assert att.get_content_type() == "application/pdf"
        text = pdf_text(att.get_content(), layout=False)
        number = next(n for n in (n1, n2) if n in msg["subject"])
        assert msg["subject"] == f"Village of Palmyra: Notice of violation {number}"
        assert m["body"].startswith("Dear Rae Rep,") and "sewerwatch" not in m["body"]
        assert number in text and "Lakeside Plating" in text             # the notice itself, as issued
        logged = [s for k, ss in sent.items() if k[0] == "notice" for s in ss if s["message_id"] == msg["Message-ID"].strip()]
        assert len(logged) == 1 and logged[0]["outcome"] == "sent" and logged[0]["to_address"] == ms.REP
    (refused,) = sent[("bill", p2)]
    assert refused["outcome"] == "bounced" and refused["detail"].startswith("550")

    # the second send is refused, naming when; nothing more is mailed
    r = run(t, db, "mail", "batch", "send", str(bid))
    assert r.returncode != 0 and f"batch {bid} was sent on" in r.stderr, r.stderr
    assert len(catcher.messages) == 2

    # a delivery-status notification for the first notice, and one for no message of ours
    with db.connect() as conn:
        nid = conn.execute("SELECT id FROM notices WHERE number = %s", (n1,)).fetchone()[0]
    first = next(s for s in sent[("notice", nid)])
    (t / "dsn.eml").write_bytes(ms.dsn(first["message_id"], ms.REP))
    (t / "stray.eml").write_bytes(ms.dsn("<nobody@elsewhere.example>", ms.REP))
    out = ms.ok(t, db, "mail", "bounces", "dsn.eml", "stray.eml")
    assert f"bounced: notice {n1} to {ms.REP}: 5.2.2 smtp; 552 5.2.2 mailbox full" in out
    assert "not matched, kept in the dead letters: stray.eml" in out and "1 bounced, 1 not matched" in out
    out = ms.ok(t, db, "mail", "bounces", "dsn.eml")
    assert "already marked bounced" in out and "0 bounced" in out
    with db.connect() as conn:
        dead = conn.execute("SELECT topic, reason FROM dead_letters WHERE source = 'mail-bounce'").fetchall()
    assert dead == [("stray.eml", "no message sent by the office has the Message-ID <nobody@elsewhere.example>")]
    out = ms.ok(t, db, "mail", "batch", "show", str(bid))
    assert "bounced" in out and "mailbox full" in out

    # the paper list: one envelope, two bills to print
    out = ms.ok(t, db, "mail", "batch", "paper", str(bid), "--pdf", "list.pdf", "--print", "all.pdf")
    assert out.startswith("1. Cy Counter; Sweet Creek Confections; PO Box 7; Palmyra, WI 53156")
    assert out.count("print bill") == 2
    listed = pdf_text((t / "list.pdf").read_bytes(), layout=False)
    assert "Cy Counter" in listed and "PO Box 7" in listed and "2026Q1-candy" in listed and "2026Q2-candy" in listed
    both = pdf_text((t / "all.pdf").read_bytes(), layout=False)
    assert both.count("\f") > listed.count("\f") and both.count("Sweet Creek Confections") >= 3

    # what is still to send: the bounced notice and the plater's two bills; a sent one named is refused
    with db.connect() as conn:
        p1 = conn.execute("SELECT b.id FROM bills b JOIN sites s ON s.id = b.site_id WHERE s.key = 'plating' "
                          "AND b.period = '2026Q1' AND b.superseded_by IS NULL").fetchone()[0]
    out = ms.ok(t, db, "mail", "batch", "new", "--unsent", "--json")
    again = json.loads(out)
    assert sorted((i["kind"], i["document_id"]) for i in again["items"]) == sorted(
        [("notice", nid), ("bill", p1), ("bill", p2)])
    r = run(t, db, "mail", "batch", "new", "--document", f"notice:{n2}")
    assert r.returncode != 0 and f"notice:{n2} was sent to {ms.REP} on" in r.stderr, r.stderr
    r = run(t, db, "mail", "batch", "new", "--resend", f"notice:{n2}")
    assert r.returncode != 0 and "re-send: a reason is needed" in r.stderr
    out = ms.ok(t, db, "mail", "batch", "new", "--resend", f"notice:{n2}", "--reason", "asked for a second copy")
    assert "sent again: asked for a second copy" in out


def test_a_contact_who_prefers_paper_and_no_mail_server(mail_db, tmp_path):
    """Rae Rep prefers paper: the notice goes on paper though she has an e-mail address; with
    no mail server set up the batch is not sent (nor marked sent)."""
    t, db = tmp_path, mail_db
    ms.bill(t, db)
    n1, _ = ms.issue_notices(t, db)
    ms.add_contacts(t, db)
    with db.connect() as conn:
        rae = conn.execute("SELECT contact_id FROM contact_versions WHERE email = %s", (ms.REP,)).fetchone()[0]
    ms.ok(t, db, "mail", "paper-preference", str(rae))
    out = ms.ok(t, db, "mail", "batch", "new", "--document", f"notice:{n1}", "--json")
    b = json.loads(out)
    assert b["counts"] == {"email": 0, "paper": 1, "none": 0}
    assert b["items"][0]["why"] == "prefers paper" and b["items"][0]["lines"] == ["9 Mill St", "Palmyra, WI 53156"]
    ms.ok(t, db, "mail", "paper-preference", str(rae), "--email")
    b = json.loads(ms.ok(t, db, "mail", "batch", "new", "--resend", f"notice:{n1}", "--reason", "by e-mail now",
                         "--json"))
    assert b["counts"]["email"] == 1
    r = run(t, db, "mail", "batch", "send", str(b["id"]))
    assert r.returncode != 0 and "no mail server is set up" in r.stderr
    assert _batch(t, db, b["id"])["sent_at"] is None
