"""``[backup]``: the embedded database's backups by pgBackRest (``sewerwatch.backup``).

A table of its own so that ``foundation.config`` stays readable; ``Config.backup`` holds it.
Present in the config: WAL archiving is on and ``sewerwatch backup`` works; absent: no
archiving, no backups.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from foundation.schema import IntRange, Table, check, table


@table
class Backup(Table):
    """``[backup]``: backups of the embedded database with point-in-time restore (pgBackRest);
    absent: no WAL archiving and no backups."""

    repo: Annotated[Path, check(lambda v: isinstance(v, (str, Path)) and Path(v).is_absolute(),
                                "an absolute folder name", Path)] | None = None
    """The backup repository, a folder (default ``backup/repo`` in the state folder: put it on
    another disk or a mounted network share for backups that outlive the machine)."""
    full_every_days: IntRange(1, 366) = 7
    """``sewerwatch backup now`` takes a full backup when the last full one is this old, else a
    differential one [days]."""
    keep_full: IntRange(1, 9999) = 5
    """Full backups kept (with the differential backups and the WAL that belong to them) [count]."""
    keep_diff: IntRange(1, 9999) = 14
    """Differential backups kept [count]."""
    keep_days: IntRange(1, 366 * 100) | None = None
    """Instead of a count: full backups are kept this long [days]."""
    stale_after_h: IntRange(1, 24 * 366) = 36
    """``sewerwatch status`` reports the backups degraded when the last good one is older than this [h]."""
