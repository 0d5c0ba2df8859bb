"""Each account's iCalendar feed of the compliance calendar (table
``web_calendar_feeds``, migration 0152).

A calendar program cannot sign in, so the feed's address is its key:
``<public url>/calendar/feed/<token>.ics``, the token signed by itsdangerous
(:class:`itsdangerous.URLSafeSerializer`, the state folder's ``keys.calendar_feeds``) over the
account's id and a random nonce kept in the table. The address can be shown to its owner
again at any time (:func:`token_of`), and the table alone gives none away. :func:`make`
gives the account a new nonce (the old address stops working), :func:`revoke` removes it;
both are audited (``calendar-feed-made``, ``calendar-feed-revoked``, object
``account:<name>``). A disabled account's feed is refused like an unknown token.
"""

from __future__ import annotations

import json
import secrets

from itsdangerous import BadSignature, URLSafeSerializer

from identity import accounts

SALT = "sewerwatch-calendar-feed"


def _signer(key: str) -> URLSafeSerializer:
    if not key:
        raise RuntimeError("the office has no key for calendar feeds (secrets.json keys.calendar_feeds)")
    return URLSafeSerializer(key, salt=SALT)


def _audit(conn, actor, action: str, account) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, f"account:{account.username}", json.dumps({"via": actor.via})))


def make(conn, account, *, actor) -> None:
    """A new feed address for ``account`` (its old one stops working)."""
    with conn.transaction():
        conn.execute("INSERT INTO web_calendar_feeds (account_id, nonce) VALUES (%s, %s) ON CONFLICT (account_id) "
                     "DO UPDATE SET nonce = EXCLUDED.nonce, created_at = now(), last_read_at = NULL",
                     (account.id, secrets.token_urlsafe(16)))
        _audit(conn, actor, "calendar-feed-made", account)


def revoke(conn, account, *, actor) -> bool:
    """Remove ``account``'s feed; False when it had none."""
    with conn.transaction():
        gone = conn.execute("DELETE FROM web_calendar_feeds WHERE account_id = %s", (account.id,)).rowcount
        if gone:
            _audit(conn, actor, "calendar-feed-revoked", account)
    return bool(gone)


def of(conn, account, key: str) -> dict | None:
    """The account's feed: ``token``, when it was made and last read; or None."""
    row = conn.execute("SELECT nonce, created_at, last_read_at FROM web_calendar_feeds WHERE account_id = %s",
                       (account.id,)).fetchone()
    if row is None:
        return None
    return {"token": _signer(key).dumps([account.id, row[0]]), "created_at": row[1], "last_read_at": row[2]}


def account_of(conn, token: str, key: str):
    """The active account whose feed ``token`` opens, or None (forged, revoked, disabled)."""
    try:
        aid, nonce = _signer(key).loads(token)
    except (BadSignature, ValueError, TypeError):
        return None
    row = conn.execute("UPDATE web_calendar_feeds SET last_read_at = now() WHERE account_id = %s AND nonce = %s "
                       "RETURNING account_id", (aid, nonce)).fetchone()
    if row is None:
        return None
    acc = accounts.by_id(conn, row[0])
    return None if acc is None or acc.disabled_at is not None else acc
