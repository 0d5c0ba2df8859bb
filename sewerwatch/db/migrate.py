"""Apply the ordered, versioned SQL migrations in ``sewerwatch/db/migrations/``.

Each file is named ``NNNN_name.sql`` and applied once, in number order, in its own
transaction, as the role of the URL given (the owner). ``schema_migrations`` records the
version, name and a checksum of each applied file; editing an applied file is an error,
not a silent skip. Concurrent migrators wait on an advisory lock.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

from foundation.errors import DatabaseError
from foundation.paths import MIGRATIONS_DIR
from sewerwatch.db import roles

FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
LOCK_KEY = 7_415_226_001  # advisory lock id of sewerwatch migrations


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The migration files, in version order.

    Raises
    ------
    DatabaseError
        For a file that does not follow ``NNNN_name.sql`` or a version used twice.
    """
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        m = FILE_NAME.match(path.name)
        if not m:
            raise DatabaseError(f"{path}: migration files are named NNNN_name.sql")
        version = int(m.group(1))
        if version in found:
            raise DatabaseError(f"{path}: version {version} is also {found[version].path.name}")
        found[version] = Migration(version, m.group(2), path)
    return [found[v] for v in sorted(found)]


def checksum_all(directory: Path = MIGRATIONS_DIR) -> str:
    """One hash over every migration file: changes whenever the schema would."""
    h = hashlib.sha256()
    for m in discover(directory):
        h.update(m.path.name.encode() + b"\0" + m.path.read_bytes())
    return h.hexdigest()


def applied(conn: psycopg.Connection) -> dict[int, tuple[str, str]]:
    """version -> (name, checksum) of the migrations applied to ``conn``'s database."""
    exists = conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0]
    if not exists:
        return {}
    return {v: (n, c) for v, n, c in conn.execute(
        "SELECT version, name, checksum FROM schema_migrations ORDER BY version")}


def preflight(conn: psycopg.Connection) -> None:
    """Check that the connecting role can apply the migrations; say what it lacks.

    The migrations create tables in schema ``public``, grant on them to the ingest and
    grafana roles (``roles.py``), and create those two roles (without login) where they do
    not exist, which needs CREATEROLE. A role that owns its database has the first two; a
    managed or shared server often refuses the third.

    Raises
    ------
    DatabaseError
        One line: what is missing and the statements a database administrator runs
        beforehand (``sewerwatch db roles --sql --owner ROLE``).
    """
    me, db, superuser, createrole, can_create, can_grant = conn.execute(
        "SELECT current_user, current_database(), r.rolsuper, r.rolcreaterole, "
        "has_schema_privilege('public', 'CREATE'), has_schema_privilege('public', 'USAGE WITH GRANT OPTION') "
        "FROM pg_roles r WHERE r.rolname = current_user").fetchone()
    if superuser:
        return
    lacks = []
    missing = [r for r in (roles.INGEST, roles.GRAFANA)
               if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (r,)).fetchone()]
    if missing and not createrole:
        lacks.append(f"the roles {' and '.join(missing)} do not exist and {me} may not create them (no CREATEROLE)")
    if not can_create:
        lacks.append(f"{me} may not create tables in schema public of database {db}")
    elif not can_grant:
        lacks.append(f"{me} may not grant use of schema public to the other roles (it does not own database {db})")
    if lacks:
        raise DatabaseError(
            f"db migrate: {'; '.join(lacks)}. A database administrator runs the statements of "
            f"'sewerwatch db roles --sql --owner {me} --database {db}' first (they create the roles and "
            f"make {me} the owner of schema public), then 'sewerwatch db migrate' works as {me}")


def migrate(url: str, log=lambda msg: None, directory: Path = MIGRATIONS_DIR) -> list[int]:
    """Apply every pending migration to the database at ``url``.

    Parameters
    ----------
    url : str
        Connection URL of the schema's owner role.
    log : callable, optional
        Called with a line of progress for each migration applied.

    Returns
    -------
    list of int
        The versions applied now (empty when the schema was up to date).
    """
    todo = discover(directory)
    done_now = []
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the database: {str(exc).strip().splitlines()[0]}") from None
    with conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            have = applied(conn)
            if any(m.version not in have for m in todo):
                preflight(conn)
            conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
                version int PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL DEFAULT current_user)""")
            for m in todo:
                if m.version in have:
                    if have[m.version][1] != m.checksum:
                        raise DatabaseError(
                            f"migration {m.path.name} was changed after it was applied; "
                            "add a new migration instead of editing an applied one")
                    continue
                try:
                    with conn.transaction():
                        conn.execute(m.sql)
                        conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                                     (m.version, m.name, m.checksum))
                except psycopg.Error as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise DatabaseError(f"migration {m.path.name} failed: {first}") from None
                log(f"applied {m.path.name}")
                done_now.append(m.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return done_now
