"""WAL archiving of the embedded cluster into pgBackRest's repository: the repository for a
config, the cluster's ``archive_command``, and archiving turned on or off as the config says.

Below :mod:`sewerwatch.backup` and :mod:`sewerwatch.services` alike: ``services up`` turns
archiving on through it, and the backups build on both.
"""

from __future__ import annotations

from foundation import secrets as _secrets
from foundation.errors import InputError
from sewerwatch.backup.pgbackrest import CIPHER_KEY, Repo
from sewerwatch.services.process import is_root


def repo(cfg, passwords: dict | None = None) -> Repo:
    """pgBackRest for the config's embedded cluster.

    Raises
    ------
    foundation.errors.InputError
        When the config has no ``[backup]`` or names a database of its own.
    """
    if cfg.backup is None:
        raise InputError(f"{cfg.path}: no [backup] table, so no backups are kept; add one (the documentation's "
                         "page 'Backups, restores and upgrades')")
    if cfg.services.db_url:
        raise InputError(f"{cfg.path}: the database is your own ([services] db_url): back it up with its "
                         "server's tools; 'sewerwatch backup check' shows whether it archives its WAL")
    state = cfg.services.state_dir
    pw = passwords or _secrets.load_or_create(state)
    base = state / "pg"
    return Repo(state_dir=state, repo=cfg.backup.repo or state / "backup" / "repo", data_dir=base / "data",
                port=cfg.services.pg_port, socket_dir=base / "run", cipher=pw["keys"][CIPHER_KEY],
                admin_password=pw["db"]["admin"], user="postgres" if is_root() else None, policy=cfg.backup)


def archive_command(cfg, passwords: dict) -> str | None:
    """The embedded cluster's ``archive_command``: pgBackRest's with ``[backup]``, else None."""
    if cfg.backup is None or cfg.services.db_url:
        return None
    return repo(cfg, passwords).archive_command()


def ensure(cfg, pg, log=lambda msg: None) -> None:
    """Archiving as the config says, on the running embedded cluster ``pg``: pgBackRest's
    config file written, the cluster restarted when ``archive_mode`` must change, the stanza
    created."""
    import psycopg

    r = repo(cfg) if cfg.backup is not None else None
    if r is None and not pg.archive_setting_present():
        return
    if r is not None:
        r.write_conf()
    pg.write_archive_setting()
    with psycopg.connect(pg.url("admin", "postgres"), autocommit=True) as conn:
        current = pg.archiving_current(conn)
    if not current:
        log("restarting TimescaleDB: WAL archiving " + ("turned on for the backups" if r else "turned off"))
        pg.restart()
    if r is not None and r.ensure_stanza():
        log(f"backups: the repository {r.repo} is ready (stanza created)")
