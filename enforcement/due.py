"""What is due and what is overdue: the superintendent's enforcement list, and its alerts.

:func:`due_items` lists, at an instant: issued notices awaiting a response (overdue once the
deadline has passed, with the guide's proposed next action and its deadline), reports owed by
industrial users (due, overdue, and the ones late enough to be findings), compliance
schedule milestones coming or missed, and samples owed in a period about to end; each item carries the words of the requirement behind
it. :func:`raise_alerts` opens one alert (``alerts.kind`` ``enforcement``) for each overdue
item not alerted before and returns their messages, so that whatever delivers alerts (the
``sewerwatch due --notify`` command, or ``sewerwatch run``'s periodic tick) sends each once.

Wiring into ``sewerwatch run``: :func:`run_periodically` is the hook, started like the
storage maintenance: ``asyncio.create_task(enforcement.due.run_periodically(owner_url, cfg,
deliver))``, ``deliver(alert_id, title, body, payload)`` an ``async`` function handing the
message to the alert manager's channels (the primary contacts).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import date, datetime

import psycopg

from enforcement import asof, milestones, notices, reports, schedules
from foundation import moments
from enforcement.guide import Guide, load_guide
from enforcement.periods import local_date
from enforcement.settings import Settings, settings
from lab.ordinance import pack_timezone

#: items due within this many days are listed as coming
HORIZON_DAYS = 14
#: how often the running service looks for what fell overdue [s] (deadlines are days)
EVERY_S = 300.0

log = logging.getLogger("sewerwatch.enforcement")


@dataclass
class Item:
    """One thing due or overdue.

    Attributes
    ----------
    key : str
        Stable identity (``notice-unanswered:12``): an alert is raised once per key.
    kind : str
        ``notice-unanswered``, ``notice-awaiting``, ``report-overdue``, ``report-due``,
        ``milestone-overdue``, ``milestone-due``, ``samples-due``.
    overdue : bool
    due : str
        The deadline (ISO date or instant).
    title : str
        One line.
    citation, words : str
        The requirement behind it, in the ordinance's (or permit's, or regulation's) words.
    proposal : str or None
        For an unanswered notice: the guide's next action and its deadline.
    """

    key: str
    kind: str
    site: str
    site_name: str
    overdue: bool
    due: str
    title: str
    citation: str = ""
    words: str = ""
    proposal: str | None = None
    ref: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return asdict(self)


def _notice_items(conn, now: datetime, guide: Guide) -> list[Item]:
    out = []
    for n in notices.list_notices(conn, states=("issued",)):
        doc = n["document"]
        today = local_date(now, pack_timezone_of(conn, n["site"]))
        overdue = n["response_due"] is not None and today > n["response_due"]
        proposal = None
        if overdue:
            esc = guide.escalation(n["action"])
            proposal = (f"{esc.to.title}, response within {esc.respond_within_days} days "
                        f"(guide {esc.where}): sewerwatch notice escalate {n['number']}"
                        if esc else "the guide has no further step: refer to the village attorney")
        elif n["response_due"] is not None and (n["response_due"] - today).days > HORIZON_DAYS:
            continue
        out.append(Item(
            key=f"notice-unanswered:{n['id']}" if overdue else f"notice-awaiting:{n['id']}",
            kind="notice-unanswered" if overdue else "notice-awaiting", site=n["site"], site_name=n["site_name"],
            overdue=overdue, due=n["response_due"].isoformat() if n["response_due"] else "",
            title=(f"{doc['title']} {n['number']} to {n['site_name']}: "
                   + (f"no response by its deadline {n['response_due'].isoformat()}" if overdue
                      else f"response due {n['response_due'].isoformat()}")),
            citation=doc["requirement"]["citation"], words=doc["requirement"]["words"], proposal=proposal,
            ref={"notice_id": n["id"], "number": n["number"]}))
    return out


def pack_timezone_of(conn, site_key: str):
    row = conn.execute("SELECT pack FROM sites WHERE key = %s", (site_key,)).fetchone()
    return pack_timezone(row[0])


def _report_items(conn, now: datetime, hours: float) -> list[Item]:
    out = []
    for r in reports.list_reports(conn, now, open_only=True, accidental_hours=hours):
        tz = pack_timezone(r["pack"])
        if r["state"] == "due" and (r["due_on"] - local_date(now, tz)).days > HORIZON_DAYS:
            continue
        overdue = r["state"] == "overdue"
        ident = r["id"] if r["id"] is not None else f"alert-{r['alert_id']}"
        out.append(Item(
            key=f"report-overdue:{ident}" if overdue else f"report-due:{ident}",
            kind="report-overdue" if overdue else "report-due", site=r["site"], site_name=r["site_name"],
            overdue=overdue, due=r["due_at"].isoformat() if r["kind"] == "accidental-discharge" else r["due_on"].isoformat(),
            title=f"{r['site_name']}: {r['title']}: {r['standing']}" + (" (a finding: late)" if r["late"] else ""),
            citation=r["citation"] or "", words=r["words"] or "",
            ref={"report_id": r["id"], "days_late": r["days_late"], "late": r["late"]}))
    return out


def _milestone_items(conn, now: datetime) -> list[Item]:
    out = []
    for m in milestones.list_milestones(conn):
        today = local_date(now, pack_timezone(m["pack"]))
        if m["met_on"] is not None and m["met_on"] <= today:
            continue
        overdue = today > m["due_on"]
        if not overdue and (m["due_on"] - today).days > HORIZON_DAYS:
            continue
        late = milestones.is_late(m["due_on"], None, today)
        out.append(Item(
            key=f"milestone-overdue:{m['id']}" if overdue else f"milestone-due:{m['id']}",
            kind="milestone-overdue" if overdue else "milestone-due", site=m["site"], site_name=m["site"],
            overdue=overdue, due=m["due_on"].isoformat(),
            title=f"{m['site']}: compliance schedule milestone '{m['description']}' due {m['due_on'].isoformat()}"
            + (f", not met {(today - m['due_on']).days} days later" if overdue else "")
            + (" (a finding: more than 90 days late)" if late else ""),
            citation=m["source"] or "", ref={"milestone_id": m["id"]}))
    return out


def _sample_items(conn, now: datetime) -> list[Item]:
    """Samples still owed in a period ending within :data:`HORIZON_DAYS`."""
    out = []
    for st in schedules.schedule(conn, now):
        if st.state != "due":
            continue
        r, p = st.requirement, st.period
        tz = pack_timezone_of(conn, r.site)
        if (p.last_day - local_date(now, tz)).days > HORIZON_DAYS:
            continue
        short = ", ".join(f"{prm} {n}" for prm, n in st.short.items())
        out.append(Item(key=f"samples-due:{r.id}:{p.name}", kind="samples-due", site=r.site, site_name=r.site,
                        overdue=False, due=p.last_day.isoformat(),
                        title=f"{r.site}: samples owed for {p.name} by {p.last_day} under {r.citation}: {short}",
                        citation=r.citation, words=r.words, ref={"requirement": r.id, "period": p.name}))
    return out


def due_items(conn, now: datetime, settings: Settings, guide: Guide) -> list[Item]:
    """Everything due within :data:`HORIZON_DAYS` or overdue at ``now``, overdue first, as
    things stood then (the accidental-discharge reports the alerts call for included, the
    receipts and milestones met by then). Reads only: :func:`raise_alerts` (the enforcement
    round, at the present) records the findings first."""
    items = (_notice_items(conn, now, guide) + _report_items(conn, now, settings.accidental_report_hours)
             + _milestone_items(conn, now) + _sample_items(conn, now))
    items.sort(key=lambda i: (not i.overdue, i.due, i.key))
    return items


def message(item: Item, alert_id: int) -> tuple[str, str, dict]:
    """Title, body and payload of an enforcement alert."""
    title = f"[sewerwatch] ENFORCEMENT #{alert_id}: {item.title}"
    lines = [f"Alert #{alert_id}: enforcement", "", f"Site:        {item.site_name} ({item.site})",
             f"Due:         {item.due}", f"What:        {item.title}"]
    if item.citation or item.words:
        lines += [f"Requirement: {item.citation}", f"  \"{item.words}\""]
    if item.proposal:
        lines += ["", f"Proposed next action: {item.proposal}"]
    lines += ["", "See: sewerwatch due", f"Acknowledge: sewerwatch alerts ack {alert_id} --by NAME [--note TEXT]"]
    return title, "\n".join(lines), {"kind": "enforcement", "alert_id": alert_id, **item.as_json()}


def raise_alerts(conn, now: datetime, settings: Settings, guide: Guide, cfg=None) -> list[tuple[int, str, str, dict]]:
    """The enforcement round at the present ``now``: record the computed findings
    (:func:`enforcement.asof.record`), then open an ``enforcement`` alert for each overdue
    item not alerted before; return ``(alert_id, title, body, payload)`` of each new one (for
    delivery)."""
    new = []
    asof.record(conn, now, settings, cfg)
    items = [i for i in due_items(conn, now, settings, guide) if i.overdue]
    with conn.transaction():
        for i in items:
            if conn.execute("SELECT 1 FROM alerts WHERE kind = 'enforcement' AND details->>'key' = %s",
                            (i.key,)).fetchone():
                continue
            site_id = conn.execute("SELECT id FROM sites WHERE key = %s", (i.site,)).fetchone()[0]
            aid = conn.execute(
                "INSERT INTO alerts (kind, site_id, rule, state, summary, details, opened_at) "
                "VALUES ('enforcement', %s, %s, 'open', %s, %s, %s) RETURNING id",
                (site_id, i.kind, i.title, json.dumps(i.as_json()), now)).fetchone()[0]
            conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES ('sewerwatch', 'alert-open', %s, %s)",
                         (f"alert:{aid}", json.dumps({"kind": "enforcement", "key": i.key})))
            if "notice_id" in i.ref:
                notices._event(conn, i.ref["notice_id"], "alerted", None, None, "sewerwatch",
                               f"alert #{aid}: no response by the deadline", detail={"alert_id": aid,
                                                                                      "proposal": i.proposal})
            new.append((aid, *message(i, aid)))
    return new


def as_of(text: str | None, tz) -> datetime:
    """``--as-of DATE``: the end of that local day (default: now)."""
    if not text:
        return reports.utc_now()
    return moments.end_of_day(moments.day(text, "--as-of"), tz)


async def run_periodically(owner_url: str, cfg, deliver, every_s: float = EVERY_S, first_delay_s: float = 30.0,
                           clock=None, on_round=None) -> None:
    """Every ``every_s``: open the alerts of what fell overdue (:func:`raise_alerts`, in a
    worker thread) and ``await deliver(alert_id, title, body, payload)`` for each new one;
    until cancelled. A failed round is logged and tried again next time.

    Parameters
    ----------
    owner_url : str
        The database (owner role).
    cfg : foundation.config.Config
        Its ``[enforcement]`` settings and guide.
    deliver : async callable
        Sends one alert to the primary contacts.
    clock : callable, optional
        ``clock() -> datetime`` (aware); default now.
    on_round : callable, optional
        ``on_round(error)`` after each round: None when it went through, else the error
        (one line), so the caller can show it (``sewerwatch status``).
    """
    st = settings(cfg)
    guide = load_guide(st.guide)
    loop = asyncio.get_running_loop()

    def once():
        with psycopg.connect(owner_url) as conn:
            return raise_alerts(conn, clock() if clock else reports.utc_now(), st, guide, cfg)

    await asyncio.sleep(first_delay_s)
    while True:
        error = None
        try:
            for aid, title, body, payload in await loop.run_in_executor(None, once):
                await deliver(aid, title, body, payload)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the live pipeline must keep running
            log.exception("enforcement alerts failed; trying again in %.0f s", every_s)
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if on_round is not None:
            on_round(error)
        await asyncio.sleep(every_s)
