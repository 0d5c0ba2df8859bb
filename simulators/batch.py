"""Batch generation: a scenario's readings for many devices as numpy arrays."""

from __future__ import annotations

import datetime as dt

import numpy as np

from foundation.errors import InputError
from simulators.scenarios import Scenario, Series, evaluate, load


def generate(scenario="normal-day", start=None, duration_s=None, step_s=60.0, devices=1,
             seed=None) -> Series:
    """Readings of simulated control-manhole devices under a scenario, as arrays.

    Parameters
    ----------
    scenario : str or Scenario
        A shipped scenario's name (``simulators/scenarios/<name>.toml``), a path to a
        scenario TOML, or a loaded :class:`~simulators.scenarios.Scenario`.
    start : datetime.datetime (aware) or float, optional
        First sample time [epoch s]; default the scenario's start. Scenario events stay
        at their offsets from the scenario's own start.
    duration_s : float, optional
        Span to cover [s]; default the scenario's duration.
    step_s : float
        Sampling interval [s]; the noise changes every whole second.
    devices : int or array_like of int
        How many devices (indices 0..n-1), or the device indices themselves.
    seed : int, optional
        Overrides the scenario's seed; the same seed gives the same readings.

    Returns
    -------
    Series
        ``times`` (n_times,) [epoch s], ``sites``, ``values[sensor]`` (n_devices, n_times)
        in ``units[sensor]`` (flow [gpm], level [ft], pH, temperature [degF]), fault masks,
        the claimed ``events``; ``Series.to_csv(path)`` writes the long CSV of
        ``sewerwatch check``.

    Examples
    --------
    >>> s = generate("acid-dump", step_s=60, devices=3)
    >>> s.values["ph"].shape
    (3, 1440)
    """
    scn = scenario if isinstance(scenario, Scenario) else load(str(scenario))
    scn = scn.with_seed(seed)
    if start is None:
        t0 = scn.start
    elif isinstance(start, dt.datetime):
        if start.tzinfo is None:
            raise InputError("start: give an aware datetime (with a UTC offset)")
        t0 = start.timestamp()
    else:
        t0 = float(start)
    span = scn.duration_s if duration_s is None else float(duration_s)
    if not step_s > 0 or not span > 0:
        raise InputError(f"step_s and duration_s must be positive, got {step_s} and {span}")
    idx = np.arange(devices) if np.isscalar(devices) else np.asarray(devices, dtype=np.int64)
    if np.isscalar(devices) and int(devices) < 1:
        raise InputError(f"devices: expected at least 1, got {devices}")
    times = t0 + np.arange(0.0, span, float(step_s))
    return evaluate(scn, idx, times)
