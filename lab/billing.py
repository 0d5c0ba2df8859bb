"""Quarterly bills of the industrial users: each site's charges as its pack adopts them, with
citations, the metered volume, lab results and loadings, and the payment terms (the
documents are drawn by :mod:`lab.documents`).

One generic biller for every village: the charges are the pack's ``[[charges]]`` in order,
each computed by its formula kind (:mod:`lab.charges`) from the quarter's volume, the lab
results and the rates file's numbers under the keys the pack names (e.g. Palmyra's
``bill.palmyra-wi.use_per_1000_gal``); a charge whose rates the file does not give is not
billed. The optional ``[bill.volume_mg]`` table of the rates file gives a site's volume [MG]
where it has no flow meter (e.g. metered water use); otherwise the volume is integrated
from the metered flow readings of the quarter. The pack's ``[late_charge]`` gives the due
date and the late terms.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone

import numpy as np

from foundation import moments
from foundation.errors import InputError
from identity.contacts import addressee
from lab.charges import BillInputs, charges, late_terms, rate_words, rates_applied, surcharged
from lab.checks.compliance import check_lab, check_loadings, in_force
from lab.checks.permit import permit_required, standing
from lab.formulas.money import cents
from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.formulas.volumes import loading_lb
from lab.ordinance import loading_limits, pack_timezone
from lab.readers.rates import read_rates, read_rates_file
from lab.store.current import load_results
from lab.store.flow import period_volume, stored_violations
from lab.store.period_checks import with_rolling_lookback
from lab.store.rates import stated
from limits.days import by_site_and_rule
from limits.packs import ANALYTES as CONCENTRATION
from limits.permit_store import current_permits
from limits.permits import Permit
from limits.readings import Readings


#: A metered volume is the quarter's only when the flow readings cover at least this fraction
#: of it (a bill on a meter that was silent for part of the quarter under-bills and
#: misleads; below it the volume is unknown unless the rates file gives it).
MIN_COVERAGE = 0.95


def percent_floor(fraction: float) -> str:
    """``94.9 %`` for 0.9499: a coverage rounded down, so that one below the line never reads as on it."""
    return f"{math.floor(fraction * 1000) / 10:g} %"


def quarter_bounds(quarter: str, tz) -> tuple[datetime, datetime]:
    """Start and end (exclusive) of a quarter such as ``2026Q1``: its local days in ``tz``
    (:func:`foundation.moments.period_bounds`)."""
    return moments.period_bounds(quarter, "--quarter", tz, ("quarter",))


def _local_date(t: np.datetime64, tz) -> str:
    """The local calendar date (ISO) of a UTC ``datetime64``."""
    epoch = t.astype("datetime64[us]").astype(np.int64) / 1e6
    return datetime.fromtimestamp(epoch, tz).date().isoformat()


def _loadings(table, daily_gal: dict, volume_mg: float | None, days: int, tz,
              non_detect: str = "zero") -> list[dict]:
    """Loading of each result: mg/l × the day's volume [MG] × 8.34 [lb/day].

    The volume of the result's local collection day where the readings cover it whole, else
    the quarter's average day. A non-detect counts as the billing policy says (default zero).
    """
    values = substitute(table.value_mg_l, table.non_detect, non_detect)
    out = []
    avg_day_gal = volume_mg * 1e6 / days if volume_mg is not None else None
    for i in range(len(table)):
        if CONCENTRATION.get(str(table.analyte[i])) != "concentration":
            continue  # pH has no loading
        day = _local_date(table.collected[i], tz)
        vol = daily_gal.get(day, avg_day_gal)
        if vol is None:
            continue
        out.append({"date": day, "sample": str(table.sample[i]), "analyte": str(table.analyte[i]),
                    "mg_l": float(table.value_mg_l[i]), "non_detect": bool(table.non_detect[i]),
                    "day_volume_gal": float(vol), "metered_day": day in daily_gal,
                    "lb_per_day": float(loading_lb(values[i], vol))})
    return out


def days_of_violation(conn, site: str, start: datetime, end: datetime, tz, found: list[dict]) -> list[dict]:
    """Distinct local days per rule on which ``site`` was in violation in ``[start, end)``
    (palmyra-wi, 003_44f871d49a02d8f5.txt §13.60(1): "Each day a condition is allowed to exist
    which is contrary to all or any part of this subchapter shall constitute a new
    violation"): the episodes stored in ``violations`` (live, re-evaluated, lab) and those
    ``found`` now, each rule with its citation."""
    records = {(r["rule"], r["start"]): r for r in stored_violations(conn, site, start, end)}
    records.update({(r["rule"], r["start"]): r for r in found})
    cite = {r["rule"]: r.get("citation") for r in records.values()}
    out = by_site_and_rule(records.values(), tz, (start, end))
    return [{"rule": d["rule"], "days": d["days"], "dates": d["dates"], "episodes": d["episodes"],
             "citation": cite.get(d["rule"])} for d in out]


def bill_site(conn, site: dict, quarter: str, per_lb: dict, rates_doc: dict, rates_source: str,
              issued: date, non_detect: str = "zero", permit: Permit | None = None) -> dict:
    """The quarterly bill of one site.

    Parameters
    ----------
    conn : psycopg.Connection
    site : dict
        ``key``, ``name``, ``pack``, ``sic``, ``permit`` (a row of ``sites``).
    quarter : str
        ``2026Q1``: the quarter in the pack's time zone.
    per_lb : dict
        analyte -> surcharge rate [$/lb] (:func:`lab.readers.rates.read_rates`).
    rates_doc : dict
        The whole rates file (:func:`read_rates_file`).
    rates_source : str
        The rates file's name, for messages and the volume's source.
    issued : date
        The bill's date (due date and late terms count from it).
    non_detect : str
        What a non-detect counts as for billing.
    permit : Permit, optional
        The site's current discharge permit: its limits are judged with the ordinance's
        (the stricter applies), its loadings on the metered days, and its standing on
        ``issued`` (an expired permit is a finding).
    """
    key, pack = site["key"], site["pack"]
    tz = pack_timezone(pack)
    start, end = quarter_bounds(quarter, tz)
    days = (end.date() - start.date()).days
    table = load_results(conn, start, end, [key])
    metered = period_volume(conn, key, start, end)
    given = rates_doc.get("bill", {}).get("volume_mg", {}).get(key)
    if given is not None:
        volume_mg, volume_source = float(given), f"{rates_source}: bill.volume_mg.{key}"
    elif metered["sensors"]:
        volume_mg, volume_source = metered["volume_mg"], "integrated from the metered flow readings"
    else:
        volume_mg, volume_source = None, "no flow meter and no volume given"
    notes: list[str] = []
    coverage = metered["coverage"] if metered["sensors"] else None
    volume_missing = None
    if given is None and metered["sensors"] and coverage < MIN_COVERAGE:
        # A meter that was silent for part of the quarter under-bills: the volume is unknown.
        volume_missing = (f"the flow readings cover {percent_floor(coverage)} of the quarter, a bill needs "
                          f"{MIN_COVERAGE * 100:g} %, and {rates_source} gives no bill.volume_mg.{key}")
        notes.append(f"the flow readings cover {coverage:.0%} of the quarter: the metered volume "
                     f"is incomplete; check the meter, or give bill.volume_mg.{key} in the rates file")
    elif given is None and not metered["sensors"]:
        volume_missing = f"no flow meter, and {rates_source} gives no bill.volume_mg.{key}"

    inputs = BillInputs(key, pack, start.year, volume_mg, table, per_lb, rates_source, non_detect, notes)
    lines = []
    for provision, kind, terms in charges(pack, rates_doc, rates_source):
        rates, applied, missing = rates_applied(provision, rates_doc, key, rates_source)
        if missing:     # never a stand-in: the charge is not billed, and the bill says why
            notes.append(f"{provision.name}: not billed: neither the utility's rates nor the ordinance give "
                         f"{' or '.join(rate_words(m) for m in missing)}")
            continue
        line = kind.line(provision, terms, inputs, rates)
        if line is not None:
            line["rates"] = applied
            lines.append(line)

    total = cents(sum(c["dollars"] for c in lines))
    late = late_terms(pack)
    payment = None
    if late:
        provision, t = late
        payment = {"due": (issued + timedelta(days=t.grace_days)).isoformat(), "terms": t.terms(),
                   "citation": provision.citation, "late_charge_if_late": t.if_late(total)}
    need = None
    try:
        need = permit_required(table, key, pack, daily_volumes_gal=list(metered["daily_gal"].values()))
    except InputError:
        pass
    found = with_rolling_lookback(conn, check_lab(table, pack, permit=permit), key, pack, permit, start, end,
                                  DEFAULT_COMPLIANCE, Readings())
    incomplete: list[dict] = []
    held = None
    if permit is not None:
        during = table.select(in_force(table, permit, pack))
        loads, incomplete = check_loadings(during, loading_limits(pack, permit), metered["days"], pack)
        found += loads
        held = standing(permit, pack, issued, (start.date(), end.date()))
        if held["finding"] is not None:
            found.append(held["finding"])
    found.sort(key=lambda v: (v["start"], v["rule"]))
    return {
        # the billing contact at the billing address, from the office's address book
        "mail_to": addressee(conn, key, "billing", "billing").as_json(),
        "site": key, "name": site["name"], "pack": pack, "sic": site.get("sic"), "permit": permit.number if permit is not None else None,
        "quarter": quarter, "period_start": start.isoformat(), "period_end": end.isoformat(),
        "issued": issued.isoformat(), "volume_mg": volume_mg, "volume_source": volume_source,
        # how the bill tells the customer where the volume comes from (no file or key of ours)
        "volume_basis": ("as recorded by the utility for the period" if given is not None else
                         "integrated from the metered flow readings" if metered["sensors"] else "not known"),
        "volume_coverage": coverage, "volume_known": volume_missing is None, "volume_missing": volume_missing,
        "draft": False,
        "charges": lines, "total_dollars": total, "payment": payment,
        "results": [{"sample": str(table.sample[i]), "collected": str(table.collected[i]) + "Z",
                     "local_date": _local_date(table.collected[i], tz),
                     "analyte": str(table.analyte[i]), "mg_l": float(table.value_mg_l[i]),
                     "non_detect": bool(table.non_detect[i])} for i in range(len(table))],
        # where the quarter's volume is unknown, only the days metered whole have a loading
        "loadings": _loadings(table, metered["daily_gal"], volume_mg if volume_missing is None else None,
                              days, tz, non_detect),
        "violations": found, "incomplete": incomplete,
        "days_of_violation": days_of_violation(conn, key, start, end, tz, found),
        "discharge_permit": need, "permit_standing": held, "notes": notes,
    }


def unknown_volumes(bills: list[dict]) -> str | None:
    """What a set of bills lacks to be issued, in words (None when every volume is known)."""
    missing = [f"{b['site']} ({b['volume_missing']})" for b in bills if not b["volume_known"]]
    if not missing:
        return None
    return "volume unknown for " + "; ".join(missing)


def build_bills(conn, quarter: str, rates_path: str, issued: date | None = None, non_detect: str = "zero",
                draft: bool = False, source: str | None = None) -> list[dict]:
    """Bills of every site in ``sites`` for ``quarter``, computed, not stored: a bill is
    stored only as issued by a bill run (:mod:`lab.bill_runs`, one bill in force per site and
    period).

    A bill whose volume is unknown (flow readings under :data:`MIN_COVERAGE` of the quarter,
    or no meter, and no ``bill.volume_mg`` in the rates file) cannot be issued: an
    :class:`InputError` names each such site and what is missing. With ``draft`` every bill
    is computed (on the partial metered volume where that is all there is) and marked
    ``draft``. ``source``: the rates file's name as the bills cite it (default
    ``rates_path``; a bill run reads its rates from a copy).
    """
    source = source or str(rates_path)
    rates_doc = read_rates_file(rates_path)
    issued = issued or datetime.now(timezone.utc).date()
    sites = [dict(zip(("id", "key", "name", "pack", "sic", "permit"), r)) for r in
             conn.execute("SELECT id, key, name, pack, sic, permit FROM sites ORDER BY key").fetchall()]
    if not sites:
        raise InputError("no sites in the database (sync the config first: sewerwatch db migrate)")
    # rates per pound are asked for only where a surcharge is in force
    per_lb = read_rates(rates_path, required=any(surcharged(s["pack"]) for s in sites))
    permits = current_permits(conn)
    bills = [bill_site(conn, s, quarter, per_lb, rates_doc, source, issued, non_detect, permits.get(s["key"]))
             for s in sites]
    for b in bills:                       # the stored rates version the bill used (lab/store/rates.py)
        b["rates_version"] = stated(rates_doc)
    if draft:
        for b in bills:
            b["draft"] = True
        return bills
    missing = unknown_volumes(bills)
    if missing:
        raise InputError(f"bill {quarter}: not issued, {missing}: give bill.volume_mg.<site> [MG] in "
                         f"{source}, or run with --draft to print drafts")
    return bills
