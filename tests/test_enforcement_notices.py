"""Notices of violation: drafted from a finding, rendered to PDF and read back with pdftotext,
issued, answered, closed or escalated, with their audit trail in the database."""

from __future__ import annotations

import json
import re

import pytest

from enforcement_support import sw, village
from lab.documents.pdf import page_count, pdf_text
from limits.packs import load_pack

pytestmark = pytest.mark.services


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as single spaces (how pdftotext wraps)."""
    return re.sub(r"\s+", " ", text.replace("\f", " ")).strip()


def test_acid_dump_notice_drafted_issued_and_read_back(db, tmp_path):
    village(tmp_path, db)
    r = sw(tmp_path, db, "findings", "list", "--since", "2026-06-01", "--until", "2026-07-01", "--site", "candy",
           "--json")
    assert r.returncode == 0, r.stderr
    [v] = [x for x in json.loads(r.stdout)["violations"] if x["rule"] == "ph-min"]
    r = sw(tmp_path, db, "notice", "draft", "--violation", str(v["id"]), "--on", "2026-06-10", "--out", "out")
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    assert "NOV-2026-001 drafted" in r.stdout
    text = pdf_text(tmp_path / "out" / "NOV-2026-001-draft.pdf", layout=False)
    print(text)
