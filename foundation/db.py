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
from foundation.errors import DatabaseError, SchemaMissing, SewerwatchError


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


#: What every "schema missing" message ends with.
MIGRATE_HINT = "run 'sewerwatch db migrate' first"


def where(conn: psycopg.Connection) -> str:
    """``database NAME on HOST:PORT`` of an open connection, for messages."""
    info = conn.info
    host = info.host if not info.host.startswith("/") else "localhost"
    return f"database {info.dbname} on {host}:{info.port}"


def check_schema(conn: psycopg.Connection, expected_version: int | None = None) -> None:
    """Raise :class:`SchemaMissing` unless ``conn``'s database holds the sewerwatch schema.

    Parameters
    ----------
    conn : psycopg.Connection
        Any role: the table's existence is read from the catalogue; the version only where
        the role may read ``schema_migrations`` (owner and grafana may, ingest may not).
    expected_version : int, optional
        The newest migration this sewerwatch knows; an older schema is reported too.

    Raises
    ------
    SchemaMissing
        One line naming the database and the command that fixes it.
    """
    exists, readable = conn.execute(
        "SELECT to_regclass('public.schema_migrations') IS NOT NULL, "
        "CASE WHEN to_regclass('public.schema_migrations') IS NULL THEN false "
        "ELSE has_table_privilege('public.schema_migrations', 'SELECT') END").fetchone()
    if not exists:
        _end(conn)
        raise SchemaMissing(f"the {where(conn)} has no sewerwatch schema yet: {MIGRATE_HINT}")
    if expected_version is not None and readable:
        have = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        if have is None or have < expected_version:
            _end(conn)
            raise SchemaMissing(f"the {where(conn)} has an older sewerwatch schema (migration "
                                f"{have or 0:04d}, this version needs {expected_version:04d}): {MIGRATE_HINT}")
    _end(conn)


def _end(conn: psycopg.Connection) -> None:
    """Leave no transaction open behind a check (the caller may want autocommit later)."""
    if not conn.autocommit:
        conn.rollback()


def translate(exc: BaseException) -> SewerwatchError | None:
    """The one-line error for a database exception a command did not expect, or None.

    A table, view or column that does not exist means the schema is missing or older than
    the code (:class:`SchemaMissing`); a refused privilege names the role's limits.
    """
    if isinstance(exc, (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)):
        detail = (exc.diag.message_primary or str(exc)).strip()
        return SchemaMissing(f"the database lacks part of the sewerwatch schema ({detail}): {MIGRATE_HINT}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        detail = (exc.diag.message_primary or str(exc)).strip()
        return DatabaseError(f"the database refused: {detail} (is the command using the right role? "
                             "see 'sewerwatch db roles')")
    return None
