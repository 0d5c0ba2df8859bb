"""Sampling schedules: the samples each user owes per period, taken or missing.

A requirement says which parameters must be sampled how many times per period (a day, week,
month, quarter or year), from when to when, and where it comes from: a discharge permit's
monitoring condition (``[[monitoring]]`` of a permit, :mod:`limits.permits`; palmyra-wi
003_44f871d49a02d8f5.txt §13.53(3): "Samples shall be taken at intervals to be established
by contractual agreement under §13.54") or the ordinance where it sets one (webster-wi
000_68bc5aa0322c9423.txt §240-8: "A minimum of at least quarterly sampling shall be necessary
to determine sewer service charges").

Each period the requirement covers whole (a permit effective mid-quarter owes nothing for
that quarter) is, at an instant:

* ``due``: not over yet, samples still owed;
* ``taken``: every parameter has its samples (a lab sample with a result for it, collected
  in the period, local days);
* ``missing``: over, and a parameter short of its samples: a failure to monitor, a finding
  (kind ``failure-to-monitor``) that arises on the first day after the period.

Continuous requirements (pH and flow at the control manhole) are listed but not judged here:
the sensor-health alerts watch those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from enforcement.findings import sites, store_finding
from enforcement.periods import SAMPLING_PERIODS, Period, local_date, sampling_periods
from lab.ordinance import pack_timezone
from limits.packs import load_pack
from limits.permit_store import current_permits
from limits.permits import renewal


@dataclass(frozen=True)
class Requirement:
    """Samples a user owes.

    Attributes
    ----------
    id : str
        Stable: ``PAL-IU-2026-02:5(a)`` (permit and condition) or ``webster-wi:§240-8``.
    site : str
    parameters : tuple of str
        Lab analytes (or continuous parameters, with ``per`` ``continuous``).
    times : int or None
        Samples of each parameter per period.
    per : str
        One of :data:`enforcement.periods.SAMPLING_PERIODS`, or ``continuous``.
    start, end : date or None
        In effect from ``start`` to ``end`` (exclusive); None: no bound.
    citation, words : str
        Where it comes from and its words.
    """

    id: str
    site: str
    parameters: tuple[str, ...]
    times: int | None
    per: str
    citation: str
    words: str = ""
    start: date | None = None
    end: date | None = None
    sample_type: str | None = None

    @property
    def continuous(self) -> bool:
        return self.per == "continuous"


@dataclass
class PeriodStatus:
    requirement: Requirement
    period: Period
    state: str                                  # due, taken, missing, not-required, continuous
    counts: dict = field(default_factory=dict)  # parameter -> samples taken
    samples: dict = field(default_factory=dict)  # parameter -> [sample ids]

    @property
    def short(self) -> dict:
        """parameter -> samples still owed."""
        t = self.requirement.times or 0
        return {p: t - n for p, n in self.counts.items() if n < t}

    def words(self) -> str:
        r = self.requirement
        got = ", ".join(f"{p} {self.counts.get(p, 0)}/{r.times}" for p in r.parameters)
        if r.continuous:
            return "continuous: watched by the sensor-health alerts"
        return {"due": f"due: {got}", "taken": f"taken: {got}", "missing": f"MISSING: {got}",
                "not-required": "not required (the requirement covers only part of the period)"}[self.state]

    def as_json(self) -> dict:
        r = self.requirement
        return {"requirement": r.id, "site": r.site, "citation": r.citation, "parameters": list(r.parameters),
                "times": r.times, "per": r.per, "period": self.period.as_json(), "state": self.state,
                "counts": self.counts, "samples": self.samples, "short": self.short, "words": self.words()}


def judge(req: Requirement, samples: list[tuple[date, str, str]], first: date, end: date,
          today: date) -> list[PeriodStatus]:
    """The periods of ``req`` overlapping ``[first, end)`` and where each stands ``today``.

    Parameters
    ----------
    samples : list of (date, sample id, analyte)
        The site's lab results: the local day each was collected.
    today : date
        The local day of judging: a period is over once ``today >= period.end`` (so a sample
        missing from a quarter is found on the first day after the quarter).
    """
    if req.continuous or req.per not in SAMPLING_PERIODS:
        return []
    lo = max(first, req.start) if req.start else first
    hi = min(end, req.end) if req.end else end
    out = []
    for p in sampling_periods(req.per, lo, hi) if lo < hi else []:
        whole = (req.start is None or req.start <= p.start) and (req.end is None or p.end <= req.end)
        counts, ids = {}, {}
        for prm in req.parameters:
            got = sorted({s for d, s, a in samples if a == prm and p.contains(d) and d <= today})
            counts[prm], ids[prm] = len(got), got
        if not whole:
            state = "not-required"
        elif all(n >= req.times for n in counts.values()):
            state = "taken"
        elif today >= p.end:
            state = "missing"
        else:
            state = "due"
        out.append(PeriodStatus(req, p, state, counts, ids))
    return out


def site_samples(conn, site_key: str, tz) -> list[tuple[date, str, str]]:
    """Every current lab result of a site as (local day collected, sample id, analyte); a result
    analysed after its holding time (``lab_result_holds``, 40 CFR 136.3(e) Table II,
    :mod:`lab.sampling.matching`) is kept and flagged but is no sample taken."""
    rows = conn.execute("SELECT ls.collected, ls.sample_key, r.analyte FROM lab_results_current r "
                        "JOIN lab_samples ls ON ls.id = r.sample_id JOIN sites s ON s.id = ls.site_id "
                        "WHERE s.key = %s AND NOT EXISTS (SELECT 1 FROM lab_result_holds h "
                        "WHERE h.result_id = r.id)", (site_key,)).fetchall()
    return [(local_date(t, tz), k, a) for t, k, a in rows]


def missing_findings(site_id: int, statuses: list[PeriodStatus]) -> list[dict]:
    """A ``failure-to-monitor`` finding (a dict as :func:`enforcement.reports.findings_at`'s)
    for each missing period; it arises on the first day after the period."""
    out = []
    for st in statuses:
        if st.state != "missing":
            continue
        r, p = st.requirement, st.period
        short = ", ".join(f"{prm}: {r.times - n} of {r.times}" for prm, n in st.counts.items() if n < r.times)
        out.append({"site": r.site, "site_id": site_id, "kind": "failure-to-monitor", "occurred": p.end,
                    "summary": f"samples missing for {p.name} ({p.start} to {p.last_day}) under {r.citation}: "
                               f"{short} not taken",
                    "key": f"monitor:{r.id}:{p.name}", "citation": r.citation, "words": r.words,
                    "period": (p.start, p.end), "violation_id": None,
                    "evidence": {"requirement": r.id, "period": p.name, "times": r.times, "per": r.per,
                                 "counts": st.counts, "samples": st.samples}})
    return out


def store_missing(conn, site_id: int, statuses: list[PeriodStatus]) -> list[int]:
    """Store :func:`missing_findings` (once each)."""
    new = []
    for f in missing_findings(site_id, statuses):
        fid = store_finding(conn, site_id, f["kind"], f["occurred"], f["summary"], key=f["key"],
                            citation=f["citation"], words=f["words"], period=f["period"], evidence=f["evidence"],
                            by="sewerwatch")
        if fid:
            new.append(fid)
    return new


def requirements(conn, today: date) -> dict[str, list[Requirement]]:
    """Every user's sampling requirements: its pack's ``[[monitoring]]`` (the ordinance's,
    for every user) and its current permit's ``[[monitoring]]`` conditions, in force from the
    permit's effective date to the end of its last term (:func:`limits.permits.renewal`)."""
    permits = current_permits(conn)
    out: dict[str, list[Requirement]] = {}
    for key, s in sites(conn).items():
        pack = load_pack(s.pack)
        reqs = [Requirement(f"{pack.id}:{m.section}", key, m.parameters, m.times, m.per, m.citation, m.words)
                for m in pack.monitoring]
        p = permits.get(key)
        if p is not None:
            ends = renewal(p, today).ends
            for m in p.monitoring:
                words = m.words or (f"{', '.join(m.parameters)}: " + (
                    "measured continuously" if m.per == "continuous"
                    else f"{m.times} {m.sample_type} sample{'s' if m.times != 1 else ''} a {m.per}"))
                reqs.append(Requirement(f"{p.number}:{m.condition}", key, m.parameters, m.times, m.per,
                                        p.cite(m.condition), words, start=p.effective,
                                        end=ends + timedelta(days=1) if ends else None, sample_type=m.sample_type))
        out[key] = reqs
    return out


def schedule(conn, now: datetime, first: date | None = None, end: date | None = None,
             site_key: str | None = None) -> list[PeriodStatus]:
    """Where every requirement of every user (or one) stands at ``now``, period by period,
    over ``[first, end)`` (default: from January 1 of this year to the current period);
    continuous requirements listed once."""
    out = []
    reqs = requirements(conn, now.date())
    for key, s in sites(conn).items():
        if site_key is not None and key != site_key:
            continue
        tz = pack_timezone(s.pack)
        today = local_date(now, tz)
        lo = first or date(today.year, 1, 1)
        hi = end or today + timedelta(days=1)
        samples = site_samples(conn, key, tz)
        for r in reqs[key]:
            if r.continuous:
                out.append(PeriodStatus(r, Period(r.start or lo, r.end or hi, "continuous"), "continuous"))
                continue
            # periods that have begun by the end of the range (the current one, still due, included)
            out.extend(judge(r, samples, lo, hi, today))
    return out


def findings_at(conn, now: datetime, site_key: str | None = None) -> list[dict]:
    """The failure-to-monitor findings of this year's periods as things stood at ``now``
    (samples collected by then). Reads only."""
    ids = {k: s.id for k, s in sites(conn).items()}
    statuses = schedule(conn, now, site_key=site_key)
    return [f for key, site_id in ids.items()
            for f in missing_findings(site_id, [st for st in statuses if st.requirement.site == key])]


def check(conn, now: datetime) -> list[int]:
    """A failure-to-monitor finding for each period of this year missing its samples at
    ``now`` (once; earlier years: ``sewerwatch schedule --year Y`` shows them)."""
    new = []
    with conn.transaction():
        ids = {k: s.id for k, s in sites(conn).items()}
        statuses = schedule(conn, now)
        for key, site_id in ids.items():
            new += store_missing(conn, site_id, [st for st in statuses if st.requirement.site == key])
    return new
