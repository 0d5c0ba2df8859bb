"""Files people upload to the portal: size and type limited, kept in the
database (never under the web root), served only to those allowed, names never trusted.

A file's type is what its bytes are, not what the browser or the name says: a lab CSV is
text (UTF-8, no NUL byte), a lab report a PDF (``%PDF-``), an attachment a PDF, PNG, JPEG or
plain text. The name is kept only to show it: its last path part, control characters and
anything but letters, digits, ``.``, ``-``, ``_``, spaces and parentheses removed, at most
:data:`NAME_MAX` characters; files are stored and served by number. Served with the type found
here, ``Content-Disposition: attachment`` (the cleaned name) and ``nosniff`` by the portal's
pages, so no upload is ever run as a page.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from foundation.errors import InputError

#: Longest file name kept [characters].
NAME_MAX = 100
#: The roles a file has in a draft, and the kinds each accepts.
ROLES = {"lab-csv": ("csv",), "lab-report": ("pdf",), "attachment": ("pdf", "png", "jpeg", "text")}
MEDIA = {"csv": "text/csv", "pdf": "application/pdf", "png": "image/png", "jpeg": "image/jpeg", "text": "text/plain"}
KIND_WORDS = {"csv": "a CSV file (text)", "pdf": "a PDF", "png": "a PNG image", "jpeg": "a JPEG image",
              "text": "a text file"}


@dataclass(frozen=True)
class Upload:
    role: str
    name: str
    media_type: str
    content: bytes

    @property
    def size(self) -> int:
        return len(self.content)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


def clean_name(name: str | None, fallback: str = "upload") -> str:
    """A file name safe to show and to put in a header: never a path, never a control character."""
    base = re.split(r"[\\/]", str(name or ""))[-1]
    base = re.sub(r"[^A-Za-z0-9._()\- ]+", "_", base).strip(" ._")
    base = re.sub(r"_+", "_", base)
    return (base or fallback)[:NAME_MAX]


def sniff(content: bytes) -> str | None:
    """What the bytes are: ``pdf``, ``png``, ``jpeg``, ``text`` (UTF-8, no NUL) or None."""
    if content.startswith(b"%PDF-"):
        return "pdf"
    if content.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if content.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if b"\x00" in content:
        return None
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "text"


def check(role: str, name: str | None, content: bytes, max_bytes: int) -> Upload:
    """An upload that may be kept, or :class:`InputError` saying what is wrong with it."""
    if role not in ROLES:
        raise InputError(f"unknown kind of file {role!r}")
    shown = clean_name(name)
    if not content:
        raise InputError(f"{shown}: the file is empty")
    if len(content) > max_bytes:
        raise InputError(f"{shown}: {len(content) / 1e6:.1f} MB is larger than the {max_bytes / 1e6:g} MB the portal "
                         "takes in one file")
    kind = sniff(content)
    wanted = ROLES[role]
    if role == "lab-csv" and kind == "text":
        kind = "csv"
    if kind not in wanted:
        raise InputError(f"{shown}: expected {' or '.join(KIND_WORDS[k] for k in wanted)}; the file is "
                         f"{KIND_WORDS.get(kind, 'something else (binary)')}")
    return Upload(role, shown, MEDIA[kind], content)

