"""Device models of a control manhole: pure vectorised functions of (seed, start, times).

Every function returns whole time series as numpy arrays of shape ``(n_devices, n_times)``
for a device index array ``devices`` (shape ``(n_devices,)``) and epoch times ``times``
[s] (shape ``(n_times,)``). Randomness is *counter-based*: the noise of device ``d`` at
second ``k`` is a hash of ``(seed, d, channel, k)``, so a value depends only on the seed,
the device and the time, never on which other times or devices were computed in the same
call. The live simulators sample one instant for all devices; :func:`simulators.generate`
samples a day for a few; both see the same numbers.

Models
------
- diurnal flow of an industrial user (two harmonics of the local clock, a slow day-to-day
  wander and per-device size and phase),
- the Parshall flume of an open-channel flow meter: the head follows from the flow by
  inverting the free-flow equation ``Q = C * H**n``, the level sensor adds its noise to
  the head and the meter converts the measured head back to flow,
- a direct-flow meter (magnetic or area-velocity): flow plus multiplicative noise,
- a pH probe: per-device mean, slow wander, noise,
- a temperature probe: per-device mean, diurnal swing, slow linear drift, wander, noise.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from foundation.units import GALLONS_PER_FT3

#: gpm in one ft^3/s
GPM_PER_CFS = GALLONS_PER_FT3 * 60.0

#: Free-flow equations of the standard Parshall flumes, ``Q = C * Ha**n`` with ``Q`` in
#: ft^3/s and the upstream head ``Ha`` in ft, keyed by throat width [in].
#:
#: References
#: ----------
#: U.S. Bureau of Reclamation, *Water Measurement Manual*, 3rd ed. (1997, rev. 2001),
#: chapter 8 (Parshall flumes), the table of free-flow equations per throat width; the same flumes are
#: standardised in ASTM D1941-91 and ISO 9826:1992. For throats of 1 to 8 ft the table's
#: values are ``C = 4 W`` and ``n = 1.522 W**0.026`` (``W`` in ft).
PARSHALL_FREE_FLOW = {
    1: (0.338, 1.55),
    2: (0.676, 1.55),
    3: (0.992, 1.547),
    6: (2.06, 1.58),
    9: (3.07, 1.53),
    12: (4.00, 1.522),
    18: (6.00, 1.538),
    24: (8.00, 1.550),
    36: (12.00, 1.566),
    48: (16.00, 1.578),
    60: (20.00, 1.587),
    72: (24.00, 1.595),
    84: (28.00, 1.601),
    96: (32.00, 1.607),
}

# hash channels: one independent noise stream per purpose
CH_FLOW, CH_PH, CH_TEMP, CH_LEVEL, CH_SPIKE, CH_SPIKE_SIGN = 1, 2, 3, 4, 5, 6
CH_PARAM = 100          # per-device parameters
CH_WANDER = 1000        # slow wander sinusoids

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, elementwise on uint64 (wraps modulo 2**64)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _key(seed: int, devices, channel: int) -> np.ndarray:
    d = np.asarray(devices, dtype=np.int64).astype(np.uint64)
    s = _mix(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    c = _mix(s ^ np.uint64(channel))
    return _mix(c ^ d)


def uniform(seed: int, devices, channel: int, ticks) -> np.ndarray:
    """Uniform [0, 1) numbers, shape (n_devices, n_ticks), a pure function of its arguments.

    Parameters
    ----------
    seed : int
    devices : array_like of int, shape (n_devices,)
    channel : int
        Independent stream number.
    ticks : array_like of int, shape (n_ticks,)
        Counter, e.g. whole seconds since the epoch.
    """
    k = _key(seed, devices, channel)[:, None]
    t = np.asarray(ticks, dtype=np.int64).astype(np.uint64)[None, :]
    h = _mix(k ^ _mix(t))
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def normal(seed: int, devices, channel: int, ticks) -> np.ndarray:
    """Standard normal numbers, shape (n_devices, n_ticks), counter-based like :func:`uniform`."""
    u = uniform(seed, devices, channel, ticks)
    return ndtri(np.clip(u, 1e-12, 1.0 - 1e-12))


def device_uniform(seed: int, devices, what: int) -> np.ndarray:
    """One uniform [0, 1) number per device for the per-device parameter ``what``, shape (n_devices,)."""
    return uniform(seed, devices, CH_PARAM + what, [0])[:, 0]


def seconds(times) -> np.ndarray:
    """Whole-second tick counter of epoch times [s] (the noise holds within a second)."""
    return np.floor(np.asarray(times, dtype=np.float64)).astype(np.int64)


def wander(seed: int, devices, channel: int, times, amplitude: float,
           period_h: tuple[float, float] = (2.0, 48.0), k: int = 4) -> np.ndarray:
    """Slow random wander: a sum of ``k`` sinusoids with per-device random periods and phases.

    Parameters
    ----------
    amplitude : float
        Standard deviation of the wander [unit of the result].
    period_h : (float, float)
        Range of the sinusoids' periods [h].

    Returns
    -------
    numpy.ndarray, shape (n_devices, n_times)
    """
    t = np.asarray(times, dtype=np.float64)[None, :]
    out = np.zeros((len(np.atleast_1d(devices)), t.shape[1]))
    a = amplitude * np.sqrt(2.0 / k)
    lo, hi = np.log(period_h[0] * 3600.0), np.log(period_h[1] * 3600.0)
    for j in range(k):
        period = np.exp(lo + (hi - lo) * device_uniform(seed, devices, CH_WANDER + 2 * j + channel * 64))
        phase = 2 * np.pi * device_uniform(seed, devices, CH_WANDER + 2 * j + 1 + channel * 64)
        out += a * np.sin(2 * np.pi * t / period[:, None] + phase[:, None])
    return out


def diurnal_factor(times, utc_offset_s: float = 0.0, phase_h=0.0) -> np.ndarray:
    """Diurnal flow factor of an industrial user, mean 1 over a day.

    Two harmonics of the local clock: a broad day-shift peak near 13:00 and a second peak
    at the shift changes; the night minimum is about 0.4 of the mean.

    Parameters
    ----------
    times : array_like, shape (n_times,)
        Epoch times [s].
    utc_offset_s : float
        Local time minus UTC [s].
    phase_h : array_like, shape (n_devices,) or scalar
        Per-device shift of the pattern [h].

    Returns
    -------
    numpy.ndarray, shape (n_devices, n_times) or (1, n_times)
    """
    t = np.asarray(times, dtype=np.float64)[None, :]
    h = ((t + utc_offset_s) / 3600.0) % 24.0 - np.atleast_1d(np.asarray(phase_h, dtype=np.float64))[:, None]
    return 1.0 + 0.45 * np.cos(2 * np.pi * (h - 13.0) / 24.0) + 0.15 * np.cos(4 * np.pi * (h - 10.0) / 24.0)


def parshall_flow_cfs(head_ft, throat_in: int = 6) -> np.ndarray:
    """Free flow through a Parshall flume, ``Q = C * H**n`` (:data:`PARSHALL_FREE_FLOW`).

    Parameters
    ----------
    head_ft : array_like
        Upstream head ``Ha`` [ft]; negative heads give zero flow.
    throat_in : int
        Throat width [in], a key of :data:`PARSHALL_FREE_FLOW`.

    Returns
    -------
    numpy.ndarray
        Flow [ft^3/s].
    """
    c, n = PARSHALL_FREE_FLOW[throat_in]
    return c * np.maximum(np.asarray(head_ft, dtype=np.float64), 0.0) ** n


def parshall_head_ft(flow_cfs, throat_in: int = 6) -> np.ndarray:
    """Upstream head [ft] giving ``flow_cfs`` [ft^3/s] (inverse of :func:`parshall_flow_cfs`)."""
    c, n = PARSHALL_FREE_FLOW[throat_in]
    return (np.maximum(np.asarray(flow_cfs, dtype=np.float64), 0.0) / c) ** (1.0 / n)


def device_flow_mean_gpm(seed: int, devices, mean_gpm: float) -> np.ndarray:
    """Per-device mean flow [gpm]: ``mean_gpm`` times a lognormal size factor (sigma 0.3)."""
    z = ndtri(np.clip(device_uniform(seed, devices, 1), 1e-9, 1 - 1e-9))
    return mean_gpm * np.exp(0.3 * z - 0.045)


def true_flow_gpm(seed: int, start: float, times, devices, mean_gpm: float = 120.0,
                  utc_offset_s: float = 0.0) -> np.ndarray:
    """The flow actually discharged [gpm] (before any meter), shape (n_devices, n_times).

    Diurnal pattern (:func:`diurnal_factor`, per-device phase within ±1 h) times a slow
    ±5 % wander around the device's mean (:func:`device_flow_mean_gpm`). ``start`` is
    accepted for a uniform signature; flow has no memory of it.
    """
    del start
    mean = device_flow_mean_gpm(seed, devices, mean_gpm)[:, None]
    phase = 2.0 * device_uniform(seed, devices, 2) - 1.0
    return mean * diurnal_factor(times, utc_offset_s, phase) * (1.0 + wander(seed, devices, CH_FLOW, times, 0.05, (6.0, 72.0)))


def flume_meter(seed: int, flow_gpm: np.ndarray, times, devices, throat_in: int = 6,
                level_noise_ft: float = 0.003) -> tuple[np.ndarray, np.ndarray]:
    """Measured head and flow of an open-channel meter on a Parshall flume.

    Parameters
    ----------
    flow_gpm : numpy.ndarray, shape (n_devices, n_times)
        True flow [gpm].
    level_noise_ft : float
        Standard deviation of the level sensor [ft] (ultrasonic sensors: about 0.003 ft).

    Returns
    -------
    level_ft : numpy.ndarray
        Measured head [ft].
    flow_gpm : numpy.ndarray
        Flow computed from the measured head, ``Q = C * H**n`` [gpm].
    """
    head = parshall_head_ft(flow_gpm / GPM_PER_CFS, throat_in)
    measured = np.maximum(head + level_noise_ft * normal(seed, devices, CH_LEVEL, seconds(times)), 0.0)
    return measured, parshall_flow_cfs(measured, throat_in) * GPM_PER_CFS


def direct_meter(seed: int, flow_gpm: np.ndarray, times, devices, noise: float = 0.015) -> np.ndarray:
    """Measured flow [gpm] of a direct-flow meter: true flow times (1 + ``noise`` N(0,1))."""
    return np.maximum(flow_gpm * (1.0 + noise * normal(seed, devices, CH_FLOW, seconds(times))), 0.0)


def true_ph(seed: int, start: float, times, devices, mean: float = 7.3) -> np.ndarray:
    """pH of the discharge, shape (n_devices, n_times): device mean (±0.4) plus slow wander (0.15)."""
    del start
    m = mean + 0.8 * (device_uniform(seed, devices, 3) - 0.5)
    return m[:, None] + wander(seed, devices, CH_PH, times, 0.15, (1.0, 12.0))


def ph_probe(seed: int, ph: np.ndarray, times, devices, noise: float = 0.02) -> np.ndarray:
    """Measured pH: true pH plus probe noise, clipped to 0..14."""
    return np.clip(ph + noise * normal(seed, devices, CH_PH, seconds(times)), 0.0, 14.0)


def true_temperature_degf(seed: int, start: float, times, devices, mean: float = 68.0,
                          utc_offset_s: float = 0.0) -> np.ndarray:
    """Discharge temperature [degF], shape (n_devices, n_times).

    Device mean (±4 degF), a 2.5 degF diurnal swing peaking mid-afternoon, a slow linear
    drift of -0.5..+0.5 degF per day from ``start`` [epoch s] and a 1 degF wander.
    """
    t = np.asarray(times, dtype=np.float64)
    m = mean + 8.0 * (device_uniform(seed, devices, 4) - 0.5)
    drift = (device_uniform(seed, devices, 5) - 0.5)[:, None] * ((t - start) / 86400.0)[None, :]
    h = ((t + utc_offset_s) / 3600.0) % 24.0
    swing = 2.5 * np.cos(2 * np.pi * (h - 15.0) / 24.0)[None, :]
    return m[:, None] + swing + drift + wander(seed, devices, CH_TEMP, times, 1.0, (6.0, 48.0))


def temperature_probe(seed: int, temp_degf: np.ndarray, times, devices, noise: float = 0.05) -> np.ndarray:
    """Measured temperature [degF]: true temperature plus probe noise."""
    return temp_degf + noise * normal(seed, devices, CH_TEMP, seconds(times))
