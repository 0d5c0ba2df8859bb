"""Printed documents: the one page template and PDF renderer of bills, notices and reports.

Every document people print (a quarterly bill, a notice of violation, the annual pretreatment
report) is an HTML body wrapped by :func:`document` in the same letter-size page: the
village's letterhead from the config (``[utility] name`` and ``[documents] letterhead``),
a running head with the document's title on later pages, "Page n of m" at the foot, and for
a draft the word DRAFT across every page and in the head. :func:`write_pdf` renders it with
WeasyPrint (a maintained HTML/CSS-to-PDF library: pages, counters, running heads and inline
SVG charts without a browser).

Reproducible: the same HTML and the same issue date give the same bytes. The PDF's creation
date is the document's issue date (``dcterms.created``), never the clock, and font subsets
are stamped with it too (``SOURCE_DATE_EPOCH``, which fontTools honours where WeasyPrint
subsets through it instead of HarfBuzz).

Reading a PDF back as people see it: :func:`pdf_text` (poppler's ``pdftotext``) and
:func:`page_png` (``pdftoppm``), both from Debian's ``poppler-utils`` (``scripts/setup``).
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Annotated

from foundation.errors import ConfigError, InputError
from foundation.schema import Table, check, dotted, is_text, table, validate

#: The page of every document: US letter (8.5 x 11 in), as the village prints and mails it.
PAGE_SIZE = "letter"

_CSS = """
@page { size: %(size)s; margin: 0.85in 0.75in 0.8in 0.75in;
  @top-left { content: string(village); font: 8pt sans-serif; color: #555; }
  @top-right { content: string(doctitle); font: 8pt sans-serif; color: #555; }
  @top-center { content: "%(draft)s"; font: bold 10pt sans-serif; color: #b00000; }
  @bottom-left { content: "%(footer)s"; font: 7.5pt sans-serif; color: #555; }
  @bottom-right { content: "Page " counter(page) " of " counter(pages); font: 8pt sans-serif; color: #333; }
}
@page :first { @top-left { content: none; } @top-right { content: none; } }
html { font: 10pt/1.35 "DejaVu Sans", sans-serif; color: #111; }
body { margin: 0; }
.letterhead { border-bottom: 2px solid #1d3d63; padding-bottom: 4pt; margin-bottom: 12pt; }
.letterhead .village { font-size: 15pt; font-weight: bold; color: #1d3d63; string-set: village content(); }
.letterhead .line { font-size: 8.5pt; color: #333; }
h1 { font-size: 14pt; margin: 6pt 0 6pt; string-set: doctitle content(); }
h2 { font-size: 11.5pt; margin: 12pt 0 4pt; color: #1d3d63; page-break-after: avoid; }
h3 { font-size: 10pt; margin: 8pt 0 3pt; page-break-after: avoid; }
table { border-collapse: collapse; width: 100%%; margin: 3pt 0 6pt; }
td, th { border-bottom: 0.5pt solid #bbb; padding: 2pt 4pt; text-align: left; vertical-align: top; }
th { background: #eef2f7; font-weight: bold; }
tr { page-break-inside: avoid; }
.n { text-align: right; white-space: nowrap; }
.note { color: #a00000; }
.quote { margin: 3pt 0 6pt 12pt; padding-left: 6pt; border-left: 2pt solid #1d3d63; font-style: italic; }
.cite { color: #333; font-size: 9pt; }
.small { font-size: 8.5pt; color: #333; }
.chart svg { width: 100%%; height: auto; }
.watermark { position: fixed; top: 3.6in; left: 0.2in; font: bold 110pt sans-serif; color: rgba(176, 0, 0, 0.13);
  transform: rotate(-35deg); }
@media screen { body { max-width: 52em; margin: 2em auto; } .watermark { position: absolute; } }
"""


@dataclass(frozen=True)
class Letterhead:
    """Who the document comes from: the village and the lines under its name.

    Attributes
    ----------
    village : str
        ``[utility] name`` of the config.
    lines : tuple of str
        ``[documents] letterhead``: department, address, telephone, as printed under the name.
    signed_by, signer_title : str or None
        ``[documents] signed_by`` and ``signer_title``: who signs notices.
    """

    village: str
    lines: tuple[str, ...] = ()
    signed_by: str | None = None
    signer_title: str | None = None

    def html(self) -> str:
        e = html.escape
        return ('<div class="letterhead"><div class="village">' + e(self.village) + "</div>"
                + "".join(f'<div class="line">{e(x)}</div>' for x in self.lines) + "</div>")


#: who signs notices, or their title
Signer = Annotated[str, check(is_text, "a non-empty string", got=repr)]


@table
class Documents(Table):
    """``[documents]`` of the config: the letterhead of printed documents."""

    letterhead: Annotated[tuple[str, ...], check(lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                                                 "a list of lines (strings)", tuple)] = ()
    """Department, address, telephone, as printed under the utility's name."""
    signed_by: Signer | None = None
    """Who signs notices."""
    signer_title: Signer | None = None
    """Their title."""
    letters: Signer | None = None
    """The folder of the utility's letter templates, relative to the config file's folder
    (``enforcement/letters``)."""


def documents_table(cfg) -> Documents:
    """``[documents]`` of a config, validated (:func:`letterhead` says how it fails)."""
    return validate(Documents, getattr(cfg, "documents", {}) or {}, getattr(cfg, "path", "<config>"), ConfigError,
                    label=lambda loc: f"documents.{dotted(loc)}")


def letterhead(cfg) -> Letterhead:
    """The letterhead of a config (``[utility] name``, ``[documents]``), validated.

    Raises
    ------
    ConfigError
        Naming the file and the key, e.g. ``village.toml: documents.letterhead: expected a list
        of lines (strings), got int 3``.
    """
    d = documents_table(cfg)
    return Letterhead(village=cfg.name, lines=d.letterhead, signed_by=d.signed_by, signer_title=d.signer_title)


def _css_string(text: str) -> str:
    """``text`` as the inside of a CSS string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def document(title: str, body: str, head: Letterhead, *, issued: date | None = None, draft: str | None = None,
             footer: str = "") -> str:
    """A whole printable HTML document: letterhead, title, ``body``, page furniture.

    Parameters
    ----------
    title : str
        The document's title (``<title>``, the running head of pages 2 ff.).
    body : str
        HTML after the letterhead; its first ``<h1>`` is the title people read.
    head : Letterhead
    issued : date, optional
        The issue date: the PDF's creation date. None for a document not issued (a draft).
    draft : str, optional
        Marks every page: the word DRAFT across the page and this text in the head (e.g.
        "DRAFT: not issued").
    footer : str
        The foot of every page, left (e.g. the notice's number).
    """
    e = html.escape
    css = _CSS % {"size": PAGE_SIZE, "draft": _css_string(draft or ""), "footer": _css_string(footer)}
    meta = f'<meta name="dcterms.created" content="{issued.isoformat()}">' if issued else ""
    mark = '<div class="watermark">DRAFT</div>' if draft else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f'<meta name="generator" content="sewerwatch">{meta}<style>{css}</style></head>\n'
            f"<body>{mark}{head.html()}\n{body}\n</body></html>\n")


_render_lock = threading.Lock()


def _epoch(issued: date | None) -> int:
    if issued is None:
        return 0
    return int(datetime.combine(issued, time(0), tzinfo=timezone.utc).timestamp())


def write_pdf(html_text: str, path: str | Path | None = None, *, issued: date | None = None) -> bytes:
    """Render a document of :func:`document` to PDF (WeasyPrint); write it to ``path`` if given.

    Parameters
    ----------
    html_text : str
        The whole document.
    issued : date, optional
        The issue date the document carries (its fonts are stamped with it): the same
        ``html_text`` and ``issued`` give the same bytes.

    Returns
    -------
    bytes
        The PDF.
    """
    # lazy: WeasyPrint (Pango through cffi) takes about a second to import, and only the
    # commands that print need it
    import weasyprint

    with _render_lock:   # SOURCE_DATE_EPOCH is process-wide
        before = os.environ.get("SOURCE_DATE_EPOCH")
        os.environ["SOURCE_DATE_EPOCH"] = str(_epoch(issued))
        try:
            pdf = weasyprint.HTML(string=html_text, base_url=str(Path.cwd())).write_pdf()
        finally:
            if before is None:
                os.environ.pop("SOURCE_DATE_EPOCH", None)
            else:
                os.environ["SOURCE_DATE_EPOCH"] = before
    if path is not None:
        Path(path).write_bytes(pdf)
    return pdf


def _poppler(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        raise InputError(f"{tool} not found: install Debian's poppler-utils (scripts/setup does)")
    return exe


@contextlib.contextmanager
def _as_file(pdf: str | Path | bytes):
    """A PDF given as a path or as bytes, as a path (a temporary file for bytes)."""
    if not isinstance(pdf, (bytes, bytearray)):
        yield Path(pdf)
        return
    with tempfile.TemporaryDirectory(prefix="sewerwatch-pdf-") as tmp:
        src = Path(tmp) / "in.pdf"
        src.write_bytes(pdf)
        yield src


def _poppler_out(tool: str, pdf: str | Path | bytes, *args: str) -> str:
    """What a poppler tool prints for a PDF."""
    with _as_file(pdf) as src:
        return subprocess.run([_poppler(tool), *args, str(src), *(["-"] if tool == "pdftotext" else [])],
                              check=True, capture_output=True, text=True, timeout=60).stdout


def pdf_text(pdf: str | Path | bytes, layout: bool = True) -> str:
    """The text of a PDF as ``pdftotext`` reads it (pages separated by form feeds): laid out
    as on the page (``-layout``), or with ``layout=False`` in the order it was written
    (``-raw``: a table row stays one line)."""
    return _poppler_out("pdftotext", pdf, "-enc", "UTF-8", "-layout" if layout else "-raw")


def page_count(pdf: str | Path | bytes) -> int:
    """How many pages a PDF has (the form feeds ``pdftotext`` puts after each page)."""
    return pdf_text(pdf, layout=False).count("\f")


def page_size(pdf: str | Path | bytes) -> str:
    """The first page's size as ``pdfinfo`` gives it, e.g. ``612 x 792 pts (letter)``."""
    out = _poppler_out("pdfinfo", pdf)
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Page size:"))


def page_png(pdf: str | Path, png: str | Path, page: int = 1, dpi: int = 70) -> Path:
    """Page ``page`` of a PDF as a PNG picture (``pdftoppm``), e.g. for a README."""
    png = Path(png)
    stem = png.with_suffix("")
    subprocess.run([_poppler("pdftoppm"), "-png", "-r", str(dpi), "-f", str(page), "-l", str(page),
                    "-singlefile", str(pdf), str(stem)], check=True, capture_output=True, timeout=60)
    return stem.with_suffix(".png")


def page_pngs(pdf: bytes, dpi: int = 96, max_pages: int = 20) -> list[bytes]:
    """Every page of a PDF (at most ``max_pages``) as PNG pictures (``pdftoppm``): how the
    office previews a document exactly as it will be printed or sent."""
    with tempfile.TemporaryDirectory(prefix="sewerwatch-png-") as tmp:
        src = Path(tmp) / "in.pdf"
        src.write_bytes(pdf)
        subprocess.run([_poppler("pdftoppm"), "-png", "-r", str(dpi), "-l", str(max_pages), str(src),
                        str(Path(tmp) / "page")], check=True, capture_output=True, timeout=120)
        return [p.read_bytes() for p in sorted(Path(tmp).glob("page-*.png"), key=lambda p: int(p.stem.split("-")[-1]))]
