"""Quarterly bills of the industrial users: charges with citations, the metered volume, lab
results and loadings, as JSON and as a printable HTML page with an inline SVG loadings chart.

Charges per pack: the surcharge on high-strength waste (palmyra-wi §13.45(4); webster-wi and
westfield-wi bases where the rates give prices), the Palmyra sewer use charge per 1,000
gallons (§13.45(2)(a), with ``[bill.palmyra-wi] use_per_1000_gal``), Webster NY sewer rents (§113-75, with
``[bill.webster-ny] unit_rent``), Westfield service charges per RE (with
``[bill.westfield-wi] annual_debt_budget``, ``total_re`` and ``[bill.re] <site> = RE``). The
optional ``[bill.volume_mg]`` table of the rates file gives a site's volume [MG] where it has
no flow meter (e.g. metered water use); otherwise the volume is integrated from the metered
flow readings of the quarter. The late-charge terms of the pack are printed with the due date.
"""

from __future__ import annotations

import html
import io
import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from lab.money import cents
from foundation import tomlfile
from foundation.errors import InputError

QUARTER = re.compile(r"^(\d{4})Q([1-4])$")


def quarter_bounds(quarter: str, tz) -> tuple[datetime, datetime]:
    """Start and end (exclusive) of a quarter such as ``2026Q1`` at midnight in ``tz``."""
    m = QUARTER.match(quarter.strip().upper())
    if not m:
        raise InputError(f"--quarter: expected YEARQn such as 2026Q1, got {quarter!r}")
    year, q = int(m.group(1)), int(m.group(2))
    start = datetime(year, 3 * q - 2, 1, tzinfo=tz)
    end = datetime(year + (q == 4), 1 if q == 4 else 3 * q + 1, 1, tzinfo=tz)
    return start, end


def read_bill_options(path: str) -> dict:
    """The optional ``[bill]`` table of the rates file."""
    opts = tomlfile.read(path, "rates file").get("bill", {})
    if not isinstance(opts, dict):
        raise InputError(f"{path}: bill: expected a table")
    return opts


def _loadings(table, daily_gal: dict, volume_mg: float | None, days: int, tz,
              non_detect: str = "zero") -> list[dict]:
    """Loading of each result: mg/l × the day's volume [MG] × 8.34 [lb/day].

    The volume of the result's local collection day where the readings cover it whole, else
    the quarter's average day. A non-detect counts as the billing policy says (default zero).
    """
    from lab.composite import loading_lb
    from lab.nondetect import substitute
    values = substitute(table.value_mg_l, table.non_detect, non_detect)
    out = []
    avg_day_gal = volume_mg * 1e6 / days if volume_mg else None
    for i in range(len(table)):
        epoch = table.collected[i].astype("datetime64[us]").astype(np.int64) / 1e6
        day = datetime.fromtimestamp(epoch, tz).date().isoformat()
        vol = daily_gal.get(day, avg_day_gal)
        if vol is None:
            continue
        out.append({"date": day, "sample": str(table.sample[i]), "analyte": str(table.analyte[i]),
                    "mg_l": float(table.value_mg_l[i]), "non_detect": bool(table.non_detect[i]),
                    "day_volume_gal": float(vol), "metered_day": day in daily_gal,
                    "lb_per_day": float(loading_lb(values[i], vol))})
    return out


def bill_site(conn, site: dict, quarter: str, rates: dict, options: dict, rates_source: str,
              issued: date, non_detect: str = "zero") -> dict:
    """The quarterly bill of one site (see the module docstring)."""
    from lab.compliance import check_lab
    from lab.flowdb import period_volume
    from lab.billing_data import billing
    from lab.permit import permit_required
    from lab.re_charges import service_charge
    from lab.sewer_rents import quarterly_sewer_rent
    from lab.standards import normal_strength, pack_timezone
    from lab.store import load_results
    from lab.surcharge import site_surcharge

    key, pack = site["key"], site["pack"]
    tz = pack_timezone(pack)
    start, end = quarter_bounds(quarter, tz)
    days = (end.date() - start.date()).days
    table = load_results(conn, start, end, [key])
    metered = period_volume(conn, key, start, end)
    given = options.get("volume_mg", {}).get(key)
    if given is not None:
        volume_mg, volume_source = float(given), f"{rates_source}: bill.volume_mg.{key}"
    elif metered["sensors"]:
        volume_mg, volume_source = metered["volume_mg"], "integrated from the metered flow readings"
    else:
        volume_mg, volume_source = None, "no flow meter and no volume given"
    charges, notes = [], []
    if given is None and metered["sensors"] and metered["coverage"] < 0.95:
        # A meter that was silent for part of the quarter under-bills: the clerk must know.
        notes.append(f"the flow readings cover {metered['coverage']:.0%} of the quarter: the metered volume "
                     f"is incomplete; check the meter, or give bill.volume_mg.{key} in the rates file")

    # surcharge on high-strength waste
    try:
        bases = normal_strength(pack)
    except InputError:
        bases = {}
    if bases and len(table):
        if volume_mg is None:
            notes.append("surcharge not computed: no volume for the quarter")
        else:
            grouped = {a: (table.value_mg_l[table.analyte == a], table.non_detect[table.analyte == a])
                       for a in set(table.analyte)}
            priced = {a: r for a, r in rates.items() if a in bases}
            missing = sorted(a for a in grouped if a in bases and a not in priced)
            if missing:
                raise InputError(f"{rates_source}: no rate for {', '.join(missing)} (site '{key}' has results)")
            s = site_surcharge(key, volume_mg, grouped, priced, pack, non_detect=non_detect,
                               rates_source=rates_source)
            charges.append({"charge": "surcharge", "citation": s.citation, "dollars": s.total_dollars,
                            "detail": s.as_json()})
    # Palmyra sewer use charge: the unit cost per 1,000 gallons set each October (§13.45(2)(a))
    pal = options.get("palmyra-wi", {})
    if pack == "palmyra-wi" and "use_per_1000_gal" in pal:
        if volume_mg is None:
            notes.append("sewer use charge not computed: no volume for the quarter")
        else:
            unit = float(pal["use_per_1000_gal"])
            charges.append({"charge": "sewer use charge", "citation": "palmyra-wi, 003_44f871d49a02d8f5.txt §13.45(2)(a)",
                            "dollars": cents(volume_mg * 1e6 / 1000.0 * unit),
                            "detail": {"volume_gal": volume_mg * 1e6, "per_1000_gal": unit}})
    # Webster NY sewer rent
    ny = options.get("webster-ny", {})
    if pack == "webster-ny" and "unit_rent" in ny:
        if volume_mg is None:
            notes.append("sewer rent not computed: no volume for the quarter")
        else:
            r = quarterly_sewer_rent(volume_mg * 1e6, float(ny["unit_rent"]))
            charges.append({"charge": "sewer rent", "citation": r.citation, "dollars": r.dollars,
                            "detail": {"units": r.units, "use_gal": r.use_gal, "unit_rent": float(ny["unit_rent"]),
                                       "minimum_applied": r.minimum_applied}})
    # Westfield service charge per residential equivalent
    wf = options.get("westfield-wi", {})
    re_table = options.get("re", {})
    if pack == "westfield-wi" and key in re_table:
        sc = service_charge(start.year, float(re_table[key]),
                            annual_debt_budget=float(wf.get("annual_debt_budget", 0.0)),
                            total_re=float(wf.get("total_re", 1.0)), periods_per_year=4)
        charges.append({"charge": "sewer service charge", "citation": sc.citation, "dollars": sc.dollars,
                        "detail": {"re": sc.re, "user_per_re": sc.user_per_re, "debt_per_re": sc.debt_per_re}})

    total = cents(sum(c["dollars"] for c in charges))
    late = billing().get("late", {}).get(pack)
    terms = None
    if late:
        due = issued + timedelta(days=int(late["grace_days"]))
        what = (f"{late['rate'] * 100:g} % added if not paid within {late['grace_days']} days"
                if late["kind"] == "flat" else
                f"{late['rate'] * 100:g} % interest a month, prorated, from {late['grace_days']} days after billing")
        terms = {"due": due.isoformat(), "terms": what, "citation": late["citation"],
                 "late_charge_if_late": cents(total * late["rate"]) if late["kind"] == "flat" else None}
    permit = None
    try:
        permit = permit_required(table, key, pack, daily_volumes_gal=list(metered["daily_gal"].values()))
    except InputError:
        pass
    return {
        "site": key, "name": site["name"], "pack": pack, "sic": site.get("sic"), "permit": site.get("permit"),
        "quarter": quarter, "period_start": start.isoformat(), "period_end": end.isoformat(),
        "issued": issued.isoformat(), "volume_mg": volume_mg, "volume_source": volume_source,
        "volume_coverage": metered["coverage"] if metered["sensors"] else None,
        "charges": charges, "total_dollars": total, "payment": terms,
        "results": [{"sample": str(table.sample[i]), "collected": str(table.collected[i]) + "Z",
                     "analyte": str(table.analyte[i]), "mg_l": float(table.value_mg_l[i]),
                     "non_detect": bool(table.non_detect[i])} for i in range(len(table))],
        "loadings": _loadings(table, metered["daily_gal"], volume_mg, days, tz, non_detect),
        "violations": check_lab(table, pack),
        "discharge_permit": permit, "notes": notes,
    }


def build_bills(conn, quarter: str, rates_path: str, issued: date | None = None, store: bool = True,
                non_detect: str = "zero") -> list[dict]:
    """Bills of every site in ``sites`` for ``quarter``; stored in ``bills`` when ``store``."""
    from lab.inputs import read_rates
    rates = read_rates(rates_path)
    options = read_bill_options(rates_path)
    issued = issued or datetime.now(timezone.utc).date()
    sites = [dict(zip(("id", "key", "name", "pack", "sic", "permit"), r)) for r in
             conn.execute("SELECT id, key, name, pack, sic, permit FROM sites ORDER BY key").fetchall()]
    if not sites:
        raise InputError("no sites in the database (sync the config first: sewerwatch db migrate)")
    bills = []
    with conn.transaction():
        for s in sites:
            b = bill_site(conn, s, quarter, rates, options, rates_path, issued, non_detect)
            bills.append(b)
            if store:
                conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail) "
                             "VALUES (%s, %s, %s, %s, %s, %s)",
                             (s["id"], quarter, b["period_start"], b["period_end"], b["total_dollars"], json.dumps(b)))
    return bills


def loadings_svg(bill: dict) -> str:
    """An SVG line chart of the loadings [lb/day] per analyte over the quarter (matplotlib, Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 3.0), dpi=100)
    by = {}
    for x in bill["loadings"]:
        by.setdefault(x["analyte"], []).append((np.datetime64(x["date"]), x["lb_per_day"]))
    for analyte, pts in sorted(by.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=analyte)
    ax.set_ylabel("loading [lb/day]")
    ax.set_xlim(np.datetime64(bill["period_start"][:10]), np.datetime64(bill["period_end"][:10]))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{bill['name']}: loadings {bill['quarter']}")
    if by:
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no lab results this quarter", ha="center", va="center", transform=ax.transAxes)
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def render_html(bill: dict) -> str:
    """A printable HTML bill with the loadings chart inline."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(c['charge'])}</td><td>{e(c['citation'])}</td><td class=n>${c['dollars']:,.2f}</td></tr>"
                   for c in bill["charges"])
    sur = next((c for c in bill["charges"] if c["charge"] == "surcharge"), None)
    srows = ""
    if sur:
        for a, d in sur["detail"]["analytes"].items():
            srows += (f"<tr><td>{e(a)}</td><td class=n>{d['average_mg_l']:.2f}</td><td class=n>{d['base_mg_l']:.2f}</td>"
                      f"<td class=n>{d['pounds']:.2f}</td><td class=n>${d['rate_per_lb']:.4f}</td>"
                      f"<td class=n>${d['dollars']:,.2f}</td></tr>")
    viol = "".join(f"<li>{e(v['rule'])} {e(v['parameter'])}: {v['peak']:g} {e(v['unit'])} over {v['limit']:g} "
                   f"({e(v['start'][:10])}; {e(v['citation'])})</li>" for v in bill["violations"]) or "<li>none</li>"
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
<h2>Lab violations</h2><ul>{viol}</ul>
{permit_html}
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


def bill_cli(args, ctx) -> int:
    """``sewerwatch bill --quarter 2026Q1 --rates FILE.toml [--out DIR] [--json]``."""
    from lab.inputs import read_non_detect_policy, read_rates

    quarter_bounds(args.quarter, timezone.utc)  # validate before connecting
    read_rates(args.rates)
    non_detect = args.non_detect or read_non_detect_policy(args.rates) or "zero"
    with ctx.connect("owner") as conn:
        bills = build_bills(conn, args.quarter.upper(), args.rates, non_detect=non_detect)
    paths = write_bills(bills, args.out)
    if args.json:
        print(json.dumps(bills, indent=2))
    else:
        for b in bills:
            print(f"{b['site']:<20} {b['quarter']}  ${b['total_dollars']:>12,.2f}")
        print(f"wrote {len(paths)} files to {args.out}")
    return 0
