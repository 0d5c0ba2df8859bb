"""The paper list of a batch: who gets their documents by post (no e-mail address on file, or
the contact prefers paper), with their names, addresses and what to print; and who has no
address at all. A page (the office), a PDF of the list, and one PDF of the list followed by
every document on it, to print at once (joined by poppler's ``pdfunite``, installed with
``pdftotext``).
"""

from __future__ import annotations

import html
import shutil
import subprocess
import tempfile
from datetime import date
from pathlib import Path

from ereport.mailing.batches import batch
from ereport.mailing.kinds import kind
from foundation.errors import InputError

e = html.escape


def paper_list(conn, batch_id: int) -> dict:
    """Batch ``batch_id``'s ``paper`` items (grouped by addressee: ``letters``, each with its
    ``documents``) and ``nowhere`` (the items with no address on file)."""
    b = batch(conn, batch_id)
    letters: dict[tuple, dict] = {}
    for it in b["by_channel"]["paper"]:
        key = (it["recipient"], it["person"], tuple(it["lines"]))
        letters.setdefault(key, {"recipient": it["recipient"], "person": it["person"], "lines": it["lines"],
                                 "why": it["why"], "documents": []})["documents"].append(it)
    return {"batch": b, "letters": list(letters.values()), "nowhere": b["by_channel"]["none"]}


def list_html(p: dict) -> str:
    """The list's body (HTML) for :func:`lab.documents.pdf.document`."""
    b = p["batch"]
    rows = []
    for n, L in enumerate(p["letters"], 1):
        who = "<br>".join(e(x) for x in [*(filter(None, [L["person"], L["recipient"]])), *L["lines"]])
        docs = "<br>".join(f"{e(d['kind_words'])} {e(d['number'])}: {e(d['title'])}" for d in L["documents"])
        rows.append(f"<tr><td>{n}</td><td>{who}</td><td>{docs}</td><td>{e(L['why'] or '')}</td></tr>")
    body = (f"<h1>Paper list of mail batch {b['id']}</h1><p>{len(p['letters'])} envelopes, "
            f"{sum(len(L['documents']) for L in p['letters'])} documents to print and post.</p>"
            "<table><thead><tr><th>#</th><th>To</th><th>What to print</th><th>Why paper</th></tr></thead>"
            f"<tbody>{''.join(rows) or '<tr><td colspan=4>Nobody: every document goes by e-mail.</td></tr>'}</tbody>"
            "</table>")
    if p["nowhere"]:
        body += ("<h2>No address on file</h2><p>These cannot be sent until an address is on file:</p><ul>"
                 + "".join(f"<li>{e(it['recipient'])}: {e(it['kind_words'])} {e(it['number'])} ({e(it['why'] or '')})"
                           "</li>" for it in p["nowhere"]) + "</ul>")
    return body


def list_pdf(conn, batch_id: int, cfg, on: date) -> bytes:
    """The paper list as a PDF, dated ``on`` (the village's today)."""
    from lab.documents.pdf import document, letterhead, write_pdf

    p = paper_list(conn, batch_id)
    return write_pdf(document(f"Paper list of mail batch {batch_id}", list_html(p), letterhead(cfg), issued=on),
                     issued=on)


def print_pdf(conn, batch_id: int, cfg, on: date) -> bytes:
    """The paper list followed by every document on it, one PDF to print.

    Raises
    ------
    InputError
        Nothing on the paper list, or ``pdfunite`` missing.
    """
    p = paper_list(conn, batch_id)
    docs = [d for L in p["letters"] for d in L["documents"]]
    if not docs:
        raise InputError(f"batch {batch_id} has nothing to print: every document goes by e-mail or has no address")
    tool = shutil.which("pdfunite")
    if tool is None:
        raise InputError("printing the documents in one file needs pdfunite (poppler-utils): run scripts/setup")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / "0.pdf"]
        paths[0].write_bytes(list_pdf(conn, batch_id, cfg, on))
        for n, d in enumerate(docs, 1):
            paths.append(Path(tmp) / f"{n}.pdf")
            paths[-1].write_bytes(kind(d["kind"]).pdf(conn, d["document_id"], cfg))
        out = Path(tmp) / "all.pdf"
        subprocess.run([tool, *map(str, paths), str(out)], check=True, capture_output=True, timeout=120)
        return out.read_bytes()
