"""CLI: ``sewerwatch dashboards export|push|preview``."""

from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("dashboards", help="export, preview and push the Grafana dashboards",
                       description="The Grafana dashboards (Overview, Site, Lab and loadings, "
                       "Sensor health), generated from the rule packs.")
    dsub = p.add_subparsers(dest="dashboards_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])

    e = dsub.add_parser("export", help="write the dashboard JSON and Grafana provisioning files",
                        description="Write DIR/dashboards/*.json, DIR/provisioning/datasources/"
                        "sewerwatch.yaml (PostgreSQL, timescaledb: true), DIR/provisioning/dashboards/"
                        "sewerwatch.yaml (a file provider) and DIR/grafana.env (the data source password).")
    e.add_argument("dir", metavar="DIR")
    e.add_argument("--db-url", help="the database as the read-only grafana role "
                   "(default: the configured or embedded database)")
    e.add_argument("--dashboards-path", help="where Grafana will read the dashboard files "
                   "(default: DIR/dashboards, absolute)")
    e.set_defaults(func=_export)

    u = dsub.add_parser("push", help="create or update the folder, data source and dashboards on a Grafana server",
                        description="Idempotent: objects equal to what sewerwatch generates are left alone.")
    u.add_argument("--url", required=True, help="Grafana's base URL, e.g. http://127.0.0.1:3000")
    u.add_argument("--token", required=True, help="a Grafana service account token (Editor or Admin)")
    u.add_argument("--db-url", help="the database as Grafana should reach it, as the grafana role "
                   "(default: the configured or embedded database)")
    u.add_argument("--no-datasource", action="store_true", help="leave the data source alone")
    u.set_defaults(func=_push)

    v = dsub.add_parser("preview", help="render every panel from the database to PNG (matplotlib)",
                        description="Runs each panel's SQL, expanded as Grafana expands it, as the "
                        "grafana role and draws it: DIR/<dashboard>.png, one image per dashboard.")
    v.add_argument("dir", metavar="DIR")
    v.add_argument("--db-url", help="the database (default: the configured or embedded one, grafana role)")
    v.add_argument("--from", dest="time_from", help="range start, ISO-8601 (default: each dashboard's own range)")
    v.add_argument("--to", dest="time_to", help="range end, ISO-8601 (default: now)")
    v.add_argument("--site", action="append", help="the site variable's value (repeat for several)")
    v.set_defaults(func=_preview)


def _db_url(args, ctx) -> str:
    return args.db_url or ctx.endpoints().db("grafana")


# The handlers import their work lazily: matplotlib, PyYAML and grafana-client are slow to
# import and `sewerwatch --help` needs none of them.


def _export(args: argparse.Namespace, ctx) -> int:
    from dashboards.definitions import build_all
    from dashboards.export import DbTarget, write

    target = DbTarget.from_url(_db_url(args, ctx))
    files = write(args.dir, [d.to_json() for d in build_all()], target, args.dashboards_path)
    for f in files:
        print(f)
    return 0


def _push(args: argparse.Namespace, ctx) -> int:
    from dashboards.definitions import build_all
    from dashboards.export import DbTarget
    from dashboards.push import check_url, push

    check_url(args.url)
    target = None if args.no_datasource else DbTarget.from_url(_db_url(args, ctx))
    for change in push(args.url, args.token, [d.to_json() for d in build_all()], target):
        print(change)
    return 0


def _preview(args: argparse.Namespace, ctx) -> int:
    from dashboards.preview import parse_time, render_all

    choices = {}
    if args.site:
        choices["site"] = args.site if len(args.site) > 1 else args.site[0]
    tf = parse_time(args.time_from, "--from") if args.time_from else None
    tt = parse_time(args.time_to, "--to") if args.time_to else None
    url = _db_url(args, ctx)
    ctx.require_schema("grafana", db_url=url)
    for f in render_all(args.dir, url, tf, tt, choices):
        print(f)
    return 0
