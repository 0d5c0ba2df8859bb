"""A notice of the grease program (a warning letter, a notice of violation, a notice of
forfeiture or of cost recovery) as people read it: HTML and PDF, letter size, in the
documents' page template (:mod:`lab.documents.pdf`), drawn from the notice's stored document
alone (:mod:`enforcement.grease_notices`) and its issue date, so the same document and date
give the same bytes.

The page: the village's letterhead; the notice's title, number and date; the establishment;
the opening words of the guide's step; the finding; the ordinance's sections quoted with
their numbers; the evidence (the pump-out manifests: hauler, manifest number, day, gallons,
FOG and solids depths; the crew's blockage report; the establishment's findings of the last
twelve months); the amount charged with the ordinance's penalty provision quoted; what the
establishment must do and by when; who signs.
"""

from __future__ import annotations

import html
from datetime import date

from lab.documents.pdf import Letterhead, document, write_pdf

e = html.escape


def _num(v) -> str:
    return f"{float(v):,.1f}".rstrip("0").rstrip(".")


def _manifests(rows: list[dict]) -> str:
    if not rows:
        return "<p>No pump-out of the device is on record in the twelve months before the finding.</p>"
    head = ("<tr><th>pumped</th><th>device</th><th>hauler</th><th>manifest</th><th class=n>gallons</th>"
            "<th class=n>FOG [in]</th><th class=n>solids [in]</th><th>received at</th></tr>")
    body = "".join(
        f"<tr><td>{e(p['pumped_on'])}</td><td>{e(p['device'])}</td><td>{e(p['hauler'])}"
        f"{'' if p['registered'] else ' (not registered)'}</td><td>{e(p['manifest'])}</td>"
        f"<td class=n>{_num(p['gallons'])}</td><td class=n>{_num(p['fog_depth_in'])}</td>"
        f"<td class=n>{_num(p['solids_depth_in'])}</td><td>{e(p['receiving_facility'])}</td></tr>" for p in rows)
    return f"<table>{head}{body}</table>"


def _history(rows: list[dict]) -> str:
    body = "".join(f"<tr><td>{e(h['on'])}</td><td>{e(h['device'])}</td><td>{e(h['what'])}</td></tr>" for h in rows)
    return f"<table><tr><th>day</th><th>where</th><th>finding</th></tr>{body}</table>"


def body_html(doc: dict, issued_on: date) -> str:
    """The notice's body (under the letterhead)."""
    est, f = doc["establishment"], doc["finding"]
    sections = "".join(f"<p><b>{e(s['section'])} {e(s['title'])}</b></p><p class=quote>&#8220;{e(s['words'])}"
                       "&#8221;</p>" for s in doc["ordinance"])
    blockage = ""
    if doc.get("blockage"):
        b = doc["blockage"]
        blockage = (f"<h3>The sewer crew's report</h3><p>Found on {e(b['found_on'])} at {e(b['location'])} by "
                    f"{e(b['found_by'])}: {e(b['found'])}.</p>")
    amount = ""
    if doc.get("amount_dollars") is not None:
        pen = "".join(f"<p><b>{e(p['citation'])}</b></p><p class=quote>&#8220;{'&#8230;' if p['words'][:1].islower() else ''}"
                      f"{e(p['words'])}&#8221;</p>" for p in doc.get("penalties") or [])
        amount = (f"<h2>Amount due</h2><p><b>${doc['amount_dollars']:,.2f}</b>: {e(doc['amount_words'])}.</p>{pen}")
    lh = doc["letterhead"]
    sign = "".join(f"<div>{e(x)}</div>" for x in (lh.get("signed_by"), lh.get("signer_title"), lh["village"]) if x)
    contact = f"<br>{e(est['contact'])}" if est.get("contact") else ""
    return f"""<h1>{e(doc['title'])} {e(doc['number'])}</h1>
<p>Date of issue: {issued_on.isoformat()}</p>
<p><b>To:</b> {e(est['name'])}, {e(est['address'])}<br>Business licence {e(est['licence'])}{contact}</p>
<p>{e(doc['words'])}</p>
<h2>Finding</h2>
<p>{e(f['on'])}, {e(f['device'])}: {e(f['kind_words'])}: {e(f['words'])}.</p>
<p class=small>{e(f['basis'][:1].upper() + f['basis'][1:])}. This is {e(doc['occurrence'])} in the twelve months
up to it.</p>
<h2>The ordinance</h2>
{sections or '<p>The ordinance of the ' + e(lh['village']) + ' has no section on grease interceptors.</p>'}
<h2>Evidence</h2>
<h3>Pump-out manifests</h3>
{_manifests(doc['manifests'])}
{blockage}
<h3>The establishment's findings in the twelve months up to this one</h3>
{_history(doc['history'])}
{amount}
<h2>What the establishment must do</h2>
<p>{e(doc['demand'])}</p>
<p><b>Respond in writing by {e(doc['respond_by'])}</b> ({doc['respond_within_days']} days from the date of this
notice).</p>
<p class=small>Enforcement response: {e(doc['guide'])}.</p>
<div style="margin-top:24pt">{sign}</div>"""


def render(doc: dict, issued_on: date) -> tuple[str, bytes]:
    """The notice's HTML and PDF: the same document and date give the same bytes."""
    lh = doc["letterhead"]
    head = Letterhead(lh["village"], tuple(lh["lines"]), lh.get("signed_by"), lh.get("signer_title"))
    page = document(f"{doc['title']} {doc['number']}", body_html(doc, issued_on), head, issued=issued_on,
                    footer=f"{doc['number']}, {doc['establishment']['name']}")
    return page, write_pdf(page, issued=issued_on)
