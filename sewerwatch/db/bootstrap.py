"""Create the roles, the database and the TimescaleDB extension of the embedded cluster.

Runs as the embedded superuser (``sewerwatch_admin``), which only this step uses. Every
statement is idempotent; passwords are set from ``secrets.json`` each time.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from foundation.errors import DatabaseError
from sewerwatch.db import roles


def ensure_roles(conn: psycopg.Connection, passwords: dict) -> None:
    """Create or update the login roles owner, ingest and grafana (none a superuser)."""
    for account, role in roles.ROLE_NAMES.items():
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
            sql.SQL(verb), sql.Identifier(role), sql.Literal(passwords[account])))


def ensure_database(conn: psycopg.Connection, name: str, template: str | None = None) -> bool:
    """Create database ``name`` owned by the owner role; True if it was created."""
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
        return False
    stmt = sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(roles.OWNER))
    if template:
        stmt = stmt + sql.SQL(" TEMPLATE {} STRATEGY file_copy").format(sql.Identifier(template))
    conn.execute(stmt)
    return True


def ensure_timescaledb(url: str) -> bool:
    """Create the timescaledb extension in the database at ``url`` where it is available.

    Returns
    -------
    bool
        True when the extension is installed in that database afterwards.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        available = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb'").fetchone()
        if available:
            conn.execute("SET client_min_messages = warning")
            conn.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
        return bool(conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'").fetchone())


def embedded(pg) -> None:
    """Bootstrap the embedded cluster ``pg`` (an :class:`EmbeddedPostgres`)."""
    try:
        with psycopg.connect(pg.url("admin", "postgres"), autocommit=True) as conn:
            ensure_roles(conn, pg.passwords)
            ensure_database(conn, roles.DATABASE)
        ensure_timescaledb(pg.url("admin", roles.DATABASE))
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot bootstrap the embedded database on port {pg.port}: "
                            f"{str(exc).strip().splitlines()[0]}") from None
