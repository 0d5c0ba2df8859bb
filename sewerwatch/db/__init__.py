"""The database: connections by role, migrations (``migrate.py``), roles (``roles.py``).

>>> from sewerwatch import db
>>> with db.connect("ingest") as conn: ...

Without a configured ``db_url`` the URLs are those of the embedded cluster, which
``sewerwatch services up`` starts.
"""

from __future__ import annotations

import psycopg

from sewerwatch.errors import DatabaseError


def url(role: str = "owner", cfg=None) -> str:
    """Connection URL of ``role`` (``owner``, ``ingest``, ``grafana``) for the config ``cfg``."""
    from sewerwatch import config as _config
    from sewerwatch.services import endpoints

    return endpoints(cfg or _config.load()).db(role)


def connect(role: str = "owner", cfg=None, *, db_url: str | None = None, **kwargs) -> psycopg.Connection:
    """Open a psycopg connection as ``role`` (or to ``db_url`` when given).

    Raises
    ------
    DatabaseError
        When the database cannot be reached, with a hint to start the services.
    """
    target = db_url or url(role, cfg)
    try:
        return psycopg.connect(target, **kwargs)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreachable"
        raise DatabaseError(f"cannot connect to the database ({first}); "
                            "is it running? try 'sewerwatch services up'") from None
