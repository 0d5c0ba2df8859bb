"""The chain-of-custody form of a sampling event, as the sampler carries it to the laboratory:
the sample id (large, as text), the user, the sampling point, who samples, the sample type,
the planned and actual times, each parameter with its container, preservation and holding
time (40 CFR 136.3(e) Table II, :mod:`lab.sampling.methods`), and a signature table for each
hand-off (relinquished by, received by, date and time), in the documents' letter-size page
(:mod:`lab.documents.pdf`, WeasyPrint).
"""

from __future__ import annotations

import html
from datetime import date

from foundation.display import local_time
from lab.documents.pdf import Letterhead, document, write_pdf
from lab.sampling.events import SAMPLE_TYPES, SAMPLERS, Event, analyte_name
from lab.sampling.methods import method

#: Rows of the signature table (each hand-off: field to courier, courier to laboratory ...).
HANDOFFS = 4

_CSS = """<style>
.sid { font-family: monospace; font-size: 18pt; font-weight: bold; letter-spacing: 1pt; }
table.facts th, table.facts td, table.kept th, table.kept td { padding-top: 1pt; padding-bottom: 1pt; }
table.kept { font-size: 8.5pt; }
h2 { margin-top: 8pt; margin-bottom: 4pt; }
.custody { break-inside: avoid; }
table.sign td { height: 0.28in; border-bottom: 1px solid #555; }
td.blank { border-bottom: 1px solid #000; min-width: 1.5in; }
</style>"""


def _when(t, tz: str) -> str:
    return local_time(t, tz, seconds=False) if t else ""


def body_html(ev: Event) -> str:
    """Everything under the letterhead."""
    e = html.escape
    cite = method(ev.parameters[0]).citation if ev.parameters else ""
    rows = "".join(
        f"<tr><td>{e(analyte_name(p))}</td><td>{e(method(p).container)}</td><td>{e(method(p).preservation)}</td>"
        f"<td>{e(method(p).words)}</td></tr>" for p in ev.parameters)
    taken = _when(ev.sampled_at, ev.tz) or "date ____________  time ________"
    sign = "".join("<tr><td></td><td></td><td></td><td></td></tr>" for _ in range(HANDOFFS))
    lab = e(ev.laboratory) if ev.laboratory else "____________________________"
    composite = (" (started at the planned time, collected 24 hours later)" if ev.sample_type == "composite" else "")
    return f"""{_CSS}<h1>Chain of custody: sample {e(ev.sample_key)}</h1>
<p>Sample id: <span class=sid>{e(ev.sample_key)}</span></p>
<p>Write this sample id on every container and in the laboratory's results.</p>
<table class=facts>
<tr><th>Industrial user</th><td>{e(ev.site_name)}</td></tr>
<tr><th>Sampling point</th><td>{e(ev.point)}</td></tr>
<tr><th>Sampled by</th><td>{e(SAMPLERS[ev.sampler])}</td></tr>
<tr><th>Sample type</th><td>{e(SAMPLE_TYPES[ev.sample_type])}{e(composite)}</td></tr>
<tr><th>Laboratory</th><td>{lab}</td></tr>
<tr><th>Planned</th><td>{e(_when(ev.planned_at, ev.tz))}</td></tr>
<tr><th>Actually sampled</th><td>{e(taken)}</td></tr>
</table>
<h2>Parameters, containers and preservation</h2>
<table class=kept><tr><th>parameter</th><th>container</th><th>preservation</th><th>analyse within</th></tr>{rows}</table>
<p class=small>Containers, preservation and holding times: {e(cite)}. A result analysed later than its holding time
after sampling is flagged and does not count as a sample taken.</p>
<div class=custody><h2>Custody</h2>
<table class=sign><tr><th>relinquished by (signature)</th><th>date and time</th><th>received by (signature)</th>
<th>date and time</th></tr>{sign}</table>
<p>Sampler's notes: ______________________________________________________________________</p></div>
"""


def html_page(ev: Event, head: Letterhead, issued: date) -> str:
    """The whole printable document."""
    return document(f"Chain of custody {ev.sample_key}", body_html(ev), head, issued=issued,
                    footer=f"Sample {ev.sample_key}")


def render_pdf(ev: Event, head: Letterhead, issued: date) -> bytes:
    """The form as PDF bytes (the office serves them; ``sampling custody`` writes them)."""
    return write_pdf(html_page(ev, head, issued), issued=issued)
