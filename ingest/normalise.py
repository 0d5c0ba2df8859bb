"""Normalisation of incoming readings: canonical units and the physically plausible range.

Readings outside what the quantity can physically be (:data:`foundation.units.PHYSICAL_RANGE`,
and for flow or level above the sensor's configured full scale) are kept with quality
:data:`ingest.batch.OUT_OF_RANGE`, never silently dropped: a probe that reads pH 15 is
broken or mis-wired, and the superintendent needs to see that (a sensor-fault health
alert), but it is no evidence of a caustic discharge (the evaluator skips it).
"""

from __future__ import annotations

import numpy as np

from foundation.units import PHYSICAL_RANGE, to_canonical
from ingest.batch import DEVICE_FAULT, GOOD, OUT_OF_RANGE

__all__ = ["PHYSICAL_RANGE", "flag_out_of_range", "normalise"]


def flag_out_of_range(parameter: str, values: np.ndarray, full_scale=None) -> np.ndarray:
    """Quality codes for canonical ``values`` of ``parameter``.

    Parameters
    ----------
    parameter : str
        A :data:`foundation.units.PARAMETERS` name.
    values : numpy.ndarray
        Values [canonical unit].
    full_scale : float or numpy.ndarray, optional
        The sensor's full scale [canonical unit], one for all values or one per value (NaN
        or None: none configured); a value above it is out of range.

    Returns
    -------
    numpy.ndarray of int16
        ``GOOD``, ``OUT_OF_RANGE`` outside :data:`PHYSICAL_RANGE` (or above the full
        scale), ``DEVICE_FAULT`` for NaN or infinite values.
    """
    v = np.asarray(values, dtype=np.float64)
    lo, hi = PHYSICAL_RANGE.get(parameter, (-np.inf, np.inf))
    q = np.full(v.shape, GOOD, dtype=np.int16)
    with np.errstate(invalid="ignore"):
        out = (v < lo) | (v > hi)
        if full_scale is not None:
            out |= v > np.asarray(full_scale, dtype=np.float64)   # NaN full scale: no bound
    q[out] = OUT_OF_RANGE
    q[~np.isfinite(v)] = DEVICE_FAULT
    return q


def normalise(parameter: str, unit: str, values, full_scale=None) -> tuple[np.ndarray, np.ndarray]:
    """Convert ``values`` to the canonical unit and flag them.

    Parameters
    ----------
    full_scale : float or numpy.ndarray, optional
        As for :func:`flag_out_of_range` [canonical unit].

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Canonical values [float64] and quality codes [int16].

    Raises
    ------
    foundation.errors.InputError
        For a unit the parameter does not know.
    """
    canon = to_canonical(parameter, unit, values)
    return canon, flag_out_of_range(parameter, canon, full_scale)
