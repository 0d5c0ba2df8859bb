"""The discharger's own copy of an alert that calls for its report: mailed to the industrial
user's emergency contacts in the office's address book (:func:`identity.contacts.emergency_emails`).

Where the ordinance requires the discharger to report (a slug, an acid or caustic dump: the
pack's ``[report_duty]``, e.g. palmyra-wi 003_44f871d49a02d8f5.txt §13.43 and §13.44), the
alert's opening goes to the utility's contacts as before and, when the user has an emergency
contact with an e-mail address, to that person too: what happened, when, the ordinance's words
and the report's form pre-filled (:func:`alerts.content.discharge_report`). No acknowledgement
link (a capability of the utility's staff) and no command of the office is in it. A user with
no emergency contact on file gets nothing new: the utility's contacts are told as before.

The mail goes through the office's mail server (``[web] mail_url``, the one invitations use);
without one, nothing is sent to dischargers. The book is read when the manager starts and at
most every :data:`REFRESH_S` seconds after, off the event loop, and kept in memory: an alert
never waits for the database (a read that fails keeps what was read before).
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from alerts import content
from alerts.channels import AppriseChannel, Route
from identity.contacts import emergency_emails

log = logging.getLogger("sewerwatch.alerts")

#: How often the emergency contacts are read again [s].
REFRESH_S = 300.0


def mail_to(url: str, to: str) -> str:
    """The apprise ``mailto://`` URL of the mail server ``url`` addressed to ``to`` alone."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in ("to", "cc", "bcc")]
    query.append(("to", to))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))


def message(v: dict, *, site_name: str, utility: str, tz: str) -> tuple[str, str] | None:
    """Title and body of the discharger's copy of violation ``v``, or None when the ordinance
    asks no report of it."""
    duty = content.report_duty(v.get("pack"))
    if duty is None or v.get("rule") not in duty.rules or "parameter" not in v or "start" not in v:
        return None       # no report owed, or an alert from elsewhere without its whole record
    param = content.PARAMETER_NAMES.get(v["parameter"], v["parameter"])
    unit = v.get("unit") or ""
    title = f"{utility}: report required, {site_name}, {param} {content.local_time(v['start'], tz)}"
    lines = [f"{utility} measured at your control manhole:", "",
             f"  {content.reading_text(v['parameter'], v['peak'], unit)} "
             f"({content.limit_text(v.get('comparison') or '', v['limit'], unit)})",
             f"  from {content.local_time(v['start'], tz)}"
             + (f" to {content.local_time(v['end'], tz)}" if v.get("end") else ", still going"),
             f"  {v.get('citation', '')}: \"{v.get('words', '')}\"", "",
             *content.discharge_report(v, duty, site_name=site_name, tz=tz), "",
             f"Reply to {utility}'s pretreatment office with the report."]
    return title, "\n".join(lines)


class DischargerMail:
    """The emergency contacts of each industrial user, as last read (see the module docstring).

    Parameters
    ----------
    mail_url : str
        The office's mail server (``[web] mail_url``).
    db_url : str
        The database the address book is read from.
    """

    def __init__(self, mail_url: str, db_url: str):
        self.mail_url, self.db_url = mail_url, db_url
        self.by_site: dict[str, list[tuple[str, str]]] = {}
        self.read_at: float | None = None

    def read(self) -> dict[str, list[tuple[str, str]]]:
        """site -> (name, e-mail) of its emergency contacts (blocking: a thread's work)."""
        with psycopg.connect(self.db_url, connect_timeout=3) as conn:
            keys = [k for (k,) in conn.execute("SELECT key FROM sites").fetchall()]
            return {k: emergency_emails(conn, k) for k in keys}

    def due(self, now: float) -> bool:
        return self.read_at is None or now - self.read_at >= REFRESH_S or now < self.read_at

    def took(self, now: float, found: dict | None) -> None:
        """Keep what a read found (None: it failed; what was read before stays)."""
        self.read_at = now
        if found is not None:
            self.by_site = found

    def routes(self, site: str) -> list[Route]:
        """One mail route to each emergency contact of ``site``."""
        out = []
        for name, email in self.by_site.get(site, ()):
            try:
                out.append(Route(AppriseChannel(mail_to(self.mail_url, email), name)))
            except ValueError as exc:
                log.warning("the discharger's copy cannot go to %s: %s", name, exc)
        return out
