"""CLI: ``sewerwatch backup now|list|check|restore|secrets``, ``sewerwatch export`` and ``sewerwatch
hold add|release|list``; the work is ``sewerwatch.backup``'s, ``enforcement.export``'s (the
Reports page's download calls it too) and ``enforcement.holds``'."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("backup", help="backups of the database with point-in-time restore (pgBackRest)",
                       description="Backups of the embedded database and the program's other records, "
                       "kept by pgBackRest in the repository of the config's [backup] table.")
    bsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    n = bsub.add_parser("now", help="take a backup: full when the last full one is a week old, else differential")
    n.add_argument("--full", action="store_true", help="a full backup whatever the last one was")
    n.set_defaults(func=_now)
    bsub.add_parser("list", help="the backups: when, type, size, the WAL each needs").set_defaults(func=_list)
    bsub.add_parser("check", help="whether the database's WAL reaches the repository").set_defaults(func=_check)
    r = bsub.add_parser("restore", help="bring the database back as it was at a time, or as late as possible",
                        description="Restore the database from the repository. Stop 'sewerwatch run' and the "
                        "database ('sewerwatch services down') first; the current data folder is kept beside "
                        "the restored one.")
    when = r.add_mutually_exclusive_group(required=True)
    when.add_argument("--to", metavar="TIME", help="the time to restore to: ISO-8601 with an offset, or the "
                      "village's wall clock (2026-07-01T06:00:00)")
    when.add_argument("--latest", action="store_true", help="as late as the archived WAL reaches")
    r.add_argument("--into", metavar="DIR", help="restore into this empty folder instead, to start and read "
                   "apart (it does not archive)")
    r.set_defaults(func=_restore)
    k = bsub.add_parser("secrets", help="set the S3-compatible store's access key id and secret (kept in "
                        "secrets.json, never shown)",
                        description="Keep the access key id and secret access key of the [backup.s3] store in the "
                        "state folder's secrets.json (0600). They are asked without echo, or read as two lines "
                        "(the key id, then the secret) from standard input with --stdin.")
    k.add_argument("--stdin", action="store_true", help="read two lines from standard input: the access key id, "
                   "then the secret access key")
    k.set_defaults(func=_secrets)
    e = sub.add_parser("export", help="one year of the program's records as CSV and Parquet files for an auditor",
                       description="Write every table's rows of one year as CSV and Parquet files, the signed "
                       "reports, notices and bills as their files, a manifest of their SHA-256 and a README of "
                       "the columns, readable without sewerwatch.")
    e.add_argument("--year", type=int, required=True, help="the calendar year (in the village's time zone)")
    e.add_argument("dir", metavar="DIR", help="an empty or new folder")
    e.set_defaults(func=_export)
    h = sub.add_parser("hold", help="legal holds: while an industrial user is on hold, retention deletes none of "
                       "its records")
    hsub = h.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = hsub.add_parser("add", help="put an industrial user's records on hold")
    a.add_argument("site", help="the site id (the config's [[sites]] id)")
    a.add_argument("--reason", required=True, help="why: the case, the request")
    a.set_defaults(func=_hold_add)
    rel = hsub.add_parser("release", help="end the hold on an industrial user's records")
    rel.add_argument("site", help="the site id")
    rel.add_argument("--reason", required=True, help="why the hold ends")
    rel.set_defaults(func=_hold_release)
    ls = hsub.add_parser("list", help="the holds in force (--all: released ones too)")
    ls.add_argument("--all", action="store_true", help="released holds too")
    ls.set_defaults(func=_hold_list)


def _log(msg: str) -> None:
    print(f"sewerwatch: {msg}", file=sys.stderr)


def _mb(n) -> str:
    return "-" if n is None else f"{n / 1e6:,.1f} MB"


def _now(args, ctx) -> int:
    from sewerwatch import backup

    out = backup.take(ctx.config, full=args.full, log=_log)
    print(f"backup {out['label']}: {out['type']}, {_mb(out['size'])} of database, {out['record_files']} "
          f"record files, in {out['seconds']:.1f} s")
    return 0


def _list(args, ctx) -> int:
    from foundation.display import local_time
    from sewerwatch import backup
    from sewerwatch.cli_run import _village_tz

    tz = _village_tz(ctx.config)
    info = backup.backups(ctx.config)
    print(f"repository: {info['repo']}")
    if not info["backups"]:
        print("no backups yet ('sewerwatch backup now' takes one)")
    for b in info["backups"]:
        print(f"  {local_time(b['start'], tz, seconds=False)}  {b['type']:<5} {_mb(b['size']):>12} "
              f"(stored {_mb(b['stored'])})  WAL {b['wal'][0]} .. {b['wal'][1]}  {b['label']}")
    first, last = info["archive"]
    if first:
        print(f"archived WAL: {first} .. {last} (a restore reaches any time from the oldest backup's end "
              "to the last segment)")
    return 0


def _check(args, ctx) -> int:
    from sewerwatch import backup

    for line in backup.check(ctx.config):
        print(line)
    return 0


def _restore(args, ctx) -> int:
    from foundation.moments import instant, village_zone
    from sewerwatch import backup

    to = instant(args.to, "--to", village_zone(ctx.config)) if args.to else None
    out = backup.restore(ctx.config, to=to, latest=args.latest, into=Path(args.into) if args.into else None,
                         log=_log)
    print(f"restored into {out['data_dir']} in {out['seconds']:.1f} s")
    if args.into:
        print(f"start it apart on a free port to read it: pg_ctl -D {out['data_dir']} -o '-p 55999' start "
              "(as the database's system user); it does not archive")
    if out["kept"]:
        print(f"the data folder before the restore is kept in {out['kept']} (remove it when satisfied)")
    if out["record"]:
        print(f"state folder put back as it was at that backup: {', '.join(out['record'])}")
    return 0


def _secrets(args, ctx) -> int:
    import getpass

    from foundation import secrets
    from foundation.errors import InputError
    from sewerwatch.backup import archiving

    cfg = ctx.config
    if args.stdin:
        lines = [sys.stdin.readline().strip() for _ in secrets.S3_KEYS]
    else:
        if not sys.stdin.isatty():
            raise InputError("backup secrets: no terminal to ask on; give the access key id and the secret as "
                             "two lines on standard input with --stdin")
        lines = [getpass.getpass("S3 access key id: ").strip(), getpass.getpass("S3 secret access key: ").strip()]
    for name, value in zip(secrets.S3_KEYS, lines):
        if not value:
            raise InputError(f"backup secrets: {name} is empty; nothing was changed")
    path = secrets.put(cfg.services.state_dir, secrets.S3_SECTION, dict(zip(secrets.S3_KEYS, lines)))
    print(f"the S3 access key id and secret are kept in {path}")
    if cfg.backup is not None and cfg.backup.s3 is not None and not cfg.services.db_url:
        r = archiving.repo(cfg)
        if r.conf.is_file():              # pgBackRest's file in the state folder carries them from now on
            r.write_conf()
    elif cfg.backup is None or cfg.backup.s3 is None:
        print(f"note: {cfg.path} has no [backup.s3] table yet; they are used once it has one")
    return 0


def _export(args, ctx) -> int:
    from enforcement import export

    with ctx.connect("owner") as conn:
        out = export.export_year(conn, ctx.config, args.year, Path(args.dir), log=_log)
    print(f"{out['tables']} tables, {out['rows']:,} rows and {out['documents']} documents of {args.year} in "
          f"{out['dir']} (manifest: {out['manifest']})")
    return 0


def _hold_add(args, ctx) -> int:
    from enforcement import holds
    from foundation.actor import Actor

    with ctx.connect("owner") as conn:
        h = holds.add(conn, args.site, args.reason, actor=Actor.os_user())
    print(f"site {h['site']} on hold since {h['placed_at']:%Y-%m-%d %H:%M} UTC: {h['reason']} "
          "(retention deletes none of its records until it is released)")
    return 0


def _hold_release(args, ctx) -> int:
    from enforcement import holds
    from foundation.actor import Actor

    with ctx.connect("owner") as conn:
        h = holds.release(conn, args.site, args.reason, actor=Actor.os_user())
    print(f"hold on site {h['site']} released: {h['release_reason']}")
    return 0


def _hold_list(args, ctx) -> int:
    from enforcement import holds

    with ctx.connect("owner") as conn:
        rows = holds.holds(conn, active_only=not args.all)
    if not rows:
        print("no holds" + ("" if args.all else " in force"))
    for h in rows:
        end = (f", released {h['released_at']:%Y-%m-%d} by {h['released_by']}: {h['release_reason']}"
               if h["released_at"] else "")
        print(f"  {h['site']:<16} since {h['placed_at']:%Y-%m-%d} by {h['placed_by']}: {h['reason']}{end}")
    return 0
