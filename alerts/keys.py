"""What one alert is about: its key.

An alert is opened for a violation rule on a sensor, for a health condition of a sensor
(no data, flat line, sensor fault), for an unreachable device, or for sewerwatch itself
being degraded (kept in memory and the audit log, not in ``alerts``). At most one alert is active per key:
a new episode of the same key within the hold-off continues the alert instead of opening
another.
"""

from __future__ import annotations

from typing import NamedTuple

#: The health condition whose subject is a Modbus device, not a sensor.
DEVICE_UNREACHABLE = "device-unreachable"


def object_subject(subject) -> bool:
    """True for a condition about something other than one sensor: a Modbus device, or a
    maintenance window (``window-12``): a text that is not a number."""
    return isinstance(subject, str) and not subject.lstrip("-").isdigit()


class AlertKey(NamedTuple):
    """The key of an alert.

    Attributes
    ----------
    kind : str
        ``violation``, ``sensor-health``, ``device`` or ``system`` (sewerwatch itself is
        degraded: a component died, stalled or cannot do its work).
    rule : str
        The pack's rule id (``ph-min``, ``slug``, ...) or the health condition
        (``no-data``, ``flatline``, ``device-unreachable``).
    subject : int or str
        The sensor id (``sensors.id``), or the device id for ``device``.
    """

    kind: str
    rule: str
    subject: int | str

    @classmethod
    def violation(cls, sensor_id: int, rule: str) -> "AlertKey":
        """The key of a violation episode's alert."""
        return cls("violation", rule, int(sensor_id))

    @classmethod
    def health(cls, rule: str, subject: int | str) -> "AlertKey":
        """The key of a health condition ``(rule, sensor id or device)``."""
        if rule == DEVICE_UNREACHABLE or object_subject(subject):
            return cls("device", rule, str(subject))
        return cls("sensor-health", rule, int(subject))

    @classmethod
    def system(cls, component: str) -> "AlertKey":
        """The key of a "sewerwatch degraded" condition of ``component`` (``writer``, ...)."""
        return cls("system", "degraded", str(component))

    @classmethod
    def of_row(cls, kind: str, rule: str, sensor_id: int | None, device: str | None) -> "AlertKey":
        """The key of an ``alerts`` row (its ``kind``, ``rule``, ``sensor_id``, ``device``)."""
        if device:
            return cls("device", rule, device)
        subject = int(sensor_id) if sensor_id is not None else -1
        return cls("violation" if kind == "violation" else "sensor-health", rule, subject)

    @property
    def alert_kind(self) -> str:
        """The ``alerts.kind`` column: ``violation`` or ``sensor-health``."""
        return "violation" if self.kind == "violation" else "sensor-health"
