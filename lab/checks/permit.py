"""Whether a user needs a wastewater discharge permit (palmyra-wi §13.54(1)), and where the
permit it has stands (§13.54(4): its term, renewal and expiry; :func:`standing`).

A permit is required when the discharge has a BOD above 250 mg/l, suspended solids above
250 mg/l, TKN above 40 mg/l, total phosphorus above 7 mg/l (judged here on the average of
the user's results over the period, non-detects at their detection limit by default), or a
volume of 5,000 gallons a day or more (judged on the average daily volume from the metered
flow).

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(1)(a)-(e).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import numpy as np

from lab.checks.compliance import VIOLATES
from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import pack_of, permit_thresholds
from lab.results_table import LabTable
from limits.permits import Permit, renewal


def permit_required(table: LabTable, site: str, pack: str, daily_volumes_gal=None,
                    non_detect: str = DEFAULT_COMPLIANCE) -> dict:
    """Decide whether ``site`` needs a discharge permit under ``pack``.

    Parameters
    ----------
    table : LabTable
        Lab results (any sites; only ``site``'s are used).
    daily_volumes_gal : array_like, optional
        The site's metered volume of each whole day of the period [gal/day].

    Returns
    -------
    dict
        ``required`` (bool), ``reasons`` (the criteria met, each with value, threshold and
        citation) and ``checked`` (every criterion looked at).
    """
    conc, vol = permit_thresholds(pack)
    sel = table.select(table.site == site)
    checked, reasons = [], []
    for analyte, th in conc.items():
        m = sel.analyte == analyte
        if not m.any():
            continue
        avg = float(substitute(sel.value_mg_l[m], sel.non_detect[m], non_detect).mean())
        item = {"criterion": analyte, "value": avg, "statistic": "average", "unit": "mg/l",
                "threshold": th.value, "comparison": th.op, "citation": th.citation, "results": int(m.sum())}
        checked.append(item)
        if VIOLATES[th.op](avg, th.value):
            reasons.append(item)
    if vol is not None and daily_volumes_gal is not None and len(daily_volumes_gal):
        d = np.asarray(daily_volumes_gal, dtype=np.float64)
        avg = float(d.mean())
        item = {"criterion": "volume", "value": avg, "statistic": "average daily", "unit": "gal/d",
                "max_day": float(d.max()), "days": int(len(d)), "threshold": vol.value,
                "comparison": vol.op, "citation": vol.citation}
        checked.append(item)
        if VIOLATES[vol.op](avg, vol.value):
            reasons.append(item)
    return {"site": site, "pack": pack, "required": bool(reasons), "reasons": reasons, "checked": checked}


def standing(permit: Permit, pack: str, today: date, period: tuple[date, date] | None = None) -> dict:
    """Where the site's permit stands on ``today`` (palmyra-wi §13.54(4)), and, when it has
    expired, the finding.

    Returns
    -------
    dict
        ``site``, ``permit`` (number), ``state``, ``term_end``, ``ends``, ``days_left``,
        ``citation`` (the renewal terms) and ``finding``: None, or for an expired permit a
        violation record (rule ``permit-expired``, source ``permit``) citing §13.54(1)(g) ("No
        person shall discharge ... without a wastewater discharge permit, if required") and
        §13.54(4), from the day after it ended to ``today``; within ``period`` (local days
        ``first <= day < end``) where one is given, None if it lies outside.
    """
    st = renewal(permit, today)
    out = {"site": permit.site, "permit": permit.number, "state": st.state, "term_end": st.term_end.isoformat(),
           "ends": st.ends.isoformat() if st.ends else None, "days_left": st.days_left,
           "citation": permit.renewal.citation, "finding": None}
    if st.state == "expired":
        p = pack_of(pack)
        try:
            rule = p.rule("permit-required")
            citation, words = f"{rule.citation}; {permit.renewal.citation}".strip("; "), rule.words
        except KeyError:
            citation, words = permit.renewal.citation, permit.renewal.words
        tz = p.tz
        first, last = st.ends + timedelta(days=1), today
        if period is not None:
            first, last = max(first, period[0]), min(last, period[1] - timedelta(days=1))
        if last < first:
            return out
        start = datetime(first.year, first.month, first.day, tzinfo=tz)
        end = datetime(last.year, last.month, last.day, tzinfo=tz) + timedelta(days=1)
        days = (last - first).days + 1
        out["finding"] = {
            "site": permit.site, "parameter": "permit", "rule": "permit-expired",
            "start": _z(start), "end": _z(end), "peak": float(days), "limit": 0.0, "unit": "days",
            "citation": citation, "words": words, "pack": pack, "days_of_violation": days, "source": "permit",
            "applies": "permit", "stricter_of": None, "provenance": permit.path,
            "evidence": {"permit": permit.number, "ended": st.ends.isoformat(), "days_expired": (today - st.ends).days,
                         "renewal": permit.renewal.citation},
        }
    return out


def _z(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
