"""A letter template rendered: sandboxed, escaped, strict, and its errors in one line.

Staff write these templates, so they are rendered by Jinja2's
:class:`jinja2.sandbox.SandboxedEnvironment` (no access to Python's insides:
``{{ ''.__class__ }}`` is refused), with autoescape (a name with ``<`` or ``&`` prints as
text) and :class:`jinja2.StrictUndefined` (a misspelt variable is an error, not a blank in a
letter that goes out). Every error is one line naming the template and the line:
``the letter template warning-letter, line 7: 'permt' is not something a letter knows``.

The rendered body goes into the page of every printed document
(:func:`lab.documents.pdf.document`: the letterhead, page numbers) and through WeasyPrint
(:func:`lab.documents.pdf.write_pdf`).
"""

from __future__ import annotations

import re
import traceback
from datetime import date

import jinja2
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from foundation.errors import InputError
from lab.documents.pdf import Letterhead, document, page_pngs, write_pdf

#: What would make the PDF's renderer read another file or address: a picture's ``src``, a
#: style sheet, ``url(...)``, ``@import`` (a picture given inline as ``data:`` is allowed).
_FETCHES = re.compile(r"""<[^>]*?(?:\bsrc\s*=\s*(?!["']?\s*(?:data:|#))|\burl\(\s*(?!["']?\s*(?:data:|#)))|<link\b"""
                      r"""|<style\b[^>]*>[^<]*?(?:@import|\burl\(\s*(?!["']?\s*(?:data:|#)))""", re.I)
_UNDEFINED = re.compile(r"^'([^']+)' is undefined$")
_NO_ATTR = re.compile(r"^'?([^']*?)'? has no attribute '([^']+)'$")


def _filename(kind: str) -> str:
    return f"{kind}.html"


def _env(kind: str, text: str) -> SandboxedEnvironment:
    name = _filename(kind)
    loader = jinja2.FunctionLoader(lambda n: (text, name, lambda: True) if n == name else None)
    return SandboxedEnvironment(loader=loader, autoescape=True,
                                undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _line_of(exc: BaseException, kind: str) -> int | None:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == _filename(kind)]
    return lines[-1] if lines else None


def _words(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, SecurityError):
        m = re.search(r"attribute '([^']+)'", text)
        return f"{m.group(1)!r} may not be used in a letter template" if m else "not allowed in a letter template"
    if isinstance(exc, UndefinedError):
        m = _UNDEFINED.match(text)
        if m:
            return f"{m.group(1)!r} is not something a letter knows"
        m = _NO_ATTR.match(text)
        if m:
            return f"{m.group(2)!r} is not something a letter knows"
        return text
    return text or "the template could not be read"


def _refuse(kind: str, exc: BaseException, lineno: int | None) -> InputError:
    where = f", line {lineno}" if lineno else ""
    return InputError(f"the letter template {kind}{where}: {_words(exc)}")


def _compile(kind: str, text: str) -> jinja2.Template:
    try:
        return _env(kind, text).get_template(_filename(kind))
    except TemplateSyntaxError as exc:
        raise _refuse(kind, exc, exc.lineno) from None


def check(kind: str, text: str) -> None:
    """Compile ``text`` as the template of ``kind`` (nothing rendered).

    Raises
    ------
    InputError
        Its syntax is wrong, naming the line.
    """
    _compile(kind, text)


def render_body(kind: str, text: str, context: dict) -> str:
    """The letter's body (HTML) from the template ``text`` and what the letter knows.

    Raises
    ------
    InputError
        One line naming the template and the line: a syntax error, a variable the letter does
        not know, something the sandbox refuses, or any other error the template makes.
    """
    tpl = _compile(kind, text)
    try:
        body = tpl.render(**context)
    except TemplateSyntaxError as exc:
        raise _refuse(kind, exc, exc.lineno) from None
    except Exception as exc:  # noqa: BLE001 - whatever a template does wrong is one line to its writer
        raise _refuse(kind, exc, _line_of(exc, kind)) from None
    if _FETCHES.search(body):
        m = _FETCHES.search(text)
        where = f", line {text.count(chr(10), 0, m.start()) + 1}" if m else ""
        raise InputError(f"the letter template {kind}{where}: a letter may not draw on other files or addresses "
                         "(a picture may be given inline, as data:)")
    return body


def as_markup(html_text: str) -> Markup:
    """HTML the program drew (an addressee block, a notice's evidence), printed as is."""
    return Markup(html_text)


def whole_html(title: str, body: str, head: Letterhead, issued: date, number: str | None) -> str:
    """The letter as a whole printable document (letterhead, page furniture)."""
    return document(title, body, head, issued=issued, footer=number or "",
                    draft=None if number else "PREVIEW: not issued")


def pdf_of(html_text: str, issued: date) -> bytes:
    """The letter's PDF (the same HTML and date give the same bytes)."""
    return write_pdf(html_text, issued=issued)


def pngs_of(pdf: bytes) -> list[bytes]:
    """The letter's pages as PNG pictures (the office's preview)."""
    return page_pngs(pdf)
