"""The portal's people: the coordinator invites a person of an industrial
user by e-mail, the person sets a password (and, a signatory, a second factor) through the
link, the coordinator can revoke the account.

The link is made with itsdangerous (``URLSafeTimedSerializer``, HMAC-SHA256, keyed by
``keys.portal_invites`` of the state folder's ``secrets.json``, as the alerts' acknowledgement
links are): its payload names the invitation and a random id kept with it, so a link works
once, for ``[web] invitation_days``, and never after the invitation is revoked. A signatory
(a responsible corporate officer or a duly authorised representative, 40 CFR 403.12(l)) must
set up a TOTP second factor before the account exists; the coordinator states the day the
person's signed subscriber agreement was received (40 CFR 3.2000(b)(5)(v)): without it no
signatory is invited.

One person, one working link: a new invitation to the same address for the same industrial user
while an earlier one is still open supersedes it (the earlier is revoked in the same
transaction, the reason ``superseded by invitation N`` in the audit trail, and its link then
says it was replaced); inviting is serialised per site and address (an advisory lock), so two
coordinators at once still leave one open invitation.

A registered grease hauler's people are invited the same way (:func:`invite_hauler`): the
invitation names the hauler instead of a site, the account made is of kind ``grease-hauler``,
bound to the hauler, and reports the hauler's pump-outs (:mod:`fog.haulers`); a hauler's
person is never a signatory.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets as _random
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import pyotp
from itsdangerous import BadData, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

from ereport.mail import MailError, Mailer, check_address, clean_header_text
from identity import contacts
from foundation.actor import Actor
from foundation.errors import InputError
from identity import accounts

#: The page of an invitation; the token follows.
PATH = "/portal/invite/"
_SALT = "sewerwatch-portal-invitation"
#: Longest name or position accepted [characters].
NAME_MAX = 120


class InvitationError(Exception):
    """An invitation link that cannot be used; the text says why, in words for the page."""


class InviteLinks:
    """Makes and reads invitation links.

    Parameters
    ----------
    key : str
        ``secrets.json`` ``keys.portal_invites``.
    base_url : str
        The office's public address (``[web] public_url``).
    lifetime_s : float
        How long a link works [s].
    clock : callable
        The time [epoch s] (tests make links sent long ago).
    """

    def __init__(self, key: str, base_url: str, lifetime_s: float, clock=time.time):
        signer = type("ClockSigner", (TimestampSigner,), {"get_timestamp": lambda self: int(clock())})
        self._s = URLSafeTimedSerializer(key, salt=_SALT, signer=signer, signer_kwargs={"digest_method": hashlib.sha256})
        self.base_url = base_url.rstrip("/")
        self.lifetime_s = float(lifetime_s)
        self.clock = clock

    def token(self, invitation_id: int, token_id: str) -> str:
        return self._s.dumps({"i": int(invitation_id), "t": token_id})

    def url(self, invitation_id: int, token_id: str) -> str:
        return f"{self.base_url}{PATH}{self.token(invitation_id, token_id)}"

    def read(self, token: str) -> tuple[int, str]:
        """``(invitation id, token id)`` of a genuine, unexpired link."""
        try:
            payload = self._s.loads(token, max_age=self.lifetime_s)
        except SignatureExpired:
            raise InvitationError("This invitation has expired. Ask the utility's pretreatment coordinator for a "
                                  "new one.") from None
        except BadData:
            raise InvitationError("This is not a valid invitation link (it may have been cut when it was copied: "
                                  "open it from the e-mail).") from None
        if not (isinstance(payload, dict) and isinstance(payload.get("i"), int) and isinstance(payload.get("t"), str)):
            raise InvitationError("This is not a valid invitation link.")
        return payload["i"], payload["t"]


@dataclass(frozen=True)
class Invitation:
    id: int
    site_id: int | None
    site_key: str | None
    site_name: str | None
    email: str
    full_name: str
    title: str | None
    signatory: bool
    subscriber_agreement_on: date | None
    token_id: str
    totp_secret: str | None
    invited_by: str
    invited_at: datetime
    expires_at: datetime
    accepted_at: datetime | None
    account_id: int | None
    revoked_at: datetime | None
    mailed: bool
    mail_error: str | None
    #: a grease hauler's invitation (then no site): the hauler's id, company and licence
    hauler_id: int | None = None
    hauler_name: str | None = None
    hauler_licence: str | None = None
    #: an establishment's invitation (the grease program; then no site): its id, name and licence
    establishment_id: int | None = None
    establishment_name: str | None = None
    establishment_licence: str | None = None

    @property
    def owner(self) -> str:
        """Whose people the invitation is for, in words (the industrial user, the hauler or the
        establishment)."""
        if self.establishment_id is not None:
            return self.establishment_name
        return self.site_name if self.hauler_id is None else self.hauler_name

    @property
    def object(self) -> str:
        """The audit trail's object of the invitation (``site:KEY``, ``hauler:LICENCE`` or
        ``establishment:LICENCE``)."""
        if self.establishment_id is not None:
            return f"establishment:{self.establishment_licence}"
        return f"site:{self.site_key}" if self.hauler_id is None else f"hauler:{self.hauler_licence}"

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.accepted_at is not None:
            return "accepted"
        if self.expires_at <= datetime.now(timezone.utc):
            return "expired"
        return "open"


_COLS = ("i.id", "i.site_id", "s.key", "s.name", "i.email", "i.full_name", "i.title", "i.signatory",
         "i.subscriber_agreement_on", "i.token_id", "i.totp_secret", "i.invited_by", "i.invited_at", "i.expires_at",
         "i.accepted_at", "i.account_id", "i.revoked_at", "i.mailed", "i.mail_error", "i.hauler_id", "h.company",
         "h.licence", "i.establishment_id", "f.name", "f.licence")


@dataclass(frozen=True)
class Invited:
    """What :func:`invite` did.

    Attributes
    ----------
    invitation : Invitation
        The new invitation (``mailed`` False and ``mail_error`` the reason when the mail could not be sent).
    url : str
        Its link (shown to the coordinator only when it was not mailed).
    superseded : tuple of Invitation
        The earlier invitations to the same address for the same site that were still open and
        no longer work (revoked by this one), oldest first.
    """

    invitation: Invitation
    url: str
    superseded: tuple[Invitation, ...] = ()


def _invitations(conn, where: str, params=()) -> list[Invitation]:
    rows = conn.execute(f"SELECT {', '.join(_COLS)} FROM portal_invitations i LEFT JOIN sites s ON s.id = i.site_id "
                        f"LEFT JOIN fog_haulers h ON h.id = i.hauler_id LEFT JOIN fog_establishments f ON "
                        f"f.id = i.establishment_id WHERE {where} ORDER BY i.id", params).fetchall()
    return [Invitation(*r) for r in rows]


def _text(value, what: str, required: bool = True) -> str | None:
    v = clean_header_text(value or "", NAME_MAX + 1)
    if not v:
        if required:
            raise InputError(f"{what}: needed")
        return None
    if len(v) > NAME_MAX:
        raise InputError(f"{what}: at most {NAME_MAX} characters")
    return v


def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({"via": actor.via, **detail}, default=str)))


def invite(conn, site_key: str, email: str, full_name: str, *, signatory: bool, title: str | None,
           subscriber_agreement_on: date | None, actor: Actor, links: InviteLinks, mailer: Mailer,
           utility: str) -> Invited:
    """Invite a person of industrial user ``site_key`` to the portal and mail the link.

    An invitation to the same address (compared without regard to case) for the same site that
    is still open (neither used, revoked nor expired) is revoked by this one, with the reason
    in the audit trail (``portal-invitation-revoked``, ``superseded_by``): one working link per
    person. One mail is sent, for the new invitation.

    Returns
    -------
    Invited
        The invitation, its link and the invitations it superseded.

    Raises
    ------
    foundation.errors.InputError
        An unknown site, an address that is not one bare address, a name or position missing or
        too long, a signatory without the subscriber agreement's day or with one in the future.
    """
    site = conn.execute("SELECT id, name FROM sites WHERE key = %s", (site_key,)).fetchone()
    if site is None:
        raise InputError(f"no industrial user {site_key!r}")
    return _invite(conn, ("site_id", site[0], site[1], f"site:{site_key}"), email, full_name, signatory=signatory,
                   title=title, subscriber_agreement_on=subscriber_agreement_on, actor=actor, links=links,
                   mailer=mailer, utility=utility)


def invite_hauler(conn, hauler: str, email: str, full_name: str, *, actor: Actor, links: InviteLinks,
                  mailer: Mailer, utility: str) -> Invited:
    """Invite a person of the registered grease hauler ``hauler`` (its company or licence) to
    the portal, to report the hauler's pump-outs; as :func:`invite` otherwise (one working link
    per person, the mail sent once). Never a signatory.

    Raises
    ------
    foundation.errors.InputError
        A hauler not registered, an address that is not one bare address, a name missing or too long.
    """
    from fog.store import find_hauler
    h = find_hauler(conn, hauler or "")
    if h is None:
        raise InputError(f"no registered hauler {hauler!r} (register it first: sewerwatch fog hauler add)")
    licence = conn.execute("SELECT licence FROM fog_haulers WHERE id = %s", (h[0],)).fetchone()[0]
    return _invite(conn, ("hauler_id", h[0], h[1], f"hauler:{licence}"), email, full_name, signatory=False,
                   title=None, subscriber_agreement_on=None, actor=actor, links=links, mailer=mailer, utility=utility)


def invite_contact(conn, contact_id: int, *, actor: Actor, links: InviteLinks, mailer: Mailer,
                   utility: str) -> Invited:
    """Invite a person of the office's address book (:mod:`identity.contacts`) to the portal:
    the contact's name, e-mail address and position, for its industrial user; the invitation
    names the contact, and the account made from it is linked to it (one person). Not a
    signatory (the coordinator invites a signatory with the subscriber agreement's day).

    Raises
    ------
    foundation.errors.InputError
        No such contact, one no longer a contact of the user, one without an e-mail address, or
        one that has a portal account already (naming it).
    """
    c = contacts.contact(conn, contact_id)
    if c["removed"]:
        raise InputError(f"{c['full_name']} is no longer a contact of {c['site_name']}: nobody was invited")
    if not c["email"]:
        raise InputError(f"{c['full_name']} has no e-mail address in the address book: add one, then invite")
    if c["account"] and not c["account"]["disabled_at"]:
        raise InputError(f"{c['full_name']} has a portal account already ({c['account']['username']}): "
                         "nobody was invited")
    return _invite(conn, ("site_id", c["site_id"], c["site_name"], f"site:{c['site']}"), c["email"], c["full_name"],
                   signatory=False, title=c["title"], subscriber_agreement_on=None, actor=actor, links=links,
                   mailer=mailer, utility=utility, contact_id=contact_id)


def invite_establishment(conn, licence: str, email: str, full_name: str, *, actor: Actor, links: InviteLinks,
                         mailer: Mailer, utility: str) -> Invited:
    """Invite a person of the grease program's establishment with business licence ``licence``
    to the portal, to confirm or dispute the pump-outs reported for its devices
    (:mod:`fog.verdicts`); as :func:`invite` otherwise. Never a signatory.

    Raises
    ------
    foundation.errors.InputError
        No establishment with that licence, an address that is not one bare address, a name
        missing or too long.
    """
    row = conn.execute("SELECT id, name, licence FROM fog_establishments WHERE licence = %s",
                       ((licence or "").strip(),)).fetchone()
    if row is None:
        raise InputError(f"no establishment with licence {licence!r} (sewerwatch fog list)")
    return _invite(conn, ("establishment_id", row[0], row[1], f"establishment:{row[2]}"), email, full_name,
                   signatory=False, title=None, subscriber_agreement_on=None, actor=actor, links=links, mailer=mailer,
                   utility=utility)


def _invite(conn, owner: tuple, email: str, full_name: str, *, signatory: bool, title: str | None,
            subscriber_agreement_on: date | None, actor: Actor, links: InviteLinks, mailer: Mailer,
            utility: str, contact_id: int | None = None) -> Invited:
    """An invitation for ``owner`` (its column ``site_id`` or ``hauler_id``, its id, its name,
    the audit trail's object), superseding the open ones to the same address, mailed."""
    column, owner_id, owner_name, obj = owner
    assert column in ("site_id", "hauler_id", "establishment_id")
    address = check_address(email)
    name = _text(full_name, "the person's name")
    position = _text(title, "the position (as the authorisation names it)", required=signatory)
    if signatory and subscriber_agreement_on is None:
        raise InputError("a signatory needs the day the utility received the person's signed subscriber agreement "
                         "(40 CFR 3.2000(b)(5)(v)): the electronic signature is only valid with it")
    if subscriber_agreement_on is not None and subscriber_agreement_on > date.today() + timedelta(days=1):
        raise InputError("the subscriber agreement's day is in the future")
    token_id = _random.token_urlsafe(16)
    expires = datetime.now(timezone.utc) + timedelta(seconds=links.lifetime_s)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-portal-invite'), hashtext(%s))",
                     (f"{obj}:{address.lower()}",))
        earlier = _invitations(conn, f"i.{column} = %s AND lower(i.email) = lower(%s) AND i.revoked_at IS NULL AND "
                               "i.accepted_at IS NULL AND i.expires_at > now()", (owner_id, address))
        iid = conn.execute(
            f"INSERT INTO portal_invitations ({column}, email, full_name, title, signatory, subscriber_agreement_on, "
            "token_id, invited_by, expires_at, contact_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (owner_id, address, name, position, bool(signatory), subscriber_agreement_on, token_id, actor.audit_name,
             expires, contact_id)).fetchone()[0]
        _audit(conn, actor, "portal-invited", obj, {"invitation": iid, "email": address, "name": name,
                                                                    "signatory": bool(signatory),
                                                                    "supersedes": [e.id for e in earlier]})
        for e in earlier:
            conn.execute("UPDATE portal_invitations SET revoked_at = now() WHERE id = %s", (e.id,))
            _audit(conn, actor, "portal-invitation-revoked", obj,
                   {"invitation": e.id, "superseded_by": iid,
                    "reason": f"superseded by invitation {iid} to the same address"})
    url = links.url(iid, token_id)
    hauling, kitchen = column == "hauler_id", column == "establishment_id"
    body = invitation_body(utility, owner_name, name, bool(signatory), url, expires, hauler=hauling,
                           establishment=kitchen)
    try:
        mailer.send(address, f"{utility}: your invitation to the "
                    + ("portal, to report grease pump-outs" if hauling else
                       "portal, to confirm your grease pump-outs" if kitchen else "industrial users' portal"), body)
        conn.execute("UPDATE portal_invitations SET mailed = true WHERE id = %s", (iid,))
    except (MailError, InputError) as exc:
        conn.execute("UPDATE portal_invitations SET mail_error = %s WHERE id = %s", (str(exc)[:500], iid))
    if not conn.autocommit:
        conn.commit()
    gone = tuple(get(conn, e.id) for e in earlier)
    return Invited(get(conn, iid), url, gone)


def get(conn, invitation_id: int) -> Invitation | None:
    """Invitation ``invitation_id``, or None."""
    found = _invitations(conn, "i.id = %s", (invitation_id,))
    return found[0] if found else None


def link(inv: Invitation, links: InviteLinks) -> str | None:
    """A working link of an invitation still open (the page shows it again when it was not
    mailed: a link signed now, for the same invitation and token id), else None."""
    return links.url(inv.id, inv.token_id) if inv.state == "open" else None


def superseded_by(conn, inv: Invitation) -> int | None:
    """The invitation that superseded ``inv`` (from the audit trail), or None."""
    row = conn.execute("SELECT detail->>'superseded_by' FROM audit_log WHERE object = %s AND action = "
                       "'portal-invitation-revoked' AND detail->>'invitation' = %s AND detail->>'superseded_by' "
                       "IS NOT NULL ORDER BY id DESC LIMIT 1", (inv.object, str(inv.id))).fetchone()
    return int(row[0]) if row and row[0] else None


def invitation_body(utility: str, site_name: str, name: str, signatory: bool, url: str, expires: datetime,
                    hauler: bool = False, establishment: bool = False) -> str:
    """The invitation's text (plain; no part of it is a header); ``hauler``: a grease hauler's
    person (``site_name`` the hauler's company); ``establishment``: an establishment's person
    (``site_name`` its name)."""
    role = ("an authorised signatory: you will set up a second factor (an authenticator app) and can sign and "
            "submit reports" if signatory else "a preparer: you can enter and upload data; a signatory signs it")
    what = (f"its portal for {site_name}, to report the grease pump-outs of the interceptors and traps you are hired "
            "for" if hauler else f"its portal for {site_name}, to confirm or dispute the pump-outs haulers report for "
            "your grease interceptors and traps" if establishment else
            f"its industrial users' portal for {site_name}, as {role}")
    return (f"{name},\n\n{utility} invites you to {what}.\n\n"
            f"Open this link to choose your user name and password (it works once, until "
            f"{expires.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC):\n\n{url}\n\n"
            "If you did not expect this message, ignore it: nothing happens until the link is used.\n")


def open_invitation(conn, token: str, links: InviteLinks) -> Invitation:
    """The invitation of a link that can still be used (a signatory's second-factor secret made
    the first time it is opened), or :class:`InvitationError`."""
    iid, token_id = links.read(token)
    found = _invitations(conn, "i.id = %s", (iid,))
    if not found or not _random.compare_digest(found[0].token_id, token_id):
        raise InvitationError("This is not a valid invitation link.")
    inv = found[0]
    if inv.revoked_at is not None:
        if superseded_by(conn, inv) is not None:
            raise InvitationError("This invitation was replaced by a newer one sent to the same address: open the "
                                  "link in the latest e-mail from the utility.")
        raise InvitationError("This invitation was withdrawn by the utility.")
    if inv.accepted_at is not None:
        raise InvitationError("This invitation has been used already. Sign in with the user name chosen then.")
    if inv.expires_at <= datetime.now(timezone.utc):
        raise InvitationError("This invitation has expired. Ask the utility's pretreatment coordinator for a new one.")
    if inv.signatory and inv.totp_secret is None:
        conn.execute("UPDATE portal_invitations SET totp_secret = %s WHERE id = %s AND totp_secret IS NULL",
                     (pyotp.random_base32(), inv.id))
        inv = _invitations(conn, "i.id = %s", (iid,))[0]
    return inv


def totp_uri(inv: Invitation, utility: str) -> str:
    """The ``otpauth://`` URI of a signatory's second factor (for the authenticator app)."""
    return pyotp.TOTP(inv.totp_secret).provisioning_uri(name=f"{inv.email}", issuer_name=f"sewerwatch {utility}"[:60])


def suggested_username(inv: Invitation) -> str:
    local = re.sub(r"[^a-z0-9._-]", "", inv.email.split("@", 1)[0].lower())[:40] or "user"
    if inv.hauler_id is not None or inv.establishment_id is not None:
        return local
    return f"{inv.site_key}.{local}"[:64] if re.fullmatch(r"[a-z0-9]", inv.site_key[:1] or "") else local


def accept(conn, token: str, username: str, password: str, password_again: str, code: str, *,
           links: InviteLinks) -> accounts.Account:
    """Use an invitation: the account of kind ``industrial-user`` bound to the invitation's site
    (or of kind ``grease-hauler`` bound to its hauler), with the password chosen and (a
    signatory) the second factor, whose code must be right."""
    inv = open_invitation(conn, token, links)
    if password != password_again:
        raise InputError("the two passwords differ")
    if inv.signatory:
        if accounts._totp_step(inv.totp_secret, (code or "").strip().replace(" ", ""), datetime.now(timezone.utc)) is None:
            raise InputError("the code from your authenticator app is not right: add the key to the app, then type "
                             "the six digits it shows now")
    actor = Actor(username or "-", "web", inv.full_name) if username else Actor("-", "web")
    with conn.transaction():
        if conn.execute("SELECT accepted_at FROM portal_invitations WHERE id = %s FOR UPDATE",
                        (inv.id,)).fetchone()[0] is not None:
            raise InvitationError("This invitation has been used already.")
        acc = accounts.add(conn, (username or "").strip().lower(), inv.full_name, None, password, actor=actor,
                           kind=("grease-establishment" if inv.establishment_id is not None else
                                 "industrial-user" if inv.hauler_id is None else "grease-hauler"),
                           site_key=inv.site_key, hauler=inv.hauler_licence, establishment=inv.establishment_licence,
                           portal={"email": inv.email, "signatory": inv.signatory, "title": inv.title,
                                   "subscriber_agreement_on": inv.subscriber_agreement_on,
                                   "totp_secret": inv.totp_secret if inv.signatory else None})
        conn.execute("UPDATE portal_invitations SET accepted_at = now(), account_id = %s WHERE id = %s", (acc.id, inv.id))
        # one person: the account linked to its contact in the address book (the invitation's, else
        # the user's contact with the same e-mail address)
        site_id, contact_id = conn.execute("SELECT site_id, contact_id FROM portal_invitations WHERE id = %s",
                                           (inv.id,)).fetchone()
        contacts.link_account(conn, acc.id, site_id, inv.email, contact_id)
        _audit(conn, actor, "portal-invitation-accepted", f"account:{acc.username}",
               {"invitation": inv.id, "site": inv.site_key, "hauler": inv.hauler_licence,
                "establishment": inv.establishment_licence, "signatory": inv.signatory})
    return acc


def revoke_invitation(conn, invitation_id: int, *, actor: Actor) -> Invitation:
    found = _invitations(conn, "i.id = %s", (invitation_id,))
    if not found:
        raise InputError(f"no invitation {invitation_id}")
    if found[0].state in ("accepted", "revoked"):
        raise InputError(f"invitation {invitation_id} was {found[0].state} already"
                         + (" (revoke the account it made instead)" if found[0].state == "accepted" else ""))
    with conn.transaction():
        conn.execute("UPDATE portal_invitations SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL "
                     "AND accepted_at IS NULL", (invitation_id,))
        _audit(conn, actor, "portal-invitation-revoked", found[0].object, {"invitation": invitation_id})
    return _invitations(conn, "i.id = %s", (invitation_id,))[0]


def revoke(conn, username: str, *, actor: Actor) -> accounts.Account:
    """Revoke an industrial user's (or a grease hauler's) account: it cannot sign in or sign, its
    sessions end at their next request (``web_accounts.disabled_at``); its submissions and
    reports stay in the record."""
    acc = accounts.get(conn, username)
    if acc is None or acc.kind not in ("industrial-user", "grease-hauler", "grease-establishment"):
        raise InputError(f"no portal account {username!r}")
    with conn.transaction():
        accounts.disable(conn, username, actor=actor)
        _audit(conn, actor, "portal-account-revoked", f"account:{username}", {"site_id": acc.site_id,
                                                                              "hauler_id": acc.hauler_id})
    return accounts.get(conn, username)


def people(conn, site_key: str | None = None) -> dict:
    """The portal's accounts and invitations of the industrial users (of one site, or all), and
    of the grease haulers (``haulers``: each account with its hauler's licence and company;
    ``hauler_invitations``), those only when no site is asked."""
    if site_key:
        known = [k for (k,) in conn.execute("SELECT key FROM sites ORDER BY key").fetchall()]
        if site_key not in known:
            raise InputError(f"unknown site {site_key!r} (sites: {', '.join(known) or 'none'})")
    where, params = ("s.key = %s", (site_key,)) if site_key else ("true", ())
    rows = conn.execute(f"SELECT a.id, s.key, s.name FROM web_accounts a JOIN sites s ON s.id = a.site_id "
                        f"WHERE a.kind = 'industrial-user' AND {where} ORDER BY s.key, a.username", params).fetchall()
    accs = [(accounts.by_id(conn, r[0]), r[1], r[2]) for r in rows]
    out = {"accounts": accs, "invitations": _invitations(conn, f"i.site_id IS NOT NULL AND {where}", params),
           "haulers": [], "hauler_invitations": []}
    if not site_key:
        rows = conn.execute("SELECT a.id, h.licence, h.company FROM web_accounts a JOIN fog_haulers h ON "
                            "h.id = a.hauler_id WHERE a.kind = 'grease-hauler' ORDER BY h.company, a.username").fetchall()
        out["haulers"] = [(accounts.by_id(conn, r[0]), r[1], r[2]) for r in rows]
        out["hauler_invitations"] = _invitations(conn, "i.hauler_id IS NOT NULL")
    return out


def signatories(conn, site_id: int) -> list[accounts.Account]:
    """The site's active signatories (a preparer's draft waits for one of them)."""
    ids = [r[0] for r in conn.execute("SELECT id FROM web_accounts WHERE site_id = %s AND signatory "
                                      "AND disabled_at IS NULL ORDER BY full_name", (site_id,)).fetchall()]
    return [accounts.by_id(conn, i) for i in ids]
