"""Acknowledgement links: signed, expiring, single-use.

Each alert message of a violation, a sensor-health condition or an unreachable device
(not the digest, not "sewerwatch degraded") carries a link to the acknowledgement page that
``sewerwatch run`` serves (:mod:`alerts.ackpage`)::

    https://sewer.example.org/ack/<token>

The token is made with itsdangerous (``URLSafeTimedSerializer``, HMAC-SHA256 over the payload
and its timestamp, keyed by ``keys.ack_links`` of the state folder's ``secrets.json``,
:mod:`foundation.secrets`). Its payload names the link (``t``: a random id, recorded in
``ack_links_used`` when the link is used, so it works once), the alert (``a``: its number,
or ``u``: the manager's uid while the database had not numbered it) and the message it came
in (``e``: ``open`` or ``escalate``). The payload is signed, not encrypted: it holds nothing
secret. A link is valid for ``[web] link_lifetime_h`` after its message was made.

Tokens are capabilities: whoever holds one may acknowledge that alert once. They are never
logged; :func:`redact` takes them out of any text (the page's access log, the console
channel).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from itsdangerous import BadData, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

#: The page's path for one link; the token follows it.
PATH = "/ack/"
#: What :func:`redact` puts in place of a token.
WITHHELD = "<token withheld>"
#: A token in text: what follows the path (itsdangerous's URL-safe alphabet and its dots).
_TOKEN_IN_TEXT = re.compile(re.escape(PATH) + r"[A-Za-z0-9_.\-]+")
#: The events whose messages carry a link (an open alert and its escalation).
LINKED_EVENTS = ("open", "escalate")
#: The alert kinds whose messages carry a link.
LINKED_KINDS = ("violation", "sensor-health")
_SALT = "sewerwatch-ack-link"


class LinkError(Exception):
    """A link that cannot be used (the message says why, in words for the page)."""


class LinkInvalid(LinkError):
    """Not a link sewerwatch made: a bad signature, a changed or cut token."""


class LinkExpired(LinkError):
    """A genuine link past its lifetime; :attr:`claims` still says which alert it was for."""

    def __init__(self, claims: "Claims", expired_at: float):
        super().__init__(f"the link expired at {expired_at:.0f}")
        self.claims, self.expired_at = claims, expired_at


@dataclass(frozen=True)
class Claims:
    """What a genuine link says.

    Attributes
    ----------
    token_id : str
        The link's own id (recorded when it is used).
    alert_id : int or None
        ``alerts.id``; None when the message went out before the database numbered the alert.
    uid : str or None
        The manager's name of the alert (``alert_uids``), when ``alert_id`` is None.
    event : str
        The message it came in: ``open`` or ``escalate``.
    signed_at : float
        When the link was made [epoch s].
    """

    token_id: str
    alert_id: int | None
    uid: str | None
    event: str
    signed_at: float


class AckLinks:
    """Makes and reads the acknowledgement links of one utility.

    Parameters
    ----------
    key : str
        The signing key (``secrets.json`` ``keys.ack_links``); never logged.
    base_url : str
        The page's public address (``[web] public_url``), without a trailing slash.
    lifetime_s : float
        How long a link is valid after it was made [s].
    clock : callable
        The time [epoch s] (tests make links that were signed long ago).
    """

    def __init__(self, key: str, base_url: str, lifetime_s: float, clock=time.time):
        if not key:
            raise ValueError("an acknowledgement link needs a signing key")
        signer = type("ClockSigner", (TimestampSigner,), {"get_timestamp": lambda self: int(clock())})
        self._s = URLSafeTimedSerializer(key, salt=_SALT, signer=signer,
                                         signer_kwargs={"digest_method": hashlib.sha256})
        self.base_url = base_url.rstrip("/")
        self.lifetime_s = float(lifetime_s)
        self.clock = clock

    def token(self, alert_id: int | None, uid: str | None, event: str) -> str:
        """A new token for one message of alert ``alert_id`` (or ``uid`` before it is numbered)."""
        payload = {"t": secrets.token_urlsafe(12), "e": event}
        if alert_id is not None:
            payload["a"] = int(alert_id)
        else:
            payload["u"] = uid
        return self._s.dumps(payload)

    def url(self, alert_id: int | None, uid: str | None, event: str) -> str:
        """The link itself: ``<base_url>/ack/<token>``."""
        return f"{self.base_url}{PATH}{self.token(alert_id, uid, event)}"

    def expires_at(self, now: float | None = None) -> float:
        """When a link made now expires [epoch s]."""
        return (self.clock() if now is None else now) + self.lifetime_s

    def read(self, token: str) -> Claims:
        """The claims of a genuine, unexpired token.

        Raises
        ------
        LinkExpired
            Genuine but older than the lifetime (or dated in the future).
        LinkInvalid
            Anything else: not signed with this utility's key, changed, cut, garbled.
        """
        try:
            payload, signed = self._s.loads(token, max_age=self.lifetime_s, return_timestamp=True)
        except SignatureExpired as exc:
            try:
                payload = self._s.load_payload(exc.payload)
            except BadData:
                raise LinkInvalid("the link is not valid") from None
            signed_at = exc.date_signed.timestamp() if exc.date_signed is not None else 0.0
            raise LinkExpired(_claims(payload, signed_at), signed_at + self.lifetime_s) from None
        except BadData:
            raise LinkInvalid("the link is not valid") from None
        return _claims(payload, signed.timestamp())


def _claims(payload, signed_at: float) -> Claims:
    """Claims from a verified payload (a signed payload of another shape is not a link)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("t"), str):
        raise LinkInvalid("the link is not valid")
    alert_id, uid = payload.get("a"), payload.get("u")
    if not (isinstance(alert_id, int) or isinstance(uid, str)):
        raise LinkInvalid("the link is not valid")
    return Claims(payload["t"], alert_id if isinstance(alert_id, int) else None,
                  uid if isinstance(uid, str) else None, str(payload.get("e", "")), signed_at)


def redact(text: str) -> str:
    """``text`` with every link's token replaced by :data:`WITHHELD`."""
    return _TOKEN_IN_TEXT.sub(PATH + WITHHELD, text)
