"""Whether a user needs a wastewater discharge permit (palmyra-wi §13.54(1)), and where the
permit it has stands (§13.54(4): its term, renewal and expiry; :func:`standing`).

A permit is required when the discharge has a BOD above 250 mg/l, suspended solids above
250 mg/l, TKN above 40 mg/l, total phosphorus above 7 mg/l (judged here on the average of
the user's results over the period, non-detects at their detection limit by default), a
volume of 5,000 gallons a day or more (judged on the average daily volume from the metered
flow), or "(f) Any of the characteristics listed under §13.48": a result or an episode of the
readings that violates one of the §13.48 prohibitions the pack's ``permit-characteristics``
rule names (cyanide in excess of 0.5 mg/l, oil and grease over an average of 100 mg/l, pH
lower than 6.0 or higher than 9.0, a liquid hotter than 150 °F, a slug), judged by the
ordinance's own limits whatever the user's permit says.

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(1)(a)-(f).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import numpy as np

from lab.checks.compliance import VIOLATES
from lab.formulas.nondetect import DEFAULT_COMPLIANCE, substitute
from lab.ordinance import pack_of, permit_thresholds
from lab.results_table import LabTable
from limits.days import intervals_of, record_days
from limits.permits import Permit, renewal


def permit_required(table: LabTable, site: str, pack: str, daily_volumes_gal=None,
                    non_detect: str = DEFAULT_COMPLIANCE, prohibited: list[dict] | None = None) -> dict:
    """Decide whether ``site`` needs a discharge permit under ``pack``.

    Parameters
    ----------
    table : LabTable
        Lab results (any sites; only ``site``'s are used).
    daily_volumes_gal : array_like, optional
        The site's metered volume of each whole day of the period [gal/day].
    prohibited : list of dict, optional
        The site's violations of the ordinance's own rules in the period (lab results judged
        without its permit, episodes of the readings): those of a rule the pack's
        ``permit-characteristics`` names meet §13.54(1)(f).

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
    chars = pack_of(pack).permit_characteristics()
    if chars is not None and prohibited is not None:
        shown = [v for v in prohibited if v["site"] == site and v["rule"] in chars.rules]
        item = {"criterion": "characteristics", "value": float(len(shown)), "statistic": "violations",
                "unit": "violations", "threshold": 1.0, "comparison": ">=", "citation": chars.citation,
                "words": chars.words, "rules": list(chars.rules),
                "shown": [{"rule": v["rule"], "citation": v["citation"], "start": _iso(v["start"]),
                           "day": _local_day(v["start"], pack_of(pack).tz),
                           "last_day": _last_day(v, pack_of(pack).tz), "peak": v["peak"],
                           "limit": v["limit"], "unit": v.get("unit"), "comparison": v.get("comparison")}
                          for v in shown]}
        checked.append(item)
        if shown:
            reasons.append(item)
    return {"site": site, "pack": pack, "required": bool(reasons), "reasons": reasons, "checked": checked}


def reason_words(r: dict) -> str:
    """One reason a permit is required, in words with its citation: ``bod5 400 mg/l (Village of
    Palmyra Code §13.54(1)(a))``, or for (f) the characteristic shown: ``any of the
    characteristics listed under §13.48: cyanide-max 0.62 mg/l, in excess of 0.5 mg/l on
    2026-02-04 (Village of Palmyra Code §13.54(1)(f))``."""
    if r["criterion"] != "characteristics":
        return f"{r['criterion']} {r['value']:g} {r['unit']} ({r['citation']})"
    seen = "; ".join(f"{v['rule']} {v['peak']:g} {v['unit'] or ''}".rstrip()
                     + (f", {v['comparison']} {v['limit']:g} {v['unit'] or ''}".rstrip() if v.get("comparison") else "")
                     + (f" on {v['day']}" if v.get("last_day", v["day"]) == v["day"]
                        else f" from {v['day']} to {v['last_day']}") for v in r["shown"])
    words = r["words"].rstrip(".")
    return f"{words[:1].lower() + words[1:]}: {seen} ({r['citation']})"


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
        out["finding"] = {
            "site": permit.site, "parameter": "permit", "rule": "permit-expired",
            "start": _z(start), "end": _z(end), "peak": float((last - first).days + 1), "limit": 0.0, "unit": "days",
            "citation": citation, "words": words, "pack": pack, "source": "permit",
            "applies": "permit", "stricter_of": None, "provenance": permit.path,
            "evidence": {"permit": permit.number, "ended": st.ends.isoformat(), "days_expired": (today - st.ends).days,
                         "renewal": permit.renewal.citation},
        }
        # [the day after it ended, the day after the last day judged): limits.days
        out["finding"]["days_of_violation"] = record_days(out["finding"], tz)
    return out


def _last_day(v: dict, tz) -> str:
    """The local day of the last instant a violation record's condition existed (limits.days)."""
    end_us = max(b for _a, b in intervals_of(v)) - 1
    return datetime.fromtimestamp(end_us / 1e6, timezone.utc).astimezone(tz).date().isoformat()


def _iso(t) -> str:
    return _z(t) if isinstance(t, datetime) else str(t)


def _local_day(t, tz) -> str:
    t = t if isinstance(t, datetime) else datetime.fromisoformat(str(t).replace("Z", "+00:00"))
    return t.astimezone(tz).date().isoformat()


def _z(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
