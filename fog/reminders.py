"""Reminders of a grease removal device coming due: mailed to the establishment's contact and
to the hauler(s) hired for the device, once per device, due date and address.

``sewerwatch fog reminders send`` and the office's "Send reminders" form on the Grease page
call :func:`send` (the office's form first shows :func:`plan`: who gets what, who has no
address). The rule is the program's, not the ordinance's: a device whose next pump-out is
due within ``reminder_days`` [days] of today (``fog/packs/<pack>.toml`` ``[program]``; 14
unless the village's file says otherwise) gets a reminder; a device overdue already gets
none (it is a finding: :mod:`fog.findings`). The duty it serves is the ordinance's (Palmyra
§13.51, seed ``003_44f871d49a02d8f5.txt``: interceptors "maintained by the owner ... in
continuous, efficient operation"; Webster (19), seed ``000_68bc5aa0322c9423.txt``: removal
"by currently licensed disposal firms"), cited in the text through
:meth:`fog.rules.Rules.basis`.

**Who.** The establishment's contact at its e-mail address (``sewerwatch fog contact``); each
hauler hired for the device (assigned by staff, or pumped it before: :func:`fog.haulers.devices`)
at its office address (``sewerwatch fog hauler email``), else at the addresses of its people
in the portal. No address: the reminder is listed as not sent, saying so.

**Once.** Each reminder sent is a row of ``fog_reminders`` (device, due date, address, when,
by whom; migration ``0280_grease_reminders_photos.sql``), stored before the mail is handed over and
taken back when the mail server refuses it; a second sending for the same device, due date and
address is skipped, naming when it was sent. The mail itself goes through the caller's mailer
(the portal's, :class:`ereport.mail.Mailer`: the grease program does not import it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date, datetime

from foundation.errors import InputError
from fog import store
from fog.rules import Rules

#: The longest reminder window accepted [days].
AHEAD_MAX = 365


@dataclass(frozen=True)
class Reminder:
    """One reminder: a device coming due and one person (or office) to tell.

    Attributes
    ----------
    device_id : int
    licence, name, street : str
        The establishment's licence number, name and address.
    device, kind : str
        The device's label and kind.
    due_on : datetime.date
        The day its next pump-out is due.
    interval_days : int
        Its pumping interval in effect [days].
    last_pumped : datetime.date or None
    recipient : str
        ``establishment`` or ``hauler``.
    who : str
        The establishment's contact (or its name) or the hauler's company.
    to : str or None
        The address; None when none is on record.
    hauler_id : int or None
    sent_at : datetime or None
        When the same reminder was sent already (then it is not sent again).
    """

    device_id: int
    licence: str
    name: str
    street: str
    device: str
    kind: str
    due_on: date
    interval_days: int
    last_pumped: date | None
    recipient: str
    who: str
    to: str | None
    hauler_id: int | None = None
    sent_at: datetime | None = None


@dataclass
class Outcome:
    """What :func:`send` did: ``sent``, ``skipped`` (sent already), ``no_address``,
    ``failed`` (pairs of the reminder and the mail server's reason); ``dry_run`` when
    nothing was sent (``sent`` then holds what would be)."""

    ahead_days: int
    today: date
    dry_run: bool
    sent: list
    skipped: list
    no_address: list
    failed: list

    def summary(self) -> str:
        """One line: the counts, in words."""
        verb = "would be sent (nothing was sent: a dry run)" if self.dry_run else "sent"
        return (f"reminders of the devices due from {self.today} to {self.until}: "
                f"{len(self.sent)} {verb}, {len(self.skipped)} sent before, {len(self.no_address)} without an "
                f"address" + (f", {len(self.failed)} not taken by the mail server" if self.failed else ""))

    @property
    def until(self) -> date:
        return date.fromordinal(self.today.toordinal() + self.ahead_days)


def _ahead(rules: Rules, ahead_days) -> int:
    if ahead_days is None:
        return rules.reminder_days
    try:
        n = int(str(ahead_days).strip())
    except ValueError:
        raise InputError(f"days ahead: expected a whole number of days, got {ahead_days!r}") from None
    if not 0 <= n <= AHEAD_MAX:
        raise InputError(f"days ahead: expected 0 to {AHEAD_MAX} days, got {n}")
    return n


def _hauler_addresses(conn, device_ids: list[int]) -> dict[int, list[tuple[int, str, str | None]]]:
    """Each device's hired haulers: device id -> [(hauler id, company, address or None)], one
    entry per address (the office's, else each active portal person's)."""
    rows = conn.execute(
        "SELECT x.device_id, h.id, h.company, h.email FROM (SELECT device_id, hauler_id FROM fog_hauler_devices "
        "UNION SELECT device_id, hauler_id FROM fog_pumpouts WHERE hauler_id IS NOT NULL) x "
        "JOIN fog_haulers h ON h.id = x.hauler_id WHERE x.device_id = ANY(%s) ORDER BY h.company",
        (device_ids,)).fetchall()
    people: dict[int, list[str]] = {}
    for hid, email in conn.execute("SELECT hauler_id, email FROM web_accounts WHERE kind = 'grease-hauler' AND "
                                   "disabled_at IS NULL AND email IS NOT NULL ORDER BY username").fetchall():
        people.setdefault(hid, []).append(email)
    out: dict[int, list] = {}
    for did, hid, company, email in rows:
        addresses = [email] if email else people.get(hid) or [None]
        out.setdefault(did, []).extend((hid, company, a) for a in addresses)
    return out


def plan(conn, rules: Rules, today: date, ahead_days=None) -> list[Reminder]:
    """The reminders of the devices due from ``today`` to ``ahead_days`` after it [days]
    (default the program's ``reminder_days``), soonest first: one per establishment contact
    and hired hauler's address, each with ``sent_at`` when it was sent already.

    Raises
    ------
    InputError
        ``ahead_days`` not a whole number from 0 to :data:`AHEAD_MAX`.
    """
    ahead = _ahead(rules, ahead_days)
    coming = [r for r in store.due(conn, rules, today, ahead) if r["due_on"] >= today]
    if not coming:
        return []
    ests = {e[0]: e[1:] for e in conn.execute(
        "SELECT id, contact, contact_email FROM fog_establishments WHERE id = ANY(%s)",
        ([r["establishment_id"] for r in coming],)).fetchall()}
    devs = {(e, lab.lower()): (did, kind) for did, e, lab, kind in conn.execute(
        "SELECT id, establishment_id, label, kind FROM fog_devices WHERE establishment_id = ANY(%s)",
        (list(ests),)).fetchall()}
    ids = [devs[(r["establishment_id"], r["device"].lower())][0] for r in coming]
    hired = _hauler_addresses(conn, ids)
    sent = {(d, due, a.lower()): at for d, due, a, at in conn.execute(
        "SELECT device_id, due_on, address, sent_at FROM fog_reminders WHERE device_id = ANY(%s)", (ids,)).fetchall()}
    out = []
    for r, did in zip(coming, ids):
        contact, email = ests[r["establishment_id"]]
        base = Reminder(did, r["licence"], r["name"], r["address"], r["device"],
                        devs[(r["establishment_id"], r["device"].lower())][1], r["due_on"], r["interval_days"],
                        r["last_pumped"], "establishment", contact or r["name"], email or None)
        each = [base] + [replace(base, recipient="hauler", who=company, to=a, hauler_id=hid)
                         for hid, company, a in hired.get(did, [])]
        out += [replace(m, sent_at=sent.get((did, m.due_on, m.to.lower()))) if m.to else m for m in each]
    return out


def subject(utility: str, m: Reminder) -> str:
    """A reminder's subject line."""
    return f"{utility}: the grease {m.kind} {m.device} at {m.name} is due to be pumped by {m.due_on:%B %-d, %Y}"


def body(utility: str, rules: Rules, m: Reminder) -> str:
    """A reminder's text (plain), in the utility's words."""
    last = f"it was last pumped on {m.last_pumped:%B %-d, %Y}" if m.last_pumped else "no pump-out of it is on record"
    what = (f"the grease {m.kind} {m.device} at {m.name}, {m.street}, is due to be pumped by "
            f"{m.due_on:%B %-d, %Y}. It is pumped every {m.interval_days} days; {last}.")
    if m.recipient == "establishment":
        ask = ("Please have it pumped by then by a hauler registered with the village, and keep the hauler's "
               "report: the village reads every pump-out report for the depth of grease and solids found.")
    else:
        ask = (f"You are the hauler on record for it. Once it is pumped, report the pump-out to {utility} (in the "
               "portal, or on your usual report) with the gallons removed, the grease and solids depths you "
               "measured, the receiving facility and its manifest number.")
    basis = rules.basis("overdue")
    return (f"{m.who},\n\nThis is a reminder from {utility}'s grease program: {what}\n\n{ask}\n\n"
            f"Why: {basis[0].upper() + basis[1:]}.\n\n"
            "If it has been pumped already, thank you: the village will record it when the report arrives.\n")


def send(conn, rules: Rules, today: date, mailer, actor, *, utility: str, ahead_days=None,
         dry_run: bool = False) -> Outcome:
    """Mail the reminders of :func:`plan` not sent before.

    Parameters
    ----------
    mailer : object
        Has ``send(to, subject, body)``, raising an exception that says why a message was not
        sent (:class:`ereport.mail.Mailer`).
    actor : foundation.actor.Actor or str
        Who sends them (the audit trail and ``fog_reminders.sent_by``).
    utility : str
        The utility's name, as the reminders sign.
    ahead_days : int, optional
        The window [days]; default the program's ``reminder_days``.
    dry_run : bool
        Only say what would be sent.

    Returns
    -------
    Outcome
        Each reminder sent (or would be), skipped because sent before (with when), without an
        address, or refused by the mail server (with its reason; not recorded as sent).
    """
    found = plan(conn, rules, today, ahead_days)
    out = Outcome(_ahead(rules, ahead_days), today, dry_run, [], [], [], [])
    for m in found:
        if m.to is None:
            out.no_address.append(m)
        elif m.sent_at is not None:
            out.skipped.append(m)
        elif dry_run:
            out.sent.append(m)
        else:
            _send_one(conn, rules, m, mailer, actor, utility, out)
    if not dry_run:
        store._audit(conn, actor, "fog.reminders.send", f"due by {out.until}",
                     {"sent": [(m.licence, m.device, m.to) for m in out.sent], "skipped": len(out.skipped),
                      "no_address": len(out.no_address), "failed": len(out.failed)})
    return out


def _send_one(conn, rules: Rules, m: Reminder, mailer, actor, utility: str, out: Outcome) -> None:
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO fog_reminders (device_id, due_on, address, recipient, hauler_id, sent_by) VALUES "
            "(%s, %s, %s, %s, %s, %s) ON CONFLICT (device_id, due_on, address) DO NOTHING RETURNING id, sent_at",
            (m.device_id, m.due_on, m.to, m.recipient, m.hauler_id, store.actor_name(actor))).fetchone()
    if row is None:                 # sent by another sending meanwhile
        at = conn.execute("SELECT sent_at FROM fog_reminders WHERE device_id = %s AND due_on = %s AND "
                          "lower(address) = lower(%s)", (m.device_id, m.due_on, m.to)).fetchone()
        out.skipped.append(replace(m, sent_at=at[0] if at else None))
        return
    try:
        mailer.send(m.to, subject(utility, m), body(utility, rules, m))
    except Exception as exc:        # the mailer's own error (the mail package is a floor above)
        conn.execute("DELETE FROM fog_reminders WHERE id = %s", (row[0],))
        out.failed.append((m, str(exc) or type(exc).__name__))
        return
    out.sent.append(replace(m, sent_at=row[1]))


def sent(conn, since: date | None = None) -> list[dict]:
    """The reminders sent (the log): newest first, each with the establishment, device, due
    date, address, recipient, when and by whom; ``since`` a day, only those sent on or after."""
    rows = conn.execute(
        "SELECT r.sent_at, e.licence, e.name, d.label, r.due_on, r.recipient, r.address, r.sent_by FROM "
        "fog_reminders r JOIN fog_devices d ON d.id = r.device_id JOIN fog_establishments e ON "
        "e.id = d.establishment_id WHERE %s::date IS NULL OR r.sent_at >= %s::date ORDER BY r.sent_at DESC, r.id DESC",
        (since, since)).fetchall()
    return [dict(zip(("sent_at", "licence", "name", "device", "due_on", "recipient", "address", "sent_by"), r))
            for r in rows]


def set_contact_email(conn, licence: str, email: str | None, actor) -> dict:
    """Set (or, ``email`` empty, clear) the e-mail address of establishment ``licence``'s
    contact, where its reminders go. ``email`` is checked by the caller (one bare address)."""
    est = conn.execute("SELECT id, name FROM fog_establishments WHERE licence = %s",
                       ((licence or "").strip(),)).fetchone()
    if est is None:
        raise InputError(f"no establishment with licence {(licence or '').strip()!r}")
    conn.execute("UPDATE fog_establishments SET contact_email = %s WHERE id = %s", (email or None, est[0]))
    store._audit(conn, actor, "fog.contact.email", licence.strip(), {"email": email or None})
    return {"licence": licence.strip(), "name": est[1], "email": email or None}


def set_hauler_email(conn, hauler: str, email: str | None, actor) -> dict:
    """Set (or clear) registered hauler ``hauler``'s office address (its company or licence),
    where its reminders go (else to its people in the portal)."""
    h = store.find_hauler(conn, hauler or "")
    if h is None:
        raise InputError(f"no registered hauler {hauler!r} (sewerwatch fog hauler list)")
    conn.execute("UPDATE fog_haulers SET email = %s WHERE id = %s", (email or None, h[0]))
    store._audit(conn, actor, "fog.hauler.email", h[1], {"email": email or None})
    return {"hauler": h[1], "email": email or None}


def as_plain(m: Reminder) -> dict:
    """A reminder as JSON-ready values (``--json``)."""
    return json.loads(json.dumps({k: getattr(m, k) for k in Reminder.__dataclass_fields__}, default=str))
