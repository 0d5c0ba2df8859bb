"""The Modbus collector's settings: the ``[modbus]`` table of the utility's config.

The config keeps the table as data (:attr:`foundation.config.Config.modbus`); the
collector validates it here (a :mod:`foundation.schema` table), with errors naming the file
and key.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import model_validator

from foundation.errors import ConfigError
from foundation.schema import Table, check, dotted, fail, is_int, is_number, table, validate
from ingest.modbus.plan import DEFAULT_MAX_FILL

__all__ = ["Options"]

#: a wait or a period [s]
Seconds = Annotated[float, check(lambda v: is_number(v) and v > 0, "a positive number [s]", float, repr)]


@table
class Options(Table):
    """Collector settings (the ``[modbus]`` table of a collector config)."""

    timeout_s: Seconds = 1.0
    """Connect and response timeout per request [s]."""
    backoff_min_s: Seconds = 0.5
    """First wait before reconnecting after a transport error [s]; the wait doubles after each
    failed attempt and has ±20 % jitter."""
    backoff_max_s: Seconds = 30.0
    """Largest wait before reconnecting [s]."""
    max_fill: Annotated[int, check(lambda v: is_int(v) and 0 <= v <= 124, "an integer from 0 to 124",
                                   got=repr)] = DEFAULT_MAX_FILL
    """Largest hole between two fields still read in one request [registers]."""
    flush_s: Seconds = 1.0
    """Period of batch decoding and of handing readings to the sink [s]."""
    health_s: Seconds = 5.0
    """Period of health snapshots of every device [s]."""
    late_fraction: Annotated[float, check(lambda v: is_number(v) and 0 < v < 1, "a number between 0 and 1", float,
                                          repr)] = 0.5
    """A poll starting later than this fraction of the interval after its due time is skipped and
    counted as missed."""

    @model_validator(mode="after")
    def _backoff(self):
        if self.backoff_max_s < self.backoff_min_s:
            raise fail(("backoff_max_s",), f"{self.backoff_max_s} is less than backoff_min_s {self.backoff_min_s}")
        return self

    @classmethod
    def from_dict(cls, data: dict, path: str = "<options>", where: str = "modbus") -> "Options":
        """Validate a ``[modbus]`` table; an unknown key or a bad value is a :class:`ConfigError`."""
        if not isinstance(data, dict):
            raise ConfigError(path, where, f"expected a table, got {data!r}")
        return validate(cls, data, path, ConfigError, label=lambda loc: f"{where}.{dotted(loc)}")

    @classmethod
    def from_config(cls, cfg) -> "Options":
        """The options of the config's ``[modbus]`` table (:attr:`foundation.config.Config.modbus`)."""
        return cls.from_dict({k: v for k, v in cfg.modbus.items() if k != "shards"}, cfg.path)
