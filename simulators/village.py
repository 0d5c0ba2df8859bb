"""Days of a village's history: many days of readings at 1 Hz, with events on chosen days.

:func:`village_day` gives one day of ``n_devices`` control manholes (flow, pH,
temperature) under the ``normal-day`` scenario's models, with events of other scenarios
laid on the days asked for (an acid dump at 10:30, a slug of 6 × the mean flow at 12:00,
...), so a year of history is generated a day at a time in bounded memory (about 1 s and
30 MB a day for three devices at 1 Hz). The events keep their time of day, and only the
devices named get them. Used by ``benchmarks/history.py`` to fill ``readings`` for a year.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulators.scenarios import Series, evaluate, load

DAY_S = 86400.0

#: The sensors a control manhole of the demo village reports.
PARAMETERS = ("flow", "ph", "temperature")


@dataclass(frozen=True)
class DayEvent:
    """An event of a shipped scenario laid on one day of the history.

    Attributes
    ----------
    day : int
        Day index (0 = the first day generated).
    scenario : str
        A shipped scenario whose events are taken (e.g. ``acid-dump``, ``slug``).
    devices : tuple of int
        The devices (0-based) that get them.
    """

    day: int
    scenario: str
    devices: tuple[int, ...]


def village_day(start_s: float, day: int, n_devices: int, events=(), step_s: float = 1.0,
                seed: int = 1) -> Series:
    """One day of readings of ``n_devices`` devices.

    Parameters
    ----------
    start_s : float
        First day's start [epoch s].
    day : int
        Which day (0-based): readings cover ``[start_s + day × 86400, + 86400)``.
    n_devices : int
    events : iterable of DayEvent
        Events of the whole history; those of ``day`` are laid on it at their time of day.
    step_s : float
        Sampling interval [s].
    seed : int
        The normal day's seed (the noise differs day by day: it depends on the time).

    Returns
    -------
    Series
        As :func:`simulators.generate` (values in canonical units).
    """
    base = load("normal-day").with_seed(seed)
    t0 = start_s + day * DAY_S
    laid = []
    for ev in events:
        if ev.day != day:
            continue
        for e in load(ev.scenario).events:
            # the scenario's offset, taken modulo a day: its time of day
            laid.append(replace(e, start_s=e.start_s % DAY_S, devices=tuple(ev.devices)))
    scn = replace(base, start=t0, duration_s=DAY_S, events=tuple(laid))
    times = t0 + np.arange(0.0, DAY_S, float(step_s))
    return evaluate(scn, np.arange(n_devices), times)
