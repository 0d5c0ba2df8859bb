"""CLI: ``sewerwatch db migrate|status|roles|maintain``."""

from __future__ import annotations

import sys
from urllib.parse import unquote, urlsplit

from sewerwatch import services


def register(sub) -> None:
    p = sub.add_parser("db", help="database schema: migrate, status, roles, maintain")
    dsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    m = dsub.add_parser("migrate", help="apply pending migrations, then write the config's sites and sensors")
    m.add_argument("--db-url", help="database URL of the schema owner (default: the configured or embedded one)")
    m.set_defaults(func=_migrate)
    s = dsub.add_parser("status", help="the server (PostgreSQL, TimescaleDB or not), applied and pending migrations")
    s.add_argument("--db-url", help="database URL (default: the configured or embedded one)")
    s.set_defaults(func=_status)
    r = dsub.add_parser(
        "roles", help="the database roles sewerwatch uses; --sql: the statements a DBA runs first",
        description="Without --sql: which of sewerwatch's roles exist in the database and what the "
        "connecting role may do. With --sql: print (without connecting) the statements a database "
        "administrator runs before 'sewerwatch db migrate' on a server where sewerwatch may not create "
        "roles: the owner (unless --owner names an existing one), the database, the ingest and "
        "read-only grafana login roles, TimescaleDB where the server has it.")
    r.add_argument("--sql", action="store_true", help="print the statements instead of the roles' state")
    r.add_argument("--owner", metavar="ROLE", help="--sql: an existing role owning the database "
                   "(default: create the owner role and the database)")
    r.add_argument("--database", metavar="NAME", help="--sql: the database (default: the configured one, "
                   "else sewerwatch)")
    r.add_argument("--db-url", help="database URL (default: the configured or embedded one)")
    r.set_defaults(func=_roles)
    register_maintain(dsub)


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
    if not args.db_url:
        from sewerwatch import backup
        backup.before_migrating(cfg, url, log=_log)
    done = migrate.migrate(url, log=_log)
    if not done:
        _log("schema is up to date")
    if cfg.sites:
        with ctx.connect(db_url=url, schema=False) as conn:
            res = sync.sync(conn, cfg)
            if cfg.instruments:
                from field import instruments
                ins = instruments.sync(conn, cfg)
                conn.commit()
                _log(f"config {cfg.path}: {ins['instruments']} instruments in the register ({ins['changed']} changed)")
        _log(f"config {cfg.path}: {res['sites']} sites, {res['sensors']} sensors in the database")
        for k in res["stale_sites"] + res["stale_sensors"]:
            _log(f"warning: {k} is in the database but no longer in the config (kept)")
    return 0


def _status(args, ctx) -> int:
    from sewerwatch.db import migrate, server  # lazy: psycopg (see _migrate)

    url = _target(args, ctx)
    with ctx.connect(db_url=url, schema=False) as conn:
        have = migrate.applied(conn)
        srv = server.describe(conn)
    for m in migrate.discover():
        state = "applied" if m.version in have else "pending"
        print(f"{m.path.name:40} {state}")
    for line in srv.lines():
        print(line)
    if 71 in have:   # 0071_retention: the storage tables
        with ctx.connect(db_url=url, schema=False) as conn:
            for line in storage_lines(conn, ctx.config.retention):
                print(line)
    return 0


def _roles(args, ctx) -> int:
    from sewerwatch.db import roles  # lazy: psycopg (see _migrate)

    if args.sql:
        configured = args.db_url or ctx.config.services.db_url
        parts = urlsplit(configured) if configured else None
        database = args.database or (unquote(parts.path.lstrip("/")) if parts and parts.path.strip("/")
                                     else roles.DATABASE)
        sys.stdout.write(roles.setup_sql(args.owner, database, host=(parts.hostname if parts else None) or "HOST",
                                         port=(parts.port if parts else None) or 5432))
        return 0
    url = _target(args, ctx)
    with ctx.connect(db_url=url, schema=False) as conn:
        me = conn.execute("SELECT current_user, rolsuper, rolcreaterole, current_database() FROM pg_roles "
                          "WHERE rolname = current_user").fetchone()
        rows = {r[0]: r[1:] for r in conn.execute(
            "SELECT rolname, rolcanlogin, rolsuper FROM pg_roles WHERE rolname = ANY(%s)",
            ([roles.OWNER, roles.INGEST, roles.GRAFANA],)).fetchall()}
    print(f"connected as {me[0]} to database {me[3]}: "
          + ("superuser" if me[1] else "may create roles (CREATEROLE)" if me[2] else "may not create roles"))
    for role, what in ((roles.OWNER, "owns the schema, runs migrations"),
                       (roles.INGEST, "inserts readings and dead letters only"),
                       (roles.GRAFANA, "read-only, for Grafana")):
        state = rows.get(role)
        shown = "missing" if state is None else ("login" if state[0] else "no login") + (", SUPERUSER" if state[1] else "")
        print(f"  {role:20} {shown:12} {what}")
    if any(r not in rows for r in (roles.INGEST, roles.GRAFANA)) and not (me[1] or me[2]):
        print("  'sewerwatch db roles --sql' prints the statements a database administrator runs first")
    return 0


# --- storage: bytes per reading, compression, retention, `db maintain` ----------


def storage_lines(conn, policy) -> list[str]:
    """The storage part of ``db status``."""
    from sewerwatch.db import maintain  # lazy: psycopg (see _migrate)

    r = maintain.storage_report(conn)
    bpr = f"{r['bytes_per_reading']:.1f} bytes per reading" if r["bytes_per_reading"] else "no readings"
    count = f"{r['readings']:,}" + ("" if r["exact"] else " (estimate)")
    agg = (f"up to {r['aggregates_to']:%Y-%m-%d %H:%M} UTC" if r["aggregates_to"]
           else "not built yet (sewerwatch db maintain)")
    raw = f"{policy.raw_days} days" if policy.raw_days is not None else "the records period"
    return [
        f"readings: {count} readings, {r['bytes'] / 1e6:,.1f} MB with indexes, {bpr}",
        f"compression: {r['compression']}"
        + (f" (ratio {r['compression_ratio']:.1f})" if r["compression_ratio"] else ""),
        f"retention: raw readings kept {raw}; one-minute aggregates kept {policy.records_years} years "
        "(40 CFR 403.12(o)(2)); the raw readings of violation episodes "
        f"(± {policy.evidence_margin_min:g} min) kept as long as the violations",
        f"aggregates (readings_1m): {r['aggregate_rows']:,} rows, {agg}; evidence rows: {r['evidence_rows']:,}",
    ]


def register_maintain(dsub) -> None:
    m = dsub.add_parser("maintain", help="one-minute aggregates, retention and compression, once "
                        "(sewerwatch run does it periodically)")
    m.add_argument("--db-url", help="database URL of the schema owner (default: the configured or embedded one)")
    m.add_argument("--refresh", nargs=2, metavar=("FROM", "TO"),
                   help="recompute the aggregates of this range first (dates or ISO-8601 times, e.g. after a "
                   "backfill; a date is a local calendar day of the village, a time without an offset its clock)")
    m.set_defaults(func=_maintain)


def _maintain(args, ctx) -> int:
    from limits.history import parse_range
    from foundation.moments import village_zone
    from sewerwatch.db import maintain  # lazy: psycopg (see _migrate)

    url = _target(args, ctx)
    with ctx.connect(db_url=url) as conn:
        if args.refresh:
            a, b = parse_range(*args.refresh, village_zone(ctx.config))
            n = maintain.refresh_aggregates(conn, _utc(a), _utc(b), log_progress=_log)
            _log(f"aggregates recomputed: {n:,} sensor-minutes")
        out = maintain.maintain(conn, ctx.config.retention, log_progress=_log,
                                state_dir=ctx.config.services.state_dir)
    _log(f"aggregates: {out['aggregated']:,} sensor-minutes written, complete to {out['aggregates_to']}")
    _log(f"raw readings before {out['raw_before']:%Y-%m-%d %H:%M} UTC removed ({out['raw_removed']:,} "
         f"chunks or rows); {out['evidence_rows']:,} evidence readings kept first")
    _log(f"records period: {out['records_removed']:,} old aggregate chunks/evidence rows removed")
    if out["kept_sites"]:
        _log(f"{out['kept_sites']} site(s) on legal hold or with an open enforcement case: nothing of theirs removed")
    _log(f"dead letters removed: {out['dead_letters_removed']:,}; old office sessions removed: "
         f"{out['sessions_removed']:,}")
    _log(f"compression: {out['compression']}; {out['compressed_chunks']} chunk(s) compressed now")
    return 0


def _utc(us: int):
    from datetime import datetime, timezone
    return datetime.fromtimestamp(us / 1e6, timezone.utc)
