"""``sewerwatch letters`` as the user types it, against the real database: the kinds, a
template shown, a preview, a letter of a notice issued (the notice's evidence drawn by the
program), listed, its PDF and DOCX written and read back, a PDF brought back; the second issue
refused in one line, exit 2; the template's error in one line naming the line."""

from __future__ import annotations

import pytest

from enforcement_support import VILLAGE_TOML, run, village
from lab.documents.pdf import Letterhead, document, pdf_text, write_pdf

pytestmark = pytest.mark.services


def test_the_letters_commands(db, tmp_path):
    village(tmp_path, db, lab=False)
    cfg = tmp_path / "village.toml"
    cfg.write_text(VILLAGE_TOML.replace('signer_title = "Utility Superintendent"\n',
                                        'signer_title = "Utility Superintendent"\nletters = "letters"\n'),
                   encoding="utf-8")
    (tmp_path / "letters").mkdir()
    r = run(tmp_path, db, "letters", "kinds")
    assert r.returncode == 0, r.stderr
    assert "warning-letter" in r.stdout and "Warning letter (the program's)" in r.stdout
    r = run(tmp_path, db, "letters", "show-template", "sampling-reminder")
    assert r.returncode == 0 and r.stdout.startswith("{# title: Sampling reminder #}")
    # a notice of violation from the acid dump, issued; then its letter
    r = run(tmp_path, db, "notice", "draft", "--violation", "1", "--out", "notices")
    assert r.returncode == 0, r.stderr
    r = run(tmp_path, db, "letters", "issue", "notice", "--site", "candy", "--notice", "NOV-2026-001")
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "notice NOV-2026-001 is a draft: a letter is made from a notice once it is issued"), r.stderr
    r = run(tmp_path, db, "notice", "issue", "NOV-2026-001", "--out", "notices")
    assert r.returncode == 0, r.stderr
    r = run(tmp_path, db, "letters", "preview", "notice", "--site", "candy", "--notice", "NOV-2026-001",
            "--out", "p.pdf")
    assert r.returncode == 0, r.stderr
    text = " ".join(pdf_text(tmp_path / "p.pdf").split())
    assert "NOV-2026-001" in text and "Evidence" in text and "PREVIEW" in text
    r = run(tmp_path, db, "letters", "issue", "notice", "--site", "candy", "--notice", "NOV-2026-001",
            os_user="pat")
    assert r.returncode == 0, r.stderr
    number = r.stdout.split(":")[0]
    year = number.split("-")[1]
    assert r.stdout.startswith(f"LTR-{year}-001: Notice of violation letter to Sweet Creek Confections, Notice of "
                               "violation NOV-2026-001, issued "), r.stdout
    assert r.stdout.strip().endswith("by pat"), r.stdout
    r = run(tmp_path, db, "letters", "issue", "notice", "--site", "candy", "--notice", "NOV-2026-001")
    assert r.returncode == 2 and f"Notice of violation letter {number} about this was issued already" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run(tmp_path, db, "letters", "issue", "order", "--site", "candy", "--notice", "NOV-2026-001")
    assert r.returncode == 2 and "make a letter of kind notice from it" in r.stderr
    r = run(tmp_path, db, "letters", "list")
    assert r.returncode == 0 and number in r.stdout and "candy" in r.stdout
    # its PDF and DOCX written, read back
    r = run(tmp_path, db, "letters", "pdf", number, "--out", "l.pdf")
    assert r.returncode == 0, r.stderr
    text = " ".join(pdf_text(tmp_path / "l.pdf").split())
    assert number in text and "Sweet Creek Confections" in text and "Pat Example" in text
    r = run(tmp_path, db, "letters", "docx", number, "--out", "l.docx")
    assert r.returncode == 0, r.stderr
    from enforcement.letters.docx import text_of
    lines = text_of((tmp_path / "l.docx").read_bytes()).split("\n")
    assert "Village of Palmyra (test)" in lines and "Pat Example" in lines
    assert any("NOV-2026-001" in x for x in lines)
    # a PDF brought back
    (tmp_path / "not.pdf").write_text("hello", encoding="utf-8")
    r = run(tmp_path, db, "letters", "replace-pdf", number, "not.pdf")
    assert r.returncode == 2 and "not.pdf: not a PDF" in r.stderr
    (tmp_path / "edited.pdf").write_bytes(write_pdf(document("Letter", "<p>Signed and edited.</p>",
                                                             Letterhead("Village of Palmyra (test)"))))
    r = run(tmp_path, db, "letters", "replace-pdf", number, "edited.pdf", "--note", "signed", os_user="pat")
    assert r.returncode == 0 and "brought back by pat" in r.stdout, (r.stdout, r.stderr)
    r = run(tmp_path, db, "letters", "pdf", number, "--out", "now.pdf")
    assert "Signed and edited." in pdf_text(tmp_path / "now.pdf")
    r = run(tmp_path, db, "letters", "pdf", number, "--first", "--out", "first.pdf")
    assert (tmp_path / "first.pdf").read_bytes() == (tmp_path / "l.pdf").read_bytes()
    # the utility's template with a mistake: one line naming the line
    (tmp_path / "letters" / "warning-letter.html").write_text("<p>{{ user.name }}</p>\n<p>{{ permt }}</p>\n",
                                                              encoding="utf-8")
    r = run(tmp_path, db, "letters", "preview", "warning-letter", "--site", "candy", "--about", "x")
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "the letter template warning-letter, line 2: 'permt' is not something a letter knows"), r.stderr
    assert "Traceback" not in r.stderr
    r = run(tmp_path, db, "letters", "kinds")
    assert "Warning letter (the utility's, changed" in r.stdout
