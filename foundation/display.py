"""How times and numbers are shown to people.

Every time a person reads carries its zone, so the repeated hour of the autumn change is
never ambiguous (``2026-11-01 01:30:00 CDT`` then ``2026-11-01 01:30:00 CST``); a reading
of ``-0`` (a float32 sign bit from a device) is shown as ``0``. The CLI's tables, the
status and the messages use these; the office's pages and the portal's documents
write times by :func:`local`, the UTC offset added in the repeated hour.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

#: An ISO-8601 UTC time as the evaluator writes them (``2026-06-01T15:30:00Z``, microseconds optional).
_ISO_UTC = re.compile(r"\b(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|\+00:00)")


def aware(t) -> datetime | None:
    """``t`` (an aware or naive datetime, epoch seconds [s] or ISO-8601 text) as an aware
    datetime, naive ones taken as UTC; None stays None."""
    if t is None:
        return None
    if isinstance(t, (int, float)):
        return datetime.fromtimestamp(t, timezone.utc)
    if isinstance(t, str):
        t = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def ambiguous(local: datetime) -> bool:
    """True when this wall-clock time happens twice (the DST hour repeated in autumn)."""
    other = local.replace(fold=1 - local.fold)
    return other.utcoffset() != local.utcoffset()


def local(t, tz: str, *, seconds: bool = True, date: bool = True) -> str:
    """``2026-06-01 10:30:05 CDT``; in the repeated DST hour ``01:30:00 CDT (UTC−05:00)``;
    ``—`` for None: the office's pages and the documents of electronic reporting."""
    t = aware(t)
    if t is None:
        return "—"
    lt = t.astimezone(ZoneInfo(tz))
    fmt = ("%Y-%m-%d " if date else "") + ("%H:%M:%S" if seconds else "%H:%M") + " %Z"
    text = lt.strftime(fmt)
    if ambiguous(lt):
        off = lt.utcoffset() or timedelta(0)
        sign = "+" if off >= timedelta(0) else "−"
        mins = abs(int(off.total_seconds())) // 60
        text += f" (UTC{sign}{mins // 60:02d}:{mins % 60:02d})"
    return text


def local_time(when, tz: str | None, seconds: bool = True) -> str:
    """``2026-06-01 10:30:00 CDT``: an aware datetime, epoch seconds or ISO-8601 text in the
    zone ``tz`` (None: UTC), with the zone's abbreviation (CDT and CST tell the two
    01:30 of the autumn change apart)."""
    if when is None:
        return "-"
    dt = aware(when).astimezone(ZoneInfo(tz) if tz else timezone.utc)
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
