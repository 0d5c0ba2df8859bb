"""A letter as an editable DOCX for the utility's word processor (docxtpl).

The letter's parts are read from its HTML as issued (:func:`parts`): the letterhead, the
date (``class="date"``), the addressee (``class="to"``), the title (the ``<h1>``), the subject
(``class="subject"``), the body's paragraphs (``class="body"``; a template without one: every
other paragraph) and the signature block (``class="signature"``). They fill a Word template
made here with python-docx (:func:`word_template`: docxtpl's ``{%p for %}`` paragraphs, so
each line is a paragraph of its own) and rendered by docxtpl with autoescape. The person
edits it, prints it to PDF and brings it back (:func:`enforcement.letters.issuing.replace_pdf`).
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

#: The parts a template marks with ``class``.
SECTIONS = ("date", "to", "subject", "body", "signature")
_BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "li", "tr", "table", "ul", "ol", "blockquote"}
_SKIP = {"head", "style", "script", "title"}
_SKIP_CLASSES = {"letterhead", "watermark"}


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str | None, bool]] = []     # (tag, section, skipped)
        self.buf: list[str] = []
        self.buf_section: str | None = None
        self.out: list[tuple[str | None, str]] = []

    def _section(self) -> str | None:
        return self.stack[-1][1] if self.stack else None

    def _skipped(self) -> bool:
        return bool(self.stack) and self.stack[-1][2]

    def flush(self) -> None:
        text = "".join(self.buf)
        lines = [" ".join(x.split()) for x in text.split("\n")]
        text = "\n".join(x for x in lines if x)
        if text:
            self.out.append((self.buf_section, text))
        self.buf, self.buf_section = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "br":
            self.buf.append("\n")
            return
        if tag in ("meta", "img", "hr", "input", "link"):
            return
        classes = set((dict(attrs).get("class") or "").split())
        section = next((c for c in SECTIONS if c in classes), "title" if tag == "h1" else self._section())
        skipped = self._skipped() or tag in _SKIP or bool(classes & _SKIP_CLASSES)
        if tag in _BLOCK:
            self.flush()
        elif tag in ("td", "th") and "".join(self.buf).strip():
            self.buf.append("\t")
        self.stack.append((tag, section, skipped))

    def handle_endtag(self, tag):
        if not any(t == tag for t, _, _ in self.stack):
            return
        if tag in _BLOCK:
            self.flush()
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self._skipped():
            return
        if self.buf_section is None and data.strip():
            self.buf_section = self._section()
        self.buf.append(data)


def parts(html_text: str) -> dict:
    """A letter's parts from its whole HTML: ``date``, ``to`` (lines), ``title``, ``subject``,
    ``body`` (paragraphs: each a list of lines), ``signature`` (lines)."""
    r = _Reader()
    r.feed(html_text)
    r.close()
    r.flush()
    got: dict[str | None, list[str]] = {}
    for section, text in r.out:
        got.setdefault(section, []).append(text)
    lines = lambda key: [x for t in got.get(key, []) for x in t.split("\n")]   # noqa: E731
    body = got.get("body") if "body" in got else got.get(None, [])
    return {"date": " ".join(lines("date")), "to": lines("to"), "title": " ".join(lines("title")),
            "subject": " ".join(lines("subject")), "body": [t.split("\n") for t in body or []],
            "signature": lines("signature")}


def word_template() -> io.BytesIO:
    """The Word template of every letter (docxtpl tags in python-docx paragraphs)."""
    from docx import Document
    from docx.shared import Pt

    doc = Document()
    p = doc.add_paragraph()
    run = p.add_run("{{ village }}")
    run.bold, run.font.size = True, Pt(15)
    for tag in ("{%p for line in letterhead %}", "{{ line }}", "{%p endfor %}", "", "{{ date }}", "",
                "{%p for line in to %}", "{{ line }}", "{%p endfor %}", ""):
        doc.add_paragraph(tag)
    doc.add_heading("{{ title }}", level=1)
    p = doc.add_paragraph()
    p.add_run("{{ subject }}").bold = True
    for tag in ("{%p for para in body %}", "{%p for line in para %}", "{{ line }}", "{%p endfor %}",
                "{%p endfor %}", "", "{%p for line in signature %}", "{{ line }}", "{%p endfor %}"):
        doc.add_paragraph(tag)
    out = io.BytesIO()
    doc.save(out)
    out.seek(0)
    return out


def render(letter: dict) -> bytes:
    """The letter (:func:`enforcement.letters.issuing.letter`: its HTML as issued, the
    letterhead its context kept) as DOCX bytes."""
    from docxtpl import DocxTemplate

    p = parts(letter["html"])
    lh = letter["context"]["letterhead"]
    tpl = DocxTemplate(word_template())
    tpl.render({"village": lh["village"], "letterhead": lh.get("lines") or [], "date": p["date"] or letter["context"]["date"],
                "to": p["to"], "title": p["title"] or letter["title"],
                "subject": p["subject"] or f"Subject: {letter['subject']}",
                "body": p["body"] or [[letter["subject"]]], "signature": p["signature"]}, autoescape=True)
    out = io.BytesIO()
    tpl.save(out)
    return out.getvalue()


def text_of(docx_bytes: bytes) -> str:
    """The paragraphs of a DOCX as text, one a line (python-docx): how a test reads it back."""
    from docx import Document

    return "\n".join(p.text for p in Document(io.BytesIO(docx_bytes)).paragraphs)


def filename(number: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]", "", number) + ".docx"
