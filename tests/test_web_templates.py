"""The office's templates as files, without a server: each parses, a page's title block holds
words (no markup), and no element id is written twice outside ``if``/``else`` branches. Two
merges once pasted a section into a title block and a section twice into one page; the crawler
(tests/test_web_crawl_browser.py) sees the pages it reaches, this sees every template."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jinja2
import pytest

TEMPLATES = Path(__file__).resolve().parent.parent / "web" / "templates"
FILES = sorted(TEMPLATES.glob("*.html"))
TITLE = re.compile(r"\{%-?\s*block title\s*-?%\}(.*?)\{%-?\s*endblock", re.S)
BRANCH = re.compile(r"\{%-?\s*(if|elif|else|endif)\b")
ID = re.compile(r'\bid="([^"{}]+)"')


def test_there_are_templates():
    assert len(FILES) > 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_template_parses_and_its_title_is_words(path):
    text = path.read_text(encoding="utf-8")
    jinja2.Environment(extensions=["jinja2.ext.do"]).parse(text)     # a syntax error names the line
    for m in TITLE.finditer(text):
        assert "<" not in m.group(1) and len(m.group(1)) < 200, f"{path.name}: markup in the title block"


def _ids_with_branches(text: str) -> list[tuple[str, tuple]]:
    """Each static id with the branches it stands in: a tuple of (if block, branch number)."""
    out, stack, blocks = [], [], 0
    pos = 0
    for m in BRANCH.finditer(text):
        out += [(k, tuple(stack)) for k in ID.findall(text[pos:m.start()])]
        pos = m.end()
        tag = m.group(1)
        if tag == "if":
            blocks += 1
            stack.append((blocks, 0))
        elif tag in ("elif", "else") and stack:
            stack[-1] = (stack[-1][0], stack[-1][1] + 1)
        elif tag == "endif" and stack:
            stack.pop()
    return out + [(k, tuple(stack)) for k in ID.findall(text[pos:])]


def _exclusive(a: tuple, b: tuple) -> bool:
    """Two places never on one page: in two branches of one ``if``."""
    branch = dict(a)
    return any(block in branch and branch[block] != n for block, n in b)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_id_twice_on_one_page(path):
    """An id written twice is on the page twice unless the two stand in two branches of one
    ``if`` (``for`` loops draw their ids from the loop's values)."""
    found = _ids_with_branches(path.read_text(encoding="utf-8"))
    twice = sorted({k for i, (k, a) in enumerate(found) for k2, b in found[i + 1:] if k == k2 and not _exclusive(a, b)})
    assert not twice, f"{path.name}: ids written twice: {twice}"
