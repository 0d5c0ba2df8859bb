"""The database roles sewerwatch uses (DESIGN.md, Storage).

- owner: owns the schema and runs migrations; the running service uses it for its own
  tables (violations, alerts). Never a superuser.
- ingest: the collectors' writer: inserts readings and dead letters, reads the sensor
  map; cannot read lab tables, delete readings or alter the schema.
- grafana: read-only, for dashboards.
"""

from foundation.endpoints import DATABASE, DB_ROLES

OWNER = DB_ROLES["owner"]
INGEST = DB_ROLES["ingest"]
GRAFANA = DB_ROLES["grafana"]

#: account name in ``secrets.json`` -> role name (the embedded superuser aside)
ROLE_NAMES = {"owner": OWNER, "ingest": INGEST, "grafana": GRAFANA}

__all__ = ["DATABASE", "GRAFANA", "INGEST", "OWNER", "ROLE_NAMES", "setup_sql"]


def setup_sql(owner: str | None = None, database: str = DATABASE, host: str = "HOST", port: int = 5432,
              password=None) -> str:
    """The statements a database administrator runs before ``sewerwatch db migrate``.

    For a server where sewerwatch's owner may not create roles (no CREATEROLE: managed
    and shared servers). Runs again without harm: a role that exists gets a login and the
    password printed now.

    Parameters
    ----------
    owner : str, optional
        An existing role that owns (or may use) ``database``; without it the statements
        create the ``sewerwatch_owner`` role and the database, owned by it.
    database : str
        The database sewerwatch's schema goes into.
    host, port : str, int
        Where the server is, for the connection URLs written as comments.
    password : callable, optional
        ``password() -> str`` for each new login role (default: 24 random URL-safe chars).
    """
    import secrets

    password = password or (lambda: secrets.token_urlsafe(18))
    made: dict[str, str] = {}

    def create(role: str) -> str:
        made[role] = password()
        return (f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN\n"
                f"    CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '{made[role]}';\n"
                f"ELSE\n    ALTER ROLE {role} LOGIN PASSWORD '{made[role]}';\n"
                "END IF; END $$;")

    out = ["-- sewerwatch: what a database administrator runs once, before 'sewerwatch db migrate'",
           "-- (psql as a superuser, or a role with CREATEROLE and CREATEDB). The passwords were",
           "-- generated now (a role that exists gets its new one): keep them, or change them here first."]
    if owner is None:
        owner = OWNER
        out += [create(OWNER), f"CREATE DATABASE {database} OWNER {OWNER};", f"\\connect {database}"]
    else:
        out.append(f"-- run it connected to database {database}")
    out += [
        "-- ingest: inserts readings and dead letters only; grafana: reads, writes nothing",
        create(INGEST), create(GRAFANA),
        f"-- {owner} creates the tables and grants on them to the two roles",
        f"GRANT CREATE, USAGE ON SCHEMA public TO {owner} WITH GRANT OPTION;",
        "-- TimescaleDB where the server has it (hypertable chunking; compression in the Timescale",
        "-- License build); without it the schema runs on plain PostgreSQL",
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') THEN",
        "    CREATE EXTENSION IF NOT EXISTS timescaledb;",
        "END IF; END $$;",
        "-- then, for sewerwatch:",
    ]
    url = lambda role: f"postgresql://{role}:{made.get(role, 'PASSWORD')}@{host}:{port}/{database}"  # noqa: E731
    out += [f"--   [services] db_url = \"{url(owner)}\"   then: sewerwatch db migrate",
            f"--   Grafana (read-only role): SEWERWATCH_GRAFANA_DB_URL={url(GRAFANA)}"]
    return "\n".join(out) + "\n"
