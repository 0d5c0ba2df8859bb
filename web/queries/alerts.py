"""Alerts as the office lists and shows them: filters, the evidence in words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace

from alerts.content import HEALTH_WORDS, PARAMETER_NAMES
from web import formats

#: The states a filter offers ("open": every state but resolved).
STATES = ("open", "notified", "acknowledged", "escalated", "resolved", "all")

COLS = ("id", "kind", "state", "rule", "summary", "details", "opened_at", "notified_at", "escalated_at",
        "acknowledged_at", "acknowledged_by", "ack_note", "resolved_at", "episodes", "site_id", "site", "site_name")
_SELECT = """SELECT a.id, a.kind, a.state, a.rule, a.summary, a.details, a.opened_at, a.notified_at, a.escalated_at,
                    a.acknowledged_at, a.acknowledged_by, a.ack_note, a.resolved_at, a.episodes, a.site_id, s.key, s.name
             FROM alerts a LEFT JOIN sites s ON s.id = a.site_id"""


@dataclass
class Filters:
    site: str | None = None
    rule: str | None = None
    state: str = "open"
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 300

    def where(self) -> tuple[str, list]:
        clauses, params = [], []
        if self.site:
            clauses.append("s.key = %s")
            params.append(self.site)
        if self.rule:
            clauses.append("a.rule = %s")
            params.append(self.rule)
        if self.state == "open":
            clauses.append("a.state <> 'resolved'")
        elif self.state in STATES and self.state != "all":
            clauses.append("a.state = %s")
            params.append(self.state)
        if self.since:
            clauses.append("a.opened_at >= %s")
            params.append(self.since)
        if self.until:
            clauses.append("a.opened_at < %s")
            params.append(self.until)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def listing(conn, f: Filters) -> list[dict]:
    where, params = f.where()
    rows = conn.execute(f"{_SELECT}{where} ORDER BY a.opened_at DESC, a.id DESC LIMIT %s",
                        [*params, f.limit]).fetchall()
    return [dict(zip(COLS, r)) for r in rows]


def choices(conn) -> dict:
    """What the filters offer: the sites and the rules alerts were raised for."""
    return {"sites": conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall(),
            "rules": [r[0] for r in conn.execute("SELECT DISTINCT rule FROM alerts ORDER BY rule").fetchall()]}


def one(conn, alert_id: int) -> dict | None:
    row = conn.execute(f"{_SELECT} WHERE a.id = %s", (alert_id,)).fetchone()
    if row is None:
        return None
    rec = dict(zip(COLS, row))
    rec["notifications"] = [dict(zip(("event", "channel", "contact", "attempt", "status", "error", "at"), n))
                            for n in conn.execute(
        "SELECT event, channel, contact, attempt, status, error, at FROM alert_notifications WHERE alert_id = %s "
        "ORDER BY at, id", (alert_id,)).fetchall()]
    return rec


def view(r: dict, tz: str) -> SimpleNamespace:
    """One alert as the pages show it: a heading, its evidence as (label, text), the
    ordinance's words and citation."""
    d = r.get("details") or {}
    site = r.get("site_name") or r.get("site") or d.get("site") or ""
    ev: list[tuple[str, str]] = []
    heading = r.get("summary") or r.get("rule")
    words = citation = None
    if r["kind"] == "violation" and "parameter" in d:
        param = PARAMETER_NAMES.get(d["parameter"], d["parameter"])
        u = d.get("unit") or ""
        heading = f"{param} at {site}"
        ev += [("Sensor", f"{d.get('site', '')}/{d.get('sensor', '')}"),
               ("Value", f"{formats.num(d.get('peak'), u)} (the most extreme reading)"),
               ("Limit", f"{d.get('comparison') or ''} {formats.num(d.get('limit'), u)}".strip()),
               ("Started", formats.local(d.get("start"), tz))]
        if d.get("peak_time"):
            ev.append(("Peak at", formats.local(d["peak_time"], tz)))
        ev.append(("Ended", formats.local(d["end"], tz) if d.get("end") else "still going"))
        if d.get("readings"):
            ev.append(("Readings", f"{d['readings']} beyond the limit"))
        if d.get("kind") == "slug" and d.get("average") is not None:
            ev.append(("Baseline", f"{formats.num(d['average'], u)} ({d.get('baseline') or '24-hour average'})"))
        words, citation = d.get("words"), d.get("citation")
    elif r["kind"] == "sensor-health":
        what = HEALTH_WORDS.get(r["rule"], r["rule"])
        subject = d.get("device") or f"{d.get('site', '')}/{d.get('sensor', '')}"
        heading = f"{what[:1].upper()}{what[1:]}: {d.get('device') or d.get('sensor', '')} at {site}"
        ev += [("Device" if d.get("device") else "Sensor", subject), ("Condition", what)]
        if d.get("since"):
            ev.append(("Since", formats.local(d["since"], tz)))
        if d.get("detail"):
            ev.append(("Detail", str(d["detail"])))
    else:
        if d.get("due"):
            ev.append(("Due", str(d["due"])))
        if d.get("title"):
            ev.append(("What", str(d["title"])))
        words, citation = d.get("words"), d.get("citation")
    if r.get("episodes") and r["episodes"] > 1:
        ev.append(("Episodes", str(r["episodes"])))
    line = " · ".join(f"{label} {text}" for label, text in ev[:4])
    # a namespace, not a dict: the templates read its attributes at the cost of an attribute,
    # where a dict's key read as one costs Jinja a caught exception (20 alerts on Today)
    return SimpleNamespace(
        id=r["id"], kind=r["kind"], summary_line=line, state=r["state"], rule=r["rule"], heading=heading,
        site=r.get("site"), site_name=site, opened_at=r["opened_at"], opened_text=formats.local(r["opened_at"], tz),
        evidence=ev, words=words, citation=citation, acknowledged_by=r.get("acknowledged_by"),
        acknowledged_at=r.get("acknowledged_at"), ack_note=r.get("ack_note"), resolved_at=r.get("resolved_at"),
        escalated_at=r.get("escalated_at"))
