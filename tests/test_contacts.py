"""The address book on the command line and in its package, against the test database (a copy
of the round village, tests/web_round.py: users ``plating`` and ``candy``): a contact added,
edited (the earlier version kept, dated, the audit log naming who), the CSV file previewed
(nothing saved) and committed (bad rows to the dead letters with their line and column, the
rows in counted out), committed again (refused, naming what saved it; the same rows in another
file change nothing); one-line errors."""

from __future__ import annotations

import json

import pytest

import web_round
from enforcement_support import run
from foundation.actor import Actor
from foundation.errors import Conflict, InputError
from identity import contacts


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0], "contacts")


def ok(t, db, *args, os_user=None) -> str:
    r = run(t, db, *args, os_user=os_user)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def files(t):
    (t / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")


def test_add_edit_show_keeps_every_version_and_names_who(db, tmp_path):
    files(tmp_path)
    out = ok(tmp_path, db, "contacts", "add", "plating", "--name", "Dana Reyes", "--roles", "representative",
             "--title", "Owner", "--phone", "608-555-0101", "--email", "dana@plating.example", os_user="pat")
    assert "contact " in out and "Dana Reyes (authorised representative) of Lakeside Plating" in out
    cid = int(out.split()[1])
    out = ok(tmp_path, db, "contacts", "edit", str(cid), "--roles", "representative;emergency", "--phone",
             "608-555-0199", "--note", "new cell phone", os_user="lee")
    assert "version 2" in out
    c = json.loads(ok(tmp_path, db, "contacts", "show", str(cid), "--json"))
    assert [v["version"] for v in c["history"]] == [2, 1]
    assert c["history"][1]["phone"] == "608-555-0101" and c["history"][0]["phone"] == "608-555-0199"
    assert c["roles"] == ["representative", "emergency"]
    assert [v["recorded_by"] for v in c["history"]] == ["lee", "pat"]
    text = ok(tmp_path, db, "contacts", "show", str(cid))
    assert "version 1" in text and "by pat" in text and "new cell phone" in text and "no portal account" in text
    # the same change again is refused, naming the version that already says it
    r = run(tmp_path, db, "contacts", "edit", str(cid), "--phone", "608-555-0199")
    assert r.returncode != 0 and f"contact {cid}: nothing changed (version 2 already says this)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # a second contact with the same address is refused, naming the first
    r = run(tmp_path, db, "contacts", "add", "plating", "--name", "D. Reyes", "--roles", "billing",
            "--email", "DANA@plating.example")
    assert r.returncode != 0 and f"already has contact {cid} (Dana Reyes)" in r.stderr
    with db.connect() as conn:
        audit = conn.execute("SELECT actor, action, detail FROM audit_log WHERE object = %s ORDER BY id",
                             (f"contact:{cid}",)).fetchall()
    assert [(a, b) for a, b, _ in audit] == [("pat", "contact.add"), ("lee", "contact.edit")]
    assert audit[1][2]["was"] == {"roles": ["representative"], "phone": "608-555-0101"}
    assert audit[1][2]["via"] == "cli"


def test_bad_input_is_one_line_naming_what(db, tmp_path):
    files(tmp_path)
    for args, said in ((("add", "nowhere", "--name", "X", "--roles", "billing"), "no industrial user 'nowhere'"),
                       (("add", "plating", "--name", "X", "--roles", "janitor"), "'janitor' is not a role"),
                       (("add", "plating", "--name", "X", "--roles", "billing", "--email", "x@"),
                        "e-mail: not one e-mail address: 'x@'"),
                       (("add", "plating", "--name", "X", "--roles", "billing", "--phone", "call me"),
                        "phone: not a telephone number"),
                       (("address", "plating", "mailing", "--street", "1 Main", "--city", "Palmyra", "--state",
                         "Wisc", "--zip", "53156"), "state: two letters")):
        r = run(tmp_path, db, "contacts", *args)
        assert r.returncode == 2, (args, r.stdout)
        assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_addresses_are_versioned_and_address_a_document(db):
    me, other = Actor("pat", "cli"), Actor("lee", "web")
    with db.connect(autocommit=True) as conn:
        assert contacts.addressee(conn, "plating", "representative", "mailing").missing == (
            "no authorised representative or mailing address on file",)
        contacts.set_address(conn, "plating", "mailing", {"street": "PO Box 12", "city": "Palmyra", "state": "wi",
                                                          "postal_code": "53156"}, actor=me)
        a = contacts.set_address(conn, "plating", "mailing", {"street": "PO Box 40\nAttn: office", "city": "Palmyra",
                                                              "state": "WI", "postal_code": "53156-0040"},
                                 actor=other, expected_version=1)
        assert a["version"] == 2 and a["lines"] == ["PO Box 40", "Attn: office", "Palmyra, WI 53156-0040"]
        with pytest.raises(Conflict):
            contacts.set_address(conn, "plating", "mailing", {"street": "1 Main St", "city": "Palmyra",
                                                              "state": "WI", "postal_code": "53156"},
                                 actor=me, expected_version=1)
        hist = contacts.address_history(conn, "plating")
        assert [(h["version"], h["recorded_by"]) for h in hist] == [(2, "lee"), (1, "pat")]
        contacts.add_contact(conn, "plating", {"full_name": "Dana Reyes", "roles": "authorised representative",
                                               "title": "Owner"}, actor=me)
        to = contacts.addressee(conn, "plating", "representative", "mailing")
        assert (to.name, to.title, to.lines, to.missing) == ("Dana Reyes", "Owner", tuple(a["lines"]), ())
        # a bill goes to the billing address, else the mailing one; the billing contact is not on file
        bill_to = contacts.addressee(conn, "plating", "billing", "billing")
        assert bill_to.name is None and bill_to.lines == tuple(a["lines"])
        assert bill_to.missing == ("no billing contact on file",)
        rows = conn.execute("SELECT actor, action FROM audit_log WHERE object = 'site:plating' ORDER BY id").fetchall()
        assert rows == [("pat", "address.set"), ("lee", "address.set")]


CSV = """site,entry,name,title,phone,email,street,city,state,zip
plating,representative; emergency,Dana Reyes,Owner,608-555-0101,dana@plating.example,,,,
plating,billing,Sam Ortiz,Bookkeeper,,ap@plating.example,,,,
plating,mailing address,,,,,PO Box 12,Palmyra,WI,53156
candy,plant manager,Jo Baker,,608-555-0300,,,,,
candy,emergency,Night Desk,,not a number,,,,,
nowhere,billing,Al Smith,,,,,,,
plating,billing address,,,,,9 Mill St,Palmyra,WI,5315
plating,billing,Sam Ortiz,,,ap@plating.example,,,,
"""


def test_csv_preview_commit_dead_rows_counted_in_out(db, tmp_path):
    """Eight rows: four usable (two people of plating, its mailing address, candy's plant
    manager); four not: line 6 (phone), line 7 (no such user), line 8 (ZIP code), line 9 (the
    same person as line 3). In = 8 = 4 added + 0 changed + 0 unchanged + 4 dead."""
    files(tmp_path)
    (tmp_path / "book.csv").write_text(CSV, encoding="utf-8")
    out = ok(tmp_path, db, "contacts", "import", "book.csv")
    assert "8 rows: 4 to add, 0 to change, 0 unchanged, 4 cannot be used; nothing saved" in out
    assert "book.csv line 6, column phone: not a telephone number" in out
    assert "book.csv line 7, column site: no industrial user 'nowhere'" in out
    assert "book.csv line 8, column zip: five digits" in out
    assert "book.csv line 9, column entry: the same person as line 3 of this file" in out
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM contacts").fetchone()[0] == 0
        dead0 = conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
    rep = json.loads(ok(tmp_path, db, "contacts", "import", "book.csv", "--commit", "--json", os_user="pat"))
    assert (rep["total"], rep["add"], rep["change"], rep["unchanged"], rep["dead"]) == (8, 4, 0, 0, 4)
    assert rep["add"] + rep["change"] + rep["unchanged"] + rep["dead"] == rep["total"]
    with db.connect() as conn:
        dead = conn.execute("SELECT topic, reason, convert_from(payload, 'UTF8') FROM dead_letters "
                            "WHERE source = 'contacts-import' ORDER BY id").fetchall()
        assert conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0] - dead0 == 4
        assert [d[0] for d in dead] == ["book.csv:6", "book.csv:7", "book.csv:8", "book.csv:9"]
        assert dead[0][2] == "candy,emergency,Night Desk,,not a number,,,,,"
        assert conn.execute("SELECT count(*) FROM contacts").fetchone()[0] == 3
        assert conn.execute("SELECT count(*) FROM site_addresses").fetchone()[0] == 1
    listed = ok(tmp_path, db, "contacts", "list", "--site", "plating")
    assert "Dana Reyes" in listed and "authorised representative, emergency (24 h)" in listed
    assert "mailing address: PO Box 12, Palmyra, WI 53156" in listed
    # the same file again: refused in one line naming what saved it; nothing saved, no dead letter more
    r = run(tmp_path, db, "contacts", "import", "book.csv", "--commit")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert (f"book.csv: this file was saved already as contacts file {rep['file']} (book.csv) on " in r.stderr
            and "by pat: 4 added, 0 changed, 0 unchanged, 4 not used; nothing was saved now" in r.stderr), r.stderr
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0] - dead0 == 4
    # the same rows in another file: the usable rows are unchanged, the bad ones dead again
    (tmp_path / "again.csv").write_text(CSV + "\n", encoding="utf-8")
    rep = json.loads(ok(tmp_path, db, "contacts", "import", "again.csv", "--commit", "--json"))
    assert (rep["add"], rep["change"], rep["unchanged"], rep["dead"]) == (0, 0, 4, 4)
    # a changed row is a new version of the same person
    (tmp_path / "two.csv").write_text(CSV.splitlines()[0] + "\nplating,billing,Sam Ortiz,Controller,,"
                                      "AP@plating.example,,,,\n", encoding="utf-8")
    rep = json.loads(ok(tmp_path, db, "contacts", "import", "two.csv", "--commit", "--json"))
    assert (rep["add"], rep["change"]) == (0, 1)
    with db.connect() as conn:
        sam = [c for c in contacts.contacts_of(conn, "plating") if c["full_name"] == "Sam Ortiz"][0]
        assert (sam["version"], sam["title"]) == (2, "Controller")


def test_a_file_that_is_not_a_contacts_file_is_one_line(db, tmp_path):
    files(tmp_path)
    (tmp_path / "x.csv").write_text("who,what\na,b\n", encoding="utf-8")
    r = run(tmp_path, db, "contacts", "import", "x.csv")
    assert r.returncode == 2 and "x.csv line 1: the header lacks the column site, entry" in r.stderr


def test_edit_from_an_older_version_is_a_conflict(db):
    with db.connect(autocommit=True) as conn:
        c = contacts.add_contact(conn, "candy", {"full_name": "Jo Baker", "roles": ["plant-manager"]},
                                 actor=Actor("pat", "web"))
        contacts.edit_contact(conn, c["id"], {"phone": "608 555 0300"}, actor=Actor("lee", "web"), expected_version=1)
        with pytest.raises(Conflict) as e:
            contacts.edit_contact(conn, c["id"], {"title": "Manager"}, actor=Actor("pat", "web"), expected_version=1)
        assert "lee saved version 2" in str(e.value)
        gone = contacts.edit_contact(conn, c["id"], {}, actor=Actor("pat", "web"), remove=True)
        assert gone["removed"] and contacts.contacts_of(conn, "candy") == []
        with pytest.raises(InputError):
            contacts.contact(conn, 99999)


def test_a_contact_invited_from_the_command_line_is_one_person_with_its_account(db, tmp_path):
    """``portal invite-contact``: the invitation names the contact (no mail server: the link is
    printed); the account made from it is linked to the contact; a second invitation is then
    refused, naming the account. An account made from an invitation typed by hand links to the
    contact with the same e-mail address."""
    from ereport.invitations import InviteLinks, accept, invite
    from ereport.mail import Mailer
    from foundation import secrets
    files(tmp_path)
    (tmp_path / "village.toml").write_text(web_round.CONFIG + f'\n[services]\nstate_dir = "{tmp_path / "state"}"\n',
                                           encoding="utf-8")
    out = ok(tmp_path, db, "contacts", "add", "candy", "--name", "Jo Baker", "--roles", "representative",
             "--email", "jo@sweetcreek.example")
    cid = int(out.split()[1])
    out = ok(tmp_path, db, "portal", "invite-contact", str(cid))
    assert "NOT mailed" in out and "give Jo Baker this link another way" in out
    url = out.strip().splitlines()[-1]
    key = secrets.load_or_create(tmp_path / "state")["keys"]["portal_invites"]
    links = InviteLinks(key, url.split("/portal/")[0], 86400.0)
    with db.connect(autocommit=True) as conn:
        assert conn.execute("SELECT contact_id FROM portal_invitations").fetchall() == [(cid,)]
        acc = accept(conn, url.rsplit("/", 1)[1], "jobaker", "a long first password", "a long first password", "",
                     links=links)
        assert conn.execute("SELECT contact_id FROM web_accounts WHERE id = %s", (acc.id,)).fetchone() == (cid,)
        assert contacts.contact(conn, cid)["account"]["username"] == "jobaker"
    r = run(tmp_path, db, "portal", "invite-contact", str(cid))
    assert r.returncode == 2 and "Jo Baker has a portal account already (jobaker): nobody was invited" in r.stderr
    # by hand, to the address a contact has: the account is linked to that contact
    before = json.loads(ok(tmp_path, db, "contacts", "list", "--site", "candy", "--json"))["contacts"]
    assert [c["full_name"] for c in before] == ["Jo Baker"]
    out = ok(tmp_path, db, "contacts", "add", "candy", "--name", "Sam Ortiz", "--roles", "billing",
             "--email", "sam@sweetcreek.example")
    sid = int(out.split()[1])
    with db.connect(autocommit=True) as conn:
        made = invite(conn, "candy", "SAM@sweetcreek.example", "Sam Ortiz", signatory=False, title=None,
                      subscriber_agreement_on=None, actor=Actor("pat", "cli"), links=links, mailer=Mailer(None),
                      utility="Village of Palmyra")
        acc = accept(conn, made.url.rsplit("/", 1)[1], "samortiz", "a long first password", "a long first password",
                     "", links=links)
        assert conn.execute("SELECT contact_id FROM web_accounts WHERE id = %s", (acc.id,)).fetchone() == (sid,)
