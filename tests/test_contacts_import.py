"""The address book's file kept, then saved once (:mod:`identity.contacts_files`: what the
office's Import contacts page and ``sewerwatch contacts import --commit`` both call), against
the test database (a copy of the round village, tests/web_round.py: users ``plating`` and
``candy``): staged (its preview kept, nothing in the book), saved (the rows in = added +
changed + unchanged + not used, a dead letter for each row not used, naming the file), saved
again or uploaded again: refused in one line naming the file that saved it and what it did,
nothing done twice; the command line goes the same way and its preview writes nothing."""

from __future__ import annotations

import json
import re

import pytest

import web_round
from enforcement_support import run
from foundation.actor import Actor
from foundation.errors import InputError
from identity import contacts, contacts_files

CSV = """site,entry,name,title,phone,email,street,city,state,zip
plating,representative; emergency,Dana Reyes,Owner,608-555-0101,dana@plating.example,,,,
plating,mailing address,,,,,PO Box 12,Palmyra,WI,53156
candy,billing,Bo Banks,,,ap@sweetcreek.example,,,,
nowhere,billing,Al Smith,,,,,,,
candy,emergency,Night Desk,,not a number,,,,,
"""
ME = Actor("lee", "web")


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0], "contact-files")


def counts(conn) -> tuple[int, int, int, int]:
    """Contacts, addresses, dead letters of the import, contacts files saved."""
    return tuple(conn.execute(q).fetchone()[0] for q in (
        "SELECT count(*) FROM contacts", "SELECT count(*) FROM site_addresses",
        "SELECT count(*) FROM dead_letters WHERE source = 'contacts-import'",
        "SELECT count(*) FROM contact_imports WHERE state = 'saved'"))


def test_staged_then_saved_once_rows_in_are_rows_out(db):
    data = CSV.encode()
    with db.connect() as conn:
        conn.autocommit = True
        f = contacts_files.stage(conn, "C:\\exports\\book.csv", data, actor=ME)
        assert (f["state"], f["filename"], f["staged_by"], f["report"]) == ("staged", "book.csv", "lee", None)
        p = f["preview"]
        assert (p["total"], p["add"], p["change"], p["unchanged"], p["dead"]) == (5, 3, 0, 0, 2)
        assert [r["action"] for r in p["rows"]] == ["add", "add", "add", "dead", "dead"]
        assert p["rows"][3]["reason"].startswith("book.csv line 5, column site: no industrial user 'nowhere'")
        assert p["rows"][4]["reason"].startswith("book.csv line 6, column phone: not a telephone number")
        assert counts(conn) == (0, 0, 0, 0)                           # staged: nothing in the book yet

        # a second upload of the same bytes before the first is saved: staged too (nothing saved yet)
        twin = contacts_files.stage(conn, "book-copy.csv", data, actor=Actor("pat", "cli"))

        done = contacts_files.save(conn, f["id"], actor=ME)
        rep = done["report"]
        assert (done["state"], done["saved_by"]) == ("saved", "lee") and done["saved_at"] is not None
        assert rep["total"] == rep["add"] + rep["change"] + rep["unchanged"] + rep["dead"] == 5
        assert (rep["add"], rep["change"], rep["unchanged"], rep["dead"]) == (3, 0, 0, 2)
        assert counts(conn) == (2, 1, 2, 1)                           # two people, one address, two dead rows
        dead = conn.execute("SELECT topic, reason, convert_from(payload, 'UTF8'), detail FROM dead_letters "
                            "WHERE source = 'contacts-import' ORDER BY id").fetchall()
        assert [d[0] for d in dead] == ["book.csv:5", "book.csv:6"]
        assert dead[0][2] == "nowhere,billing,Al Smith,,,,,,,"
        assert all(d[3]["import"] == f["id"] and d[3]["actor"] == "lee" for d in dead)
        assert [r["reason"] for r in rep["rows"] if r["action"] == "dead"] == [d[1] for d in dead]
        audit = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'contacts.import'").fetchall()
        assert len(audit) == 1 and audit[0][0] == "lee" and audit[0][1]["import"] == f["id"]
        assert [c["full_name"] for c in contacts.contacts_of(conn, "plating")] == ["Dana Reyes"]
        assert contacts.addresses_of(conn, "plating")["mailing"]["city"] == "Palmyra"

        # saved again (a second tab's form): refused in one line naming what exists; nothing done
        with pytest.raises(contacts_files.SavedAlready) as again:
            contacts_files.save(conn, f["id"], actor=Actor("pat", "cli"))
        line = str(again.value)
        assert "\n" not in line and isinstance(again.value, InputError)
        assert line.startswith(f"book.csv: this file was saved already as contacts file {f['id']} (book.csv) on ")
        assert line.endswith("UTC by lee: 3 added, 0 changed, 0 unchanged, 2 not used; nothing was saved now")
        # the twin staged before: refused too, as the same file uploaded again is
        with pytest.raises(contacts_files.SavedAlready, match=f"as contacts file {f['id']} "):
            contacts_files.save(conn, twin["id"], actor=ME)
        with pytest.raises(contacts_files.SavedAlready, match="^book.csv: this file was saved already"):
            contacts_files.stage(conn, "book.csv", data, actor=ME)
        assert counts(conn) == (2, 1, 2, 1)
        assert contacts_files.contact_file(conn, twin["id"])["state"] == "staged"
        assert [x["id"] for x in contacts_files.recent(conn)] == [twin["id"], f["id"]]
        assert contacts_files.recent(conn)[1]["counts"] == {k: rep[k] for k in
                                                            ("add", "change", "unchanged", "dead", "total")}


def test_a_file_that_is_not_a_contacts_file_is_not_kept(db):
    with db.connect() as conn:
        conn.autocommit = True
        with pytest.raises(InputError, match=r"^x.csv line 1: the header lacks the column site, entry"):
            contacts_files.stage(conn, "x.csv", b"who,what\na,b\n", actor=ME)
        with pytest.raises(InputError, match="^no contacts file 999$"):
            contacts_files.save(conn, 999, actor=ME)
        assert conn.execute("SELECT count(*) FROM contact_imports").fetchone()[0] == 0


def test_the_command_line_stages_and_saves_as_the_office_does(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp_path / "book.csv").write_text(CSV, encoding="utf-8")
    out = run(tmp_path, db, "contacts", "import", "book.csv").stdout      # a preview: nothing written
    assert "5 rows: 3 to add, 0 to change, 0 unchanged, 2 cannot be used; nothing saved" in out
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM contact_imports").fetchone()[0] == 0
        assert counts(conn) == (0, 0, 0, 0)
    r = run(tmp_path, db, "contacts", "import", "book.csv", "--commit", os_user="pat")
    assert r.returncode == 0, r.stderr
    assert "5 rows: 3 added, 0 changed, 0 unchanged, 2 not used; the rows not used are kept" in r.stdout
    assert "line    5  not used       nowhere      billing" in r.stdout
    with db.connect() as conn:
        row = conn.execute("SELECT id, state, staged_by, saved_by, report FROM contact_imports").fetchall()
        assert len(row) == 1 and row[0][1:4] == ("saved", "pat", "pat") and row[0][4]["total"] == 5
        assert counts(conn) == (2, 1, 2, 1)
    r = run(tmp_path, db, "contacts", "import", "book.csv", "--commit", "--json")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert re.fullmatch(rf"sewerwatch: error: book.csv: this file was saved already as contacts file {row[0][0]} "
                        r"\(book.csv\) on \d{4}-\d\d-\d\d \d\d:\d\d C[SD]T by pat: 3 added, 0 changed, "
                        r"0 unchanged, 2 not used; nothing was saved now\n", r.stderr), r.stderr
    with db.connect() as conn:
        assert counts(conn) == (2, 1, 2, 1)
        assert conn.execute("SELECT count(*) FROM contact_imports").fetchone()[0] == 1
    # the preview of a saved file still writes nothing: every usable row is unchanged now
    out = run(tmp_path, db, "contacts", "import", "book.csv", "--json").stdout
    assert {k: v for k, v in json.loads(out).items() if k != "rows"} == {
        "add": 0, "change": 0, "unchanged": 3, "dead": 2, "total": 5}
