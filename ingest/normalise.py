"""Normalisation of incoming readings: canonical units and the physically possible range.

Readings outside what the quantity can physically be are kept with quality
:data:`ingest.batch.OUT_OF_RANGE`, never silently dropped: a probe that reads pH 15 is
broken or mis-wired, and the superintendent needs to see that, but it is no evidence of a
caustic discharge.
"""

from __future__ import annotations

import numpy as np

from foundation.units import to_canonical
from ingest.batch import DEVICE_FAULT, GOOD, OUT_OF_RANGE

#: parameter -> (lowest, highest) physically possible value [canonical unit]
PHYSICAL_RANGE = {
    "ph": (0.0, 14.0),                # the pH scale of aqueous solutions
    "temperature": (14.0, 212.0),     # liquid wastewater: from freezing brine to boiling [degF]
    "flow": (0.0, np.inf),            # [gpm]; a negative flow is a meter fault
    "level": (0.0, np.inf),           # [ft]
    "concentration": (0.0, np.inf),   # [mg/l]
}


def flag_out_of_range(parameter: str, values: np.ndarray) -> np.ndarray:
    """Quality codes for canonical ``values`` of ``parameter``.

    Parameters
    ----------
    parameter : str
        A :data:`foundation.units.PARAMETERS` name.
    values : numpy.ndarray
        Values [canonical unit].

    Returns
    -------
    numpy.ndarray of int16
        ``GOOD``, ``OUT_OF_RANGE`` outside :data:`PHYSICAL_RANGE`, ``DEVICE_FAULT`` for NaN
        or infinite values.
    """
    v = np.asarray(values, dtype=np.float64)
    lo, hi = PHYSICAL_RANGE.get(parameter, (-np.inf, np.inf))
    q = np.full(v.shape, GOOD, dtype=np.int16)
    with np.errstate(invalid="ignore"):
        q[(v < lo) | (v > hi)] = OUT_OF_RANGE
    q[~np.isfinite(v)] = DEVICE_FAULT
    return q


def normalise(parameter: str, unit: str, values) -> tuple[np.ndarray, np.ndarray]:
    """Convert ``values`` to the canonical unit and flag them.

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
    return canon, flag_out_of_range(parameter, canon)
