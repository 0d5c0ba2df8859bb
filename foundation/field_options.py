"""``[field]``: field work (the inspection checklist, instruments and their calibrations, the
rounds of ``sewerwatch run``).

Tables of the config apart from :mod:`foundation.config` so that it stays readable;
``Config.field`` holds them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from foundation.schema import Date, IntRange, Number, OneOf, Positive, Table, Tables, Text, check, is_int, table
from foundation.units import SENSOR_PARAMETERS


@table
class ChecklistItem(Table):
    """``[[field.checklist]]``: one item an inspector checks at an industrial user."""

    item: Text
    """What is checked, in words (\"Grease interceptor cleaning records kept\")."""
    citation: Text | None = None
    """The requirement behind it (\"Village of Palmyra Code §13.51\")."""


@table
class FieldOptions(Table):
    """``[field]``: instruments and field work: maintenance windows, calibrations, drift
    against grab samples, inspections."""

    window_limit_h: Positive = 2.0
    """A maintenance window open longer than this raises an alert [h]."""
    window_grace_s: Positive = 60.0
    """A window may start this long before it is recorded without counting as opened after the fact [s]; one
    reaching further back over readings already judged waits for a second person's approval."""
    drift_ph: Positive = 0.3
    """A grab sample's pH further than this from the live sensor's raises a sensor-drift alert [pH]."""
    drift_temperature_degf: Positive = 2.0
    """A grab temperature further than this from the live sensor's raises a sensor-drift alert [degF]."""
    drift_window_s: Positive = 120.0
    """The sensor's readings this close to a grab sample's time are compared with it (their median) [s]."""
    calibration_remind_days: Positive = 14.0
    """A calibration due within this many days raises a reminder alert; after its due date it is overdue [days]."""
    calibration_days: Annotated[dict[OneOf(*SENSOR_PARAMETERS, what="parameter"),
                                     Annotated[int, check(lambda v: is_int(v) and v > 0,
                                                          "a whole number of days > 0")]],
                                check(lambda v: isinstance(v, dict) or v is None, "a table of parameter = days",
                                      lambda v: v or {})] = Field(default_factory=dict)
    """The utility's own calibration interval per parameter, e.g. ``{ ph = 14, flow = 365 }`` [days]; the
    shortest of this, the instrument's, the ordinance's and the permit's applies."""
    ph_check_tolerance: Positive = 0.1
    """A pH calibration passes when every buffer reads within this of its value after calibration [pH]
    (a check buffer within ±0.1 pH units: EPA Method 150.1, Standard Methods 4500-H+ B)."""
    ph_slope_min_pct: Positive = 95.0
    """The lowest electrode slope a pH calibration passes with [% of Nernstian]."""
    ph_slope_max_pct: Positive = 105.0
    """The highest electrode slope a pH calibration passes with [% of Nernstian]."""
    ph_offset_max_mv: Positive = 30.0
    """The largest electrode offset (zero point) a pH calibration passes with [mV]."""
    flow_tolerance_pct: Positive = 10.0
    """A flow meter verification passes when the meter is within this of the reference [%] (EPA NPDES Compliance
    Inspection Manual: flow measurement within ±10 % of the actual flow)."""
    temperature_tolerance_degf: Positive = 2.0
    """A temperature probe check passes within this of the reference thermometer [degF]."""
    photo_max_bytes: IntRange(1024, 1 << 30) = 10 << 20
    """The largest photo an inspection takes [bytes]."""
    photo_max_pixels: IntRange(1, 1 << 31) = 40_000_000
    """The most pixels a photo may have (a larger one is refused, never decoded) [pixels]."""
    check_every_s: Positive = 60.0
    """How often ``sewerwatch run`` looks at open windows, calibrations due and new grab samples [s]."""
    checklist: Tables(ChecklistItem) = ()
    """The inspection checklist (default: the rule pack's)."""


@table(kw_only=True)
class Instrument(Table):
    """``[[instruments]]``: the instrument at a sensor, written to the register by
    ``sewerwatch db migrate``."""

    sensor: Text
    """The sensor, ``<site>/<name>``."""
    make: Text | None = None
    """The maker."""
    model: Text | None = None
    """The model."""
    serial: Text | None = None
    """The serial number (another one is another instrument: the register keeps the history)."""
    range_low: Number | None = None
    """The lowest value it measures [the sensor's unit]."""
    range_high: Number | None = None
    """The highest value it measures [the sensor's unit]."""
    owner: OneOf("utility", "industrial-user") = "industrial-user"
    """Who owns and maintains it (Palmyra §13.52(3): metering devices "owned and maintained by the property owner or
    user")."""
    installed: Date | None = None
    """The day it was installed."""
    calibration_interval_days: IntRange(1, 36600) | None = None
    """How often it is calibrated [days] (the shortest of this, ``[field] calibration_days``, the ordinance's and the
    permit's applies)."""
    note: Text | None = None
    """A free note."""
