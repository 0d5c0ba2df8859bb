"""An alert not yet resolved, as the alert manager tracks it, and the small rules its
episodes are compared by (times, peaks, which alert an episode was alerted under).

Kept apart from :mod:`alerts.manager` so the parts of the manager (its episode handling,
:mod:`alerts.episode_alerts`) share one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from alerts.keys import AlertKey


@dataclass
class Active:
    """An alert not yet resolved, as the manager tracks it."""

    uid: str                      # the manager's name for it (before the database gives an id)
    id: int | None                # alerts.id; None while its row waits for the database
    kind: str
    key: AlertKey
    rule: str
    site: str
    site_name: str
    record: dict
    opened: float                 # [epoch s, manager clock]
    state: str = "open"
    escalated: bool = False
    acknowledged: bool = False
    ack: dict | None = None
    ended: float | None = None    # episode over at [epoch s]; resolved after the hold-off
    episodes: int = 1
    starts: list = field(default_factory=list)   # the episode starts this alert covers
    #: the starts of its episodes still open (an earlier episode found by late readings may
    #: open and close while a later one goes on: the alert ends when the last one does)
    open_starts: list = field(default_factory=list)
    summary: str = ""
    grown_at: float = 0.0         # [monotonic s] the violations row was last brought up to date

    @property
    def label(self) -> str:
        """``#12``, or ``#pending`` while the database has not numbered it."""
        return f"#{self.id}" if self.id is not None else "#pending"


def when(iso: str) -> datetime:
    """An evaluator record's ISO-8601 UTC time (``...Z``), comparable."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def same_alert(uid: str, a: Active) -> bool:
    """Whether ``uid`` (a manager's uid or ``alert-<id>``) names the alert ``a``."""
    return uid == a.uid or (a.id is not None and uid == f"alert-{a.id}")


def worse(a, b, comparison):
    if a is None:
        return b
    low = comparison in ("less than", "lower than", "below")
    return min(a, b) if low else max(a, b)
