"""A batch of readings: four parallel numpy arrays, the unit of work from collector to writer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: quality codes stored with each reading (foundation/quality.py, which says what each means)
from foundation.quality import DEVICE_FAULT, GOOD, MAINTENANCE, OUT_OF_RANGE  # noqa: E402,F401


@dataclass
class Readings:
    """Readings of many sensors, in canonical units.

    Attributes
    ----------
    time_us : numpy.ndarray of int64
        Time [microseconds since 1970-01-01 UTC].
    sensor_id : numpy.ndarray of int32
        ``sensors.id`` of each reading.
    value : numpy.ndarray of float64
        Value [canonical unit of the sensor's parameter, foundation.units.CANONICAL].
    quality : numpy.ndarray of int16
        :data:`GOOD`, :data:`OUT_OF_RANGE`, :data:`DEVICE_FAULT` or :data:`MAINTENANCE`.
    """

    time_us: np.ndarray
    sensor_id: np.ndarray
    value: np.ndarray
    quality: np.ndarray

    def __post_init__(self):
        self.time_us = np.asarray(self.time_us, dtype=np.int64)
        self.sensor_id = np.asarray(self.sensor_id, dtype=np.int32)
        self.value = np.asarray(self.value, dtype=np.float64) + 0.0      # -0.0 (a sign bit) is 0
        self.quality = np.asarray(self.quality, dtype=np.int16)
        n = len(self.time_us)
        if not (len(self.sensor_id) == len(self.value) == len(self.quality) == n):
            raise ValueError("Readings arrays differ in length")

    def __len__(self) -> int:
        return len(self.time_us)

    @classmethod
    def empty(cls) -> "Readings":
        return cls(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0), np.empty(0, np.int16))

    @classmethod
    def concat(cls, parts: list["Readings"]) -> "Readings":
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        return cls(np.concatenate([p.time_us for p in parts]), np.concatenate([p.sensor_id for p in parts]),
                   np.concatenate([p.value for p in parts]), np.concatenate([p.quality for p in parts]))

    def take(self, index) -> "Readings":
        return Readings(self.time_us[index], self.sensor_id[index], self.value[index], self.quality[index])
