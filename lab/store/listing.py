"""Stored lab results with the limits beside them (the office's results table
and its CSV export).

:func:`results_with_limits` reads the current version of each result of a period (per user
and analyte, optionally) and puts beside it the limits that judge it: the site's pack and,
while it was in force, its permit, the stricter applying (:func:`lab.ordinance.lab_limits`,
the limits ``lab check`` judges with); and which of them it takes part in exceeding, as
:func:`lab.checks.compliance.check_lab` finds (each sample, a calendar month's average, the
period's average), with the compliance default for non-detects (their detection limit).
:func:`as_csv` writes them in the lab CSV's own columns (so an export imports again as
"unchanged") with the version, who entered it and the limits added.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime

from lab.checks.compliance import check_lab, in_force
from lab.ordinance import lab_limits
from lab.store.current import list_results, load_results
from lab.store.period_checks import with_rolling_lookback
from limits import sample_types
from limits.permit_store import current_permits
from limits.readings import Readings
from limits.statements import of_violation, stated

#: How a limit's statistic reads.
STATISTIC_WORDS = {"each": "each sample", "daily-maximum": "daily maximum", "monthly-average": "monthly average",
                   "period-average": "average", "daily-loading": "daily loading",
                   "weekly-average": "weekly average", "rolling-30-day": "rolling 30-day average"}


def _limit_words(statistic: str, sample_type: str | None) -> str:
    """What a limit judges, in words: "each sample", "each grab sample", "monthly average of
    composite samples"."""
    words = STATISTIC_WORDS.get(statistic, statistic)
    if sample_type:
        words = f"each {sample_type} sample" if statistic == "each" else f"{words} of {sample_types.MANY[sample_type]}"
    return words


def _limit(lim) -> dict:
    words = _limit_words(lim.statistic, lim.sample_type)
    return {"rule": lim.rule, "analyte": lim.analyte, "limit": lim.limit, "unit": lim.unit,
            "statistic": lim.statistic, "words": words, "sample_type": lim.sample_type,
            "stated": stated(lim.comparison, lim.limit, lim.unit, lim.statistic, None, lim.sample_type),
            "form": sample_types.in_words(lim.sample_type, lim.statistic),
            "op": lim.op, "citation": lim.citation, "applies": lim.origin}


def _for_type(limits: list[dict], stype: str | None) -> list[dict]:
    """The limits of one analyte that judge a result of sample type ``stype``
    (:func:`limits.sample_types.applies_to`)."""
    typed = frozenset(x["sample_type"] for x in limits if x["sample_type"])
    return [x for x in limits if sample_types.applies_to(x["sample_type"], stype, typed)]


def results_with_limits(conn, start: datetime, end: datetime, sites: list[str] | None = None,
                        analytes: list[str] | None = None) -> list[dict]:
    """The current results collected in ``[start, end)``, each with ``limits`` (what judges
    it) and ``exceeds`` (the limits it takes part in exceeding: rule, limit, statistic,
    citation, and the average for an average), in site, time, sample, analyte order."""
    rows = list_results(conn, start, end, sites)
    extra = {(s, k, a): (lab, meth, by) for s, k, a, lab, meth, by in conn.execute(
        "SELECT t.key, s.sample_key, r.analyte, s.laboratory, r.method, s.sampled_by FROM lab_results_current r "
        "JOIN lab_samples s ON s.id = r.sample_id JOIN sites t ON t.id = s.site_id "
        "WHERE s.collected >= %s AND s.collected < %s", (start, end)).fetchall()}
    packs = dict(conn.execute("SELECT key, pack FROM sites").fetchall())
    permits = current_permits(conn)
    out = []
    by_site: dict[str, list] = {}
    for r in rows:
        by_site.setdefault(r[0], []).append(r)
    for site, site_rows in by_site.items():
        pack, permit = packs[site], permits.get(site)
        table = load_results(conn, start, end, [site])
        forced = {}
        if permit is not None and len(table):
            mask = in_force(table, permit, pack)
            forced = {(str(s), str(a)): bool(m) for s, a, m in zip(table.sample, table.analyte, mask)}
        with_permit = {lim.analyte: [] for lim in lab_limits(pack, permit)}
        for lim in lab_limits(pack, permit):
            with_permit[lim.analyte].append(_limit(lim))
        without = {}
        for lim in lab_limits(pack, None):
            without.setdefault(lim.analyte, []).append(_limit(lim))
        exceeds: dict[tuple, list] = {}
        for v in with_rolling_lookback(conn, check_lab(table, pack, "dl", permit), site, pack, permit, start, end,
                                       "dl", Readings()):
            for sample in v["evidence"]["samples"]:
                exceeds.setdefault((sample, v["parameter"]), []).append(
                    {"rule": v["rule"], "limit": v["limit"], "unit": v["unit"], "citation": v["citation"],
                     "statistic": v["evidence"]["statistic"], "stated": of_violation(v),
                     "words": _limit_words(v["evidence"]["statistic"], v["evidence"].get("sample_type")),
                     "sample_type": v["evidence"].get("sample_type"),
                     "form": sample_types.in_words(v["evidence"].get("sample_type"), v["evidence"]["statistic"]),
                     "average_mg_l": v["evidence"].get("average_mg_l"), "month": v["evidence"].get("month")})
        for r in site_rows:
            site_key, sample, collected, stype, analyte, qual, mg_l, version, by, at = r
            if analytes and analyte not in analytes:
                continue
            applies = with_permit if forced.get((sample, analyte), False) else without
            lab, method, sampled_by = extra.get((site_key, sample, analyte), (None, None, "user"))
            out.append({"site": site_key, "sample": sample, "collected": collected, "sample_type": stype,
                        "analyte": analyte, "qualifier": qual or "", "mg_l": mg_l, "non_detect": qual == "<",
                        "version": version, "entered_by": by, "entered_at": at, "laboratory": lab, "method": method,
                        "sampled_by": sampled_by, "sampled_by_words": SAMPLED_BY_WORDS[sampled_by],
                        "limits": _for_type(applies.get(analyte, []), stype),
                        "exceeds": exceeds.get((sample, analyte), [])})
    return out


#: The columns of :func:`as_csv`: the lab CSV's, then what the office adds.
CSV_COLUMNS = ("sample_id", "site", "collected", "analyte", "value", "unit", "qualifier", "sample_type", "laboratory",
               "method", "sampled_by", "version", "entered_by", "limits", "exceeds")
#: ``lab_samples.sampled_by`` as the lab CSV's ``sampled_by`` column says it
#: (:data:`lab.store.results.SAMPLED_BY`), and in words.
SAMPLED_BY_CSV = {"potw": "village", "potw-contractor": "village-contractor", "user": "user",
                  "user-contractor": "user-contractor"}
SAMPLED_BY_WORDS = {"potw": "taken by the village", "potw-contractor": "taken by the village's contractor",
                    "user": "the user's own", "user-contractor": "taken by the user's contractor"}


def as_csv(rows: list[dict]) -> str:
    """The rows of :func:`results_with_limits` as CSV text (values in mg/l; a non-detect's
    value is its detection limit with qualifier ``<``, as the lab reports it)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        w.writerow([r["sample"], r["site"], r["collected"].isoformat(), r["analyte"], f"{r['mg_l']:g}", "mg/l",
                    r["qualifier"], r["sample_type"], r["laboratory"] or "", r["method"] or "",
                    SAMPLED_BY_CSV[r["sampled_by"]], r["version"],
                    r["entered_by"],
                    "; ".join(f"{lim['words']} {lim['limit']:g} {lim['unit']} ({lim['citation']})" for lim in r["limits"]),
                    "; ".join(f"{x['rule']} > {x['limit']:g} {x['unit']}" for x in r["exceeds"])])
    return buf.getvalue()
