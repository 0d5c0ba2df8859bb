"""A month's sampling events planned from the schedule: each sampling period due in the month
(:func:`enforcement.schedules.schedule`) gets as many events as it still owes samples, spread
over the working days of the month that remain in the period.

Why here and not in ``lab``: the events themselves, their chain of custody and their matching
on import are ``lab``'s (:mod:`lab.sampling`), but the schedule that says what is owed is
enforcement's (permits' monitoring conditions and the ordinance's, e.g. webster-wi
000_68bc5aa0322c9423.txt §240-8: "A minimum of at least quarterly sampling"), and lab may not
import the floor above it.

Who samples: a permit's monitoring condition is the user's self-monitoring (palmyra-wi
003_44f871d49a02d8f5.txt §13.53(3): "Samples shall be taken at intervals to be established by
contractual agreement under §13.54"), so its events are the user's; a frequency the ordinance
sets for every user is the utility's own sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from enforcement import schedules
from enforcement.findings import sites
from enforcement.periods import add_months, local_date
from foundation.errors import InputError
from lab.ordinance import pack_timezone
from lab.sampling import events
from limits.sample_types import of_result

#: The local time of day a planned sample is taken (for a composite: when it starts).
PLANNED_TIME = time(9, 0)


@dataclass
class Plan:
    """What :func:`plan_month` did: ``created`` the new events, ``already`` the sample ids of
    events planned before for the periods it looked at."""

    month: str
    created: list = field(default_factory=list)
    already: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"month": self.month, "created": [e.as_json() for e in self.created], "already": self.already}


def month_of(text: str) -> date:
    """``2026-05`` as the first of the month; a one-line error naming ``--month`` otherwise."""
    try:
        y, m = (int(x) for x in str(text).strip().split("-"))
        return date(y, m, 1)
    except ValueError:
        raise InputError(f"month: expected a month such as 2026-05, got {text!r}") from None


def month_words(first: date) -> str:
    return first.strftime("%B %Y")


def _days(lo: date, hi: date, n: int) -> list[date]:
    """``n`` working days (Monday to Friday) spread over ``[lo, hi)``, repeated when fewer."""
    days = [lo + timedelta(days=i) for i in range((hi - lo).days)]
    work = [d for d in days if d.weekday() < 5] or days
    return [work[int((i + 0.5) * len(work) / n)] for i in range(n)]


def plan_month(conn, month: str, now: datetime, *, actor: str = "sewerwatch", site: str | None = None) -> Plan:
    """Plan the sampling events the schedule owes in a month (one user's with ``site``).

    Parameters
    ----------
    month : str
        ``2026-05``.
    now : datetime
        The present (aware): periods are judged at it, and no event is planned on a day before
        the village's today.

    Raises
    ------
    InputError
        A bad month; nothing owed in it; or everything owed planned already (naming the events).
    """
    first = month_of(month)
    end = add_months(first, 1)
    plan = Plan(first.strftime("%Y-%m"))
    with conn.transaction():
        all_sites = sites(conn)
        for st in schedules.schedule(conn, now, first, end, site_key=site):
            r, p = st.requirement, st.period
            if st.state != "due":
                continue
            tz = pack_timezone(all_sites[r.site].pack)
            lo, hi = max(first, p.start, local_date(now, tz)), min(end, p.end)
            if lo >= hi:
                continue
            have = [k for (k,) in conn.execute(
                "SELECT e.sample_key FROM sampling_events e JOIN sites s ON s.id = e.site_id WHERE s.key = %s AND "
                "e.requirement = %s AND e.period = %s AND e.state = 'planned' ORDER BY e.id",
                (r.site, r.id, p.name))]
            short = {prm: (r.times or 0) - st.counts.get(prm, 0) - len(have) for prm in r.parameters}
            n = max(short.values(), default=0)
            if n <= 0:
                plan.already += have
                continue
            sampler = "user" if r.sample_type is not None else "utility"
            for i, day in enumerate(_days(lo, hi, n)):
                params = [prm for prm in r.parameters if short[prm] > i]
                at = datetime.combine(day, PLANNED_TIME, tzinfo=tz)
                plan.created.append(events.create(conn, r.site, at, params, sample_type=of_result(r.sample_type),
                                                  sampler=sampler, requirement=r.id, period=p.name, actor=actor,
                                                  now=now))
    if not plan.created:
        if plan.already:
            raise InputError(f"the samples due in {month_words(first)} are planned already: "
                             + ", ".join(plan.already))
        raise InputError(f"no samples are due in {month_words(first)} that can still be planned")
    return plan
