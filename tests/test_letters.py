"""Letters the utility writes, against the real database: the program's kinds rendered with the
letterhead, the addressee and the permit; a template of the utility's replacing one; a new kind
from a new file; the sandbox and the template's errors in one line naming the line; issuing
once per subject; the office's save with its conflicts; the DOCX read back with python-docx;
a PDF brought back replacing the issued one, the first kept.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from enforcement import letters as lt
from enforcement.letters import docx, templates
from foundation.actor import Actor
from foundation.config import load
from foundation.errors import Conflict, InputError
from lab.documents.pdf import pdf_text

pytestmark = pytest.mark.services

CHI = ZoneInfo("America/Chicago")
#: the village's day of the tests
TODAY = date(2026, 4, 20)
COORD = Actor.account("coord", "Casey Coordinator")
CONFIG = """
[utility]
name = "Village of Palmyra (test)"
pack = "palmyra-wi"
timezone = "America/Chicago"

[documents]
letterhead = ["Department of Public Works, Wastewater Utility", "123 Main Street, Palmyra, WI 53156"]
signed_by = "Pat Example"
signer_title = "Utility Superintendent"
letters = "letters"
"""


def setup_village(conn, tmp_path):
    """The plater (Rosa Alvarez, authorised representative, at 40 Industrial Drive) with its
    permit PAL-IU-2026-02 (effective 2026-02-01, expires 2030-01-31); the config beside a
    letters folder."""
    from identity.contacts import add_contact, set_address
    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import parse_permit

    conn.execute("INSERT INTO sites (key, name, pack) VALUES ('plating', 'Lakeside Plating', 'palmyra-wi'), "
                 "('candy', 'Sweet Creek Confections', 'palmyra-wi')")
    add_contact(conn, "plating", {"full_name": "Rosa Alvarez", "roles": ["representative"], "title": "Plant owner",
                                  "email": "rosa@example.com"}, actor=COORD)
    set_address(conn, "plating", "mailing", {"street": "40 Industrial Drive", "city": "Palmyra", "state": "WI",
                                             "postal_code": "53156"}, actor=COORD)
    permit = parse_permit({"number": "PAL-IU-2026-02", "site": "plating", "pack": "palmyra-wi",
                           "issued": date(2026, 1, 15), "effective": date(2026, 2, 1), "expires": date(2030, 1, 31)},
                          "plating.toml", load_pack("palmyra-wi"))
    import_permit(conn, permit, actor="supt")
    (tmp_path / "village.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "letters").mkdir()
    return load(tmp_path / "village.toml")


def test_the_programs_kinds_render_with_letterhead_addressee_and_permit(db, tmp_path):
    """A warning letter for the plater dated 2026-04-20: the letterhead, the date in words,
    the authorised representative at the mailing address, the permit, what it is about."""
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        ks = {t.kind: t for t in lt.kinds(conn, cfg)}
        assert set(ks) == {"notice", "order", "warning-letter", "sampling-reminder", "permit-renewal-reminder"}
        assert ks["warning-letter"].title == "Warning letter" and ks["warning-letter"].source == "program"
        p = lt.preview(conn, cfg, "warning-letter", "plating", TODAY, about="grease seen at the control manhole")
        text = " ".join(pdf_text(p["pdf"]).split())
        for words in ("Village of Palmyra (test)", "123 Main Street, Palmyra, WI 53156", "April 20, 2026",
                      "Rosa Alvarez, Plant owner", "Lakeside Plating", "40 Industrial Drive", "Palmyra, WI 53156",
                      "Warning letter", "grease seen at the control manhole", "permit PAL-IU-2026-02",
                      "Pat Example", "Utility Superintendent", "PREVIEW"):
            assert words in text, words
        r = lt.preview(conn, cfg, "permit-renewal-reminder", "plating", TODAY)
        text = " ".join(pdf_text(r["pdf"]).split())
        assert "ends on January 31, 2030" in text and "Renewal of permit PAL-IU-2026-02" in text
        # a user without a contact: the letter says what is not on file; without a permit, no reminder
        c = " ".join(pdf_text(lt.preview(conn, cfg, "warning-letter", "candy", TODAY, about="x")["pdf"]).split())
        assert "no authorised representative or mailing address on file" in c
        with pytest.raises(InputError, match=r"^this industrial user has no permit on file"):
            lt.preview(conn, cfg, "permit-renewal-reminder", "candy", TODAY)
        with pytest.raises(InputError, match=r"^a letter of kind notice is made from a notice: give its number"):
            lt.preview(conn, cfg, "notice", "plating", TODAY)
        with pytest.raises(InputError, match=r"^no kind of letter 'thanks' \(kinds: "):
            lt.preview(conn, cfg, "thanks", "plating", TODAY)


def test_a_utility_file_replaces_a_kind_and_a_new_file_is_a_new_kind(db, tmp_path):
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        (tmp_path / "letters" / "warning-letter.html").write_text(
            "{# title: Friendly warning #}\n<p class=body>Dear neighbour at {{ user.name }}: {{ about }}.</p>\n",
            encoding="utf-8")
        (tmp_path / "letters" / "thanks.html").write_text(
            "{# title: Thank you letter #}\n<h1>Thank you</h1><p>{{ user.name }}, thank you for {{ about }}.</p>\n",
            encoding="utf-8")
        ks = {t.kind: t for t in lt.kinds(conn, cfg)}
        assert (ks["warning-letter"].title, ks["warning-letter"].source) == ("Friendly warning", "utility")
        assert ks["warning-letter"].changed_at is not None and ks["warning-letter"].has_default
        assert (ks["thanks"].title, ks["thanks"].source, ks["thanks"].has_default) == ("Thank you letter", "utility",
                                                                                        False)
        text = " ".join(pdf_text(lt.preview(conn, cfg, "warning-letter", "plating", TODAY, about="a late report")
                                 ["pdf"]).split())
        assert "Dear neighbour at Lakeside Plating: a late report." in text
        got = lt.issue(conn, cfg, "thanks", "plating", TODAY, actor=COORD, about="the new interceptor")
        assert (got["number"], got["title"], got["template_source"]) == ("LTR-2026-001", "Thank you letter", "utility")
        assert "thank you for the new interceptor" in " ".join(pdf_text(lt.pdf(conn, got["id"])[1]).split())
        assert templates.program_text("warning-letter").startswith("{# title: Warning letter #}")


@pytest.mark.parametrize("text, error", [
    ("{# title: x #}\n<p>{{ ''.__class__ }}</p>",
     r"^the letter template warning-letter, line 2: '__class__' may not be used in a letter template$"),
    ("{# title: x #}\n<p>{{ user.name.__class__.__mro__ }}</p>",
     r"^the letter template warning-letter, line 2: '__class__' may not be used in a letter template$"),
    ("{# title: x #}\n<p>{{ user.name }}</p>\n<p>{{ permt.number }}</p>",
     r"^the letter template warning-letter, line 3: 'permt' is not something a letter knows$"),
    ("<p>{{ user.nmae }}</p>", r"^the letter template warning-letter, line 1: 'nmae' is not something a letter knows$"),
    ("<p>{{ user.name }}</p>\n<img src=\"file:///etc/passwd\">",
     r"^the letter template warning-letter, line 2: a letter may not draw on other files or addresses"),
    ("<p>\n{% if user.name %}\n<b>x</b>\n", r"^the letter template warning-letter, line 2: Unexpected end of template.*endif"),
])
def test_the_sandbox_and_errors_name_the_template_and_the_line(db, tmp_path, text, error):
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        with pytest.raises(InputError, match=error):
            lt.preview(conn, cfg, "warning-letter", "plating", TODAY, text=text, about="x")


def test_issued_once_per_subject_and_kept_as_issued(db, tmp_path):
    """Warning letters about "Grease in the sample" and "grease  in the SAMPLE" are the same
    subject (case and spaces aside): the second is refused naming LTR-2026-001; another
    subject is LTR-2026-002. The stored hashes are those of the stored bytes and text."""
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        first = lt.issue(conn, cfg, "warning-letter", "plating", TODAY, actor=COORD, about="Grease in the sample")
        with pytest.raises(InputError, match=r"^Warning letter LTR-2026-001 about this was issued already, on "
                                             r"2026-04-20 by coord: nothing issued$"):
            lt.issue(conn, cfg, "warning-letter", "plating", TODAY, actor=COORD, about="grease  in the SAMPLE")
        second = lt.issue(conn, cfg, "warning-letter", "plating", TODAY, actor=COORD, about="A late report")
        assert second["number"] == "LTR-2026-002"
        row = conn.execute("SELECT pdf, pdf_sha256, template_text, template_sha256, html, issued_by FROM letters "
                           "WHERE number = 'LTR-2026-001'").fetchone()
        assert hashlib.sha256(bytes(row[0])).hexdigest() == row[1]
        assert hashlib.sha256(row[2].encode()).hexdigest() == row[3] == templates.sha256(
            templates.program_text("warning-letter"))
        assert "Grease in the sample" in row[4] and "LTR-2026-001" in row[4]
        assert "LTR-2026-001" in pdf_text(bytes(row[0]))
        assert conn.execute("SELECT count(*) FROM audit_log WHERE action = 'letter.issue'").fetchone()[0] == 2
        assert [x["number"] for x in lt.letters(conn, "plating")] == ["LTR-2026-002", "LTR-2026-001"]
        assert first["subject"] == "Grease in the sample"


def test_the_office_saves_a_template_atomically_every_text_kept_and_conflicts(db, tmp_path):
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        t0 = lt.template(conn, cfg, "warning-letter")
        assert (t0.version, t0.source) == (0, "program")
        new = t0.text.replace("This letter is a warning.", "This letter is a friendly warning.")
        t1 = lt.save(conn, cfg, "warning-letter", new, expected_version=0, loaded_sha256=t0.sha256, actor=COORD)
        assert (t1.version, t1.source, t1.saved_by) == (1, "utility", "coord")
        assert (tmp_path / "letters" / "warning-letter.html").read_text(encoding="utf-8") == new
        assert not [p for p in (tmp_path / "letters").iterdir() if p.name.endswith(".tmp")]
        # a second editor who loaded version 0: refused, nothing written
        with pytest.raises(Conflict, match=r"the edit was made from version 0, but coord saved "
                                           r"version 1"):
            lt.save(conn, cfg, "warning-letter", "<p>other</p>", expected_version=0, loaded_sha256=t0.sha256,
                    actor=Actor.account("supt", "Sam Super"))
        # the file changed in the folder since the edit began: refused too
        (tmp_path / "letters" / "warning-letter.html").write_text(new + "<p>P.S.</p>\n", encoding="utf-8")
        with pytest.raises(Conflict, match=r"in the letters folder"):
            lt.save(conn, cfg, "warning-letter", "<p>mine</p>", expected_version=1, loaded_sha256=t1.sha256,
                    actor=COORD)
        with pytest.raises(InputError, match=r"^the letter template warning-letter, line 1: "):
            lt.save(conn, cfg, "warning-letter", "{% for %}", expected_version=1,
                    loaded_sha256=templates.sha256(new + "<p>P.S.</p>\n"), actor=COORD)
        assert (tmp_path / "letters" / "warning-letter.html").read_text(encoding="utf-8").endswith("<p>P.S.</p>\n")
        assert [v["version"] for v in templates.versions(conn, "warning-letter")] == [1]
        assert conn.execute("SELECT count(*) FROM audit_log WHERE action = 'letter.template.save'").fetchone()[0] == 1
        # saved from the text written in the folder (as the editor loaded it): that text is kept first
        t2 = lt.template(conn, cfg, "warning-letter")
        t3 = lt.save(conn, cfg, "warning-letter", "<p>{{ user.name }}</p>\n", expected_version=t2.version,
                     loaded_sha256=t2.sha256, actor=COORD)
        vs = templates.versions(conn, "warning-letter")
        assert [(v["version"], v["saved_by"]) for v in vs] == [(3, "coord"), (2, templates.FOLDER_WRITER), (1, "coord")]
        assert vs[1]["text"] == new + "<p>P.S.</p>\n" and t3.version == 3


def test_docx_read_back_and_a_pdf_brought_back(db, tmp_path):
    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        got = lt.issue(conn, cfg, "warning-letter", "plating", TODAY, actor=COORD, about="grease in the sample")
        data = docx.render(lt.letter(conn, got["number"]))
        lines = docx.text_of(data).split("\n")
        for line in ("Village of Palmyra (test)", "123 Main Street, Palmyra, WI 53156", "April 20, 2026",
                     "To: Rosa Alvarez, Plant owner", "Lakeside Plating", "40 Industrial Drive", "Warning letter",
                     "Subject: grease in the sample", "Dear Rosa Alvarez,", "Sincerely,", "Pat Example",
                     "Utility Superintendent"):
            assert line in lines, (line, lines)
        assert any(x.startswith("This letter is a warning.") for x in lines)
        first = lt.pdf(conn, got["id"])[1]
        with pytest.raises(InputError, match=r"^edited\.pdf: not a PDF"):
            lt.replace_pdf(conn, got["number"], b"PK\x03\x04 a word file", "edited.pdf", actor=COORD)
        with pytest.raises(InputError, match=r"^edited\.pdf: the same file as the PDF of LTR-2026-001 in force"):
            lt.replace_pdf(conn, got["number"], first, "edited.pdf", actor=COORD)
        from lab.documents.pdf import Letterhead, document, write_pdf
        edited = write_pdf(document("Warning letter", "<p>Edited in the word processor.</p>",
                                    Letterhead("Village of Palmyra (test)")), issued=TODAY)
        after = lt.replace_pdf(conn, got["number"], edited, "C:\\letters\\edited.pdf", actor=COORD, note="typo")
        assert [(r["filename"], r["replaced_by"], r["note"]) for r in after["replacements"]] == [
            ("edited.pdf", "coord", "typo")]
        doc = lt.issued_document(conn, got["id"])
        assert (doc["site"], doc["number"], doc["title"], doc["contact_role"]) == (
            after["site_id"], "LTR-2026-001", "Warning letter", "authorised representative")
        assert "Edited in the word processor." in pdf_text(doc["pdf"])
        assert lt.pdf(conn, got["id"], first=True)[1] == first


def test_a_sampling_reminder_lists_the_months_samples_once(db, tmp_path):
    """Two events planned for May 2026 (May 8 and May 22, 09:00 CDT): both listed; May again refused."""
    from lab.sampling import events

    with db.connect() as conn:
        cfg = setup_village(conn, tmp_path)
        with pytest.raises(InputError, match=r"^no samples planned for this industrial user in May 2026"):
            lt.issue(conn, cfg, "sampling-reminder", "plating", TODAY, actor=COORD, month="2026-05")
        a = events.create(conn, "plating", datetime(2026, 5, 8, 9, tzinfo=CHI), ["cn"], actor="coord")
        b = events.create(conn, "plating", datetime(2026, 5, 22, 9, tzinfo=CHI), ["cn", "cu"], actor="coord")
        got = lt.issue(conn, cfg, "sampling-reminder", "plating", TODAY, actor=COORD, month="2026-05")
        text = " ".join(pdf_text(lt.pdf(conn, got["id"])[1]).split())
        assert "Samples due in May 2026" in text
        assert f"{a.sample_key} May 8, 2026, 09:00" in text and f"{b.sample_key} May 22, 2026, 09:00" in text
        with pytest.raises(InputError, match=r"^Sampling reminder LTR-2026-001 about this was issued already"):
            lt.issue(conn, cfg, "sampling-reminder", "plating", TODAY, actor=COORD, month="2026-05")
