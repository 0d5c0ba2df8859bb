"""The embedded TimescaleDB cluster: a PostgreSQL cluster in the state folder.

Run as the ``postgres`` user when sewerwatch runs as root (PostgreSQL refuses root),
listening on 127.0.0.1 only, on a non-default port, with scram-sha-256 passwords.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from foundation.endpoints import DB_ROLES, HOST, pg_url
from foundation.errors import ServiceError
from foundation.files import write_whole
from sewerwatch.db import roles
from sewerwatch.services.process import (
    chown_tree,
    find_binary,
    is_root,
    pid_alive,
    port_open,
    read_pid,
    run,
    system_user,
)

PG_MAJOR = os.environ.get("PG_MAJOR", "15")
PG_BIN = f"/usr/lib/postgresql/{PG_MAJOR}/bin"
ADMIN = DB_ROLES["admin"]

#: The settings of WAL archiving sewerwatch writes (``sewerwatch.backup``).
ARCHIVE_KEYS = ("archive_mode =", "archive_command =", "archive_timeout =")

SETTINGS = """
# written by sewerwatch; the embedded cluster's settings
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{run_dir}'
max_connections = 200
shared_buffers = 256MB
logging_collector = off
timezone = 'UTC'
{timescaledb}
"""


@dataclass
class EmbeddedPostgres:
    """A PostgreSQL cluster under ``state_dir/pg``.

    Parameters
    ----------
    state_dir : pathlib.Path
        The embedded services' state folder.
    port : int
        TCP port on 127.0.0.1.
    passwords : dict
        Account -> password (``secrets.json``'s ``db`` section).
    archive_command : str, optional
        WAL archiving on with this command (pgBackRest's ``archive-push``, ``sewerwatch.backup``);
        None: archiving off.
    """

    state_dir: Path
    port: int
    passwords: dict
    archive_command: str | None = None

    @property
    def base(self) -> Path:
        return self.state_dir / "pg"

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def log_file(self) -> Path:
        return self.base / "postgres.log"

    @property
    def user(self) -> str | None:
        """The system user the cluster runs as (``postgres`` when we are root)."""
        if is_root():
            if system_user("postgres") is None:
                raise ServiceError("running as root needs the 'postgres' system user: run 'scripts/setup'")
            return "postgres"
        return None

    def url(self, account: str, database: str = roles.DATABASE) -> str:
        return pg_url(account, self.passwords[account], self.port, database)

    # --- state ---------------------------------------------------------------------

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def pid(self) -> int | None:
        pid = read_pid(self.data_dir / "postmaster.pid")
        return pid if pid and pid_alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None and port_open(HOST, self.port)

    def status(self) -> dict:
        return {"running": self.running(), "pid": self.pid(), "port": self.port,
                "data_dir": str(self.data_dir), "log": str(self.log_file)}

    # --- lifecycle ------------------------------------------------------------------

    def init(self) -> None:
        """Create the cluster (initdb) if it does not exist yet."""
        if self.initialised():
            return
        self.base.mkdir(parents=True, exist_ok=True)
        (self.base / "run").mkdir(exist_ok=True)
        pwfile = self.base / ".pwfile"
        pwfile.write_text(self.passwords["admin"] + "\n")
        os.chmod(pwfile, 0o600)
        chown_tree(self.base, "postgres")
        try:
            run([find_binary("initdb", PG_BIN), "-D", str(self.data_dir), "-U", ADMIN,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-locale"],
                as_user=self.user, what="initdb")
        finally:
            pwfile.unlink(missing_ok=True)
        share = run([find_binary("pg_config", PG_BIN), "--sharedir"]).stdout.strip()
        has_tsdb = Path(share, "extension", "timescaledb.control").exists()
        tsdb = ("shared_preload_libraries = 'timescaledb'\ntimescaledb.telemetry_level = off\n"
                if has_tsdb else "# timescaledb is not installed: plain PostgreSQL\n")
        conf = self.data_dir / "postgresql.conf"
        with open(conf, "a") as f:
            f.write(SETTINGS.format(port=self.port, run_dir=self.base / "run", timescaledb=tsdb))
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(
            "# written by sewerwatch: passwords over loopback TCP only\n"
            "local all all scram-sha-256\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
        )
        chown_tree(self.base, "postgres")

    def _port_setting(self) -> None:
        """Keep the cluster's port in step with the configured one."""
        conf = self.data_dir / "postgresql.auto.conf"
        text = conf.read_text() if conf.exists() else ""
        line = f"port = {self.port}"
        if line not in text.splitlines():
            lines = [ln for ln in text.splitlines() if not ln.startswith("port =")]
            _replace(conf, "\n".join(lines + [line]) + "\n")

    def archive_setting_present(self) -> bool:
        """Whether ``postgresql.auto.conf`` has sewerwatch's archiving lines."""
        conf = self.data_dir / "postgresql.auto.conf"
        return conf.exists() and any(ln.startswith(ARCHIVE_KEYS) for ln in conf.read_text().splitlines())

    def write_archive_setting(self) -> None:
        """Keep WAL archiving in step with :attr:`archive_command` (``postgresql.auto.conf``; a
        segment is archived at least every ``archive_timeout``, 60 s: what a lost disk may lose)."""
        conf = self.data_dir / "postgresql.auto.conf"
        text = conf.read_text() if conf.exists() else ""
        kept = [ln for ln in text.splitlines() if not ln.startswith(ARCHIVE_KEYS)]
        if self.archive_command:
            quoted = self.archive_command.replace("'", "''")
            kept += ["archive_mode = on", f"archive_command = '{quoted}'", "archive_timeout = 60"]
        if kept != text.splitlines():
            _replace(conf, "\n".join(kept) + "\n")

    def archiving_current(self, conn) -> bool:
        """Whether the running server archives as :attr:`archive_command` says (``conn``: a
        superuser's connection); False means a restart is due (``archive_mode`` changes only then)."""
        mode = conn.execute("SHOW archive_mode").fetchone()[0]
        cmd = conn.execute("SHOW archive_command").fetchone()[0]
        if self.archive_command:
            return mode == "on" and cmd == self.archive_command
        return mode == "off"

    def restart(self) -> None:
        """Stop and start the cluster (settings such as ``archive_mode`` take effect only so)."""
        self.stop()
        self.start()

    def start(self) -> None:
        """Start the cluster unless it runs; a killed one is started again."""
        if self.running():
            return
        pid = self.pid()
        if pid is not None:
            # The postmaster is alive but not (yet) listening: give it a moment.
            for _ in range(50):
                if port_open(HOST, self.port):
                    return
                time.sleep(0.1)
            raise ServiceError(f"PostgreSQL (pid {pid}) runs but does not listen on {HOST}:{self.port}; "
                               f"see {self.log_file}")
        if port_open(HOST, self.port):
            raise ServiceError(f"port {self.port} on {HOST} is in use by another program; "
                               "set [services].pg_port in the config or SEWERWATCH_PG_PORT")
        self._port_setting()
        self.write_archive_setting()
        # After a killed postmaster its backends exit on their own within moments; until
        # they have, PostgreSQL refuses to start on the old shared memory. Try again.
        for attempt in range(5):
            try:
                run([find_binary("pg_ctl", PG_BIN), "-D", str(self.data_dir), "-l", str(self.log_file),
                     "-w", "-t", "60", "start"], as_user=self.user, what="pg_ctl start", timeout=90)
                break
            except ServiceError:
                if attempt == 4:
                    raise
                time.sleep(1.0)
        if not self.running():
            raise ServiceError(f"PostgreSQL did not start; see {self.log_file}")

    def stop(self) -> None:
        if self.pid() is None:
            return
        run([find_binary("pg_ctl", PG_BIN), "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60",
             "stop"], as_user=self.user, what="pg_ctl stop", timeout=90)


def _replace(conf: Path, text: str) -> None:
    """Write the server's settings file whole, under another name first, then put it in
    place: a second start reading it meanwhile (two commands starting the services at once)
    reads the old file or the new one, never half of one."""
    owner = system_user("postgres")
    write_whole(conf, text, mode=0o600,
                owner=(owner.pw_uid, owner.pw_gid) if is_root() and owner is not None else None)
