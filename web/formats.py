"""How the office writes times, ages and numbers: the village's local
time, with the UTC offset where the clock alone is ambiguous (the hour repeated when
daylight saving time ends); every number with its unit.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from foundation.display import aware, local  # noqa: F401 - local: the office writes times so (formats.local)
from foundation.errors import InputError

#: Units as people write them.
UNIT_WORDS = {"degF": "°F", "degC": "°C", "pH": "pH", "gpm": "gpm", "mgd": "MGD", "ft": "ft", "mg/l": "mg/l"}


def iso_local(t, tz: str) -> str:
    """The local time as ISO 8601 with its offset (for ``<time datetime=...>``)."""
    t = aware(t)
    return "" if t is None else t.astimezone(ZoneInfo(tz)).isoformat(timespec="seconds")


def age(seconds: float | None) -> str:
    """``4 s``, ``3 min``, ``2 h 5 min``, ``3 days``; ``never`` for None."""
    if seconds is None:
        return "never"
    s = max(0.0, float(seconds))
    if s < 90:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        h, m = divmod(int(s // 60), 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return f"{s / 86400:.0f} days"


def unit(u: str | None) -> str:
    return UNIT_WORDS.get(u or "", u or "")


def num(v, u: str | None = None, digits: int | None = None) -> str:
    """A number as people read it, with its unit: ``7.21 pH``, ``68.4 °F``, ``1,250 gpm``."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    x = float(v)
    if digits is None:
        a = abs(x)
        digits = 0 if a >= 1000 else 1 if a >= 10 else 2 if a >= 0.1 or a == 0 else 3
    text = f"{x:,.{digits}f}"
    uw = unit(u)
    return f"{text} {uw}" if uw else text


def short(v) -> str:
    """A setting as written: ``1``, ``0.5``, ``15``."""
    return "—" if v is None else f"{float(v):g}"


def duration(start, end) -> str:
    a, b = aware(start), aware(end)
    if a is None or b is None:
        return ""
    return age((b - a).total_seconds())


def day_before(d):
    """The last day of a period whose end is exclusive (``2026-03-01`` -> ``2026-02-28``)."""
    from datetime import date as _date
    return d - timedelta(days=1) if isinstance(d, _date) else d


def form_date(text, what: str, default: date | None = None) -> date:
    """A date typed into a form (``2026-04-30``), or ``default`` when the field is empty.

    Raises
    ------
    InputError
        One line naming the field (``what``) when it is empty without a default or not a date.
    """
    text = str(text or "").strip()
    if not text:
        if default is None:
            raise InputError(f"{what}: a date is needed (such as 2026-04-30)")
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-04-30, got {text!r}") from None


def file_name(text: str | None) -> str:
    """A file's name without the folders it was read from (``/srv/in/lab.csv:11`` is
    ``lab.csv:11``): the folders of the machine that read it mean nothing to a person."""
    if not text:
        return ""
    t = str(text)
    if not re.search(r"\.[A-Za-z0-9]{1,5}(?::\d+)?$", t):         # an MQTT topic, not a file
        return t
    return t.replace("\\", "/").rsplit("/", 1)[-1]


def term_days(days: int | None) -> str:
    """A permit's days to the end of its term in words: "ends in 12 days", "ends today",
    "ended 33 days ago" (never a negative count)."""
    if days is None:
        return ""
    d = int(days)
    if d > 0:
        return f"ends in {d} day{'s' if d != 1 else ''}"
    if d == 0:
        return "ends today"
    return f"ended {-d} day{'s' if d != -1 else ''} ago"
