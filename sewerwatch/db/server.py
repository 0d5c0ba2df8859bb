"""What the database server is, and what sewerwatch loses where TimescaleDB is missing.

``sewerwatch db status`` and ``sewerwatch services status`` name the server for what it
is: PostgreSQL with TimescaleDB (and whether that build compresses: the Apache-2 build
that setup compiles from Debian's source package has no compression), or plain
PostgreSQL, with the list of what the schema then does without (DESIGN.md, Storage: the
schema works on both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

#: What plain PostgreSQL lacks against TimescaleDB, in the words ``status`` prints.
LOST_WITHOUT_TIMESCALEDB = (
    "hypertable chunking (readings is one ordinary table, not 1-day chunks: old data is dropped "
    "row by row, not chunk by chunk)",
    "compression of old readings",
    "time_bucket (the dashboards bucket with PostgreSQL's date_bin instead)",
)
LOST_WITHOUT_COMPRESSION = "compression of old readings (this TimescaleDB build is the Apache-2 edition)"


@dataclass
class Server:
    """The server behind a connection."""

    postgres: str                       # e.g. "15.8"
    timescaledb: str | None             # extension version in this database, or None
    available: bool                     # the server offers the extension (CREATE EXTENSION would work for a superuser)
    license: str | None                 # timescaledb.license: "apache" or "timescale"
    hypertable: bool | None             # readings is a hypertable (None: no readings table yet)
    lost: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``PostgreSQL 15.8 with TimescaleDB 2.19.3`` or ``PostgreSQL 15.8 (no TimescaleDB)``."""
        if self.timescaledb:
            return f"PostgreSQL {self.postgres} with TimescaleDB {self.timescaledb}"
        return f"PostgreSQL {self.postgres} (no TimescaleDB)"

    def lines(self) -> list[str]:
        """What ``status`` prints: the name, then each thing lost."""
        out = [f"server: {self.name}"]
        if self.hypertable is not None:
            out.append("readings: " + ("a hypertable (1-day chunks)" if self.hypertable else "an ordinary table"))
        for x in self.lost:
            out.append(f"  without: {x}")
        if not self.timescaledb and self.available:
            out.append("  the server offers TimescaleDB: a superuser can run CREATE EXTENSION timescaledb "
                       "in this database before 'sewerwatch db migrate'")
        return out

    def as_json(self) -> dict:
        return {"name": self.name, "postgres": self.postgres, "timescaledb": self.timescaledb,
                "timescaledb_available": self.available, "timescaledb_license": self.license,
                "readings_hypertable": self.hypertable, "lost": self.lost}


def describe(conn: psycopg.Connection) -> Server:
    """Ask the server behind ``conn`` what it is (any role may)."""
    version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
    ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'").fetchone()
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb'").fetchone()
    license_ = None
    hyper = None
    if ext:
        license_ = conn.execute("SELECT current_setting('timescaledb.license', true)").fetchone()[0] or None
    if conn.execute("SELECT to_regclass('public.readings')").fetchone()[0] is not None:
        hyper = bool(ext) and conn.execute(
            "SELECT count(*) > 0 FROM timescaledb_information.hypertables "
            "WHERE hypertable_schema = 'public' AND hypertable_name = 'readings'").fetchone()[0]
    if not conn.autocommit:
        conn.rollback()
    lost = list(LOST_WITHOUT_TIMESCALEDB) if not ext else []
    if ext and license_ == "apache":
        lost.append(LOST_WITHOUT_COMPRESSION)
    return Server(version, ext[0] if ext else None, bool(available), license_, hyper, lost)
