"""A bill as people see it: the printable page (charges with their ordinance, payment terms,
the surcharge table, the loadings chart, lab results and violations, the permit finding) in
the documents' letter-size template (:mod:`lab.documents.pdf`), and the files
``bill-<quarter>-<site>.json``, ``.html`` and ``.pdf``.

A bill that cannot mislead: a draft says DRAFT on every page and why it is one (the
coverage of the flow readings); a volume the bill does not know is said in words, never
printed as $0.00; a charge that could not be computed says so.
"""

from __future__ import annotations

import html
import json
from datetime import date
from pathlib import Path

from lab.checks.compliance import day_ranges
from lab.documents.addressee import block_html
from lab.documents.loadings_chart import chart_series, loadings_svg
from lab.documents.pdf import Letterhead, document, write_pdf
from limits.statements import of_violation, quantity
from limits.words import analyte_name, rule_name


def money(x: float) -> str:
    return f"${x:,.2f}"


def summary(bill: dict) -> str:
    """One line for the clerk: the site, the quarter and the total, or why there is none.

    Never a bare $0.00 for a bill that could not be computed; a draft also gives the
    coverage of the flow readings.
    """
    head = f"{bill['site']:<20} {bill['quarter']}" + ("  DRAFT" if bill.get("draft") else "")
    if not bill["volume_known"]:
        if bill["charges"]:
            return (f"{head}  not a bill: volume unknown ({bill['volume_missing']}); "
                    f"{money(bill['total_dollars'])} on the partial metered volume")
        return f"{head}  not computed: volume unknown ({bill['volume_missing']})"
    if not bill["charges"]:
        why = "; ".join(bill["notes"]) or "the rates file gives no rates for this village's charges"
        return f"{head}  no charge computed ({why})"
    cov = bill.get("volume_coverage")
    tail = ""
    if bill.get("draft"):
        tail = (f"  (flow readings cover {cov * 100:.1f} % of the quarter; volume: {bill['volume_source']})"
                if cov is not None else f"  (volume: {bill['volume_source']})")
    return f"{head}  {money(bill['total_dollars']):>12}{tail}"


def _coverage_words(bill: dict) -> str:
    cov = bill.get("volume_coverage")
    return (f"flow readings cover {cov * 100:.1f} % of the quarter" if cov is not None
            else "no flow meter")


def correction_html(bill: dict) -> str:
    """A corrected bill's statement: the bill it replaces, both amounts, the difference (a
    credit when lower) and why; empty for a first bill."""
    c = bill.get("correction")
    if not c:
        return ""
    e = html.escape
    diff = (f"a credit of {money(-c['difference'])}" if c["difference"] < 0 else
            f"{money(c['difference'])} more" if c["difference"] > 0 else "no change in the amount")
    paid = f", paid {e(c['paid_on'])}" if c.get("paid_on") else ""
    return (f"<h2>Corrected bill</h2><p>This bill replaces bill {c['bill']} of {e(c['issued'])}{paid}: "
            f"{e(c['reason'].rstrip('.'))}.</p><table><tr><td>bill {c['bill']} as issued</td><td class=n>"
            f"{money(c['total_dollars'])}</td></tr><tr><td>this corrected bill</td><td class=n>"
            f"{money(bill['total_dollars'])}</td></tr><tr><th>difference</th><th class=n>{diff}</th></tr></table>")


def rate_said(r: dict) -> str:
    """Which rate applied, in words: "the rate per 1,000 gallons 4.25, fixed by Examplehaven City
    Code Sec. 22-60 (effective 2020-01-01)", or "... 4.5, the utility's rates"."""
    if r["by"] == "ordinance":
        where = f"fixed by {r['citation']}" + (f" (effective {r['effective']})" if r.get("effective") else "")
    elif r["by"] == "rates":
        where = "the utility's rates"
    else:
        where = "the ordinance's default"
    return f"{r['words']} {r['value']:g}, {where}"


def _rates_html(c: dict) -> str:
    rates = c.get("rates") or []
    return f"<br><small>{html.escape('; '.join(rate_said(r) for r in rates))}</small>" if rates else ""


def body_html(bill: dict) -> str:
    """The bill's body: everything under the letterhead."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(c['charge'])}{_rates_html(c)}</td><td>{e(c['citation'])}</td>"
                   f"<td class=n>{money(c['dollars'])}</td></tr>" for c in bill["charges"])
    if bill["charges"]:
        total_label = "total" if bill["volume_known"] else "total on the partial metered volume (not a bill)"
        charges = (f"<table><tr><th>charge</th><th>ordinance</th><th class=n>amount</th></tr>{rows}"
                   f"<tr><th colspan=2>{total_label}</th><th class=n>{money(bill['total_dollars'])}</th></tr></table>")
    elif not bill["volume_known"]:
        charges = "<p class=note>No charge computed: the quarter's volume is unknown.</p>"
    else:
        charges = "<p class=note>No charges for this period.</p>"
    # the surcharge (EPA Model No. 2) is the charge priced per analyte, whatever its name
    sur = next((c for c in bill["charges"] if "analytes" in c["detail"]), None)
    srows = ""
    if sur:
        for a, d in sur["detail"]["analytes"].items():
            srows += (f"<tr><td>{e(a)}</td><td class=n>{d['average_mg_l']:.2f}</td><td class=n>{d['base_mg_l']:.2f}</td>"
                      f"<td class=n>{d['pounds']:.2f}</td><td class=n>${d['rate_per_lb']:.4f}</td>"
                      f"<td class=n>{money(d['dollars'])}</td></tr>")
    # a limit by its words and citation, never the pack's id for it
    viol = "".join(f"<li>{e(analyte_name(v['parameter']))}: {e(quantity(v['peak'], v['unit']))}, the limit "
                   f"{e(of_violation(v))} ({e(v['start'][:10])}; {e(v['citation'])})"
                   + (f"<br><small>{e(v['stricter_of'])}</small>" if v.get("stricter_of") else "") + "</li>"
                   for v in bill["violations"]) or "<li>none</li>"
    incomplete = "".join(f"<p class=note>{e(x['note'])} ({e(rule_name(x['rule']))}, sample {e(x.get('sample', ''))})</p>"
                         for x in bill.get("incomplete", []))
    days = "".join(f"<tr><td>{e(rule_name(d['rule']))}</td><td class=n>{d['days']}</td><td>{e(day_ranges(d['dates']))}</td>"
                   f"<td>{e(d['citation'] or '')}</td></tr>" for d in bill.get("days_of_violation", []))
    days_html = ("<h2>Days of violation</h2><p>Each day a condition contrary to the ordinance exists is a separate "
                 "violation; two episodes on one day are one day.</p><table><tr><th>limit</th><th class=n>days</th>"
                 "<th>dates</th><th>ordinance</th></tr>" + days + "</table>") if days else ""
    held = bill.get("permit_standing")
    standing_html = ""
    if held:
        words = {"in-force": "in force", "renewal-due": "renews automatically unless notice is given",
                 "expires-soon": "ends", "expired": "EXPIRED", "not-yet-effective": "not yet in effect"}
        when = held["ends"] if held["state"] == "expired" else held["term_end"]
        standing_html = (f"<p>Discharge permit {e(held['permit'])}: {e(words.get(held['state'], held['state']))}"
                         f" (term ends {e(when)}; {e(held['citation'] or '')}).</p>")
    pay = bill["payment"]
    pay_html = (f"<p>Due {e(pay['due'])}: {e(pay['terms'])} ({e(pay['citation'])}).</p>"
                if pay and bill["volume_known"] and not bill.get("draft") else "")
    if bill["volume_mg"] is not None and bill["volume_known"]:
        vol = f"{bill['volume_mg']:.4f} MG ({e(bill.get('volume_basis') or bill['volume_source'])})"
    elif bill["volume_mg"] is not None:
        vol = f"<b>unknown</b>: {e(bill['volume_missing'])}; the readings give {bill['volume_mg']:.4f} MG"
    else:
        vol = f"<b>unknown</b>: {e(bill['volume_missing'] or bill['volume_source'])}"
    notes = "".join(f"<p class=note>{e(n)}</p>" for n in bill["notes"])
    res = "".join(f"<tr><td>{e(r.get('local_date') or r['collected'][:10])}</td><td>{e(r['sample'])}</td>"
                  f"<td>{e(r['analyte'])}</td><td class=n>{'&lt;' if r['non_detect'] else ''}{r['mg_l']:g}</td></tr>"
                  for r in bill["results"])
    res = ("<table><tr><th>collected</th><th>sample</th><th>analyte</th><th class=n>mg/l</th></tr>" + res + "</table>"
           if res else "<p>No lab results this quarter.</p>")
    permit = bill.get("discharge_permit")
    if permit and permit["required"]:
        why = "; ".join(f"{e(r['criterion'])} {r['value']:,.1f} {e(r['unit'])} {e(r['comparison'])} "
                        f"{r['threshold']:,g} ({e(r['citation'])})" for r in permit["reasons"])
        permit_html = f"<p><b>A wastewater discharge permit is required</b>: {why}.</p>"
    elif permit and permit["checked"]:
        permit_html = "<p>No discharge permit criterion is met this quarter.</p>"
    else:
        permit_html = ""
    surcharge = ("<h2>Surcharge</h2><table><tr><th>analyte</th><th class=n>average mg/l</th><th class=n>base mg/l</th>"
                 "<th class=n>pounds</th><th class=n>rate</th><th class=n>amount</th></tr>" + srows + "</table>"
                 if sur else "")
    kind = ("Draft " if bill.get("draft") else "") + ("corrected sewer bill" if bill.get("correction") else "sewer bill")
    kind = kind[:1].upper() + kind[1:]
    note = chart_series(bill)["note"]
    chart_note = f"<p class=note>{e(note[:1].upper() + note[1:])}.</p>" if note else ""
    # the addressee from the address book, kept in the bill (a bill from before it: the name alone)
    user = f"<b>{e(bill['name'])}</b> ({e(bill['site'])}){', permit ' + e(bill['permit']) if bill.get('permit') else ''}"
    return f"""<h1>{kind}, {e(bill['quarter'])}: {e(bill['name'])}</h1>
<p>{block_html(bill.get('mail_to'), user, label="Bill to") if 'mail_to' in bill else user}<br>
{('Draft of ' + e(bill['issued']) + ', not issued') if bill.get('draft') else 'Issued ' + e(bill['issued'])}. Period {e(bill['period_start'][:10])} to {e(bill['period_end'][:10])} (exclusive).<br>
Volume: {vol}.{('<br>' + e(bill['rates_version'][:1].upper() + bill['rates_version'][1:]) + '.') if bill.get('rates_version') else ''}</p>
{correction_html(bill)}<h2>Charges</h2>{charges}
{pay_html}{notes}
{surcharge}
<h2>Loadings</h2><div class="chart">{loadings_svg(bill)}</div>{chart_note}
<h2>Lab results</h2>{res}
<h2>Lab violations</h2><ul>{viol}</ul>{incomplete}
{days_html}
{standing_html}{permit_html}"""


def render_html(bill: dict, head: Letterhead | None = None) -> str:
    """The printable HTML bill (the loadings chart inline)."""
    head = head or Letterhead(village=bill.get("village") or "Sewer utility")
    draft = bool(bill.get("draft"))
    footer = f"Sewer bill {bill['quarter']}, {bill['name']}" + (f": DRAFT, {_coverage_words(bill)}" if draft else "")
    return document(f"Sewer bill {bill['quarter']} {bill['name']}", body_html(bill), head,
                    issued=None if draft else date.fromisoformat(bill["issued"]),
                    draft="DRAFT: not issued" if draft else None, footer=footer)


def render_pdf(bill: dict, head: Letterhead) -> bytes:
    """The bill's PDF as the office serves it and the year's export keeps it: its stored
    document (``detail``) drawn on the utility's letterhead, dated the day it was issued (a
    draft: undated, marked as one). The same document gives the same bytes."""
    b = {**bill, "village": head.village}
    return write_pdf(render_html(b, head), issued=None if b.get("draft") else date.fromisoformat(b["issued"]))


def write_bills(bills: list[dict], out_dir: str | Path, head: Letterhead | None = None) -> list[Path]:
    """Write ``bill-<quarter>-<site>.json``, ``.html`` and ``.pdf`` for each bill (a draft's
    names end in ``-draft``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for b in bills:
        stem = out / f"bill-{b['quarter']}-{b['site']}{'-draft' if b.get('draft') else ''}"
        page = render_html(b, head)
        stem.with_suffix(".json").write_text(json.dumps(b, indent=2) + "\n", encoding="utf-8")
        stem.with_suffix(".html").write_text(page, encoding="utf-8")
        write_pdf(page, stem.with_suffix(".pdf"), issued=None if b.get("draft") else date.fromisoformat(b["issued"]))
        paths += [stem.with_suffix(".json"), stem.with_suffix(".html"), stem.with_suffix(".pdf")]
    return paths
