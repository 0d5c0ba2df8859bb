"""Opening a database connection for a role.

>>> from foundation import db
>>> with db.connect("ingest", cfg) as conn: ...

Roles: ``owner`` (the schema and the service's own tables), ``ingest`` (readings and dead
letters only), ``grafana`` (read-only); see ``sewerwatch/db/roles.py``. Without a
configured ``db_url`` the URLs are those of the embedded cluster, which ``sewerwatch
services up`` starts.
"""

from __future__ import annotations

import psycopg

from foundation.endpoints import endpoints
from foundation.errors import DatabaseError


def url(role: str, cfg) -> str:
    """Connection URL of ``role`` (``owner``, ``ingest``, ``grafana``) for the config ``cfg``."""
    return endpoints(cfg).db(role)


def connect(role: str = "owner", cfg=None, *, db_url: str | None = None, **kwargs) -> psycopg.Connection:
    """Open a psycopg connection as ``role`` of ``cfg`` (or to ``db_url`` when given).

    Raises
    ------
    DatabaseError
        When the database cannot be reached, with a hint to start the services.
    """
    if db_url is None and cfg is None:
        raise TypeError("connect() needs a config or a db_url")
    target = db_url or url(role, cfg)
    try:
        return psycopg.connect(target, **kwargs)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreachable"
        raise DatabaseError(f"cannot connect to the database ({first}); "
                            "is it running? try 'sewerwatch services up'") from None
