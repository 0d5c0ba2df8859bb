"""The compliance calendar: what the program owes and is owed, day by day.

One list of dated entries over a range of local dates of the village, from the records the
rest of enforcement keeps (nothing here is stored):

* ``sampling``: each sampling period of each requirement (a permit's monitoring condition,
  the ordinance's own frequency; :mod:`enforcement.schedules`) on its last day: ``due``,
  ``taken`` or ``missing``;
* ``report``: each report owed by a user (:mod:`enforcement.reports`) on its due day:
  ``due``, ``overdue``, ``received``;
* ``notice-response``: each issued notice's response deadline (:mod:`enforcement.notices`):
  ``awaiting``, ``overdue``, ``received``;
* ``milestone``: each compliance schedule milestone (:mod:`enforcement.milestones`): ``due``,
  ``overdue``, ``met``;
* ``permit-renewal``: each current permit's term end (palmyra-wi 003_44f871d49a02d8f5.txt
  §13.54(4): "A permit shall be issued for one year and shall be automatically renewed on a
  year to year basis thereafter, unless the person is notified by the Village within 60 days
  prior to the expiration of the permit"), and ``permit-notice``, the last day that notice
  can be given (the term end less the permit's notice days);
* ``snc-decision``: the first day after each SNC period (halves, or the six months ending
  with each quarter, ``[enforcement] snc_periods``), when the period's significant
  noncompliance can be decided (40 CFR 403.8(f)(2)(viii));
* ``annual-report``: the annual pretreatment report and the SNC list to publish for the
  year before (40 CFR 403.12(i): "at least once a year"; 40 CFR 403.8(f)(2)(viii): "publish
  annually ... a list of the Industrial Users which, at any time during the previous 12
  months, were in significant noncompliance"), on the day of ``[enforcement]
  annual_report_due`` (the date the Approval Authority sets; default March 31);
* ``village-sampling`` and ``village-inspection``: on the last day of each year, each
  significant user's sample taken by the village (or its contractor; the user's
  self-monitoring does not count) and its inspection (40 CFR 403.8(f)(2)(v): "at least once a
  year"): ``taken``/``met`` once done, ``due`` before the year ends ("not yet sampled by the
  village this year"), ``missing`` after it;
* ``grease-pumping``: each grease removal device's next pump-out (:func:`fog.store.due`, the
  program's interval; the duty of Palmyra §13.51, 003_44f871d49a02d8f5.txt: maintained "in
  continuous, efficient operation at all times"): ``due``, or ``overdue`` once past;
* ``grease-notice``: each grease notice's response deadline (:mod:`enforcement.grease_notices`):
  ``awaiting``, ``overdue``, ``received`` (answered or escalated).

The grease entries come with ``grease`` (the village's :class:`fog.rules.Rules`) and no ``site``.

:func:`entries` gives them; :func:`ical` writes them as an iCalendar document (RFC 5545, with
the maintained ``icalendar`` library), one all-day event each with a stable UID, so a
calendar program that subscribes to the office's feed shows the same dates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone

from enforcement import milestones, notices, reports, schedules
from enforcement.findings import sites
from enforcement.periods import add_months, local_date
from lab.ordinance import pack_timezone
from limits.permit_store import current_permits
from limits.permits import renewal

KINDS = ("sampling", "sampling-event", "report", "notice-response", "milestone", "permit-renewal", "permit-notice", "snc-decision",
         "annual-report", "village-sampling", "village-inspection", "grease-pumping", "grease-notice")
#: How each kind reads in a legend.
KIND_WORDS = {"sampling": "samples", "sampling-event": "sampling event", "report": "report owed", "notice-response": "notice response",
              "milestone": "compliance milestone", "permit-renewal": "permit term ends",
              "permit-notice": "last day for renewal notice", "snc-decision": "SNC decision",
              "annual-report": "annual report", "village-sampling": "the village's own sampling",
              "village-inspection": "the village's inspection", "grease-pumping": "grease device due for pumping",
              "grease-notice": "grease notice response"}
#: States that need someone to act (shown first, in the warning colour).
ATTENTION = ("missing", "overdue")
#: 40 CFR 403.8(f)(2)(viii): the SNC test's six-month periods and the annual publication.
SNC_CITATION = "40 CFR 403.8(f)(2)(viii)"
ANNUAL_CITATION = "40 CFR 403.12(i); 40 CFR 403.8(f)(2)(viii)"
#: 40 CFR 403.8(f)(2)(v): the control authority inspects and samples each significant
#: industrial user "at least once a year".
CONTROL_CITATION = "40 CFR 403.8(f)(2)(v)"


@dataclass(frozen=True)
class Entry:
    """One date of the calendar.

    Attributes
    ----------
    uid : str
        Stable identity (the iCalendar UID): ``sampling:PAL-IU-2026-02:5(a):2026-03@sewerwatch``.
    day : date
        The local date it falls on.
    kind : str
        One of :data:`KINDS`.
    state : str
        ``due``, ``taken``, ``missing``, ``overdue``, ``received``, ``awaiting``, ``met``;
        a date still to come ``coming``, gone by ``past``; a permit's term ``renewed`` or
        ``expired``.
    site, site_name : str or None
        The industrial user (None for the program's own dates).
    title : str
        One line.
    citation : str
        Where the requirement comes from.
    ref : dict
        What the office links to (``notice``, ``permit``, ``period``, ...).
    """

    uid: str
    day: date
    kind: str
    state: str
    site: str | None
    site_name: str | None
    title: str
    citation: str = ""
    ref: dict | None = None

    @property
    def attention(self) -> bool:
        return self.state in ATTENTION

    def as_json(self) -> dict:
        d = asdict(self)
        d["day"] = self.day.isoformat()
        d["attention"] = self.attention
        return d


def _uid(*parts) -> str:
    return ":".join(str(p) for p in parts) + "@sewerwatch"


def entries(conn, first: date, end: date, now: datetime, *, site: str | None = None,
            snc_periods: str = "halves", annual_report_due: tuple[int, int] = (3, 31),
            significant: tuple[str, ...] | None = None, grease=None) -> list[Entry]:
    """Every entry on the local dates ``[first, end)`` (one user's with ``site``), in date order.

    Parameters
    ----------
    now : datetime
        The instant the states are judged at (aware).
    snc_periods : str
        ``halves`` or ``rolling-quarters`` (:mod:`enforcement.settings`).
    annual_report_due : (month, day)
        When the annual report for the year before is due.
    significant : tuple of str, optional
        The significant industrial users (``[enforcement.program] significant_users``); None:
        every user with a permit on record.
    grease : fog.rules.Rules, optional
        The village's grease program's rules: its devices and notices among the entries.
    """
    all_sites = sites(conn)
    names = {k: s.name for k, s in all_sites.items()}
    out: list[Entry] = []
    out += _sampling(conn, first, end, now, site, names)
    out += _events(conn, first, end, site, all_sites)
    out += _reports(conn, first, end, now, site)
    out += _notices(conn, first, end, now, site, all_sites)
    out += _milestones(conn, first, end, now, site, names)
    out += _permits(conn, first, end, now, site, names)
    out += _control(conn, first, end, now, site, all_sites, significant)
    if site is None:
        out += _program(first, end, now.date(), snc_periods, annual_report_due)
    if site is None and grease is not None:
        out += _grease(conn, first, end, local_date(now, pack_timezone(grease.pack)), grease)
    order = {k: i for i, k in enumerate(KINDS)}
    out.sort(key=lambda e: (e.day, not e.attention, order[e.kind], e.site or "", e.uid))
    return out


def _years(d: date, n: int) -> date:
    try:
        return d.replace(year=d.year + n)
    except ValueError:          # 29 February
        return d.replace(year=d.year + n, day=28)


def _within(d: date, first: date, end: date) -> bool:
    return first <= d < end


def _sampling(conn, first, end, now, site, names) -> list[Entry]:
    out = []
    # the periods ending in the range began at most a year before it
    for st in schedules.schedule(conn, now, first - timedelta(days=366), end, site_key=site):
        r, p = st.requirement, st.period
        if r.continuous or st.state == "not-required" or not _within(p.last_day, first, end):
            continue
        got = ", ".join(f"{prm} {st.counts.get(prm, 0)}/{r.times}" for prm in r.parameters)
        words = {"due": "samples due", "taken": "samples taken", "missing": "samples MISSING"}[st.state]
        out.append(Entry(_uid("sampling", r.id, p.name), p.last_day, "sampling", st.state, r.site,
                         names.get(r.site, r.site), f"{names.get(r.site, r.site)}: {words} for {p.name} ({got})",
                         r.citation, {"requirement": r.id, "period": p.name}))
    return out


def _events(conn, first, end, site, all_sites) -> list[Entry]:
    """The sampling events planned on the range's days (:mod:`lab.sampling.events`): due until
    results come back, then taken, or missing where a result is missing or was held too long."""
    from lab.sampling import events

    out = []
    # a day more each side in UTC: every local day of the range, whatever the user's zone
    a = datetime.combine(first - timedelta(days=1), datetime.min.time(), tzinfo=timezone.utc)
    b = datetime.combine(end + timedelta(days=1), datetime.min.time(), tzinfo=timezone.utc)
    for ev in events.listing(conn, a, b, site):
        day = local_date(ev.planned_at, pack_timezone(all_sites[ev.site].pack))
        if ev.state == "cancelled" or not _within(day, first, end):
            continue
        state = "due" if ev.state == "planned" else ("missing" if ev.missing or ev.over_hold else "taken")
        out.append(Entry(_uid("sampling-event", ev.sample_key), day, "sampling-event", state, ev.site, ev.site_name,
                         f"{ev.site_name}: sample {ev.sample_key} ({', '.join(ev.parameters)})", "",
                         {"event": ev.sample_key}))
    return out


def _reports(conn, first, end, now, site) -> list[Entry]:
    out = []
    for r in reports.list_reports(conn, now, site):
        day = r["due_on"] if r["due_on"] is not None else local_date(r["due_at"], pack_timezone(r["pack"]))
        if not _within(day, first, end):
            continue
        out.append(Entry(_uid("report", r["id"]), day, "report", r["state"], r["site"], r["site_name"],
                         f"{r['site_name']}: {r['title']}: {r['standing']}", r["citation"] or "",
                         {"report": r["id"]}))
    return out


def _notices(conn, first, end, now, site, all_sites) -> list[Entry]:
    out = []
    for n in notices.list_notices(conn, site):
        if n["response_due"] is None or n["issued_on"] is None or not _within(n["response_due"], first, end):
            continue
        today = local_date(now, pack_timezone(all_sites[n["site"]].pack))
        if n["response_received_on"] is not None:
            state, words = "received", f"response received {n['response_received_on'].isoformat()}"
        elif n["state"] in ("closed", "escalated"):
            state, words = "received", n["state"]
        elif today > n["response_due"]:
            state, words = "overdue", "no response by its deadline"
        else:
            state, words = "awaiting", "response due"
        out.append(Entry(_uid("notice", n["id"]), n["response_due"], "notice-response", state, n["site"],
                         n["site_name"], f"{n['site_name']}: {n['document']['title']} {n['number']}: {words}",
                         n["document"].get("requirement", {}).get("citation", ""), {"notice": n["number"]}))
    return out


def _milestones(conn, first, end, now, site, names) -> list[Entry]:
    out = []
    for m in milestones.list_milestones(conn, site):
        if not _within(m["due_on"], first, end):
            continue
        today = local_date(now, pack_timezone(m["pack"]))
        if m["met_on"] is not None:
            state, words = "met", f"met {m['met_on'].isoformat()}"
        elif today > m["due_on"]:
            state, words = "overdue", f"not met, {(today - m['due_on']).days} days after its date"
        else:
            state, words = "due", "due"
        out.append(Entry(_uid("milestone", m["id"]), m["due_on"], "milestone", state, m["site"],
                         names.get(m["site"], m["site"]),
                         f"{names.get(m['site'], m['site'])}: compliance schedule milestone '{m['description']}': {words}",
                         m["source"] or "", {"milestone": m["id"]}))
    return out


def _permits(conn, first, end, now, site, names) -> list[Entry]:
    """Each current permit's term ends in the range (term after term while it renews), and
    the last day of each for the Village's notice (§13.54(4))."""
    out = []
    for key, p in current_permits(conn).items():
        if site is not None and key != site:
            continue
        today = local_date(now, pack_timezone(p.pack)) if p.pack else now.date()
        st = renewal(p, today)
        cite = p.renewal.citation or "§13.54(4)"
        name = names.get(key, key)
        term_end = p.expires
        while term_end < end + timedelta(days=p.renewal.notice_days):
            last = st.ends is not None and term_end >= st.ends
            notice_day = term_end - timedelta(days=p.renewal.notice_days)
            if _within(term_end, first, end):
                if last:
                    state = "expired" if today > term_end else "coming"
                    words = f"permit {p.number} ends ({'expired' if today > term_end else 'it does not renew'})"
                else:
                    state = "coming" if today <= term_end else "renewed"
                    words = f"permit {p.number}: term ends, renews for {p.renewal.term_years} year(s) unless notice is given"
                out.append(Entry(_uid("permit-term", p.number, term_end), term_end, "permit-renewal", state, key, name,
                                 f"{name}: {words}", cite, {"permit": p.number}))
            if not last and p.renewal.automatic and _within(notice_day, first, end):
                out.append(Entry(_uid("permit-notice", p.number, term_end), notice_day, "permit-notice",
                                 "coming" if today <= notice_day else "past", key, name,
                                 f"{name}: last day to notify that permit {p.number} will not be renewed "
                                 f"({p.renewal.notice_days} days before its term ends {term_end})", cite,
                                 {"permit": p.number}))
            if last or not p.renewal.automatic:
                break
            term_end = _years(term_end, p.renewal.term_years)
    return out


def _control(conn, first, end, now, site, all_sites, significant) -> list[Entry]:
    """The village's own sampling and inspection of each significant user in each year whose
    last day is in the range (:data:`CONTROL_CITATION`)."""
    out = []
    keys = list(significant) if significant is not None else list(current_permits(conn))
    for key in keys:
        s = all_sites.get(key)
        if s is None or (site is not None and key != site):
            continue
        tz = pack_timezone(s.pack)
        today = local_date(now, tz)
        for year in range(first.year, end.year + 1):
            last = date(year, 12, 31)
            if not _within(last, first, end) or today < date(year, 1, 1):
                continue
            lo = datetime(year, 1, 1, tzinfo=tz)
            hi = datetime(year + 1, 1, 1, tzinfo=tz)
            sampled = conn.execute(
                "SELECT min(ls.collected) FROM lab_samples ls JOIN sites x ON x.id = ls.site_id WHERE x.key = %s AND "
                "ls.sampled_by IN ('potw', 'potw-contractor') AND ls.collected >= %s AND ls.collected < %s",
                (key, lo, hi)).fetchone()[0]
            inspected = conn.execute(
                "SELECT min(i.visited_at) FROM inspections i JOIN sites x ON x.id = i.site_id WHERE x.key = %s AND "
                "i.visited_at >= %s AND i.visited_at < %s", (key, lo, hi)).fetchone()[0]
            over = today > last
            for kind, when, done, done_words, not_yet, missed in (
                    ("village-sampling", sampled, "taken", "sampled by the village",
                     "not yet sampled by the village this year", f"not sampled by the village in {year}"),
                    ("village-inspection", inspected, "met", "inspected",
                     "not yet inspected this year", f"not inspected in {year}")):
                if when is not None:
                    state, words = done, f"{done_words} in {year} (first on {local_date(when, tz)})"
                else:
                    state, words = ("missing", missed) if over else ("due", not_yet)
                out.append(Entry(_uid(kind, key, year), last, kind, state, key, s.name, f"{s.name}: {words}",
                                 CONTROL_CITATION, {"site": key, "year": year}))
    return out


def _program(first, end, today, snc_periods, annual_due) -> list[Entry]:
    """The program's own dates: SNC decisions after each period, the annual report."""
    out = []
    month = date(first.year, first.month, 1)
    while month < end:
        # a period ends on the first of January and July (halves) or of every quarter
        if month.month in ((1, 7) if snc_periods == "halves" else (1, 4, 7, 10)):
            last = month - timedelta(days=1)
            name = (f"{last.year}H{1 if last.month <= 6 else 2}" if snc_periods == "halves"
                    else f"{last.year}Q{(last.month - 1) // 3 + 1}")
            if _within(month, first, end):
                out.append(Entry(_uid("snc", name), month, "snc-decision", "coming" if month >= today else "past",
                                 None, None,
                                 f"SNC decision for {name} (the six months to {last}): sewerwatch snc --period {name}",
                                 SNC_CITATION, {"period": name}))
        month = add_months(month, 1)
    for year in range(first.year, end.year + 1):
        try:
            day = date(year, *annual_due)
        except ValueError:
            continue
        if _within(day, first, end):
            out.append(Entry(_uid("annual", year - 1), day, "annual-report", "coming" if day >= today else "past",
                             None, None,
                             f"Annual pretreatment report and SNC publication list for {year - 1}: "
                             f"sewerwatch report annual --year {year - 1}", ANNUAL_CITATION, {"year": year - 1}))
    return out


def _grease(conn, first, end, today, rules) -> list[Entry]:
    """The grease devices' next pump-outs and the grease notices' response deadlines."""
    from fog import store

    cited = ", ".join(s.section for s in rules.sections if "overdue" in s.grounds)
    out = []
    for r in store.due(conn, rules, today, (end - today).days - 1):
        if not _within(r["due_on"], first, end):
            continue
        state = "overdue" if r["overdue_days"] else "due"
        words = f"{r['overdue_days']} days overdue" if r["overdue_days"] else "due for pumping"
        out.append(Entry(_uid("grease", r["licence"], r["device"], r["due_on"]), r["due_on"], "grease-pumping", state,
                         None, r["name"], f"{r['name']}: grease device {r['device']} {words} (every "
                         f"{r['interval_days']} days; last pumped {r['last_pumped'] or 'never'})", cited,
                         {"establishment": r["establishment_id"]}))
    for n_id, number, title, due, received, escalated, name, est in conn.execute(
            "SELECT n.id, n.number, n.title, n.response_due, n.response_received_on, n.escalated_on, e.name, e.id "
            "FROM fog_notices n JOIN fog_establishments e ON e.id = n.establishment_id "
            "WHERE n.response_due >= %s AND n.response_due < %s ORDER BY n.response_due, n.id", (first, end)):
        if received is not None:
            state, words = "received", f"response received {received}"
        elif escalated is not None:
            state, words = "received", f"escalated {escalated}"
        elif today > due:
            state, words = "overdue", "no response by its deadline"
        else:
            state, words = "awaiting", "response due"
        out.append(Entry(_uid("grease-notice", n_id), due, "grease-notice", state, None, name,
                         f"{name}: {title} {number}: {words}", cited, {"establishment": est}))
    return out


def ical(items: list[Entry], utility: str, *, now: datetime) -> bytes:
    """The entries as an iCalendar document (RFC 5545): one all-day event each, its UID
    stable, its state in the summary and its citation in the description."""
    from icalendar import Calendar, Event

    cal = Calendar()
    cal.add("prodid", "-//sewerwatch//compliance calendar//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", f"{utility}: compliance calendar")
    for e in items:
        ev = Event()
        ev.add("uid", e.uid)
        ev.add("dtstamp", now)
        ev.add("dtstart", e.day)
        ev.add("dtend", e.day + timedelta(days=1))
        ev.add("summary", ("! " if e.attention else "") + e.title)
        ev.add("description", f"{KIND_WORDS[e.kind]}: {e.state}" + (f"\n{e.citation}" if e.citation else ""))
        ev.add("categories", [KIND_WORDS[e.kind]])
        ev.add("transp", "TRANSPARENT")
        cal.add_component(ev)
    return cal.to_ical()


def month_range(year: int, month: int) -> tuple[date, date]:
    """The local dates ``[first, end)`` of a month."""
    first = date(year, month, 1)
    return first, add_months(first, 1)
