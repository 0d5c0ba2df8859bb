"""pgBackRest for the embedded cluster: its config file, written by sewerwatch into the state
folder, and the program run as the user the cluster runs as.

The config file (``<state>/backup/pgbackrest.conf``, 0600, owned by that user) holds the
repository (a folder, or a bucket of an S3-compatible store with its access key id and secret
from ``secrets.json``'s ``backup_s3``), its encryption key (``secrets.json``'s
``keys.backup_cipher``), the retention and
the stanza ``sewerwatch`` naming the cluster's data folder, port and socket. PostgreSQL's
``archive_command`` runs ``pgbackrest ... archive-push`` with the same file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from foundation.endpoints import DB_ROLES
from foundation.errors import ServiceError
from foundation.files import write_whole
from sewerwatch.services.process import find_binary, is_root, run, system_user

#: The stanza: pgBackRest's name for the cluster it backs up.
STANZA = "sewerwatch"
#: The key of the repository's cipher in ``secrets.json``'s ``keys``.
CIPHER_KEY = "backup_cipher"


@dataclass
class Repo:
    """pgBackRest as sewerwatch runs it for one embedded cluster.

    Parameters
    ----------
    state_dir : pathlib.Path
        The embedded services' state folder.
    repo : pathlib.Path
        The repository folder; with ``s3``, the repository's folder inside the bucket.
    data_dir : pathlib.Path
        The cluster's data folder.
    port : int
        The cluster's port on 127.0.0.1.
    socket_dir : pathlib.Path
        The cluster's Unix socket folder.
    cipher : str
        The repository's encryption passphrase.
    admin_password : str
        The cluster superuser's password (given to pgBackRest in its environment).
    user : str or None
        The system user the cluster runs as (``postgres`` when sewerwatch is root).
    policy : foundation.backup_options.Backup
        Retention.
    s3 : foundation.backup_options.S3 or None
        The S3-compatible store holding the repository; None: a folder.
    s3_keys : tuple of str or None
        With ``s3``: the access key id and the secret access key.
    """

    state_dir: Path
    repo: Path
    data_dir: Path
    port: int
    socket_dir: Path
    cipher: str
    admin_password: str
    user: str | None
    policy: object
    s3: object | None = None
    s3_keys: tuple[str, str] | None = None

    @property
    def where(self) -> str:
        """The repository in words: its folder, or ``s3://<bucket><path> at <endpoint>``."""
        return self.s3.url() if self.s3 is not None else str(self.repo)

    @property
    def base(self) -> Path:
        return self.state_dir / "backup"

    @property
    def conf(self) -> Path:
        return self.base / "pgbackrest.conf"

    def archive_command(self) -> str:
        """PostgreSQL's ``archive_command`` (``%p``: the WAL segment's path)."""
        return f"{binary()} --config={self.conf} --stanza={STANZA} archive-push %p"

    def conf_text(self) -> str:
        p = self.policy
        retention = (["repo1-retention-full-type=time", f"repo1-retention-full={p.keep_days}"] if p.keep_days
                     else ["repo1-retention-full-type=count", f"repo1-retention-full={p.keep_full}"])
        return "\n".join([
            "# written by sewerwatch from its config's [backup] and secrets.json; edits are overwritten",
            "[global]",
            f"repo1-path={self.repo}",
            *self._s3_lines(),
            "repo1-cipher-type=aes-256-cbc",
            f"repo1-cipher-pass={self.cipher}",
            *retention,
            f"repo1-retention-diff={p.keep_diff}",
            "compress-type=zst",
            "start-fast=y",
            "archive-check=y",
            f"lock-path={self.base / 'lock'}",
            f"log-path={self.base / 'log'}",
            "log-level-console=warn",
            "log-level-stderr=error",
            "log-level-file=info",
            "",
            f"[{STANZA}]",
            f"pg1-path={self.data_dir}",
            f"pg1-port={self.port}",
            f"pg1-socket-path={self.socket_dir}",
            f"pg1-user={DB_ROLES['admin']}",
            "",
        ])

    def _s3_lines(self) -> list[str]:
        """pgBackRest 2.x's options of an S3 repository (none for a folder); the data folder's
        small files bundled (``repo1-bundle``), a few requests to the store instead of one per file."""
        s3 = self.s3
        if s3 is None:
            return []
        key, secret = self.s3_keys
        return ["repo1-type=s3", f"repo1-s3-endpoint={s3.host}", f"repo1-storage-port={s3.port}",
                f"repo1-s3-bucket={s3.bucket}", f"repo1-s3-region={s3.region}", f"repo1-s3-uri-style={s3.uri_style}",
                f"repo1-s3-key={key}", f"repo1-s3-key-secret={secret}",
                f"repo1-storage-verify-tls={'y' if s3.verify_tls else 'n'}", "repo1-bundle=y",
                *([f"repo1-storage-ca-file={s3.ca_file}"] if s3.ca_file else [])]

    def write_conf(self) -> bool:
        """Write the config file and make the repository's folder; True when the file changed."""
        for d in (self.base, self.base / "lock", self.base / "log"):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o700)
        if self.s3 is None:
            self.repo.mkdir(parents=True, exist_ok=True)
        text = self.conf_text()
        changed = not self.conf.is_file() or self.conf.read_text() != text
        if changed:
            write_whole(self.conf, text, mode=0o600)
        if self.user:     # the folders and the file only: what pgBackRest writes is its user's already
            for p in (self.base, self.base / "lock", self.base / "log", self.conf,
                      *([self.repo] if self.s3 is None else [])):
                chown(p, self.user)
        return changed

    def run(self, command: str, *options: str, timeout: float = 3600, check: bool = True, args: tuple = ()):
        """Run ``pgbackrest <options> <command> <args>`` on the stanza as the cluster's user."""
        return run([binary(), f"--config={self.conf}", f"--stanza={STANZA}", *options, command, *args],
                   as_user=self.user, what=f"pgbackrest {command}", timeout=timeout, check=check,
                   env={"PGPASSWORD": self.admin_password, "PGSSLMODE": "disable"})

    def info(self) -> dict:
        """pgBackRest's ``info`` of the stanza: ``{"backup": [...], "archive": [...], "status": {...}}``."""
        out = self.run("info", "--output=json", timeout=120).stdout
        rows = json.loads(out or "[]")
        return rows[0] if rows else {"backup": [], "archive": [], "status": {"code": 1, "message": "missing stanza"}}

    def stanza_marker(self) -> Path:
        return self.base / "stanza-created"

    def ensure_stanza(self) -> bool:
        """Create the stanza once per repository and cluster (``stanza-create`` is harmless
        again, yet takes a second); True when it was created now."""
        marker = self.stanza_marker()
        system_id = _system_id(self.data_dir)
        key = f"{self.where} {system_id}"
        if marker.is_file() and marker.read_text().strip() == key:
            return False
        self.run("stanza-create", timeout=300)
        marker.write_text(key + "\n")
        return True


def binary() -> str:
    """The pgBackRest program."""
    return find_binary("pgbackrest")


def _system_id(data_dir: Path) -> str:
    """A cluster's identity: its ``global/pg_control`` system identifier bytes (the first 8)."""
    try:
        return (data_dir / "global" / "pg_control").read_bytes()[:8].hex()
    except OSError:
        raise ServiceError(f"the database cluster's data folder {data_dir} is missing or unreadable") from None


def chown(path: Path, user: str) -> None:
    """Give ``path`` (not what is under it) to ``user``."""
    entry = system_user(user)
    if entry is not None and is_root():
        os.chown(path, entry.pw_uid, entry.pw_gid)
