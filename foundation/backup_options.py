"""``[backup]``: the embedded database's backups by pgBackRest (``sewerwatch.backup``).

A table of its own so that ``foundation.config`` stays readable; ``Config.backup`` holds it.
Present in the config: WAL archiving is on and ``sewerwatch backup`` works; absent: no
archiving, no backups. The repository is a folder (``repo``) or, with ``[backup.s3]``, a
bucket of an S3-compatible store; its access key id and secret live in the state folder's
``secrets.json`` (``sewerwatch backup secrets``), never in the config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import model_validator

from foundation.schema import Bool, IntRange, OneOf, Table, Text, check, fail, table, then


def _host_port(v: str) -> bool:
    """``host`` or ``host:port``: no scheme, no path, a port from 1 to 65535."""
    if "://" in v or "/" in v or any(c.isspace() for c in v):
        return False
    host, _, port = v.rpartition(":") if ":" in v else (v, "", "")
    return bool(host) and (not port or (port.isdigit() and 1 <= int(port) <= 65535))


@table
class S3(Table):
    """``[backup.s3]``: the repository in a bucket of an S3-compatible object store (pgBackRest's
    ``repo1-type=s3``); the access key id and secret are set with ``sewerwatch backup secrets``
    into ``secrets.json``."""

    endpoint: Annotated[Text, then(_host_port, lambda v: f"expected host or host:port (no https://, no path), "
                                   f"got {v!r}")]
    """The store's host, and its port when not 443: ``s3.us-east-1.amazonaws.com``,
    ``minio.example.org:9000``. Always reached over TLS (HTTPS)."""
    bucket: Text
    """The bucket, made beforehand in the store."""
    region: Text = "us-east-1"
    """The bucket's region (an S3-compatible store that has none usually takes ``us-east-1``)."""
    path: Annotated[Text, then(lambda v: v.startswith("/"), lambda v: f"expected a path starting with /, got {v!r}")
                    ] = "/sewerwatch"
    """The repository's folder inside the bucket."""
    uri_style: OneOf("host", "path") = "host"
    """``host``: the bucket is reached as ``<bucket>.<endpoint>`` (AWS); ``path``: as
    ``<endpoint>/<bucket>`` (most self-hosted stores: MinIO, Ceph, Garage)."""
    verify_tls: Bool = True
    """Check the store's TLS certificate; false only for a store with a self-signed certificate
    on a network you trust (better: give its CA as ``ca_file``)."""
    ca_file: Annotated[Path, check(lambda v: isinstance(v, (str, Path)) and Path(v).is_absolute(),
                                   "an absolute file name", Path),
                       then(lambda p: p.is_file(), lambda p: f"no such file {str(p)!r}")] | None = None
    """A CA certificate (PEM) to check the store's certificate with, instead of the system's."""

    @property
    def host(self) -> str:
        return self.endpoint.rpartition(":")[0] if ":" in self.endpoint else self.endpoint

    @property
    def port(self) -> int:
        return int(self.endpoint.rpartition(":")[2]) if ":" in self.endpoint else 443

    def url(self) -> str:
        """The repository in words: ``s3://<bucket><path> at <endpoint>``."""
        return f"s3://{self.bucket}{self.path} at {self.endpoint}"


@table
class Backup(Table):
    """``[backup]``: backups of the embedded database with point-in-time restore (pgBackRest);
    absent: no WAL archiving and no backups."""

    repo: Annotated[Path, check(lambda v: isinstance(v, (str, Path)) and Path(v).is_absolute(),
                                "an absolute folder name", Path)] | None = None
    """The backup repository, a folder (default ``backup/repo`` in the state folder: put it on
    another disk or a mounted network share for backups that outlive the machine). Not with
    ``[backup.s3]``."""
    s3: S3 | None = None
    """The repository in an S3-compatible object store instead of a folder (``[backup.s3]``)."""
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

    @model_validator(mode="after")
    def _one_repository(self):
        if self.repo is not None and self.s3 is not None:
            raise fail(("repo",), "give a folder (repo) or an S3-compatible store ([backup.s3]), not both")
        return self
