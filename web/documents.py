"""Documents in the office: the PDFs people receive (notices, bills, reports) rendered by
the package that makes them, kept a while, and shown page by page as pictures of the PDF
itself (``pdftoppm``), so the preview in the browser is the document the user will get,
on a phone as on a desktop, without a PDF viewer in the page.

A document is named by what it is drawn from (a notice's number, revision and issue date;
a bill's id): the same name gives the same bytes, so a cached copy is never stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from litestar.response import Response

#: Documents kept in memory (a notice's PDF and its pages are a few hundred kB).
KEEP = 24


class Documents:
    """A small cache of rendered documents: name -> (PDF bytes, page PNGs or None)."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self._items: OrderedDict[str, list] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[str, threading.Lock] = {}

    def pdf(self, name: str, make: Callable[[], bytes]) -> bytes:
        """The PDF ``name``, made by ``make()`` once (a second request waits for the first)."""
        with self._lock:
            hit = self._items.get(name)
            if hit is not None:
                self._items.move_to_end(name)
                return hit[0]
            lock = self._making.setdefault(name, threading.Lock())
        with lock:
            with self._lock:
                hit = self._items.get(name)
            if hit is not None:
                return hit[0]
            pdf = make()
            with self._lock:
                self._items[name] = [pdf, None]
                while len(self._items) > self.keep:
                    self._items.popitem(last=False)
                self._making.pop(name, None)
            return pdf

    def pages(self, name: str, make: Callable[[], bytes]) -> list[bytes]:
        """The PDF's pages as PNG pictures."""
        from lab.documents.pdf import page_pngs

        pdf = self.pdf(name, make)
        with self._lock:
            hit = self._items.get(name)
            if hit is not None and hit[1] is not None:
                return hit[1]
        pngs = page_pngs(pdf)
        with self._lock:
            if name in self._items:
                self._items[name][1] = pngs
        return pngs


def download(content: bytes, filename: str, media_type: str, *, attachment: bool = True) -> Response:
    """A file for the browser to save (or, ``attachment=False``, to show)."""
    how = "attachment" if attachment else "inline"
    return Response(content, media_type=media_type, headers={"content-disposition": f'{how}; filename="{filename}"'})
