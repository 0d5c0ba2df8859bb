"""Mail from the portal: invitations and receipts, through apprise's ``mailto://`` plugin (the
channel alerts' e-mail uses), to one address that has been checked.

Nothing a form holds reaches a header as it was typed (no header injection):
the address is parsed and normalised by ``email-validator`` (a carriage return, a line feed, a
comma, a second address, a display name are refused) and put into the apprise URL
URL-encoded; the subject is one of the portal's fixed subjects, with the utility's and the
site's names cleaned of every control character (:func:`clean_header_text`); bodies are plain
text. Why a library for the address: RFC 5322 addresses have corners (quoted local parts,
comments, IDN domains) that a regular expression gets wrong.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from foundation.errors import InputError

log = logging.getLogger("sewerwatch.ereport")

#: Longest address accepted [characters] (RFC 5321 §4.5.3.1.3: a path of at most 256 octets).
ADDRESS_MAX = 254
#: Longest subject written [characters].
SUBJECT_MAX = 160


class MailError(Exception):
    """A message was not sent (the text says why)."""


def check_address(text: str, what: str = "e-mail address") -> str:
    """The normalised address ``text``, or :class:`InputError` naming what is wrong.

    Refuses anything that is not one bare address: display names, lists, control characters
    (a header injection needs a line break), over-long addresses.
    """
    from email_validator import EmailNotValidError, validate_email

    raw = text if isinstance(text, str) else ""
    if not raw.strip():
        raise InputError(f"{what}: needed")
    if any(unicodedata.category(c).startswith("C") for c in raw) or len(raw) > ADDRESS_MAX:
        raise InputError(f"{what}: one address without line breaks or control characters, at most {ADDRESS_MAX}")
    try:
        result = validate_email(raw.strip(), check_deliverability=False, allow_display_name=False,
                                allow_quoted_local=False, allow_domain_literal=False)
    except EmailNotValidError as exc:
        raise InputError(f"{what}: {exc}") from None
    return result.normalized


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def clean_header_text(text: str, limit: int = SUBJECT_MAX) -> str:
    """``text`` as one line for a header: every control character (CR, LF, tabs, NUL, the
    Unicode line separators) becomes a space; cut at ``limit``."""
    return " ".join(_CONTROL.sub(" ", str(text or "")).split())[:limit]


class Mailer:
    """Sends one message to one checked address.

    Parameters
    ----------
    url : str or None
        ``[web] mail_url``: an apprise ``mailto://`` or ``mailtos://`` URL of the mail server
        without ``to`` (``?from=`` names the sender). None: nothing can be sent, and
        :meth:`send` says so.
    """

    def __init__(self, url: str | None):
        self.url = url

    @property
    def configured(self) -> bool:
        return bool(self.url)

    def _url_for(self, to: str) -> str:
        parts = urlsplit(self.url)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in ("to", "cc", "bcc")]
        query.append(("to", to))
        return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))

    def send(self, to: str, subject: str, body: str) -> None:
        """Send ``body`` (plain text) to ``to`` (checked again here) with ``subject`` (cleaned).

        Raises
        ------
        MailError
            No mail server configured, or the server refused or could not be reached.
        """
        import apprise

        if not self.url:
            raise MailError("no mail server is set up for the office (the mail address in the configuration)")
        address = check_address(to)
        title = clean_header_text(subject)
        ap = apprise.Apprise()
        if not ap.add(self._url_for(address)):
            raise MailError("the mail server in the configuration is not one the office can use (a mailto:// address)")
        for plugin in ap:
            plugin.request_rate_per_sec = 0
        if not ap.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT):
            raise MailError(f"the mail server did not take the message to {address}")
        log.info("portal: mailed %r to %s", title, address)
