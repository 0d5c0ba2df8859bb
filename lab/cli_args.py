"""Command-line values lab's commands share (:mod:`lab.cli`, :mod:`lab.permit_cli`): times
and days, each a one-line error naming the option when it is not one."""

from __future__ import annotations

from datetime import date, datetime, timezone

from foundation.errors import InputError


def moment(text: str, what: str) -> datetime:
    """An ISO-8601 date or time (UTC without an offset), e.g. for ``--since``."""
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected an ISO date such as 2026-01-01, got {text!r}") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def day(text: str | None, what: str) -> date:
    """An ISO date, e.g. for ``--today``; today (UTC) when not given."""
    if not text:
        return datetime.now(timezone.utc).date()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-12-01, got {text!r}") from None
