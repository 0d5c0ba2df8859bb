"""Who acts, for the audit trail: an account of the web application, or the operating-system
user of a command.

Every action has one package function that both faces call: the web handler passes
:meth:`Actor.account` of the signed-in account, the command-line handler
:meth:`Actor.os_user`. The function writes ``audit_log.actor`` from :attr:`Actor.name` and
records :attr:`Actor.via` in the row's detail, so the log says who did it and from where.

>>> Actor.account("pjones", "Pat Jones").audit_name
'pjones'
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass

#: The faces an action comes through.
VIA = ("web", "cli", "link", "system")


@dataclass(frozen=True)
class Actor:
    """Who acts.

    Attributes
    ----------
    name : str
        ``audit_log.actor``: the account's user name (web) or the operating-system user (CLI).
    via : str
        ``web``, ``cli``, ``link`` (an acknowledgement link, no account) or ``system``.
    display : str
        The person's name as records show it (an account's full name; the user name when
        nothing better is known).
    """

    name: str
    via: str
    display: str = ""

    def __post_init__(self):
        if self.via not in VIA:
            raise ValueError(f"unknown face {self.via!r} (known: {', '.join(VIA)})")
        if not self.name:
            raise ValueError("an actor needs a name")
        if not self.display:
            object.__setattr__(self, "display", self.name)

    @property
    def audit_name(self) -> str:
        """What ``audit_log.actor`` holds."""
        return self.name

    @classmethod
    def os_user(cls) -> "Actor":
        """The operating-system user running a command (``sewerwatch ...``)."""
        return cls(getpass.getuser(), "cli")

    @classmethod
    def account(cls, username: str, full_name: str = "") -> "Actor":
        """A signed-in account of the web application."""
        return cls(username, "web", full_name or username)

    @classmethod
    def system(cls) -> "Actor":
        """sewerwatch itself (a periodic job of ``run``)."""
        return cls("sewerwatch", "system")
