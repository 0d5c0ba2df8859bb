"""Per-device health of the Modbus collector: counters, up/down state and outage records.

The records are what :meth:`ingest.sink.Sink.health` takes and the writer upserts into the
tables ``device_health`` and ``device_outages`` (``sewerwatch/db/migrations/0020_ingest.sql``):

- a snapshot ``{"kind": "snapshot", "device", "site", "state", "last_good_us",
  "last_error_us", "last_error", "polls", "missed_polls", "transport_errors",
  "exception_replies", "reconnects"}`` with cumulative counters;
- an outage ``{"kind": "outage", "device", "started_us", "ended_us", "reason"}``, sent when
  the device goes down (``ended_us`` None) and again, with the same ``started_us``, when
  it answers again.

A transport error (refused or lost connection, no answer within the timeout, a garbled
frame) takes the device down; a Modbus exception reply (Modbus Application Protocol
V1.1b3 §7) is an answer: it is counted apart, and the device is up (reachable) though
``last_good_us`` does not move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UP = "up"
DOWN = "down"


@dataclass
class DeviceHealth:
    """Health counters of one device.

    Attributes
    ----------
    device, site : str
        ``devices[].id`` and its site.
    state : str or None
        :data:`UP`, :data:`DOWN`, or None before the first poll ended.
    last_good_us, last_error_us : int or None
        Time of the last good read and of the last error [µs since epoch UTC].
    outage_started_us : int or None
        Start of the current outage [µs since epoch UTC], None while up.
    """

    device: str
    site: str
    state: str | None = None
    last_good_us: int | None = None
    last_error_us: int | None = None
    last_error: str | None = None
    polls: int = 0
    missed_polls: int = 0
    transport_errors: int = 0
    exception_replies: int = 0
    reconnects: int = 0
    outage_started_us: int | None = None
    outage_reason: str | None = None
    outages: list = field(default_factory=list)  # (started_us, ended_us) of ended outages

    def snapshot(self) -> dict:
        """The snapshot record (cumulative counters)."""
        return {"kind": "snapshot", "device": self.device, "site": self.site, "state": self.state,
                "last_good_us": self.last_good_us, "last_error_us": self.last_error_us,
                "last_error": self.last_error, "polls": self.polls, "missed_polls": self.missed_polls,
                "transport_errors": self.transport_errors, "exception_replies": self.exception_replies,
                "reconnects": self.reconnects}

    def good(self, t_us: int) -> list[dict]:
        """Record a good read at ``t_us``; returns the records a state change produces."""
        self.last_good_us = t_us
        return self._up(t_us)

    def exception_reply(self, t_us: int, text: str) -> list[dict]:
        """Record a Modbus exception reply: no data, but the link answers, so the device is up.

        ``last_good_us`` stays where it was (no value was read); an outage ends, since the
        device is reachable again.
        """
        self.exception_replies += 1
        self.last_error_us, self.last_error = t_us, text
        return self._up(t_us)

    def _up(self, t_us: int) -> list[dict]:
        if self.state == UP:
            return []
        out = []
        if self.outage_started_us is not None:
            out.append({"kind": "outage", "device": self.device, "started_us": self.outage_started_us,
                        "ended_us": t_us, "reason": self.outage_reason})
            self.outages.append((self.outage_started_us, t_us))
            self.outage_started_us = self.outage_reason = None
        self.state = UP
        out.append(self.snapshot())
        return out

    def transport_error(self, t_us: int, text: str) -> list[dict]:
        """Record a transport error; returns the records going down produces."""
        self.transport_errors += 1
        self.last_error_us, self.last_error = t_us, text
        if self.state == DOWN:
            return []
        self.state = DOWN
        self.outage_started_us, self.outage_reason = t_us, text
        return [{"kind": "outage", "device": self.device, "started_us": t_us, "ended_us": None,
                 "reason": text}, self.snapshot()]
