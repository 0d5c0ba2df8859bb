"""CLI: ``sewerwatch dashboards export|push|preview``."""

from __future__ import annotations

import argparse
import os

from foundation.errors import InputError

#: The environment variable ``dashboards push`` reads the Grafana token from.
TOKEN_ENV = "SEWERWATCH_GRAFANA_TOKEN"
#: The environment variable giving the read-only grafana role's database URL.
GRAFANA_URL_ENV = "SEWERWATCH_GRAFANA_DB_URL"


def register(sub) -> None:
    p = sub.add_parser("dashboards", help="export, preview and push the Grafana dashboards",
                       description="The Grafana dashboards (Overview, Site, Lab and loadings, "
                       "Sensor health), generated from the rule packs.")
    dsub = p.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])

    e = dsub.add_parser("export", help="write the dashboard JSON and Grafana provisioning files",
                        description="Write DIR/dashboards/*.json, DIR/provisioning/datasources/"
                        "sewerwatch.yaml (PostgreSQL; timescaledb: true or false, as the database has the "
                        "extension or not), DIR/provisioning/dashboards/sewerwatch.yaml (a file provider) "
                        "and DIR/grafana.env (the data source password).")
    e.add_argument("dir", metavar="DIR")
    e.add_argument("--db-url", help="the database as the read-only grafana role (default: "
                   f"${GRAFANA_URL_ENV}, else the embedded database's grafana role)")
    _timescaledb_option(e)
    e.add_argument("--dashboards-path", help="where Grafana will read the dashboard files "
                   "(default: DIR/dashboards, absolute)")
    e.set_defaults(func=_export)

    u = dsub.add_parser("push", help="create or update the folder, data source and dashboards on a Grafana server",
                        description="Idempotent: objects equal to what sewerwatch generates are left alone.")
    u.add_argument("--url", required=True, help="Grafana's base URL, e.g. http://127.0.0.1:3000")
    tok = u.add_mutually_exclusive_group()
    tok.add_argument("--token", help=f"a Grafana service account token (Editor or Admin); better kept out of "
                     f"the command line: ${TOKEN_ENV} or --token-file")
    tok.add_argument("--token-file", metavar="FILE", help="a file holding the token (e.g. a mounted secret)")
    u.add_argument("--db-url", help="the database as Grafana should reach it, as the grafana role "
                   f"(default: ${GRAFANA_URL_ENV}, else the embedded database's grafana role)")
    _timescaledb_option(u)
    u.add_argument("--no-datasource", action="store_true", help="leave the data source alone")
    u.set_defaults(func=_push)

    v = dsub.add_parser("preview", help="render every panel from the database to PNG (matplotlib)",
                        description="Runs each panel's SQL, expanded as Grafana expands it, as the "
                        "grafana role and draws it: DIR/<dashboard>.png, one image per dashboard.")
    v.add_argument("dir", metavar="DIR")
    v.add_argument("--db-url", help=f"the database as the grafana role (default: ${GRAFANA_URL_ENV}, else the "
                   "embedded database's grafana role)")
    v.add_argument("--from", dest="time_from", help="range start, a date (a local calendar day of the village) or a "
                   "time (with an offset as given, without one the village's clock) (default: each dashboard's "
                   "own range)")
    v.add_argument("--to", dest="time_to", help="range end, a date or a time (default: now)")
    v.add_argument("--site", action="append", help="the site variable's value (repeat for several)")
    v.set_defaults(func=_preview)


def _timescaledb_option(p) -> None:
    p.add_argument("--timescaledb", action=argparse.BooleanOptionalAction, default=None,
                   help="whether the database has the timescaledb extension (default: ask the database)")


def _db_url(args, ctx, what: str) -> str:
    """The read-only grafana role's URL: ``--db-url``, ``$SEWERWATCH_GRAFANA_DB_URL``, or the
    embedded cluster's. A configured ``db_url`` is the owner's, which Grafana must not use."""
    url = args.db_url or os.environ.get(GRAFANA_URL_ENV)
    if url:
        return url
    ep = ctx.endpoints()
    if ep.db_embedded:
        return ep.db("grafana")
    raise InputError(f"dashboards {what}: the configured db_url is the schema owner's, and Grafana reads as the "
                     "read-only role sewerwatch_grafana: give --db-url postgresql://sewerwatch_grafana:PASSWORD@HOST"
                     f"/DATABASE (or ${GRAFANA_URL_ENV}); 'sewerwatch db roles --sql' prints the statements "
                     "that give the role a login")


def _target(args, ctx, what: str):
    """The data source's database, and whether it has TimescaleDB (asked when not said)."""
    from dashboards.export import DbTarget, inspect_target

    url = _db_url(args, ctx, what)
    ts = args.timescaledb
    if ts is None:
        DbTarget.from_url(url)   # a malformed URL is an input error before connecting
        ts = inspect_target(url)
    return DbTarget.from_url(url, timescaledb=ts)


# The handlers import their work lazily: matplotlib, PyYAML and grafana-client are slow to
# import and `sewerwatch --help` needs none of them.


def _export(args: argparse.Namespace, ctx) -> int:
    from dashboards.definitions import build_all
    from dashboards.export import write

    target = _target(args, ctx, "export")
    files = write(args.dir, [d.to_json() for d in build_all(timescaledb=target.timescaledb)], target,
                  args.dashboards_path)
    for f in files:
        print(f)
    return 0


def _push(args: argparse.Namespace, ctx) -> int:
    from dashboards.definitions import build_all
    from dashboards.push import check_url, push

    check_url(args.url)
    token = grafana_token(args)
    target = _target(args, ctx, "push")
    dashboards = [d.to_json() for d in build_all(timescaledb=target.timescaledb)]
    for change in push(args.url, token, dashboards, None if args.no_datasource else target):
        print(change)
    return 0


def grafana_token(args) -> str:
    """The token from ``--token``, ``--token-file`` or ``$SEWERWATCH_GRAFANA_TOKEN``, in that order."""
    if args.token:
        return args.token
    if args.token_file:
        try:
            token = open(args.token_file, encoding="utf-8").read().strip()
        except OSError as exc:
            raise InputError(f"--token-file: cannot read {args.token_file} ({exc.strerror})") from None
        if not token:
            raise InputError(f"--token-file: {args.token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise InputError(f"dashboards push needs a Grafana service account token: set ${TOKEN_ENV}, "
                         "or give --token-file FILE (or --token TOKEN)")
    return token


def _preview(args: argparse.Namespace, ctx) -> int:
    from dashboards.preview import parse_time, render_all

    choices = {}
    if args.site:
        choices["site"] = args.site if len(args.site) > 1 else args.site[0]
    from foundation.moments import village_zone

    tz = village_zone(ctx.config)
    tf = parse_time(args.time_from, "--from", tz) if args.time_from else None
    tt = parse_time(args.time_to, "--to", tz) if args.time_to else None
    url = _db_url(args, ctx, "preview")
    ctx.require_schema("grafana", db_url=url)
    for f in render_all(args.dir, url, tf, tt, choices):
        print(f)
    return 0
