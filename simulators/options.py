"""Command-line options shared by ``sewerwatch simulate`` and the simulators run alone.

Kept free of heavy imports: ``sewerwatch --help`` loads it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time

from foundation.errors import InputError

DEFAULT_MODBUS_PORT = 15020
_CLOCK = re.compile(r"^(\d{1,3}):([0-5]\d)(?::([0-5]\d))?$")


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    """What to simulate and how fast, and the Modbus server's options."""
    p.add_argument("--scenario", default="normal-day", help="scenario name or TOML path (default normal-day)")
    p.add_argument("--replay", metavar="CSV", help="replay a time,site,parameter,value,unit CSV instead of a scenario")
    p.add_argument("--devices", type=int, default=1, help="number of simulated devices (default 1)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="simulated seconds per real second (1440: a day in a minute; 0: frozen clock)")
    p.add_argument("--offset", default="0", help="start this far into the scenario: seconds or HH:MM[:SS]")
    p.add_argument("--start", default="now",
                   help="when the scenario begins: 'now' (default: the point --offset into it is the present, "
                   "so readings carry today's times), 'scenario' (the day the scenario file names), or a "
                   "date-time with its UTC offset, e.g. 2026-06-01T00:00-05:00")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--sites", help="comma-separated site ids of the first devices (default: the scenario's, then site-NNN)")
    p.add_argument("--duration", type=float,
                   help="stop after this many real seconds (default: when the scenario's span ends; "
                   "forever at --speed 0)")
    p.add_argument("--profile", default="generic-manhole", help="Modbus device profile (default generic-manhole)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--modbus-port", type=int, default=DEFAULT_MODBUS_PORT,
                   help=f"first Modbus TCP port (default {DEFAULT_MODBUS_PORT}); 247 devices per port")
    p.add_argument("--tick", type=float, default=1.0, help="real seconds between updates (default 1)")


def add_mqtt_arguments(p: argparse.ArgumentParser) -> None:
    """The MQTT publisher's options (not the URL, whose default differs by entry point)."""
    p.add_argument("--mqtt-mode", choices=("single", "batch"), default="single",
                   help="one message per reading, or batched arrays (default single)")
    p.add_argument("--qos", type=int, choices=(0, 1), default=0, help="MQTT QoS of readings (default 0)")
    p.add_argument("--interval", type=float,
                   help="simulated seconds between MQTT readings of a sensor (default 1, or speed/10 in single mode)")
    p.add_argument("--mqtt-unit", action="append", metavar="SENSOR=UNIT",
                   help="publish a sensor in another unit, e.g. temperature=degC (repeatable)")
    p.add_argument("--time-format", choices=("ms", "iso"), default="ms",
                   help="MQTT reading times: epoch ms or ISO-8601 (default ms)")


def parse_offset(text: str, span_s: float | None = None) -> float:
    """``--offset``: seconds or ``HH:MM[:SS]`` -> seconds.

    Parameters
    ----------
    span_s : float, optional
        The scenario's (or replay's) span [s]: an offset at or past its end, or below
        zero, is refused (the devices would have nothing to play).
    """

    m = _CLOCK.match(text.strip())
    if m:
        offset = float(int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3] or 0))
    else:
        try:
            offset = float(text)
        except ValueError:
            raise InputError(f"--offset: expected seconds or HH:MM[:SS], got {text!r}") from None
    if not offset == offset or offset < 0:
        raise InputError(f"--offset: expected 0 or more seconds, got {text!r}")
    if span_s is not None and offset >= span_s:
        raise InputError(f"--offset {text}: past the end of the scenario, which spans "
                         f"{_clock(span_s)} ({span_s:g} s); give an offset below that")
    return offset


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}" + (f":{s % 60:02d}" if s % 60 else "")


def parse_start(text: str, scenario_start: float, offset_s: float, now: float | None = None) -> float:
    """``--start``: when the scenario begins [epoch s].

    Parameters
    ----------
    text : str
        ``now`` (the point ``offset_s`` into the scenario is the present, whole seconds),
        ``scenario`` (``scenario_start``, the file's own), or an ISO-8601 date-time with its
        UTC offset.
    scenario_start : float
        The scenario file's start [epoch s].
    offset_s : float
        ``--offset`` [s].
    now : float, optional
        The present [epoch s] (default: the clock).
    """
    word = (text or "").strip().lower()
    if word == "now":
        return float(int(time.time() if now is None else now)) - offset_s
    if word == "scenario":
        return scenario_start
    try:
        at = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise InputError(f"--start: expected 'now', 'scenario' or a date-time with its UTC offset "
                         f"(e.g. 2026-06-01T00:00-05:00), got {text!r}")
    return at.timestamp()


def check_live_speed(speed: float, start: str, mqtt: bool) -> None:
    """Refuse MQTT readings that would be stamped ahead of the present: a scenario placed at
    the present (``--start now``) and played faster than real time runs its clock into the
    future, and MQTT readings carry the simulated time (Modbus readings take the collector's
    poll time, so any speed is fine there)."""
    if mqtt and speed > 1 and (start or "").strip().lower() == "now":
        raise InputError(f"--speed {speed:g} with --start now would stamp MQTT readings ahead of the present "
                         "(the collectors refuse them); play at --speed 1 or less, give --start scenario "
                         "(the scenario's own day) or a past date-time, or use --no-mqtt")
