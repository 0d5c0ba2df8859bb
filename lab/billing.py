"""Quarterly bills of the industrial users: charges with citations, the metered volume, lab
results and loadings, the payment terms (the documents are drawn by :mod:`lab.documents`).

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

import json
import re
from datetime import date, datetime, timedelta, timezone

import numpy as np

from foundation import tomlfile
from foundation.errors import InputError
from lab.billing_data import billing
from lab.checks.compliance import check_lab
from lab.checks.permit import permit_required
from lab.formulas.money import cents
from lab.formulas.nondetect import substitute
from lab.formulas.re_charges import service_charge
from lab.formulas.sewer_rents import quarterly_sewer_rent
from lab.formulas.surcharge import site_surcharge
from lab.formulas.volumes import loading_lb
from lab.ordinance import normal_strength, pack_timezone
from lab.readers.rates import read_rates
from lab.store.flow import period_volume
from lab.store.results import load_results

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
