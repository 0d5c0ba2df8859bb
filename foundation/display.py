"""How times and numbers are shown to people.

Every time a person reads carries its zone, so the repeated hour of the autumn change is
never ambiguous (``2026-11-01 01:30:00 CDT`` then ``2026-11-01 01:30:00 CST``); a reading
of ``-0`` (a float32 sign bit from a device) is shown as ``0``. The CLI's tables, the
status and the messages use these.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

#: An ISO-8601 UTC time as the evaluator writes them (``2026-06-01T15:30:00Z``, microseconds optional).
_ISO_UTC = re.compile(r"\b(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|\+00:00)")


def local_time(when, tz: str | None, seconds: bool = True) -> str:
    """``2026-06-01 10:30:00 CDT``: an aware datetime, epoch seconds or ISO-8601 text in the
    zone ``tz`` (None: UTC), with the zone's abbreviation (CDT and CST tell the two
    01:30 of the autumn change apart)."""
    if when is None:
        return "-"
    if isinstance(when, (int, float)):
        dt = datetime.fromtimestamp(when, timezone.utc)
    elif isinstance(when, str):
        dt = datetime.fromisoformat(when.replace("Z", "+00:00"))
    else:
        dt = when
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(ZoneInfo(tz) if tz else timezone.utc)
    return dt.strftime("%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z")


def localise(text: str, tz: str | None) -> str:
    """``text`` with each ISO-8601 UTC time in it shown by :func:`local_time` (a summary
    stored with UTC times, shown beside local ones)."""
    if not text or not tz:
        return text
    return _ISO_UTC.sub(lambda m: local_time(m.group(1) + "+00:00", tz), text)


def num(x, spec: str = "g") -> str:
    """A number as people read it: ``format(x, spec)``, never ``-0``; ``n/a`` for None."""
    if x is None:
        return "n/a"
    try:
        v = float(x) + 0.0          # -0.0 + 0.0 is 0.0
    except (TypeError, ValueError):
        return str(x)
    out = format(v, spec)
    return out[1:] if re.fullmatch(r"-0(\.0*)?(e[+-]?0+)?", out) else out
