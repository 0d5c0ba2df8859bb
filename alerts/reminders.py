"""Permit reminders: a permit whose term ends within its notice days, and a permit that has
expired, open an alert to the superintendent (the primary contacts).

palmyra-wi, 003_44f871d49a02d8f5.txt §13.54(4): "A permit shall be issued for one year and
shall be automatically renewed on a year to year basis thereafter, unless the person is
notified by the Village within 60 days prior to the expiration of the permit or any renewal
thereof"; §13.54(1)(g): "No person shall discharge waste or wastewater into the Village
sewer system without a wastewater discharge permit, if required by the section."

:func:`due` says which permits call for a reminder on a day (pure, from
:func:`limits.permits.renewal`); :func:`send` opens one ``alerts`` row (kind ``permit``)
per permit, state and term end -- a reminder is never sent twice, even after its alert was
resolved -- delivers it to the
primary contacts' channels (each attempt in ``alert_notifications``, each step in
``audit_log``) and resolves the reminders whose permit no longer calls for one (renewed,
or replaced by a new permit). ``sewerwatch alerts remind`` runs it by hand (or from cron);
``sewerwatch run`` calls :func:`send` once a day of the village (at start and after each
local midnight). The alert manager never takes these alerts up as its own
(:data:`alerts.store.KINDS_OWNED_ELSEWHERE`).
"""

from __future__ import annotations

from datetime import date

from alerts import content, store
from alerts.channels import failure_text, primary
from limits.permits import Permit, renewal

#: permit state -> the alert's rule
RULES = {"renewal-due": "permit-renewal", "expires-soon": "permit-ends", "expired": "permit-expired"}
ACTOR = "sewerwatch-remind"


def due(permits: dict[str, Permit], today: date) -> list[dict]:
    """The reminders due on ``today``: one per permit whose term ends within its notice days,
    that ends (notice given) within them, or that has expired.

    Returns
    -------
    list of dict
        ``site``, ``permit``, ``rule`` (:data:`RULES`), ``state``, ``term_end``, ``days_left``,
        ``notice_days``, ``notice_reading`` and ``notice_by`` (the last day a notice ends this
        term, :func:`limits.permits.renewal`), ``citation``, ``words`` and ``subject`` (what
        makes it one reminder: permit, rule and term end).
    """
    out = []
    for site, p in sorted(permits.items()):
        st = renewal(p, today)
        rule = RULES.get(st.state)
        if rule is None:
            continue
        out.append({"kind": "permit", "site": site, "permit": p.number, "rule": rule, "state": st.state,
                    "term_end": st.term_end.isoformat(), "days_left": st.days_left,
                    "notice_days": p.renewal.notice_days, "notice_reading": p.renewal.notice_reading,
                    "notice_by": st.notice_by.isoformat() if st.notice_by else None, "citation": p.renewal.citation,
                    "words": p.renewal.words, "subject": f"permit:{p.number}:{rule}:{st.term_end.isoformat()}"})
    return out


def send(conn, routes, permits: dict[str, Permit], today: date, *, tz: str) -> dict:
    """Open and deliver the reminders due on ``today`` that are not open already; resolve the
    open ones no longer due.

    Parameters
    ----------
    conn : psycopg.Connection
        Owner role; autocommit or not, each reminder is its own transaction.
    routes : list of alerts.channels.Route
        The channels; a reminder goes to the primary ones (not the escalation list).
    permits : dict
        Site key -> current permit (:func:`limits.permit_store.current_permits`).
    today : date
    tz : str
        The village's time zone (for the message).

    Returns
    -------
    dict
        ``opened`` (the reminders opened now, each with ``alert_id`` and ``sent``: the
        channels that delivered it), ``open`` (due and open before) and ``resolved`` (ids).
    """
    sites = store.site_names(conn)
    rows = store.permit_alerts(conn)
    existing = {d["subject"]: aid for aid, d, state in rows if state != "resolved"}
    # a reminder (permit, rule, term end) is sent once, whatever became of its alert since
    sent_before = {d["subject"] for _aid, d, _state in rows}
    reminders = due(permits, today)
    out = {"opened": [], "open": [], "resolved": []}
    for r in reminders:
        if r["subject"] in sent_before:
            if r["subject"] in existing:
                out["open"].append(existing[r["subject"]])
            continue
        site_id, site_name = sites.get(r["site"], (None, r["site"]))
        aid = store.open_permit_alert(conn, site_id, r["rule"], content.permit_summary(r, site_name), r, ACTOR)
        title, body = content.permit_message(aid, "open", r, site_name=site_name, tz=tz)
        sent = []
        for route in primary(routes):
            ch = route.channel
            try:
                ch.send(title, body, {"alert_id": aid, "event": "open", "kind": "permit", "rule": r["rule"],
                                      "site": r["site"], "record": r})
                error = None
                sent.append(ch.name)
            except Exception as exc:  # noqa: BLE001 - every failure is recorded
                error = failure_text(exc)
            store.record_attempt(conn, aid, ch, r["subject"], error, ACTOR)
        if sent:
            store.mark_notified(conn, aid, sent, ACTOR)
        out["opened"].append({**r, "alert_id": aid, "sent": sent})
    still = {r["subject"] for r in reminders}
    for subject, aid in existing.items():
        if subject not in still:
            store.resolve_alert(conn, aid, {"subject": subject, "why": "the permit no longer calls for it"}, ACTOR)
            out["resolved"].append(aid)
    return out
