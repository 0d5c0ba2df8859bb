"""Backups of the embedded database with point-in-time restore, by pgBackRest.

With a ``[backup]`` table in the config, the embedded cluster archives its WAL into the
repository (``archive_mode``, ``archive_command``; turned on or off by ``services up``, which
restarts the cluster when that changes), the stanza is created, and:

- :func:`take` (``sewerwatch backup now [--full]``): a full backup when the last full one is
  ``full_every_days`` old, else a differential one; the state folder's record
  (:mod:`sewerwatch.backup.record`) and the config's and packs' hashes go with it;
- :func:`backups` (``backup list``): each backup's time, type, size and WAL range;
- :func:`check` (``backup check``): pgBackRest's check that WAL reaches the repository; for a
  database of one's own (``db_url``) what its server reports of archiving;
- :func:`restore` (``backup restore --to TIME|--latest [--into DIR]``): refused while ``run``
  writes or the cluster runs; the current data folder is kept beside it;
- :func:`health` (``sewerwatch status``): the last backup, its age, a failure's reason.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

from foundation.errors import InputError, ServiceError
from foundation.paths import RUN_STATUS_FILE
from foundation.statusfile import read_status
from sewerwatch.backup import record
from sewerwatch.backup.archiving import archive_command, ensure, repo
from sewerwatch.backup.pgbackrest import STANZA, Repo, chown
from sewerwatch.services.process import pid_alive

__all__ = ["STANZA", "Repo", "archive_command", "backups", "check", "ensure", "health", "repo", "restore", "take"]

#: The outcome of the last ``backup now`` (in ``<state>/backup/``).
LAST_FILE = "last.json"
#: A ``run`` status file older than this [s] is a ``run`` no longer writing.
RUN_STALE_S = 10.0


def _now() -> float:
    return time.time()


def _last_path(cfg) -> Path:
    return cfg.services.state_dir / "backup" / LAST_FILE


def _write_last(cfg, outcome: dict) -> None:
    p = _last_path(cfg)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(outcome, indent=1))


def take(cfg, full: bool = False, log=lambda msg: None) -> dict:
    """Take a backup (``sewerwatch backup now``): full with ``full`` or when the last full one
    is ``[backup] full_every_days`` old or there is none, else differential.

    Returns
    -------
    dict
        ``type``, ``label``, ``seconds`` [s], ``size`` [bytes] of the database, the record's manifest.
    """
    from sewerwatch import services

    r = repo(cfg)
    services.up(cfg, log=log, mqtt=False)
    started = _now()
    try:
        kind = "full" if full else _due_type(r, cfg.backup.full_every_days)
        manifest = record.write(cfg, r.data_dir, r.user)
        packs = ",".join(f"{k}:{v[:16]}" for k, v in manifest["packs_sha256"].items())
        log(f"backing up the database ({kind}) to {r.where}")
        r.run("backup", f"--type={kind}", f"--annotation=config-sha256={manifest['config_sha256'] or 'none'}",
              f"--annotation=packs-sha256={packs or 'none'}", timeout=6 * 3600)
        newest = (r.info().get("backup") or [{}])[-1]
        out = {"ok": True, "at": _now(), "type": newest.get("type", kind), "label": newest.get("label"),
               "seconds": round(_now() - started, 1), "size": (newest.get("info") or {}).get("size"),
               "record_files": len(manifest["files"]), "config_sha256": manifest["config_sha256"]}
    except ServiceError as exc:
        _write_last(cfg, {"ok": False, "at": _now(), "error": str(exc)})
        raise
    _write_last(cfg, out)
    return out


def _due_type(r: Repo, full_every_days: int) -> str:
    fulls = [b for b in r.info().get("backup") or [] if b.get("type") == "full"]
    if not fulls:
        return "full"
    age_days = (_now() - fulls[-1]["timestamp"]["stop"]) / 86400
    return "full" if age_days >= full_every_days else "diff"


def backups(cfg) -> dict:
    """The repository's backups (``sewerwatch backup list``).

    Returns
    -------
    dict
        ``repo``; ``backups``: each ``label``, ``type``, ``start``/``stop`` (aware UTC times),
        ``size`` (the database [bytes]), ``stored`` (in the repository, compressed [bytes]),
        ``wal`` (first and last WAL segment it needs), ``annotation``; ``archive``: the WAL the
        repository holds (first, last), the range a point-in-time restore can reach.
    """
    r = repo(cfg)
    if not r.conf.is_file():
        raise InputError("no backup repository yet: run 'sewerwatch services up' (or 'sewerwatch backup now')")
    info = r.info()
    rows = []
    for b in info.get("backup") or []:
        ts = b.get("timestamp") or {}
        rows.append({"label": b.get("label"), "type": b.get("type"),
                     "start": _utc(ts.get("start")), "stop": _utc(ts.get("stop")),
                     "size": (b.get("info") or {}).get("size"),
                     "stored": ((b.get("info") or {}).get("repository") or {}).get("delta"),
                     "wal": ((b.get("archive") or {}).get("start"), (b.get("archive") or {}).get("stop")),
                     "annotation": b.get("annotation") or {}})
    archives = info.get("archive") or []
    arch = (archives[0].get("min"), archives[-1].get("max")) if archives else (None, None)
    return {"repo": r.where, "backups": rows, "archive": arch,
            "status": (info.get("status") or {}).get("message")}


def _utc(epoch) -> datetime | None:
    return datetime.fromtimestamp(epoch, timezone.utc) if epoch is not None else None


def check(cfg) -> list[str]:
    """Whether WAL reaches the repository (``sewerwatch backup check``): the lines to print.

    Raises
    ------
    foundation.errors.ServiceError
        When archiving does not work, with pgBackRest's or the server's reason.
    """
    if cfg.services.db_url:
        return _check_own_database(cfg)
    from sewerwatch import services

    r = repo(cfg)
    services.up(cfg, mqtt=False)
    r.run("check", timeout=300)
    info = r.info()
    n = len(info.get("backup") or [])
    last = health(cfg)
    return [f"archiving works: a WAL segment reached {r.where}",
            f"backups in the repository: {n}" + ("" if n else " (take the first with 'sewerwatch backup now')"),
            f"last backup: {last['summary']}"]


def _check_own_database(cfg) -> list[str]:
    import psycopg

    try:
        with psycopg.connect(cfg.services.db_url, connect_timeout=5, autocommit=True) as conn:
            mode = conn.execute("SHOW archive_mode").fetchone()[0]
            cmd = conn.execute("SHOW archive_command").fetchone()[0]
            st = conn.execute("SELECT archived_count, last_archived_wal, last_archived_time, failed_count, "
                              "last_failed_wal, last_failed_time FROM pg_stat_archiver").fetchone()
    except psycopg.Error as exc:
        raise ServiceError(f"the configured database cannot be reached: {str(exc).strip().splitlines()[0]}") from None
    if mode == "off" or cmd in ("", "(disabled)"):
        raise ServiceError("the configured database does not archive its WAL (archive_mode is off or "
                           "archive_command is empty): no point-in-time restore is possible; its administrator "
                           "configures pgBackRest (or another tool) on that server")
    archived, last_wal, last_at, failed, failed_wal, failed_at = st
    if failed and (last_at is None or (failed_at and failed_at > last_at)):
        raise ServiceError(f"the configured database's archiving fails: segment {failed_wal} failed at "
                           f"{failed_at:%Y-%m-%d %H:%M} UTC, after the last success "
                           f"{last_at:%Y-%m-%d %H:%M} UTC" if last_at else f"segment {failed_wal} failed, "
                           "none has been archived yet")
    return [f"the configured database archives its WAL (archive_mode {mode}): {archived} segments, "
            f"the last {last_wal or '-'} at {last_at:%Y-%m-%d %H:%M} UTC" if last_at else
            f"the configured database archives its WAL (archive_mode {mode}); none archived yet"]


def health(cfg) -> dict:
    """The backups' health for ``sewerwatch status``: ``configured``; ``ok`` (the last backup
    succeeded and is younger than ``[backup] stale_after_h``), ``at`` (epoch [s]), ``age_h``
    [h], ``type``, ``problem`` and a one-line ``summary``."""
    if cfg.backup is None or cfg.services.db_url:
        return {"configured": False, "ok": True, "summary": "not configured (no [backup] in the config)"}
    p = _last_path(cfg)
    try:
        last = json.loads(p.read_text())
    except (OSError, ValueError):
        return {"configured": True, "ok": False, "problem": "no backup has been taken yet",
                "summary": "none yet ('sewerwatch backup now' takes one)"}
    age_h = (_now() - last["at"]) / 3600
    when = f"{datetime.fromtimestamp(last['at'], timezone.utc):%Y-%m-%d %H:%M} UTC, {_age(age_h)} ago"
    if not last.get("ok"):
        return {"configured": True, "ok": False, "at": last["at"], "age_h": age_h,
                "problem": f"the last backup failed: {last.get('error')}", "summary": f"failed {when}: "
                f"{last.get('error')}"}
    ok = age_h <= cfg.backup.stale_after_h
    out = {"configured": True, "ok": ok, "at": last["at"], "age_h": age_h, "type": last.get("type"),
           "summary": f"{last.get('type')} {when}"}
    if not ok:
        out["problem"] = f"the last backup is {_age(age_h)} old (more than {cfg.backup.stale_after_h} h)"
    return out


def _age(h: float) -> str:
    return f"{h * 60:.0f} min" if h < 1 else f"{h:.1f} h" if h < 48 else f"{h / 24:.1f} days"


def run_writing(cfg) -> int | None:
    """The pid of a ``sewerwatch run`` writing to this state folder's database, or None."""
    st = read_status(cfg.services.state_dir / RUN_STATUS_FILE)
    if not st or not st.get("running") or not st.get("pid"):
        return None
    fresh = _now() - st.get("updated", 0) < RUN_STALE_S
    return int(st["pid"]) if fresh and pid_alive(int(st["pid"])) else None


def before_migrating(cfg, owner_url: str, log=lambda msg: None) -> dict | None:
    """What ``db migrate`` does first when migrations are pending: refuse while ``run``
    writes; with ``[backup]``, take a backup (the database as it was before, to restore if
    the new version must be undone).

    Returns
    -------
    dict or None
        :func:`take`'s answer, or None when nothing is pending or no backups are configured.
    """
    import psycopg

    from sewerwatch.db import migrate

    try:
        with psycopg.connect(owner_url, connect_timeout=10) as conn:
            have = migrate.applied(conn)
    except psycopg.Error:
        return None                # migrate itself says what is wrong with the database
    pending = [m for m in migrate.discover() if m.version not in have]
    if not pending:
        return None
    pid = run_writing(cfg)
    if pid is not None:
        raise InputError(f"'sewerwatch run' (pid {pid}) is writing to the database: stop it before migrating "
                         f"({len(pending)} migrations pending), then start it again")
    if cfg.backup is None or cfg.services.db_url or not have:
        return None
    log(f"{len(pending)} migrations pending: taking a backup first")
    return take(cfg, full=False, log=log)


def restore(cfg, *, to: datetime | None = None, latest: bool = False, into: Path | None = None,
            log=lambda msg: None) -> dict:
    """Restore the database (``sewerwatch backup restore``) as it was at ``to`` or as late as
    the repository's WAL reaches (``latest``).

    Into the cluster's own data folder (no ``into``): refused while ``run`` writes or the
    cluster runs; the current data folder is kept as ``pg/data.before-restore-<time>`` (its
    WAL not archived yet is pushed to the repository first, so ``latest`` loses no committed
    row the disk kept); the state folder's record is put back and the cluster started.
    Into ``into``: an empty folder gets a copy that does not archive, to start and read apart.

    Returns
    -------
    dict
        ``data_dir``, ``seconds`` [s] the restore and recovery took, ``kept`` (the folder set
        aside or None), ``record`` (the state folder's parts put back).
    """
    if (to is None) == (not latest):
        raise InputError("backup restore: give --to TIME or --latest (one of them)")
    r = repo(cfg)
    if not r.conf.is_file():
        raise InputError(f"no backup repository configured in {r.base}: nothing to restore from")
    pid = run_writing(cfg)
    if pid is not None:
        raise InputError(f"'sewerwatch run' (pid {pid}) is writing to the database: stop it first, then restore")
    started = _now()
    options = []
    if to is not None:
        _reachable(r, to)
        options += ["--type=time", f"--target={to.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S.%f}+00",
                    "--target-action=promote"]
    kept = None
    if into is not None:
        target = Path(into).resolve()
        if target.exists() and any(target.iterdir()):
            raise InputError(f"--into {target}: the folder is not empty; give an empty or new one")
        options += [f"--pg1-path={target}", "--archive-mode=off"]
    else:
        from sewerwatch import services
        pg = services.embedded(cfg)[0]
        if pg.pid() is not None:
            raise InputError("the database is running: stop it with 'sewerwatch services down' (after stopping "
                             "'sewerwatch run'), then restore")
        target = pg.data_dir
        if target.exists() and any(target.iterdir()):
            _push_unarchived(r, target, log)
            kept = target.with_name(f"data.before-restore-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}")
            target.rename(kept)
            log(f"the current data folder is kept as {kept}")
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    if r.user:
        chown(target, r.user)
    log(f"restoring into {target} " + (f"as of {to.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC" if to
                                        else "as late as the archived WAL reaches"))
    r.run("restore", *options, timeout=12 * 3600)
    out = {"data_dir": str(target), "kept": str(kept) if kept else None, "record": [], "manifest": None}
    out["manifest"] = record.read_manifest(target)
    if into is None:
        out["record"] = record.unpack(target, cfg.services.state_dir, log)
        _start_after_restore(cfg, log)
    out["seconds"] = round(_now() - started, 1)
    return out


def _reachable(r: Repo, to: datetime) -> None:
    """Refuse a time no backup and WAL of the repository reach: before the oldest backup's
    end, or not yet come."""
    fmt = "%Y-%m-%d %H:%M:%S UTC"
    if to.timestamp() > _now():
        raise InputError(f"--to {to.astimezone(timezone.utc):{fmt}} is in the future; --latest restores as late "
                         "as the archived WAL reaches")
    ends = [b["timestamp"]["stop"] for b in r.info().get("backup") or []]
    if not ends:
        raise InputError(f"the repository {r.where} holds no backup yet: nothing to restore")
    if to.timestamp() < min(ends):
        raise InputError(f"--to {to.astimezone(timezone.utc):{fmt}} is before the oldest backup ended "
                         f"({datetime.fromtimestamp(min(ends), timezone.utc):{fmt}}): no earlier time can be "
                         "restored ('sewerwatch backup list' shows the backups)")


def _push_unarchived(r: Repo, data_dir: Path, log) -> None:
    """Push the WAL segments of a stopped (or killed) cluster that did not reach the
    repository yet: every segment not marked archived whose first page belongs to it (the
    one being written when it stopped among them; not the recycled or zero-filled ones
    PostgreSQL keeps ready for later)."""
    _wait_for_backends(data_dir)
    wal = data_dir / "pg_wal"
    status = wal / "archive_status"
    for p in sorted(p for p in wal.glob("*") if len(p.name) == 24 and p.is_file()):
        if (status / f"{p.name}.done").exists() or not _segment_written(p):
            continue
        res = r.run("archive-push", f"--pg1-path={data_dir}", timeout=600, check=False, args=(str(p),))
        if res.returncode == 0:
            log(f"WAL segment {p.name} of the stopped cluster pushed to the repository")
        else:
            log(f"WAL segment {p.name} could not be pushed (kept in the set-aside folder): "
                f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")


def _segment_written(path: Path) -> bool:
    """Whether a WAL segment file holds WAL of its own name: its first page header's
    timeline and address (``xlp_tli``, ``xlp_pageaddr``) are the name's."""
    import struct

    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16 or size <= 0:
        return False
    magic, _info, tli, pageaddr = struct.unpack("<HHIQ", head)
    name = path.name
    segno = int(name[8:16], 16) * (0x100000000 // size) + int(name[16:24], 16)
    return magic != 0 and tli == int(name[:8], 16) and pageaddr == segno * size


def _wait_for_backends(data_dir: Path, timeout_s: float = 30.0) -> None:
    """Wait until no process works in ``data_dir`` (a killed postmaster's backends leave
    within moments).

    Raises
    ------
    foundation.errors.ServiceError
        When some still do after ``timeout_s`` [s].
    """
    target = str(data_dir.resolve())
    deadline = _now() + timeout_s
    while True:
        left = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if os.readlink(proc / "cwd") == target:
                    left.append(proc.name)
            except OSError:
                continue
        if not left:
            return
        if _now() > deadline:
            raise ServiceError(f"processes of the stopped database still run in {target} (pids "
                               f"{', '.join(left[:5])}): wait for them to end, then restore")
        time.sleep(0.2)


def _start_after_restore(cfg, log) -> None:
    """Start the restored cluster, wait for its recovery to end, then bootstrap it as usual."""
    import psycopg

    from sewerwatch import services

    pg = services.embedded(cfg)[0]     # the passwords as restored
    pg.start()
    deadline = _now() + 6 * 3600
    while True:
        try:
            with psycopg.connect(pg.url("admin", "postgres"), autocommit=True, connect_timeout=5) as conn:
                if not conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                    break
        except psycopg.OperationalError as exc:
            if pg.pid() is None:
                raise ServiceError(f"the restored database did not start: see {pg.log_file}") from exc
        if _now() > deadline:
            raise ServiceError(f"the restored database is still recovering after 6 h: see {pg.log_file}")
        time.sleep(0.2)
    services.up(cfg, log=log, mqtt=False)
    os.sync()
