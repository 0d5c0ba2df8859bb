"""Export the dashboards and Grafana provisioning files into a folder.

::

    DIR/
      dashboards/sewerwatch-*.json            one file per dashboard
      provisioning/datasources/sewerwatch.yaml   the PostgreSQL data source (timescaledb: true/false)
      provisioning/dashboards/sewerwatch.yaml    a file provider reading DIR/dashboards
      grafana.env                              SEWERWATCH_GRAFANA_DB_PASSWORD=... (mode 0600)

Copy ``provisioning/*`` into Grafana's provisioning folder and start Grafana with the
variables of ``grafana.env`` in its environment: the data source file names the password
as ``${SEWERWATCH_GRAFANA_DB_PASSWORD}`` (Grafana expands environment variables in
provisioning files), so the password is never written into the YAML.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psycopg
import yaml

from dashboards import model as m
from foundation.errors import InputError

FOLDER_TITLE = "sewerwatch"
FOLDER_UID = "sewerwatch"
PASSWORD_ENV = "SEWERWATCH_GRAFANA_DB_PASSWORD"


@dataclass(frozen=True)
class DbTarget:
    """Where Grafana's data source connects: from a ``postgresql://`` URL."""

    host: str
    port: int
    user: str
    password: str
    database: str
    sslmode: str = "disable"
    timescaledb: bool = True

    @classmethod
    def from_url(cls, url: str, timescaledb: bool = True) -> "DbTarget":
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise InputError(f"--db-url: expected a postgresql:// URL, got {url.split('@')[-1]!r}")
        database = unquote(parts.path.lstrip("/"))
        if not parts.hostname or not database or not parts.username:
            raise InputError("--db-url: the URL needs a user, a host and a database "
                             "(postgresql://USER:PASSWORD@HOST:PORT/DATABASE)")
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        return cls(parts.hostname, parts.port or 5432, unquote(parts.username),
                   unquote(parts.password or ""), database, query.get("sslmode", "disable"), timescaledb)

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.database}"


def inspect_target(url: str, timeout_s: int = 5) -> bool:
    """Connect as the data source will; return whether the database has TimescaleDB.

    Raises
    ------
    InputError
        The database cannot be reached (say ``--timescaledb`` or ``--no-timescaledb``
        instead), or the account can write: Grafana reads as a read-only role
        (``sewerwatch_grafana``; ``sewerwatch db roles --sql`` gives it a login).
    """
    target = DbTarget.from_url(url)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=timeout_s)
    except psycopg.OperationalError as exc:
        first = (str(exc).strip().splitlines() or ["unreachable"])[0]
        raise InputError(f"cannot reach the database at {target.where} to see whether it has the "
                         f"timescaledb extension ({first}); give --timescaledb or --no-timescaledb") from None
    with conn:
        ts = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'").fetchone() is not None
        writes = conn.execute(
            "SELECT rolsuper OR (to_regclass('public.readings') IS NOT NULL "
            "AND has_table_privilege('public.readings', 'INSERT, UPDATE, DELETE')) "
            "FROM pg_roles WHERE rolname = current_user").fetchone()[0]
    if writes:
        raise InputError(f"the data source account {target.user} can write to the database; Grafana reads as "
                         "the read-only role sewerwatch_grafana: give --db-url postgresql://sewerwatch_grafana:"
                         f"PASSWORD@{target.host}:{target.port}/{target.database} ('sewerwatch db roles --sql' "
                         "prints the statements that give it a login)")
    return ts


def datasource(db: DbTarget, password: str | None = None) -> dict:
    """The data source as Grafana's HTTP API and provisioning files describe it.

    ``jsonData.timescaledb`` (the target's) makes ``$__timeGroup`` use ``time_bucket``; the
    database is under ``jsonData.database`` as current Grafana expects.
    """
    out = {
        "uid": m.DATASOURCE_UID, "name": m.DATASOURCE_NAME, "type": m.DATASOURCE_TYPE,
        "access": "proxy", "url": f"{db.host}:{db.port}", "user": db.user, "isDefault": False,
        "jsonData": {
            "database": db.database, "sslmode": db.sslmode, "timescaledb": db.timescaledb,
            "postgresVersion": 1500, "maxOpenConns": 10, "maxIdleConns": 10,
            "connMaxLifetime": 14400, "timeInterval": "10s",
        },
    }
    if password is not None:
        out["secureJsonData"] = {"password": password}
    return out


def datasource_provisioning(db: DbTarget) -> dict:
    """``provisioning/datasources/sewerwatch.yaml`` content."""
    ds = datasource(db, "${" + PASSWORD_ENV + "}")
    ds["editable"] = False
    return {"apiVersion": 1, "datasources": [ds]}


def dashboard_provisioning(dashboards_path: str) -> dict:
    """``provisioning/dashboards/sewerwatch.yaml`` content: a file provider."""
    return {"apiVersion": 1, "providers": [{
        "name": "sewerwatch", "orgId": 1, "folder": FOLDER_TITLE, "folderUid": FOLDER_UID,
        "type": "file", "disableDeletion": False, "allowUiUpdates": False,
        "updateIntervalSeconds": 30,
        "options": {"path": dashboards_path, "foldersFromFilesStructure": False},
    }]}


def write(directory: str | os.PathLike, dashboards: list[dict], db: DbTarget,
          dashboards_path: str | None = None) -> list[Path]:
    """Write the dashboards and provisioning files; return the files written.

    Parameters
    ----------
    directory : path-like
        The output folder (created).
    dashboards : list of dict
        Dashboard JSON.
    db : DbTarget
        The database the data source connects to, as the read-only grafana role.
    dashboards_path : str, optional
        Where Grafana will find the dashboard files (default: ``DIR/dashboards``, absolute).
    """

    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    dash_dir = out / "dashboards"
    ds_dir = out / "provisioning" / "datasources"
    prov_dir = out / "provisioning" / "dashboards"
    for d in (dash_dir, ds_dir, prov_dir):
        d.mkdir(parents=True, exist_ok=True)
    written = []
    for dash in dashboards:
        p = dash_dir / f"{dash['uid']}.json"
        p.write_text(json.dumps(dash, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(p)
    p = ds_dir / "sewerwatch.yaml"
    p.write_text(yaml.safe_dump(datasource_provisioning(db), sort_keys=False), encoding="utf-8")
    written.append(p)
    p = prov_dir / "sewerwatch.yaml"
    p.write_text(yaml.safe_dump(dashboard_provisioning(dashboards_path or str(dash_dir.resolve())),
                                sort_keys=False), encoding="utf-8")
    written.append(p)
    p = out / "grafana.env"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"{PASSWORD_ENV}={db.password}\n")
    os.chmod(p, 0o600)
    written.append(p)
    return written
