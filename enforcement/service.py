"""What every enforcement action starts from, for both faces (the command line and the
office): the computed findings of the present recorded, the settings, the guide and the
letterhead.

:func:`refresh` records the findings that have arisen by the present (reports more than 45
days late, accidental-discharge reports not received, milestones more than 90 days late,
sampling periods that ended short: :func:`enforcement.asof.record`), so that the findings
list and the notices can name them by id. Finding one again stores nothing (each has its
key), so calling it on every page is safe. A question about a past day (SNC as of a date,
the annual report) records nothing: :mod:`enforcement.asof` answers it from the records.
"""

from __future__ import annotations

from datetime import datetime, timezone

from enforcement import asof
from enforcement.guide import Guide, load_guide
from enforcement.settings import Settings, settings


def refresh(conn, cfg, now: datetime | None = None) -> tuple[Settings, Guide]:
    """The computed findings of the present recorded (``now``: the present, the only instant
    at which anything is recorded); the settings and the guide of ``cfg``."""
    st = settings(cfg)
    asof.record(conn, now or datetime.now(timezone.utc), st, cfg)
    return st, load_guide(st.guide)


def guide_and_head(cfg):
    """The enforcement response guide and the letterhead of ``cfg`` (what a notice needs)."""
    from lab.documents.pdf import letterhead   # matplotlib and WeasyPrint: only when a document is made

    return load_guide(settings(cfg).guide), letterhead(cfg)
