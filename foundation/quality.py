"""The quality code stored with each reading (``readings.quality``, smallint).

Every path that judges or sums readings uses only :data:`GOOD` ones; the others are stored,
shown and counted, never judged as violations, never in a slug's baseline, never in a
volume. The codes:

========  =================  ==================================================================
code      name               meaning
========  =================  ==================================================================
0         ``GOOD``           a usable reading
1         ``OUT_OF_RANGE``   outside the physically possible range or the sensor's full scale
                            : a broken or mis-wired probe, not a discharge
2         ``DEVICE_FAULT``   the device flagged the value (a status bit) or sent no number
3         ``MAINTENANCE``    taken while the instrument was in a maintenance window:
                             a probe in a calibration buffer, a flow meter lifted out to be
                             cleaned. Whatever the value, it says nothing about the discharge.
========  =================  ==================================================================

A reading in a maintenance window is stored with :data:`MAINTENANCE` whatever code it had
otherwise (a pH probe out of the water may read out of range: that is the maintenance, not
a sensor fault); :mod:`foundation.windows` marks readings by their window.
"""

from __future__ import annotations

GOOD = 0
OUT_OF_RANGE = 1
DEVICE_FAULT = 2
MAINTENANCE = 3

#: code -> its name in words (``sewerwatch`` shows these)
WORDS = {
    GOOD: "good",
    OUT_OF_RANGE: "outside the physically possible range",
    DEVICE_FAULT: "flagged by the device",
    MAINTENANCE: "in a maintenance window",
}

__all__ = ["GOOD", "OUT_OF_RANGE", "DEVICE_FAULT", "MAINTENANCE", "WORDS"]
