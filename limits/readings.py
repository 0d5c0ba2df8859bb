"""Where the law can be read two ways, the reading sewerwatch takes, and the setting that picks
the other (the ``[enforcement]`` table of the utility's config).

::

    [enforcement]
    daily_maximum = "day-mean"     # or "each-sample"
    average_days = "sampled"       # or "period"

``daily_maximum``
    A permit's daily maximum concentration, with two samples on one local day. ``day-mean``
    (the default): the day's value is the mean of its samples, as 40 CFR 122.2 defines the
    "daily discharge" a "maximum daily discharge limitation" limits ("For pollutants with
    limitations expressed in other units of measurement, the daily discharge is calculated
    as the average measurement of the pollutant over the day"); one violation of that day.
    ``each-sample``: every sample is judged on its own against the daily maximum.
``average_days``
    The days of violation of an average (a permit's monthly average, palmyra-wi §13.48(2)(k)'s
    "average of 100 mg/l", a month's average daily flow) under §13.60(1) ("Each day a
    condition is allowed to exist ... shall constitute a new violation"). ``sampled`` (the
    default): the days of the samples (or the whole metered days) that make the average up,
    on which the discharge was shown to be over it. ``period``: every day of the period
    averaged, the calendar month for a monthly average (the condition, an average over the
    month, existed all month).

The reading of palmyra-wi §13.54(4)'s "within 60 days prior to the expiration" is the pack's
(``permit-notice`` ``reading``, a permit's ``[renewal] notice_reading`` overriding it:
:mod:`limits.permits`), and which SNC period a report 45 days late counts in is
``[enforcement] late_report_period`` (:mod:`enforcement.settings`).

Every error names the file and the key (``village.toml: enforcement.daily_maximum: expected
one of day-mean, each-sample, got 'max'``).
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import ConfigError

#: key -> its choices, the default first
CHOICES = {
    "daily_maximum": ("day-mean", "each-sample"),
    "average_days": ("sampled", "period"),
}


@dataclass(frozen=True)
class Readings:
    """The readings the program takes (see the module docstring).

    Attributes
    ----------
    daily_maximum : str
        ``day-mean`` or ``each-sample``.
    average_days : str
        ``sampled`` or ``period``.
    """

    daily_maximum: str = CHOICES["daily_maximum"][0]
    average_days: str = CHOICES["average_days"][0]


def readings(cfg) -> Readings:
    """The readings of a config's ``[enforcement]`` table (defaults where it says nothing;
    its other keys are :mod:`enforcement.settings`')."""
    t = getattr(cfg, "enforcement", {}) or {}
    path = getattr(cfg, "path", "<config>")
    out = {}
    for key, choices in CHOICES.items():
        if key in t:
            if t[key] not in choices:
                raise ConfigError(path, f"enforcement.{key}", f"expected one of {', '.join(choices)}, got {t[key]!r}")
            out[key] = t[key]
    return Readings(**out)
