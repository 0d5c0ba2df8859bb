"""WAL archiving of the embedded cluster into pgBackRest's repository: the repository for a
config, the cluster's ``archive_command``, and archiving turned on or off as the config says.

Below :mod:`sewerwatch.backup` and :mod:`sewerwatch.services` alike: ``services up`` turns
archiving on through it, and the backups build on both.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from foundation import secrets as _secrets
from foundation.errors import InputError
from sewerwatch.backup.pgbackrest import CIPHER_KEY, Repo
from sewerwatch.services.process import is_root


def repo(cfg, passwords: dict | None = None, keys: bool = True) -> Repo:
    """pgBackRest for the config's embedded cluster; without ``keys`` the ``[backup.s3]``
    store's access key is not looked for (nor given: enough for the cluster's ``archive_command``).

    Raises
    ------
    foundation.errors.InputError
        When the config has no ``[backup]`` or names a database of its own, or its
        ``[backup.s3]`` store's access key id or secret is not in ``secrets.json``.
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
    s3 = cfg.backup.s3
    folder = PurePosixPath(s3.path) if s3 is not None else cfg.backup.repo or state / "backup" / "repo"
    return Repo(state_dir=state, repo=folder, data_dir=base / "data",
                port=cfg.services.pg_port, socket_dir=base / "run", cipher=pw["keys"][CIPHER_KEY],
                admin_password=pw["db"]["admin"], user="postgres" if is_root() else None, policy=cfg.backup,
                s3=s3, s3_keys=s3_keys(cfg, pw) if s3 is not None and keys else None)


def s3_keys(cfg, passwords: dict) -> tuple[str, str]:
    """The ``[backup.s3]`` store's access key id and secret from ``secrets.json``.

    Raises
    ------
    foundation.errors.InputError
        One line naming ``secrets.json``, the key not set and the command that sets it.
    """
    got = passwords.get(_secrets.S3_SECTION) or {}
    for k in _secrets.S3_KEYS:
        if not isinstance(got.get(k), str) or not got[k]:
            raise InputError(f"{cfg.services.state_dir / 'secrets.json'}: {_secrets.S3_SECTION}.{k}: not set, and "
                             f"{cfg.path}'s [backup.s3] needs it; set the store's access key id and secret with "
                             "'sewerwatch backup secrets'")
    return tuple(got[k] for k in _secrets.S3_KEYS)


def archive_command(cfg, passwords: dict) -> str | None:
    """The embedded cluster's ``archive_command``: pgBackRest's with ``[backup]``, else None."""
    if cfg.backup is None or cfg.services.db_url:
        return None
    return repo(cfg, passwords, keys=False).archive_command()


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
        log(f"backups: the repository {r.where} is ready (stanza created)")
