"""The whole test of significant noncompliance (SNC), 40 CFR 403.8(f)(2)(viii), criterion by
criterion, with the data of each.

For each industrial user and six-month period (:mod:`enforcement.periods`: calendar halves
or, configurable, the six months ending with each quarter):

(A) chronic and (B) technical review criteria: the lab measurements of the period against
    the user's numeric limits, counted by :func:`lab.checks.snc.snc_counts` (integers, so
    exactly 66 % and 33 % count; the TRC factor 1.4 for BOD, TSS and oil and grease, 1.2
    for the others), each measurement listed as evidence;
(C) pass through or interference and (D) endangerment: findings the superintendent records;
(E) a compliance schedule milestone more than 90 days late, (F) a report more than 45 days
    late, (G) a noncompliance not reported: findings sewerwatch computes from the milestones
    and the reports owed (:mod:`enforcement.milestones`, :mod:`enforcement.reports`);
(H) other violations the superintendent designates: recorded findings.

A finding counts in the period holding the local day it arose (``findings.occurred``; a
report 45 days late in the period of its due date instead where ``[enforcement]
late_report_period = "due"``). A user meeting any criterion in a period is in SNC for it; the
annual list (``sewerwatch report snc --year Y``) names those in SNC in any period ending in
the year ("at any time during the previous twelve months").

Asking is a pure question (:mod:`enforcement.asof`): the answer is the records' as they stood
at the instant asked about (the lab results collected by then, the reports received, the
milestones met, the findings arisen by then), and nothing is written.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from enforcement import asof
from enforcement import findings as fnd
from enforcement.findings import SNC_CITATION, SNC_WORDS, sites  # noqa: F401 - SNC_CITATION: the CLI's
from enforcement.periods import Period, local_date
from enforcement.settings import Settings
from foundation.errors import InputError
from lab.checks.snc import pack_limits, snc_counts
from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import pack_timezone
from lab.results_table import iso
from lab.store.current import load_results
from limits.permit_store import current_permits

CRITERIA = ("A", "B", "C", "D", "E", "F", "G", "H")
TITLES = {"A": "chronic violations", "B": "technical review criteria (TRC) violations",
          "C": "pass through or interference", "D": "imminent endangerment or emergency authority",
          "E": "compliance schedule milestone 90 days late", "F": "reports 45 days late",
          "G": "noncompliance not reported", "H": "other violations designated"}
WORDS = {
    "A": "Chronic violations of wastewater Discharge limits, defined here as those in which sixty-six percent or more "
         "of all of the measurements taken for the same pollutant parameter during a six-month period exceed (by any "
         "magnitude) a numeric Pretreatment Standard or Requirement, including instantaneous limits, as defined by 40 "
         "CFR 403.3(l);",
    "B": "Technical Review Criteria (TRC) violations, defined here as those in which thirty-three percent or more of "
         "all of the measurements taken for the same pollutant parameter during a six-month period equal or exceed the "
         "product of the numeric Pretreatment Standard or Requirement including instantaneous limits, as defined by 40 "
         "CFR 403.3(l) multiplied by the applicable TRC (TRC = 1.4 for BOD, TSS, fats, oil, and grease, and 1.2 for "
         "all other pollutants except pH);",
    **SNC_WORDS,
}


def _limit_words(limit) -> str:
    if isinstance(limit, (int, float)):
        return f"{limit:g} mg/l"
    return f"the range {limit.low:g} to {limit.high:g}"     # pH: outside it exceeds


def measured(conn, site, period: Period, permit=None, non_detect: str = DEFAULT_COMPLIANCE,
             now: datetime | None = None) -> dict:
    """Criteria (A) and (B) of one user over one period: per parameter with a limit (the
    ordinance's and the user's permit's, the stricter applying: :func:`lab.checks.snc.pack_limits`),
    the counts and every measurement (sample, local date, value, non-detect, exceeds, TRC)
    collected in the period by ``now``."""
    tz = pack_timezone(site.pack)
    start, end = period.bounds(tz)
    if now is not None:
        end = min(end, now + timedelta(microseconds=1))
    table = load_results(conn, start, max(start, end), [site.key])
    limits = pack_limits(site.pack, permit)
    values = substitute(table.value_mg_l, table.non_detect, non_detect) if len(table) else np.empty(0)
    out = {}
    for parameter, limit in sorted(limits.items()):
        m = table.analyte == parameter
        if not m.any():
            continue
        v = values[m]
        res = snc_counts(v, limit, parameter)
        rows = []
        for i in np.flatnonzero(m):
            t = datetime.fromisoformat(iso(table.collected[i]).replace("Z", "+00:00"))
            value = float(values[i])
            exceeds = bool(snc_counts([value], limit, parameter)["n_exceed"])
            trc = bool(snc_counts([value], limit, parameter)["n_trc"])
            rows.append({"sample": str(table.sample[i]), "date": local_date(t, tz).isoformat(), "mg_l": value,
                         "non_detect": bool(table.non_detect[i]), "exceeds": exceeds, "trc": trc})
        out[parameter] = {**res, "limit": limit if isinstance(limit, (int, float)) else [limit.low, limit.high],
                          "limit_words": _limit_words(limit), "measurements": rows}
    return out


def _pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f} %" if d else "-"


def evaluate_site(conn, site, period: Period, findings: list[dict], permit=None, now: datetime | None = None) -> dict:
    """Every criterion for one user and period: ``met``, ``explanation`` (lines of words) and
    ``evidence``; ``snc`` is whether any is met."""
    crit: dict[str, dict] = {}
    lab = measured(conn, site, period, permit, now=now)
    a_lines, b_lines = [], []
    for p, r in lab.items():
        exceed = [f"{x['sample']} {x['date']} {'<' if x['non_detect'] else ''}{x['mg_l']:g}"
                  for x in r["measurements"] if x["exceeds"]]
        a_lines.append(f"{p}: {r['n_exceed']} of {r['n']} measurements ({_pct(r['n_exceed'], r['n'])}) exceed "
                       f"{r['limit_words']} (66 % makes it chronic)" + (f": {', '.join(exceed)}" if exceed else ""))
        if r["trc_factor"] is None:
            b_lines.append(f"{p}: no TRC (pH has none)")
            continue
        trc = [f"{x['sample']} {x['date']} {x['mg_l']:g}" for x in r["measurements"] if x["trc"]]
        b_lines.append(f"{p}: {r['n_trc']} of {r['n']} ({_pct(r['n_trc'], r['n'])}) equal or exceed "
                       f"{r['trc_factor']:g} x {r['limit_words']} = {r['trc_limit']:g} mg/l (33 % makes it a TRC "
                       "violation)" + (f": {', '.join(trc)}" if trc else ""))
    crit["A"] = {"met": any(r["chronic"] for r in lab.values()),
                 "explanation": a_lines or ["no lab measurement of a limited pollutant in the period"],
                 "evidence": {p: r for p, r in lab.items()}}
    crit["B"] = {"met": any(r["trc"] for r in lab.values()),
                 "explanation": b_lines or ["no lab measurement of a limited pollutant in the period"],
                 "evidence": {p: {k: r[k] for k in ("n", "n_trc", "trc_factor", "trc_limit", "trc")}
                              for p, r in lab.items()}}
    for c in CRITERIA[2:]:
        fs = [f for f in findings if f["snc_criterion"] == c]
        crit[c] = {"met": bool(fs),
                   "explanation": [f"finding {_ref(f)} ({f['kind']}, {f['occurred'].isoformat()}): {f['summary']}"
                                   for f in fs] or [_none_words(c)],
                   "evidence": [{"finding": f["id"], "key": f["key"], "kind": f["kind"],
                                 "occurred": f["occurred"].isoformat(), "summary": f["summary"]} for f in fs]}
    for c in CRITERIA:
        crit[c]["title"] = TITLES[c]
        crit[c]["citation"] = f"{SNC_CITATION}({c})"
        crit[c]["words"] = WORDS[c]
    met = [c for c in CRITERIA if crit[c]["met"]]
    return {"site": site.key, "name": site.name, "permit": permit.number if permit else None, "pack": site.pack,
            "period": period.as_json(), "snc": bool(met), "criteria_met": met, "criteria": crit}


def _ref(f: dict) -> str:
    """A finding by its id where it is stored, else by its key (``late-report:3``)."""
    return str(f["id"]) if f["id"] is not None else f["key"]


def _none_words(c: str) -> str:
    if c in ("C", "D", "H"):
        return "no finding recorded"
    return {"E": "no milestone more than 90 days late", "F": "no report more than 45 days late",
            "G": "no noncompliance left unreported"}[c]


def evaluate(conn, period: Period, site_key: str | None = None, now: datetime | None = None,
             st: Settings | None = None) -> list[dict]:
    """The SNC status of every user (or one) for ``period`` as things stood at ``now``
    (default: the present), from the records alone (:mod:`enforcement.asof`): writes nothing."""
    now = now or datetime.now(timezone.utc)
    st = st or Settings()
    out = []
    permits = current_permits(conn)
    for key, s in sites(conn).items():
        if site_key is not None and key != site_key:
            continue
        fs = asof.findings_between(conn, period.start, period.end, now, st, key, snc_periods=True)
        res = evaluate_site(conn, s, period, fs, permits.get(key), now)
        res["as_of"] = now.isoformat()
        out.append(res)
    return out


def explain(result: dict) -> str:
    """A user's status criterion by criterion, in words."""
    head = (f"{result['name']} ({result['site']}{', permit ' + result['permit'] if result.get('permit') else ''}): "
            + (f"IN SIGNIFICANT NONCOMPLIANCE, criteria {', '.join('(' + c + ')' for c in result['criteria_met'])}"
               if result["snc"] else "not in significant noncompliance"))
    lines = [head]
    for c in CRITERIA:
        r = result["criteria"][c]
        lines.append(f"  ({c}) {r['title']}: {'MET' if r['met'] else 'not met'}")
        lines += [f"      {x}" for x in r["explanation"]]
    return "\n".join(lines)


def snc_finding(conn, site_key: str, period: Period, on, st: Settings | None = None) -> int:
    """The finding of a user's significant noncompliance in ``period`` (stored once, key
    ``snc:<site>:<period>``), to draft a notice from; an :class:`InputError` when the user is
    not in SNC in it."""
    s = fnd.site(conn, site_key)
    [r] = evaluate(conn, period, site_key, st=st)
    if not r["snc"]:
        raise InputError(f"{site_key} is not in significant noncompliance in {period.name} "
                         f"(sewerwatch snc --period {period.name} --site {site_key} explains)")
    crit = [{"criterion": c, "title": r["criteria"][c]["title"], "words": r["criteria"][c]["words"],
             "explanation": r["criteria"][c]["explanation"]} for c in r["criteria_met"]]
    key = f"snc:{site_key}:{period.name}"
    with conn.transaction():
        fid = fnd.store_finding(
            conn, s.id, "snc", on, f"in {period.name} ({period.start} to {period.last_day}): "
            + ", ".join(f"({c['criterion']}) {c['title']}" for c in crit),
            key=key, citation=SNC_CITATION, words=" ".join(f"({c['criterion']}) {c['words']}" for c in crit),
            period=(period.start, period.end), evidence={"period": period.name, "criteria": crit})
    if fid is None:
        fid = conn.execute("SELECT id FROM findings WHERE key = %s", (key,)).fetchone()[0]
    return fid
