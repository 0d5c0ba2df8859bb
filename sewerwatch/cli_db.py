"""CLI: ``sewerwatch db migrate|status``."""

from __future__ import annotations

import sys

from sewerwatch import services


def register(sub) -> None:
    p = sub.add_parser("db", help="database schema: migrate, status")
    dsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    m = dsub.add_parser("migrate", help="apply pending migrations, then write the config's sites and sensors")
    m.add_argument("--db-url", help="database URL of the schema owner (default: the configured or embedded one)")
    m.set_defaults(func=_migrate)
    s = dsub.add_parser("status", help="applied and pending migrations")
    s.add_argument("--db-url", help="database URL (default: the configured or embedded one)")
    s.set_defaults(func=_status)


def _log(msg: str) -> None:
    print(f"sewerwatch: {msg}", file=sys.stderr)


def _target(args, ctx) -> str:
    """The owner's URL: ``--db-url``, else the configured one, else the embedded cluster's
    (started when it is not running)."""
    if args.db_url:
        return args.db_url
    cfg = ctx.config
    if not cfg.services.db_url:
        services.up(cfg, log=_log, mqtt=False)
    return ctx.endpoints().db("owner")


def _migrate(args, ctx) -> int:
    # lazy, as in every handler that connects: psycopg takes about 0.15 s to import
    from sewerwatch.db import migrate, sync

    url = _target(args, ctx)
    cfg = ctx.config
    done = migrate.migrate(url, log=_log)
    if not done:
        _log("schema is up to date")
    if cfg.sites:
        with ctx.connect(db_url=url, schema=False) as conn:
            res = sync.sync(conn, cfg)
        _log(f"config {cfg.path}: {res['sites']} sites, {res['sensors']} sensors in the database")
        for k in res["stale_sites"] + res["stale_sensors"]:
            _log(f"warning: {k} is in the database but no longer in the config (kept)")
    return 0


def _status(args, ctx) -> int:
    from sewerwatch.db import migrate  # lazy: psycopg (see _migrate)

    url = _target(args, ctx)
    with ctx.connect(db_url=url, schema=False) as conn:
        have = migrate.applied(conn)
        tsdb = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'").fetchone()
    for m in migrate.discover():
        state = "applied" if m.version in have else "pending"
        print(f"{m.path.name:40} {state}")
    print(f"timescaledb: {tsdb[0] if tsdb else 'not installed (plain PostgreSQL)'}")
    return 0
