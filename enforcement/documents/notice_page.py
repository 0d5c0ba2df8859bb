"""A notice of violation (or an order after one) as people read it: HTML and PDF, letter size,
in the documents' page template (:mod:`lab.documents.pdf`), drawn from the notice's stored
document alone (:mod:`enforcement.notices`) and its issue date.

The page: the village's letterhead; the notice's title, number and date; the industrial user
and its permit; what the village finds; the requirement violated in the ordinance's words
with its citation by the ordinance's title; the evidence (a chart of the episode's readings
with the limit drawn and their figures, or the lab results with the laboratory and the
sample ids, or the report or schedule data); the days of violation and the forfeiture range
the ordinance sets for them; the corrective action and the report demanded; the response
deadline; who signs. A draft says DRAFT on every page.
"""

from __future__ import annotations

import html
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from enforcement.documents.episode_chart import episode_svg
from lab.documents.addressee import block_html
from lab.documents.pdf import Letterhead, document, write_pdf
from limits.statements import quantity, stated
from limits.words import analyte_name, term

e = html.escape


def _local(iso: str, tz: str) -> str:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M %Z")


def _readings_evidence(ev: dict, tz: str) -> str:
    unit = ev.get("unit") or ""
    rows = [("Sensor", f"{ev.get('sensor') or ''} ({ev['parameter']})"),
            ("Episode" if ev.get("episodes", 1) == 1 else "From the first episode to the last",
             f"{_local(ev['start'], tz)} to {_local(ev['end'], tz)}"),
            ("Most extreme reading", quantity(ev["peak"], unit) + (f" at {_local(ev['peak_time'], tz)}"
                                                                   if ev.get("peak_time") else "")),
            ("Limit", ev.get("stated") or stated(ev.get("comparison"), ev["limit"], unit, "reading"))]
    if ev.get("episodes", 1) > 1:
        rows.append(("Episodes", f"{ev['episodes']} (the readings returned within the limit between them)"))
    if ev.get("readings_in_episode"):
        rows.append(("Readings beyond the limit", f"{ev['readings_in_episode']}"))
    rows.append(("Readings drawn", f"{len(ev['points'])} from {_local(ev['from'], tz)} to {_local(ev['to'], tz)}"))
    for w in ev.get("maintenance") or []:      # the instrument's maintenance, its readings not judged
        span = f"{_local(w['start'], tz)} to {_local(w['end'], tz)}" if w.get("end") else f"from {_local(w['start'], tz)}"
        rows.append((f"Maintenance window {w['id']}", f"{span}: {w['reason']}, {w['person']} ({w['source']}); "
                                                      "its readings were not judged (hatched on the chart)"))
    for d in ev.get("drift") or []:        # a grab sample found the probe drifting
        span = f"from {_local(d['from'], tz)}" + (f" to {_local(d['until'], tz)}" if d.get("until") else ", not calibrated since")
        rows.append(("Sensor drift", f"{span}: {d['detail']}; readings judged in that time may be off by as much"))
    table = "".join(f"<tr><th>{e(a)}</th><td>{e(b)}</td></tr>" for a, b in rows)
    return f'<div class="chart">{episode_svg(ev, tz)}</div><table>{table}</table>'


def _occurrence(n: int) -> str:
    """``the first finding of this kind`` (the guide's recurrence, in words)."""
    words = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}
    return f"the {words.get(n, f'{n}th')} finding of this kind"


def _lab_evidence(ev: dict, tz: str) -> str:
    """The lab results behind the finding, each named as the user's own records name it: its
    sample id, when it was collected, the analyte, the value, the method and the sample type
    (a corrected result says so); never the file or line it was imported from (staff see that
    provenance on the office's pages)."""
    labs = sorted({s["laboratory"] or "not given in the lab's file" for s in ev["samples"]})
    head = ("<tr><th>sample id</th><th>collected</th><th>analyte</th><th class=n>mg/l</th><th>method</th>"
            "<th>sample type</th></tr>")
    rows = "".join(
        f"<tr><td class=n>{e(s['sample'])}</td><td>{e(_local(s['collected'], tz))}</td>"
        f"<td>{e(analyte_name(s['analyte']))}</td><td class=n>{'&lt;' if s['non_detect'] else ''}{s['mg_l']:g}</td>"
        f"<td style='white-space:nowrap'>{e(s['method'] or '')}</td><td class=small>{e(term(s.get('sample_type')))}"
        f"{'; corrected (version ' + str(s['version']) + ')' if s['version'] and s['version'] > 1 else ''}</td></tr>"
        for s in ev["samples"])
    basis = f"<p>{e(_lab_basis(ev))}</p>" if ev.get("limit") is not None else ""
    return (f"<p>Laborator{'ies' if len(labs) > 1 else 'y'}: {e('; '.join(labs))}</p>"
            f"<table>{head}{rows}</table>{basis}")


def _lab_basis(ev: dict) -> str:
    """What the results are measured against, in the limit's own words: a monthly average
    against the month's average of the results listed, a daily maximum against the day's
    mean, a loading against the day's metered volume, each sample against itself."""
    limit = ev.get("stated") or stated(ev.get("comparison"), ev["limit"], ev.get("unit") or "mg/l",
                                       ev.get("statistic"))
    st, avg, n = ev.get("statistic"), ev.get("average_mg_l"), ev.get("results") or len(ev.get("samples") or [])
    if st == "monthly-average" and avg is not None:
        return f"The average of these {n} results, the month {ev.get('month')}, is {avg:g} mg/l; the limit is {limit}."
    if st == "weekly-average" and avg is not None:
        return f"The average of these {n} results, the week of Sunday {ev.get('week')}, is {avg:g} mg/l; the limit is {limit}."
    if st == "rolling-30-day" and avg is not None and ev.get("window"):
        a, b = ev["window"]
        return f"The average of these {n} results, the 30 days {a} to {b}, is {avg:g} mg/l; the limit is {limit}."
    if st == "period-average" and avg is not None:
        return f"The average of these {n} results is {avg:g} mg/l; the limit is {limit}."
    if st == "daily-maximum" and avg is not None and n > 1:
        return f"The mean of these {n} results of {ev.get('day')} is {avg:g} mg/l; the limit is {limit}."
    if st == "daily-loading" and ev.get("day_volume_gal") is not None:
        lower = " (at least: the day's flow readings are incomplete)" if ev.get("lower_bound") else ""
        return (f"The loading of {ev.get('day')}: the result x the day's metered {ev['day_volume_gal']:,.0f} gallons "
                f"x 8.34 = {ev['peak']:g} lb/day{lower}; the limit is {limit}.")
    if st == "each":
        return f"Prohibited: a result {limit}."
    return f"The limit is {limit}."


def _flow_evidence(ev: dict) -> str:
    """A permit's flow condition: the day's metered volume, or the month's average of whole days."""
    if ev.get("statistic") == "monthly-average":
        days = ev.get("metered_days") or []
        what = (f"The average daily flow of the {ev.get('days')} days of {ev.get('month')} metered whole"
                + (f" ({', '.join(days)})" if days else "") + f" is {quantity(ev['peak'], ev['unit'])}")
    else:
        lower = " (at least: the day's flow readings are incomplete)" if ev.get("lower_bound") else ""
        what = f"The metered flow of {ev.get('day')} is {quantity(ev['peak'], ev['unit'])}{lower}"
    return f"<p>{e(what)}; the limit is {e(ev.get('stated') or '')}.</p>"


_SKIP = {"kind", "snc_criterion"}


def _facts_evidence(ev: dict) -> str:
    rows = "".join(f"<tr><th>{e(str(k).replace('_', ' '))}</th><td>{e(_plain(v))}</td></tr>"
                   for k, v in ev.items() if k not in _SKIP and v is not None and k != "criteria")
    out = f"<table>{rows}</table>" if rows else ""
    for c in ev.get("criteria", []):
        out += (f"<h3>({e(c['criterion'])}) {e(c['title'])}</h3><p class=quote>{e(c['words'])}</p>"
                + "".join(f"<p class=small>{e(x)}</p>" for x in c["explanation"]))
    return out


def _plain(v) -> str:
    if isinstance(v, list):
        return ", ".join(_plain(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_plain(x)}" for k, x in v.items())
    return str(v)


def evidence_html(doc: dict) -> str:
    ev, tz = doc["evidence"], doc["timezone"]
    if ev.get("kind") == "readings":
        return _readings_evidence(ev, tz)
    if ev.get("kind") == "lab":
        return _lab_evidence(ev, tz)
    if ev.get("kind") == "flow":
        return _flow_evidence(ev)
    return _facts_evidence(ev)


def response_due(doc: dict, issued_on: date | None) -> date | None:
    return issued_on + timedelta(days=doc["respond_within_days"]) if issued_on else None


def body_html(doc: dict, issued_on: date | None) -> str:
    """The notice's body (under the letterhead)."""
    site, req = doc["site"], doc["requirement"]
    due = response_due(doc, issued_on)
    dated = f"Date of issue: {issued_on.isoformat()}" if issued_on else "Draft: not issued"
    permit = f"Wastewater discharge permit {e(site['permit'])}" if site.get("permit") else "No discharge permit on file"
    prev = doc.get("escalated_from")
    prev_html = ""
    if prev:
        prev_html = (f"<p>This {e(doc['title'].lower())} follows {e(prev['title'].lower())} {e(prev['number'])}"
                     + (f" of {e(prev['issued_on'])}" if prev.get("issued_on") else "")
                     + (f", to which no adequate response was received by its deadline of {e(prev['response_due'])}"
                        if prev.get("response_due") else "") + ".</p>")
    days = doc["days_of_violation"]
    dates = f" ({', '.join(days['dates'])})" if days.get("dates") else ""
    forf = "".join(
        f"<h3>{e(f['citation'])}</h3><p class=quote>&#8220;{'&#8230;' if f['words'][:1].islower() else ''}"
        f"{e(f['words'])}&#8221;</p><p><b>Range: {e(f['sentence'])}.</b></p>" for f in doc["forfeitures"])
    if not forf:
        forf = f"<p>{e(doc.get('forfeiture_note') or '')}</p>"
    deadline = (f"<p><b>Respond in writing by {due.isoformat()}</b> ({doc['respond_within_days']} days from the date "
                "of this notice).</p>" if due else
                f"<p><b>Respond in writing within {doc['respond_within_days']} days of the date of issue.</b></p>")
    lh = doc["letterhead"]
    sign = "".join(f"<div>{e(x)}</div>" for x in (lh.get("signed_by"), lh.get("signer_title"), lh["village"]) if x)
    return f"""<h1>{e(doc['title'])} {e(doc['number'])}</h1>
<p>{e(dated)}</p>
<p>{block_html(doc.get('addressee'), f"{e(site['name'])} ({e(site['key'])})")}<br>{permit}{', SIC ' + e(site['sic']) if site.get('sic') else ''}</p>
<p>{e(doc['action']['words'])}</p>
{prev_html}
<h2>Finding</h2>
<p>{e(doc['finding_words'][:1].upper() + doc['finding_words'][1:])}: {e(doc['finding']['summary'])}
<span class=small>({e(doc['finding']['ref'])})</span></p>
<h2>Requirement violated</h2>
<p><b>{e(req['citation'])}</b></p>
<p class=quote>&#8220;{e(req['words'])}&#8221;</p>
<h2>Evidence</h2>
{evidence_html(doc)}
<h2>Days of violation</h2>
<p>{days['days']} day{'s' if days['days'] != 1 else ''} of violation{e(dates)}: {e(days['how'])}.</p>
<h2>Penalties</h2>
{forf}
<h2>Corrective action required</h2>
{_paragraphs(doc['corrective_action'])}
<h2>Report required</h2>
{_paragraphs(doc['report_demanded'])}
{_remarks(doc)}<h2>Response</h2>
{deadline}
<p class=small>Enforcement response: {e(doc['guide']['name'])}; {_occurrence(doc['recurrence'])}.</p>
<div style="margin-top:24pt">{sign}</div>"""


def _paragraphs(text: str) -> str:
    """Text typed in a form as paragraphs (a blank line between them; a line break kept)."""
    paras = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return "".join("<p>" + "<br>".join(e(line) for line in p.split("\n")) + "</p>" for p in paras)


def _remarks(doc: dict) -> str:
    """The remarks a person added to the draft (where the guide allows them), else nothing."""
    return f"<h2>Remarks</h2>{_paragraphs(doc['remarks'])}" if doc.get("remarks") else ""


def head_of(doc: dict) -> Letterhead:
    lh = doc["letterhead"]
    return Letterhead(lh["village"], tuple(lh["lines"]), lh.get("signed_by"), lh.get("signer_title"))


def render_html(doc: dict, issued_on: date | None) -> str:
    return document(f"{doc['title']} {doc['number']}", body_html(doc, issued_on), head_of(doc), issued=issued_on,
                    draft=None if issued_on else "DRAFT: not issued",
                    footer=f"{doc['number']}, {doc['site']['name']}")


def render(doc: dict, issued_on: date | None) -> tuple[str, bytes]:
    """The notice's HTML and PDF for ``issued_on`` (None: the draft): the same document and
    date give the same bytes."""
    page = render_html(doc, issued_on)
    return page, write_pdf(page, issued=issued_on)


def file_name(doc: dict, issued_on: date | None, suffix: str = ".pdf") -> str:
    """``NOV-2026-001.pdf``, or ``NOV-2026-001-draft.pdf`` before issue."""
    return doc["number"] + ("" if issued_on else "-draft") + suffix


def write_notice(doc: dict, issued_on: date | None, out_dir: str | Path, *,
                 rendered: tuple[str, bytes] | None = None) -> tuple[Path, Path, bytes]:
    """Write ``<number>.html`` and ``.pdf`` (``<number>-draft.*`` before issue); return the
    paths and the PDF's bytes (``rendered``: the HTML and PDF :func:`render` made already)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page, pdf = rendered or render(doc, issued_on)
    html_path, pdf_path = out / file_name(doc, issued_on, ".html"), out / file_name(doc, issued_on)
    html_path.write_text(page, encoding="utf-8")
    pdf_path.write_bytes(pdf)
    return html_path, pdf_path, pdf
