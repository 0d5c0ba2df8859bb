"""The Modbus collector's settings: the ``[modbus]`` table of the utility's config.

The config keeps the table as data (:attr:`foundation.config.Config.modbus`); the
collector validates it here, with errors naming the file and key.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dc_fields

from foundation.errors import ConfigError
from ingest.modbus.plan import DEFAULT_MAX_FILL

__all__ = ["Options"]


@dataclass(frozen=True)
class Options:
    """Collector settings (the ``[modbus]`` table of a collector config).

    Attributes
    ----------
    timeout_s : float
        Connect and response timeout per request [s].
    backoff_min_s, backoff_max_s : float
        First and largest wait before reconnecting after a transport error [s]; the wait
        doubles after each failed attempt and has ±20 % jitter.
    max_fill : int
        Largest hole between two fields still read in one request [registers].
    flush_s : float
        Period of batch decoding and of handing readings to the sink [s].
    health_s : float
        Period of health snapshots of every device [s].
    late_fraction : float
        A poll starting later than this fraction of the interval after its due time is
        skipped and counted as missed.
    """

    timeout_s: float = 1.0
    backoff_min_s: float = 0.5
    backoff_max_s: float = 30.0
    max_fill: int = DEFAULT_MAX_FILL
    flush_s: float = 1.0
    health_s: float = 5.0
    late_fraction: float = 0.5

    @classmethod
    def from_dict(cls, data: dict, path: str = "<options>", where: str = "modbus") -> "Options":
        """Validate a ``[modbus]`` table; an unknown key or a bad value is a :class:`ConfigError`."""
        if not isinstance(data, dict):
            raise ConfigError(path, where, f"expected a table, got {data!r}")
        known = {f.name: f for f in dc_fields(cls)}
        values = {}
        for key, v in data.items():
            if key not in known:
                raise ConfigError(path, f"{where}.{key}", f"unknown key (expected one of: {', '.join(known)})")
            if key == "max_fill":
                if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 124:
                    raise ConfigError(path, f"{where}.{key}", f"expected an integer from 0 to 124, got {v!r}")
            elif key == "late_fraction":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                    raise ConfigError(path, f"{where}.{key}", f"expected a number between 0 and 1, got {v!r}")
                v = float(v)
            else:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                    raise ConfigError(path, f"{where}.{key}", f"expected a positive number [s], got {v!r}")
                v = float(v)
            values[key] = v
        opts = cls(**values)
        if opts.backoff_max_s < opts.backoff_min_s:
            raise ConfigError(path, f"{where}.backoff_max_s",
                              f"{opts.backoff_max_s} is less than backoff_min_s {opts.backoff_min_s}")
        return opts

    @classmethod
    def from_config(cls, cfg) -> "Options":
        """The options of the config's ``[modbus]`` table (:attr:`foundation.config.Config.modbus`)."""
        return cls.from_dict({k: v for k, v in cfg.modbus.items() if k != "shards"}, cfg.path)
