"""The pretreatment program's annual report as people read it (HTML and PDF, letter size),
from the data of :func:`enforcement.annual.annual_report` alone."""

from __future__ import annotations

import html
import json
from datetime import date
from pathlib import Path

from lab.documents.pdf import Letterhead, document, write_pdf
from limits.words import analyte_name, rule_name, term

e = html.escape


def _money(x: float) -> str:
    return f"${x:,.2f}"


def _table(heads: tuple[str, ...], rows: list[tuple], empty: str) -> str:
    """An HTML table (numbers right-aligned), or ``empty`` as a paragraph when there are no rows."""
    if not rows:
        return f"<p>{e(empty)}</p>"
    num = [all(isinstance(r[i], (int, float)) for r in rows) for i in range(len(heads))]
    head = "".join(f"<th{' class=n' if n else ''}>{e(h)}</th>" for h, n in zip(heads, num))
    body = "".join("<tr>" + "".join(f"<td{' class=n' if n else ''}>{e(str(x))}</td>" for x, n in zip(r, num)) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def body_html(rep: dict, issued_on: date) -> str:
    t = rep["totals"]
    users = "".join(
        f"<tr><td>{e(u['name'])}</td><td>{e(u['site'])}</td><td>{e(u['permit'] or 'none')}"
        f"{'<br><span class=small>' + e(u['permit_effective']) + ' to ' + e(u['permit_expires']) + '</span>' if u.get('permit_expires') else ''}</td>"
        f"<td>{e(u['sic'] or '')}</td><td class=n>{u['samples_taken']}</td><td class=n>{u.get('samples_by_potw', 0)}</td>"
        f"<td class=n>{u['results']}</td></tr>"
        for u in rep["users"])
    viol = _table(("user", "rule", "parameter", "found by", "episodes", "days", "citation"), [
        (u["name"], rule_name(v["rule"]), analyte_name(v["parameter"]), term(v["source"]), v["episodes"],
         v["days_of_violation"], v["citation"])
        for u in rep["users"] for v in u["violations"]], "No violations.")
    notes = _table(("notice", "user", "finding", "issued", "state", "on"), [
        (n["number"], u["name"], term(n["finding"]), n["issued_on"] or "-", term(n["state"]),
         n["closed_on"] or n["response_received_on"] or "") for u in rep["users"] for n in u["notices"]],
        "No notices.")
    sampling = _table(("user", "requirement", "parameters", "frequency", "periods", "taken", "missing", "in progress"), [
        (u["name"], x["citation"], ", ".join(x["parameters"]), f"{x['times']} a {x['per']}", x["periods"], x["taken"],
         x["missing"], x["due"]) for u in rep["users"] for x in u["sampling"]],
        "No sampling requirement: no permit with monitoring conditions and no ordinance frequency.")
    outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(rep["notice_outcomes"].items())) or "none"
    snc = rep["snc"]
    snc_html = _table(("user", "permit", "period", "criteria met"), [
        (u["name"], u["permit"] or "", p["period"], "; ".join(f"({c['criterion']}) {c['title']}" for c in p["criteria"]))
        for u in snc["users"] for p in u["periods"]], "No user was in significant noncompliance.")
    bill_rows = "".join(
        f"<tr><td>{e(u['name'])}</td><td>{e(', '.join(q['quarter'] for q in u['billed']['quarters']) or '-')}</td>"
        f"<td class=n>{_money(u['billed']['surcharge_dollars'])}</td><td class=n>{_money(u['billed']['total_dollars'])}</td></tr>"
        for u in rep["users"])
    periods = ", ".join(f"{p['name']} ({p['start']} to {p['end']})" for p in snc["periods"])
    field = field_html(rep)
    return f"""<h1>Pretreatment program annual report {rep['year']}</h1>
<p>{e(rep['utility'])}. Reporting year {e(rep['period']['start'])} to {e(rep['period']['end'])} (exclusive).
Date of the report: {issued_on.isoformat()}.</p>
<h2>Summary</h2>
<table>
<tr><th>industrial users</th><td class=n>{len(rep['users'])}</td></tr>
<tr><th>samples taken</th><td class=n>{t['samples_taken']}</td></tr>
<tr><th>samples taken by the village (or its contractor)</th><td class=n>{t.get('samples_by_potw', 0)}</td></tr>
<tr><th>sampling periods required</th><td class=n>{t['sampling_periods_required']}</td></tr>
<tr><th>sampling periods missing samples</th><td class=n>{t['sampling_periods_missing']}</td></tr>
<tr><th>violation episodes</th><td class=n>{t['violation_episodes']}</td></tr>
<tr><th>days of violation</th><td class=n>{t['days_of_violation']}</td></tr>
<tr><th>notices and orders</th><td class=n>{t['notices']}</td></tr>
<tr><th>users in significant noncompliance</th><td class=n>{t['users_in_snc']}</td></tr>
<tr><th>surcharges billed</th><td class=n>{_money(t['surcharge_dollars'])}</td></tr>
<tr><th>all charges billed</th><td class=n>{_money(t['billed_dollars'])}</td></tr>
<tr><th>inspections (with sampling)</th><td class=n>{t.get('field_inspections', 0)} ({t.get('field_inspections_with_sampling', 0)})</td></tr>
<tr><th>calibrations (failed)</th><td class=n>{t.get('field_calibrations', 0)} ({t.get('field_calibrations_failed', 0)})</td></tr>
<tr><th>maintenance windows (readings not judged)</th><td class=n>{t.get('field_windows', 0)} ({t.get('field_readings_excluded', 0)})</td></tr>
</table>
<h2>Industrial users and permits</h2>
<table><tr><th>user</th><th>id</th><th>permit</th><th>SIC</th><th class=n>samples taken</th><th class=n>by the village</th><th class=n>results</th></tr>{users}</table>
<h2>Samples required and taken</h2>
<p>Periods in which a permit's monitoring condition or the ordinance required samples, and whether they were taken
(a period missing them is a failure to monitor).</p>
{sampling}
<h2>Violations by kind</h2>
{viol}
<h2>Notices and their outcomes</h2>
{notes}
<p>Outcomes: {e(outcomes)}.</p>
<h2>Significant noncompliance</h2>
<p>Periods: {e(periods)} ({e(snc['citation'])}).</p>
{snc_html}
{publication_html(snc)}
<h2>Charges billed</h2>
<table><tr><th>user</th><th>quarters</th><th class=n>surcharges</th><th class=n>all charges</th></tr>{bill_rows}</table>
{field}"""


def publication_html(snc: dict) -> str:
    """Whether the year's list was published in a newspaper (40 CFR 403.8(f)(2)(viii)): each
    recorded publication and the users it named, and the users on the list no publication named."""
    pub = snc.get("published") or {}
    pubs = pub.get("publications") or []
    if not snc["users"]:
        return "<p>No list to publish: no user was in significant noncompliance.</p>"
    names = {u["site"]: u["name"] for u in snc["users"]}
    rows = _table(("newspaper", "appeared", "users named"), [
        (p["newspaper"], p["published_on"], ", ".join(p["names"])) for p in pubs],
        "The list's publication in a newspaper is not recorded.")
    missing = [names[s] for s in pub.get("unpublished", [])]
    tail = (f"<p>On the list, not named by a recorded publication: {e(', '.join(missing))}.</p>" if missing and pubs
            else "")
    return f"<h3>Published in the newspaper</h3>{rows}{tail}"


def field_html(rep: dict) -> str:
    """Instruments and field work: the inspections of the year (40 CFR 403.12(i)),
    calibrations, grab samples against the sensors, and every maintenance window with the
    readings it kept from being judged, whatever its approval (none is hidden). Times in each
    user's village time."""
    from foundation.display import local_time
    from limits.packs import load_pack

    users = [u for u in rep["users"] if "field" in u]
    zones = {u["site"]: load_pack(u["pack"]).timezone for u in users}

    def at(u, t):
        return local_time(t, zones[u["site"]], seconds=False)
    ins = _table(("user", "visited", "inspector", "kind", "sampled", "deficient items", "photos"), [
        (u["name"], at(u, i["visited_at"]), i["inspector"], i["kind"], "yes" if i["sampled"] else "no",
         "; ".join(i["deficient"]) or "none", i["photos"]) for u in users for i in u["field"]["inspections"]],
        "No inspections.")
    cal = _table(("user", "sensor", "performed", "technician", "result", "record"), [
        (u["name"], c["sensor"], at(u, c["performed_at"]), c["technician"], c["result"],
         c["line"].split(": ", 1)[-1]) for u in users for c in u["field"]["calibrations"]], "No calibrations recorded.")
    grab = _table(("user", "sensor", "taken", "grab", "sensor", "drifted"), [
        (u["name"], g["sensor"], at(u, g["taken_at"]), g["grab"],
         "-" if g["sensor_value"] is None else round(g["sensor_value"], 2), "yes" if g["drifted"] else "no")
        for u in users for g in u["field"]["grab_checks"]], "No grab samples compared.")
    win = _table(("window", "sensor", "when", "why, who, from where", "approval", "readings not judged"), [
        (w["id"], w["scope"], f"{at(u, w['start'])} to {at(u, w['end'])}" if w["end"] else
         f"since {at(u, w['start'])}, still open",
         f"{w['reason']}, {w['person']}, {w['source']}",
         w["approval"] + (f" ({w['approved_by']})" if w["approved_by"] else ""), w["readings_excluded"])
        for u in users for w in u["field"]["windows"]], "No maintenance windows.")
    return f"""<h2>Inspections</h2>
<p>Inspections and sampling of the industrial users (40 CFR 403.12(i)).</p>
{ins}
<h2>Calibrations and verifications</h2>
{cal}
<h2>Grab samples against the sensors</h2>
{grab}
<h2>Maintenance windows</h2>
<p>Readings taken in a window in effect (approved, or needing no approval) were stored with their own quality
code and not judged; a window awaiting approval or rejected excluded nothing.</p>
{win}"""


def performance_html(rep: dict) -> str:
    """The ICIS-NPDES pretreatment performance summary's figures (where the program's facts
    were given), each with what it counts and the users behind it."""
    ps = rep.get("performance_summary")
    if not ps:
        return ""
    rows = "".join(f"<tr><td>{e(x['words'][:1].upper() + x['words'][1:])}</td><td class=small>{e(x['element'])}</td>"
                   f"<td class=n>{e(str(x['value']))}</td><td>{e(', '.join(x['users']))}</td></tr>"
                   for x in ps["elements"])
    permit = f"NPDES permit {e(ps['permit'])}" if ps.get("permit") else "NPDES permit not set in the config"
    return (f"<h2>Pretreatment performance summary (ICIS-NPDES)</h2><p>{permit}; {e(ps['start'])} to {e(ps['end'])}. "
            "The figures the state's electronic report carries (ICIS-NPDES schema 5.8, 40 CFR Part 127), from the "
            "data above.</p><table><tr><th>figure</th><th>data element</th><th class=n>value</th><th>users</th></tr>"
            f"{rows}</table>")


#: The grease program's findings as the report names them.
GREASE_FINDINGS = {"too late": "pumped too late (the 25 % rule)", "overdue": "overdue for pumping",
                   "over capacity": "more gallons removed than the device holds",
                   "unregistered hauler": "pumped by a hauler not registered with the village",
                   "missing device": "a grease removal device missing"}


def grease_html(rep: dict) -> str:
    """The grease program's year (``rep["grease"]``; nothing without it)."""
    g = rep.get("grease")
    if g is None:
        return ""
    found = _table(("finding", "count"), [(GREASE_FINDINGS.get(k, k), n) for k, n in g["findings"].items()],
                   "No findings.")
    acts = _table(("notice", "issued"), sorted(g["actions"].items()), "No notices.")
    return f"""<h2>The grease program</h2>
<p>As of {e(g['as_of'])}: {g['establishments']} establishments with {g['devices']} grease removal devices on record;
{g['pumpouts']} pump-outs reported and {g['inspections']} grease inspections in {g['year']}.</p>
<h3>Findings</h3>
{found}
<p>Grease blockages found by the sewer crew: {g['blockages']}, of which {g['blockages_traced']} traced to an
establishment.</p>
<h3>Enforcement</h3>
{acts}
<p>Notices issued: {g['notices']}; escalated to the next step for want of an adequate response: {g['escalated']}.</p>"""


def render_html(rep: dict, head: Letterhead, issued_on: date) -> str:
    return document(f"Pretreatment program annual report {rep['year']}", body_html(rep, issued_on) + grease_html(rep) + performance_html(rep), head,
                    issued=issued_on, footer=f"Annual report {rep['year']}, {rep['utility']}")


def write_report(rep: dict, head: Letterhead, issued_on: date, out_dir: str | Path) -> list[Path]:
    """``annual-report-<year>.json``, ``.html`` and ``.pdf``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"annual-report-{rep['year']}"
    page = render_html(rep, head, issued_on)
    stem.with_suffix(".json").write_text(json.dumps(rep, indent=2, default=str) + "\n", encoding="utf-8")
    stem.with_suffix(".html").write_text(page, encoding="utf-8")
    write_pdf(page, stem.with_suffix(".pdf"), issued=issued_on)
    return [stem.with_suffix(".json"), stem.with_suffix(".html"), stem.with_suffix(".pdf")]


def snc_list_html(lst: dict, head: Letterhead, issued_on: date) -> str:
    """The year's list of users in significant noncompliance as a document to publish."""
    rows = _table(("user", "permit", "period", "criteria met"), [
        (u["name"], u["permit"] or "", p["period"], "; ".join(f"({c['criterion']}) {c['title']}" for c in p["criteria"]))
        for u in lst["users"] for p in u["periods"]], "No industrial user was in significant noncompliance.")
    body = (f"<h1>Industrial users in significant noncompliance, {lst['year']}</h1>"
            f"<p>{e(head.village)}: industrial users of the sewerage system that were in significant noncompliance "
            f"with pretreatment standards and requirements at any time during {lst['year']} ({e(lst['citation'])}: "
            "public notification at least annually in a newspaper of general circulation).</p>" + rows)
    return document(f"Significant noncompliance {lst['year']}", body, head, issued=issued_on,
                    footer=f"Users in significant noncompliance {lst['year']}, {head.village}")
