"""The office's accounts: add, list, disable, enable, reset a password, change a role, the
TOTP second factor, and signing in with lockout: failures are counted per
account and per client address, and until the password is right every refusal reads the same
(:func:`authenticate`).

``sewerwatch users ...`` and the web application call these same functions; each takes the
:class:`foundation.actor.Actor` who acts and writes an ``audit_log`` row (object
``account:<username>``). Passwords are hashed with argon2-cffi's :class:`PasswordHasher`
(argon2id, its default parameters, RFC 9106's second recommended option), never stored or
logged; a hash made with older parameters is rehashed at the next sign-in. The second
factor is pyotp's TOTP (RFC 6238, 30-s steps, 6 digits); a code is accepted one step either
side of now and only once (the step used is kept).

A change that should end the account's sessions (disabled, a new password, a new role,
the second factor turned on) increments ``session_epoch``: every request compares the
session's epoch with the account's (:func:`session_account`), so a session ends at its
next request.
"""

from __future__ import annotations

import hmac
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pyotp
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from foundation.actor import Actor
from foundation.errors import InputError
from identity.roles import KINDS, ROLES, second_factor_roles

log = logging.getLogger("sewerwatch.identity.accounts")

#: Shortest password accepted [characters] (NIST SP 800-63B §5.1.1.2: at least 8; the
#: office asks for more since these accounts can issue enforcement).
PASSWORD_MIN = 10
#: Longest password accepted [characters] (argon2 takes any length; a bound stops a
#: megabyte form from costing a hash of it).
PASSWORD_MAX = 256
#: The TOTP issuer shown in an authenticator app.
TOTP_ISSUER = "sewerwatch"

_hasher = PasswordHasher()
#: A hash of nothing anyone knows: an unknown user name costs a verification too, so the
#: time of a refusal does not tell whether the account exists.
_DUMMY_HASH = _hasher.hash("not a password of any account")

COLS = ("id", "username", "full_name", "kind", "role", "site_id", "disabled_at", "failed_logins", "locked_until",
        "session_epoch", "totp_secret", "created_at", "last_login_at", "email", "signatory", "title",
        "subscriber_agreement_on", "hauler_id", "establishment_id")


@dataclass(frozen=True)
class Account:
    """One account as a request sees it (never its password hash)."""

    id: int
    username: str
    full_name: str
    kind: str
    role: str | None
    site_id: int | None
    disabled_at: datetime | None
    failed_logins: int
    locked_until: datetime | None
    session_epoch: int
    totp_secret: str | None
    created_at: datetime
    last_login_at: datetime | None
    #: the portal's people: where receipts go, whether the person may sign for the
    #: user (40 CFR 403.12(l)), the position the authorisation names, the day the utility
    #: received the signed subscriber agreement (40 CFR 3.2000(b)(5)(v))
    email: str | None = None
    signatory: bool = False
    title: str | None = None
    subscriber_agreement_on: object = None
    #: a grease hauler's account: the registered hauler it reports for
    hauler_id: int | None = None
    #: an establishment's account (the grease program): the establishment it speaks for
    establishment_id: int | None = None

    @property
    def totp(self) -> bool:
        """True when the account signs in with a second factor."""
        return self.totp_secret is not None

    @property
    def actor(self) -> Actor:
        """The account as the acting person of the audit trail."""
        return Actor.account(self.username, self.full_name)

    def locked(self, now: datetime) -> bool:
        return self.locked_until is not None and self.locked_until > now

    def summary(self) -> dict:
        """What ``users list`` and the accounts page show."""
        return {"username": self.username, "full_name": self.full_name, "kind": self.kind, "role": self.role,
                "state": "disabled" if self.disabled_at else "active", "locked_until": self.locked_until,
                "failed_logins": self.failed_logins, "totp": self.totp, "last_login_at": self.last_login_at,
                "created_at": self.created_at}


@dataclass(frozen=True)
class SignIn:
    """The outcome of :func:`authenticate`.

    ``outcome``: ``ok``, ``second-factor`` (the password was right; a TOTP code is owed),
    ``refused`` (an unknown user, a wrong password, a disabled account, an account locked from
    this address: the page does not say which), ``disabled`` (the right password of a disabled
    account), ``locked`` (a wrong code of the second step locked the account from this address).
    """

    outcome: str
    account: Account | None = None
    message: str = ""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _row(conn, where: str, params) -> Account | None:
    row = conn.execute(f"SELECT {', '.join(COLS)} FROM web_accounts WHERE {where}", params).fetchone()
    return None if row is None else Account(*row)


def get(conn, username: str) -> Account | None:
    """The account ``username`` or None."""
    return _row(conn, "username = %s", (username,))


def by_id(conn, account_id: int) -> Account | None:
    return _row(conn, "id = %s", (account_id,))


def _require(conn, username: str, what: str) -> Account:
    acc = get(conn, username)
    if acc is None:
        known = [r[0] for r in conn.execute("SELECT username FROM web_accounts ORDER BY username").fetchall()]
        raise InputError(f"users {what}: no account {username!r} (accounts: {', '.join(known) or 'none yet'})")
    return acc


def _audit(conn, actor: Actor, action: str, username: str, detail: dict | None = None) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, f"account:{username}",
                  json.dumps({"via": actor.via, **(detail or {})}, default=str)))


def check_password(password: str, username: str = "") -> None:
    """Refuse a password that is too short, too long, or the user name itself."""
    if not isinstance(password, str) or len(password) < PASSWORD_MIN:
        raise InputError(f"the password needs at least {PASSWORD_MIN} characters")
    if len(password) > PASSWORD_MAX:
        raise InputError(f"the password may have at most {PASSWORD_MAX} characters")
    if username and password.strip().lower() == username.lower():
        raise InputError("the password may not be the user name")


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise InputError(f"unknown role {role!r} (roles: {', '.join(ROLES)})")
    return role


def add(conn, username: str, full_name: str, role: str | None, password: str, *, actor: Actor, kind: str = "staff",
        site_key: str | None = None, portal: dict | None = None, hauler: str | None = None,
        establishment: str | None = None) -> Account:
    """Add an account (audited ``account-added``).

    Parameters
    ----------
    username : str
        Lower-case letters, digits, ``.``, ``_`` and ``-`` (at most 64).
    kind : str
        ``staff`` (with a role); ``industrial-user`` accounts are bound to ``site_key``,
        ``grease-hauler`` accounts to the registered hauler whose licence is ``hauler``,
        ``grease-establishment`` accounts to the establishment whose business licence is
        ``establishment``.
    portal : dict, optional
        An industrial user's person (:mod:`ereport.invitations`): ``email``, ``signatory``,
        ``title``, ``subscriber_agreement_on``, ``totp_secret`` (a signatory's second factor).
    """
    import re
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", username or ""):
        raise InputError(f"user name {username!r}: use lower-case letters, digits, '.', '_' and '-' "
                         "(at most 64, starting with a letter or digit)")
    if not (full_name or "").strip():
        raise InputError("users add: --name needs the person's name (records show it)")
    if kind not in KINDS:
        raise InputError(f"unknown kind of account {kind!r} (kinds: {', '.join(KINDS)})")
    site_id = hauler_id = establishment_id = None
    if kind == "staff":
        _check_role(role)
    elif kind == "grease-hauler":
        row = conn.execute("SELECT id FROM fog_haulers WHERE licence = %s", ((hauler or "").strip(),)).fetchone()
        if row is None:
            raise InputError(f"users add: a grease hauler's account needs its registered hauler; no hauler with "
                             f"licence {hauler!r} (sewerwatch fog hauler list)")
        hauler_id = row[0]
    elif kind == "grease-establishment":
        row = conn.execute("SELECT id FROM fog_establishments WHERE licence = %s",
                           ((establishment or "").strip(),)).fetchone()
        if row is None:
            raise InputError(f"users add: an establishment's account needs its establishment; no establishment with "
                             f"licence {establishment!r} (sewerwatch fog list)")
        establishment_id = row[0]
    else:
        row = conn.execute("SELECT id FROM sites WHERE key = %s", (site_key,)).fetchone()
        if row is None:
            raise InputError(f"users add: an industrial user's account needs its site; no site {site_key!r}")
        site_id = row[0]
    check_password(password, username)
    with conn.transaction():
        if get(conn, username) is not None:
            raise InputError(f"users add: an account {username!r} exists already")
        p = portal or {}
        conn.execute("INSERT INTO web_accounts (username, full_name, kind, role, site_id, password_hash, created_by, "
                     "email, signatory, title, subscriber_agreement_on, totp_secret, hauler_id, establishment_id) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                     (username, full_name.strip(), kind, role if kind == "staff" else None, site_id,
                      _hasher.hash(password), actor.audit_name, p.get("email"), bool(p.get("signatory")),
                      p.get("title"), p.get("subscriber_agreement_on"), p.get("totp_secret"), hauler_id,
                      establishment_id))
        _audit(conn, actor, "account-added", username, {"role": role, "kind": kind, "full_name": full_name.strip(),
                                                        **({"site": site_key, "signatory": bool(p.get("signatory"))}
                                                           if kind == "industrial-user" else {}),
                                                        **({"hauler": hauler} if kind == "grease-hauler" else {}),
                                                        **({"establishment": establishment}
                                                           if kind == "grease-establishment" else {})})
    return get(conn, username)


def list_accounts(conn) -> list[Account]:
    """Every account, by user name."""
    rows = conn.execute(f"SELECT {', '.join(COLS)} FROM web_accounts ORDER BY username").fetchall()
    return [Account(*r) for r in rows]


def disable(conn, username: str, *, actor: Actor) -> Account:
    """Disable an account: it cannot sign in, and its sessions end at their next request."""
    with conn.transaction():
        acc = _require(conn, username, "disable")
        if acc.disabled_at is None:
            conn.execute("UPDATE web_accounts SET disabled_at = now(), session_epoch = session_epoch + 1 "
                         "WHERE id = %s", (acc.id,))
            _audit(conn, actor, "account-disabled", username)
    return get(conn, username)


def enable(conn, username: str, *, actor: Actor) -> Account:
    """Enable an account again; this also unlocks it from every address (failed sign-ins forgotten)."""
    with conn.transaction():
        acc = _require(conn, username, "enable")
        conn.execute("UPDATE web_accounts SET disabled_at = NULL, locked_until = NULL, failed_logins = 0 "
                     "WHERE id = %s", (acc.id,))
        conn.execute("DELETE FROM web_signin_failures WHERE account_id = %s", (acc.id,))
        _audit(conn, actor, "account-enabled", username,
               {"was_disabled": acc.disabled_at is not None, "was_locked": acc.locked(_now())})
    return get(conn, username)


def reset_password(conn, username: str, password: str, *, actor: Actor) -> Account:
    """A new password; the account's sessions end, its locks are lifted."""
    check_password(password, username)
    with conn.transaction():
        acc = _require(conn, username, "reset-password")
        conn.execute("UPDATE web_accounts SET password_hash = %s, session_epoch = session_epoch + 1, "
                     "failed_logins = 0, locked_until = NULL WHERE id = %s", (_hasher.hash(password), acc.id))
        conn.execute("DELETE FROM web_signin_failures WHERE account_id = %s", (acc.id,))
        _audit(conn, actor, "account-password-reset", username)
    return get(conn, username)


def set_role(conn, username: str, role: str, *, actor: Actor) -> Account:
    """A new role for a staff account; its sessions end (they were granted under the old one)."""
    _check_role(role)
    with conn.transaction():
        acc = _require(conn, username, "role")
        if acc.kind != "staff":
            raise InputError(f"users role: {username!r} is a portal account ({acc.kind}), which has no staff role")
        if acc.totp and role not in second_factor_roles():
            conn.execute("UPDATE web_accounts SET totp_secret = NULL, totp_last_step = NULL WHERE id = %s", (acc.id,))
        conn.execute("UPDATE web_accounts SET role = %s, session_epoch = session_epoch + 1 WHERE id = %s",
                     (role, acc.id))
        _audit(conn, actor, "account-role", username, {"from": acc.role, "to": role})
    return get(conn, username)


def totp_enable(conn, username: str, *, actor: Actor) -> tuple[Account, str]:
    """Turn the second factor on: a new TOTP secret; returns it with its ``otpauth://`` URI
    (for an authenticator app). Only for the roles that can issue notices."""
    with conn.transaction():
        acc = _require(conn, username, "totp")
        if acc.role not in second_factor_roles():
            raise InputError(f"users totp: the second factor is for the roles that can issue notices "
                             f"({', '.join(second_factor_roles())}); {username!r} is {acc.role or acc.kind}")
        secret = pyotp.random_base32()
        conn.execute("UPDATE web_accounts SET totp_secret = %s, totp_last_step = NULL, "
                     "session_epoch = session_epoch + 1 WHERE id = %s", (secret, acc.id))
        _audit(conn, actor, "account-totp-on", username)
    uri = pyotp.TOTP(secret).provisioning_uri(name=username, issuer_name=TOTP_ISSUER)
    return get(conn, username), uri


def totp_disable(conn, username: str, *, actor: Actor) -> Account:
    with conn.transaction():
        acc = _require(conn, username, "totp")
        conn.execute("UPDATE web_accounts SET totp_secret = NULL, totp_last_step = NULL WHERE id = %s", (acc.id,))
        _audit(conn, actor, "account-totp-off", username)
    return get(conn, username)


# -- signing in ---------------------------------------------------------------------------------

#: The one answer to a user name and password that do not sign in: an unknown name, a wrong
#: password, a disabled account and an account locked from this address read the same, so the
#: page tells nobody which accounts exist or what state they are in.
REFUSED = "The user name or the password is not right."


def authenticate(conn, username: str, password: str, *, client: str, lockout_after: int,
                 lockout_min: float) -> SignIn:
    """Check a user name and password (the first step of signing in).

    Until the password is right every refusal is the same (``refused``, :data:`REFUSED`):
    an unknown user, a wrong password, a disabled account, an account locked from this
    client. Each costs one password verification, so the time does not tell them apart
    either. A wrong password counts a failure of the account *from this client address*;
    ``lockout_after`` of them in a row lock the account from that address for
    ``lockout_min`` minutes (it still signs in from any other). A locked address is refused
    whatever the password, without checking it (no oracle). The right password of a disabled
    account is told so (``disabled``): only someone with the password learns it. Every
    failure and every lock is logged and audited (``login-failed``, ``account-locked``) with
    the client's address.
    """
    username = (username or "").strip().lower()
    now = _now()
    with conn.transaction():
        row = conn.execute("SELECT id, password_hash FROM web_accounts WHERE username = %s FOR UPDATE",
                           (username,)).fetchone()
        if row is None:
            _verify(_DUMMY_HASH, password or "")
            log.warning("sign-in refused: unknown user %r from %s", username[:64], client)
            conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'login-failed', %s, %s)",
                         (username[:64] or "-", f"account:{username[:64]}",
                          json.dumps({"via": "web", "client": client, "reason": "unknown user"})))
            return SignIn("refused", message=REFUSED)
        acc = by_id(conn, row[0])
        if locked_from(conn, acc.id, client, now) is not None:
            _verify(_DUMMY_HASH, password or "")
            _failure(conn, acc, client, "locked from this address", count=False)
            return SignIn("refused", message=REFUSED)
        if not _verify(row[1], password or ""):
            _failure(conn, acc, client, "wrong password" + (" (disabled)" if acc.disabled_at else ""),
                     lockout_after=lockout_after, lockout_min=lockout_min)
            return SignIn("refused", message=REFUSED)
        if acc.disabled_at is not None:
            _failure(conn, acc, client, "disabled", count=False)
            return SignIn("disabled", acc, "This account is disabled. Ask the superintendent to enable it.")
        if _hasher.check_needs_rehash(row[1]):
            conn.execute("UPDATE web_accounts SET password_hash = %s WHERE id = %s", (_hasher.hash(password), acc.id))
        if acc.totp:
            return SignIn("second-factor", acc)
        return SignIn("ok", _signed_in(conn, acc, client))


def second_factor(conn, account_id: int, code: str, *, client: str, lockout_after: int,
                  lockout_min: float) -> SignIn:
    """Check the TOTP code of an account whose password was right (the second step). A wrong
    code counts towards the lockout from this address as a wrong password does."""
    now = _now()
    with conn.transaction():
        conn.execute("SELECT 1 FROM web_accounts WHERE id = %s FOR UPDATE", (account_id,))
        acc = by_id(conn, account_id)
        if acc is None or acc.disabled_at is not None:
            return SignIn("disabled", acc, "This account is disabled. Ask the superintendent to enable it.")
        until = locked_from(conn, acc.id, client, now)
        if until is not None:
            return SignIn("locked", acc, _locked_words(until))
        if not acc.totp:
            return SignIn("ok", _signed_in(conn, acc, client))
        step = _totp_step(acc.totp_secret, (code or "").strip().replace(" ", ""), now)
        last = conn.execute("SELECT totp_last_step FROM web_accounts WHERE id = %s", (acc.id,)).fetchone()[0]
        if step is None or (last is not None and step <= last):
            until = _failure(conn, acc, client, "wrong code" if step is None else "code used before",
                             lockout_after=lockout_after, lockout_min=lockout_min)
            if until is not None:
                return SignIn("locked", acc, _locked_words(until))
            return SignIn("refused", acc, "That code is not right (or was used already). Type the code your "
                                          "authenticator app shows now.")
        conn.execute("UPDATE web_accounts SET totp_last_step = %s WHERE id = %s", (step, acc.id))
        return SignIn("ok", _signed_in(conn, acc, client))


def reauthenticate(conn, account_id: int, password: str, code: str, *, client: str, lockout_after: int,
                   lockout_min: float, why: str = "signing") -> SignIn:
    """The password and the second factor of a signed-in account again (the portal's signing,
    40 CFR 3.2000(b)(5)(i)): ``ok`` with the TOTP step used (``message``), or ``refused`` /
    ``locked`` / ``disabled`` with the words to show. Failures count towards the lockout from
    this address as a sign-in's do; a code works once (the step is kept, as at sign-in)."""
    now = _now()
    with conn.transaction():
        row = conn.execute("SELECT password_hash FROM web_accounts WHERE id = %s FOR UPDATE", (account_id,)).fetchone()
        acc = by_id(conn, account_id)
        if row is None or acc is None or acc.disabled_at is not None:
            return SignIn("disabled", acc, "This account is disabled.")
        until = locked_from(conn, acc.id, client, now)
        if until is not None:
            return SignIn("locked", acc, _locked_words(until))
        if not acc.totp:
            return SignIn("refused", acc, "This account has no second factor, so it cannot sign.")
        ok_password = _verify(row[0], password or "")
        step = _totp_step(acc.totp_secret, (code or "").strip().replace(" ", ""), now)
        last = conn.execute("SELECT totp_last_step FROM web_accounts WHERE id = %s", (acc.id,)).fetchone()[0]
        if not ok_password or step is None or (last is not None and step <= last):
            reason = "wrong password" if not ok_password else ("wrong code" if step is None else "code used before")
            until = _failure(conn, acc, client, f"{why}: {reason}", lockout_after=lockout_after,
                             lockout_min=lockout_min)
            if until is not None:
                return SignIn("locked", by_id(conn, acc.id), _locked_words(until))
            return SignIn("refused", acc, "The password or the code is not right (a code works once: wait for "
                                          "the next one). Nothing was signed.")
        conn.execute("UPDATE web_accounts SET totp_last_step = %s, failed_logins = 0 WHERE id = %s", (step, acc.id))
        conn.execute("DELETE FROM web_signin_failures WHERE account_id = %s AND client = %s", (acc.id, client))
        return SignIn("ok", by_id(conn, acc.id), str(step))


def locked_from(conn, account_id: int, client: str, now: datetime | None = None) -> datetime | None:
    """Until when the account is locked from ``client`` (an address), or None when it is not."""
    row = conn.execute("SELECT locked_until FROM web_signin_failures WHERE account_id = %s AND client = %s",
                       (account_id, client)).fetchone()
    if row is None or row[0] is None or row[0] <= (now or _now()):
        return None
    return row[0]


def session_account(conn, account_id: int, epoch: int) -> Account | None:
    """The account of a session, or None when the session no longer stands (the account was
    disabled, its password or role changed, it is gone)."""
    acc = by_id(conn, account_id)
    if acc is None or acc.disabled_at is not None or acc.session_epoch != epoch:
        return None
    return acc


def signed_out(conn, acc: Account, client: str, why: str) -> None:
    """Audit the end of a session (``logout``: signed out, expired, ended by a change)."""
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'logout', %s, %s)",
                 (acc.username, f"account:{acc.username}", json.dumps({"via": "web", "client": client, "why": why})))
    conn.commit()


def _verify(hash_: str, password: str) -> bool:
    try:
        return _hasher.verify(hash_, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def _totp_step(secret: str, code: str, now: datetime) -> int | None:
    """The time step ``code`` belongs to (one step either side of now), or None."""
    if not code.isdigit():
        return None
    totp = pyotp.TOTP(secret)
    here = totp.timecode(now)
    for offset in (0, -1, 1):
        if hmac.compare_digest(totp.generate_otp(here + offset), code):
            return here + offset
    return None


def _failure(conn, acc: Account, client: str, reason: str, *, count: bool = True, lockout_after: int = 0,
             lockout_min: float = 0.0) -> datetime | None:
    """Audit and log one failed sign-in; with ``count``, count it against the account from
    ``client`` and lock the account from there at ``lockout_after`` failures in a row.

    Returns
    -------
    datetime or None
        Until when the account is now locked from ``client`` (UTC), or None.
    """
    detail = {"via": "web", "client": client, "reason": reason}
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'login-failed', %s, %s)",
                 (acc.username, f"account:{acc.username}", json.dumps(detail)))
    log.warning("sign-in refused: %s (%s) from %s", acc.username, reason, client)
    if not count:
        return None
    failed = conn.execute(
        "INSERT INTO web_signin_failures AS f (account_id, client, failures) VALUES (%s, %s, 1) "
        "ON CONFLICT (account_id, client) DO UPDATE SET failures = CASE WHEN f.locked_until IS NOT NULL "
        "AND f.locked_until <= now() THEN 1 ELSE f.failures + 1 END, locked_until = CASE WHEN "
        "f.locked_until <= now() THEN NULL ELSE f.locked_until END, last_at = now() RETURNING failures",
        (acc.id, client)).fetchone()[0]
    conn.execute("UPDATE web_accounts SET failed_logins = failed_logins + 1 WHERE id = %s", (acc.id,))
    if failed < lockout_after:
        return None
    until = _now() + timedelta(minutes=lockout_min)
    conn.execute("UPDATE web_signin_failures SET failures = 0, locked_until = %s WHERE account_id = %s AND "
                 "client = %s", (until, acc.id, client))
    conn.execute("UPDATE web_accounts SET locked_until = greatest(locked_until, %s) WHERE id = %s", (until, acc.id))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'account-locked', %s, %s)",
                 (acc.username, f"account:{acc.username}",
                  json.dumps({"via": "web", "client": client, "failures": failed, "until": until.isoformat()})))
    log.warning("account %s LOCKED from %s until %s after %d failed sign-ins from there", acc.username, client,
                until.isoformat(timespec="seconds"), failed)
    return until


def _signed_in(conn, acc: Account, client: str) -> Account:
    """Record a sign-in: the failures from this address forgotten (a lock from another stays)."""
    conn.execute("DELETE FROM web_signin_failures WHERE account_id = %s AND client = %s", (acc.id, client))
    conn.execute("UPDATE web_accounts SET failed_logins = 0, last_login_at = now(), locked_until = "
                 "(SELECT max(locked_until) FROM web_signin_failures WHERE account_id = %s AND locked_until > now()) "
                 "WHERE id = %s", (acc.id, acc.id))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'login', %s, %s)",
                 (acc.username, f"account:{acc.username}", json.dumps({"via": "web", "client": client,
                                                                        "totp": acc.totp})))
    log.info("signed in: %s (%s) from %s", acc.username, acc.role or acc.kind, client)
    return by_id(conn, acc.id)


def _locked_words(until: datetime) -> str:
    """What the second step says of a lock (only after the right password)."""
    return (f"After repeated failed attempts from this computer, this account cannot sign in from it until "
            f"{until.astimezone(timezone.utc):%H:%M} UTC. It still can from another, or ask the "
            f"superintendent to enable it.")
