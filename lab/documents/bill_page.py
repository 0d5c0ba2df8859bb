"""A bill as people see it: the printable HTML page (charges with their ordinance, payment
terms, the surcharge table, the loadings chart, lab results and violations, the permit
finding), and the files ``bill-<quarter>-<site>.json`` and ``.html``."""

from __future__ import annotations

import html
import json
from pathlib import Path

from lab.checks.compliance import day_ranges
from lab.documents.loadings_chart import loadings_svg


def render_html(bill: dict) -> str:
    """A printable HTML bill with the loadings chart inline."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(c['charge'])}</td><td>{e(c['citation'])}</td><td class=n>${c['dollars']:,.2f}</td></tr>"
                   for c in bill["charges"])
    # the surcharge (EPA Model No. 2) is the charge priced per analyte, whatever its name
    sur = next((c for c in bill["charges"] if "analytes" in c["detail"]), None)
    srows = ""
    if sur:
        for a, d in sur["detail"]["analytes"].items():
            srows += (f"<tr><td>{e(a)}</td><td class=n>{d['average_mg_l']:.2f}</td><td class=n>{d['base_mg_l']:.2f}</td>"
                      f"<td class=n>{d['pounds']:.2f}</td><td class=n>${d['rate_per_lb']:.4f}</td>"
                      f"<td class=n>${d['dollars']:,.2f}</td></tr>")
    viol = "".join(f"<li>{e(v['rule'])} {e(v['parameter'])}: {v['peak']:g} {e(v['unit'])} over {v['limit']:g} "
                   f"({e(v['start'][:10])}; {e(v['citation'])})"
                   + (f"<br><small>{e(v['stricter_of'])}</small>" if v.get("stricter_of") else "") + "</li>"
                   for v in bill["violations"]) or "<li>none</li>"
    incomplete = "".join(f"<p class=note>{e(x['note'])} ({e(x['rule'])}, sample {e(x.get('sample', ''))})</p>"
                         for x in bill.get("incomplete", []))
    days = "".join(f"<tr><td>{e(d['rule'])}</td><td class=n>{d['days']}</td><td>{e(day_ranges(d['dates']))}</td>"
                   f"<td>{e(d['citation'] or '')}</td></tr>" for d in bill.get("days_of_violation", []))
    days_html = ("<h2>Days of violation</h2><p>Each day a condition contrary to the ordinance exists is a separate "
                 "violation; two episodes on one day are one day.</p><table><tr><th>rule</th><th class=n>days</th>"
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
    pay_html = (f"<p>Due {e(pay['due'])}: {e(pay['terms'])} ({e(pay['citation'])}).</p>" if pay else "")
    vol = f"{bill['volume_mg']:.4f} MG ({e(bill['volume_source'])})" if bill["volume_mg"] is not None else e(bill["volume_source"])
    notes = "".join(f"<p class=note>{e(n)}</p>" for n in bill["notes"])
    res = "".join(f"<tr><td>{e(r['collected'][:10])}</td><td>{e(r['sample'])}</td><td>{e(r['analyte'])}</td>"
                  f"<td class=n>{'&lt;' if r['non_detect'] else ''}{r['mg_l']:g}</td></tr>" for r in bill["results"])
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
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Sewer bill {e(bill['quarter'])} {e(bill['name'])}</title>
<style>body{{font-family:sans-serif;max-width:48em;margin:2em auto}}table{{border-collapse:collapse;width:100%}}
td,th{{border-bottom:1px solid #ccc;padding:.2em .5em;text-align:left}}.n{{text-align:right}}
@media print{{body{{margin:0}}}}.note{{color:#a00}}</style></head><body>
<h1>Sewer bill, {e(bill['quarter'])}</h1>
<p><b>{e(bill['name'])}</b> ({e(bill['site'])}), pack {e(bill['pack'])}, issued {e(bill['issued'])}<br>
Period {e(bill['period_start'][:10])} to {e(bill['period_end'][:10])} (exclusive). Volume: {vol}.</p>
<h2>Charges</h2><table><tr><th>charge</th><th>ordinance</th><th class=n>amount</th></tr>{rows}
<tr><th colspan=2>total</th><th class=n>${bill['total_dollars']:,.2f}</th></tr></table>
{pay_html}{notes}
{"<h2>Surcharge</h2><table><tr><th>analyte</th><th class=n>average mg/l</th><th class=n>base mg/l</th><th class=n>pounds</th><th class=n>rate</th><th class=n>amount</th></tr>" + srows + "</table>" if sur else ""}
<h2>Loadings</h2>{loadings_svg(bill)}
<h2>Lab results</h2>{res}
<h2>Lab violations</h2><ul>{viol}</ul>{incomplete}
{days_html}
{standing_html}{permit_html}
</body></html>
"""


def write_bills(bills: list[dict], out_dir: str | Path) -> list[Path]:
    """Write ``bill-<quarter>-<site>.json`` and ``.html`` for each bill."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for b in bills:
        stem = out / f"bill-{b['quarter']}-{b['site']}"
        stem.with_suffix(".json").write_text(json.dumps(b, indent=2) + "\n", encoding="utf-8")
        stem.with_suffix(".html").write_text(render_html(b), encoding="utf-8")
        paths += [stem.with_suffix(".json"), stem.with_suffix(".html")]
    return paths
