"""What the enforcement commands share: the village's clock and zone, the settings, the
enforcement round at the present, ``--as-of``, ``--json`` and ``--site``.

Used by :mod:`enforcement.cli`, :mod:`enforcement.cli_notices` and :mod:`enforcement.cli_state`;
it imports the work lazily, as they do, so ``--help`` stays light.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone

from foundation import moments
from foundation.errors import InputError

#: what --as-of means, for every command that takes it
AS_OF = ("judge as things stood at the end of this local day of the village (default: now); nothing is recorded")




def day(text: str, what: str) -> date:
    """An ISO date given as ``what`` (an option's name, for the error)."""
    return moments.day(text, what)


def add_json(q) -> None:
    """``--json``: print JSON instead of text."""
    q.add_argument("--json", action="store_true", help="print JSON instead of text")


def add_site(q, help_: str = "only this industrial user (default: every one)") -> None:
    """``--site SITE``: one industrial user's, else every one's."""
    q.add_argument("--site", default=None, help=help_)


def tz(ctx):
    """The village's time zone."""
    return moments.village_zone(ctx.config)


def settings(ctx):
    """The enforcement program's settings of the config."""
    from enforcement.settings import settings   # lazy

    return settings(ctx.config)


def now(ctx, as_of: str | None) -> datetime:
    """``--as-of DATE``: the end of that local day; the present without it."""
    present = datetime.now(timezone.utc)
    if as_of is None:
        return present
    zone = tz(ctx)
    t = moments.end_of_day(day(as_of, "--as-of"), zone)
    if t.date() > present.astimezone(zone).date():
        raise InputError(f"--as-of {as_of} is in the future: nothing can be known of it yet")
    return t


def today(ctx, text: str | None, what: str = "--on") -> date:
    """The local day given as ``what``, else today in the village."""
    return day(text, what) if text else datetime.now(tz(ctx)).date()


def record_now(ctx, conn):
    """The enforcement round at the present: the computed findings recorded (once each,
    :func:`enforcement.service.refresh`); the settings and the guide."""
    from enforcement.service import refresh   # lazy

    return refresh(conn, ctx.config)


def as_json(x) -> str:
    """``--json``'s output: dates and times in ISO 8601."""
    return json.dumps(x, indent=2, default=lambda o: o.isoformat() if hasattr(o, "isoformat") else str(o))
