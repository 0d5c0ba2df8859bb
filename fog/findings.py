"""The findings of a grease removal device, worked out from its record and its pump-outs
(nothing stored: the same rows give the same findings on every read).

The rules (:class:`fog.rules.Rules`):

- **too late**: FOG plus solids depth before pumping at or above ``depth_share`` of the
  device's liquid depth [in]; the device's interval is shortened from then on
  (:meth:`fog.rules.Rules.shortened`).
- **over capacity**: more gallons removed than the device holds [gal].
- **unregistered hauler**: a pump-out by a company not registered with the village.
- **overdue**: a pump-out later than the last one (or, before any, the device's installation
  or registration, whichever is later) plus the interval then in effect; and, as of a day,
  a device whose next pump-out is past due. The first pump-out recorded is not judged
  against the installation when the device was registered after it (no records before).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from fog.rules import Rules


@dataclass(frozen=True)
class Finding:
    """One finding: ``kind`` (:data:`fog.rules.KINDS`), the day it is of, what it says, the
    pump-out it is about (None for an overdue device as of a day), ``days`` overdue and, for
    a grease blockage traced to the establishment, the crew's report (:mod:`fog.blockages`); for a
    device missing, its record (:mod:`fog.missing_devices`)."""

    kind: str
    on: date
    words: str
    pumpout_id: int | None = None
    days: int | None = None
    blockage_id: int | None = None
    missing_id: int | None = None


@dataclass
class Schedule:
    """A device's findings and schedule as of a day.

    Attributes
    ----------
    findings : list of Finding
        Oldest first.
    interval_days : int
        The interval in effect after the last pump-out [days].
    last_pumped : date or None
    due_on : date
        When the next pump-out is due.
    overdue_days : int
        Days past ``due_on`` as of the day asked (0 when not overdue) [days].
    """

    findings: list = field(default_factory=list)
    interval_days: int = 0
    last_pumped: date | None = None
    due_on: date | None = None
    overdue_days: int = 0


def _num(v) -> str:
    return f"{float(v):,.1f}".rstrip("0").rstrip(".")


def schedule(device: dict, pumpouts: list[dict], rules: Rules, as_of: date) -> Schedule:
    """The findings and schedule of ``device`` as of ``as_of``.

    Parameters
    ----------
    device : dict
        ``interval_days`` [days], ``capacity_gal`` [gal], ``liquid_depth_in`` [in],
        ``installed_on`` (date or None), ``registered_on`` (date).
    pumpouts : list of dict
        Its pump-outs: ``id``, ``pumped_on``, ``gallons`` [gal], ``fog_depth_in`` and
        ``solids_depth_in`` [in], ``hauler_id`` (None: not registered), ``hauler_name``.
        Those after ``as_of`` are left out.
    rules : Rules
    as_of : date
    """
    out = Schedule(interval_days=int(device["interval_days"]))
    start = max(d for d in (device.get("installed_on"), device["registered_on"]) if d is not None)
    judge_first = device.get("installed_on") is not None and device["registered_on"] <= device["installed_on"]
    prev = None
    for p in sorted((p for p in pumpouts if p["pumped_on"] <= as_of), key=lambda p: (p["pumped_on"], p["id"])):
        day = p["pumped_on"]
        since = prev if prev is not None else (start if judge_first else None)
        if since is not None:
            due = since + timedelta(days=out.interval_days)
            if day > due:
                late = (day - due).days
                out.findings.append(Finding("overdue", day, f"pumped {late} days after it was due on {due} "
                                            f"(every {out.interval_days} days)", p["id"], late))
        cap = float(device["capacity_gal"])
        if float(p["gallons"]) > cap:
            out.findings.append(Finding("over capacity", day, f"{_num(p['gallons'])} gallons removed from a device "
                                        f"that holds {_num(cap)} gallons", p["id"]))
        if p["hauler_id"] is None:
            out.findings.append(Finding("unregistered hauler", day, f"pumped by {p['hauler_name']}, a hauler not "
                                        "registered with the village", p["id"]))
        depth = float(device["liquid_depth_in"])
        held = float(p["fog_depth_in"]) + float(p["solids_depth_in"])
        if held >= rules.depth_share * depth:
            before, out.interval_days = out.interval_days, rules.shortened(out.interval_days)
            change = (f"; the interval is now {out.interval_days} days (was {before})"
                      if out.interval_days != before else f"; the interval stays {before} days, the shortest")
            out.findings.append(Finding("too late", day, f"pumped too late: FOG and solids {_num(held)} in of "
                                        f"{_num(depth)} in liquid depth ({held / depth:.0%}, the rule is "
                                        f"{rules.depth_share:.0%}){change}", p["id"]))
        prev = day
    out.last_pumped = prev
    out.due_on = (prev if prev is not None else start) + timedelta(days=out.interval_days)
    if as_of > out.due_on:
        out.overdue_days = (as_of - out.due_on).days
        out.findings.append(Finding("overdue", as_of, f"{out.overdue_days} days overdue as of {as_of}: "
                                    f"due on {out.due_on}", None, out.overdue_days))
    return out
