"""Documents addressed from the address book, read back with pdftotext: a notice of violation
to the authorised representative at the mailing address; a bill and a statement of account to
the billing contact at the billing address; where nothing is on file the document says so and
prints the user's name as before (no blank lines, nothing lost)."""

from __future__ import annotations

import re
import subprocess
from datetime import date

import pytest

import statements_support as ss
import web_round
from enforcement.documents.notice_page import render_html
from enforcement_support import run, village
from identity import contacts
from lab.documents.pdf import pdf_text, write_pdf


def flat(text: str) -> str:
    """Text with line breaks and runs of spaces as single spaces (pdftotext wraps lines)."""
    return re.sub(r"\s+", " ", text.replace("\f", " ")).strip()


def ok(t, db, *args) -> str:
    r = run(t, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def test_a_notice_is_addressed_to_the_representative_at_the_mailing_address(db, tmp_path):
    village(tmp_path, db, lab=False)
    ok(tmp_path, db, "contacts", "add", "candy", "--name", "Jo Baker", "--roles", "representative",
       "--title", "General Manager", "--email", "jo@sweetcreek.example")
    ok(tmp_path, db, "contacts", "address", "candy", "mailing", "--street", "PO Box 7|Attn: Plant Office",
       "--city", "Palmyra", "--state", "WI", "--zip", "53156")
    ok(tmp_path, db, "contacts", "address", "candy", "facility", "--street", "300 Mill Rd", "--city", "Palmyra",
       "--state", "WI", "--zip", "53156")
    with db.connect() as conn:
        vid = conn.execute("SELECT v.id FROM violations v JOIN sensors se ON se.id = v.sensor_id JOIN sites s "
                           "ON s.id = se.site_id WHERE s.key = 'candy' AND v.rule = 'ph-min'").fetchone()[0]
    ok(tmp_path, db, "notice", "draft", "--violation", str(vid), "--on", "2026-06-10", "--out", "out")
    text = flat(pdf_text((tmp_path / "out" / "NOV-2026-001-draft.pdf").read_bytes(), layout=False))
    assert ("To: Jo Baker, General Manager Sweet Creek Confections (candy) PO Box 7 Attn: Plant Office "
            "Palmyra, WI 53156") in text
    assert "300 Mill Rd" not in text          # the facility address is not where mail goes
    assert "no authorised representative" not in text and "no mailing address" not in text   # nothing missing
    # the same notice for a user with nothing in the book: said so, the user's name as before
    with db.connect() as conn:
        doc = conn.execute("SELECT document FROM notices WHERE number = 'NOV-2026-001'").fetchone()[0]
        doc["addressee"] = contacts.addressee(conn, "plating", "representative", "mailing").as_json()
    bare = flat(pdf_text(write_pdf(render_html(doc, None), issued=None), layout=False))
    assert "To: Sweet Creek Confections (candy) \u2014 no authorised representative or mailing address on file" in bare
    # a notice stored before the address book (no addressee kept in it) prints as it did
    doc.pop("addressee")
    old = flat(pdf_text(write_pdf(render_html(doc, None), issued=None), layout=False))
    assert "To: Sweet Creek Confections (candy) No discharge permit on file" in old


@pytest.fixture
def billing_db(services, round_village):
    yield from web_round.clone(services, round_village[0], "contactbill")


def test_a_bill_and_a_statement_go_to_the_billing_contact_at_the_billing_address(billing_db, tmp_path):
    """2026Q2 billed on 2026-07-10 (tests/statements_support.py): plating has a billing
    contact and a billing address; candy has neither, only a mailing address, which its bill
    then goes to, saying the billing contact is not on file."""
    t, db = tmp_path, billing_db
    ss.files(t)
    ok(t, db, "contacts", "add", "plating", "--name", "Sam Ortiz", "--roles", "billing", "--title", "Bookkeeper",
       "--email", "ap@plating.example")
    ok(t, db, "contacts", "address", "plating", "billing", "--street", "Accounts Payable|9 Mill St", "--city",
       "Palmyra", "--state", "WI", "--zip", "53156-0009")
    ok(t, db, "contacts", "address", "candy", "mailing", "--street", "PO Box 7", "--city", "Palmyra", "--state", "WI",
       "--zip", "53156")
    ss.bill_quarter(t, db, "2026Q2", date(2026, 7, 10))
    plating = flat(pdf_text((t / "bills" / "bill-2026Q2-plating.pdf").read_bytes(), layout=False))
    assert re.search(r"Bill to: Sam Ortiz, Bookkeeper Lakeside Plating \(plating\)(, permit [A-Z0-9-]+)? "
                     r"Accounts Payable 9 Mill St Palmyra, WI 53156-0009", plating), plating[:600]
    candy = flat(pdf_text((t / "bills" / "bill-2026Q2-candy.pdf").read_bytes(), layout=False))
    assert "Bill to: Sweet Creek Confections (candy) \u2014 no billing contact on file PO Box 7 Palmyra, WI 53156" in candy
    ok(t, db, "bills", "statement", "plating", "--as-of", "2026-08-15", "--pdf", "statement.pdf")
    text = flat(subprocess.run(["pdftotext", "-layout", str(t / "statement.pdf"), "-"], capture_output=True,
                               text=True, check=True).stdout)
    assert ("To: Sam Ortiz, Bookkeeper Lakeside Plating (plating) Accounts Payable 9 Mill St Palmyra, WI 53156-0009"
            in text)
