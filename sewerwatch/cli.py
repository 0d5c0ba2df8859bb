"""The ``sewerwatch`` command line.

Each subcommand lives with the package that owns it and is registered here. A registering
module exposes ``register(subparsers)``, which adds its parser and sets ``func``: a
handler called as ``func(args, ctx)`` with the parsed arguments and a
:class:`foundation.context.Context` (the config, connections by role, the services), and
returning an exit code. Registering modules keep their imports light; the work is imported
when the command runs, so ``--help`` and ``check`` start fast.
"""

from __future__ import annotations

import argparse
import sys

import alerts.cli
import dashboards.cli
import enforcement.cli
import enforcement.grease_cli
import fog.cli
import ingest.cli
import lab.cli
import limits.cli
import limits.pack_cli
import simulators.cli
from foundation import config as sw_config
from foundation.context import Context
from foundation.errors import NotBuiltYet, SewerwatchError, report
from sewerwatch import (__version__, cli_backup, cli_config, cli_contacts, cli_db, cli_field, cli_mail, cli_portal,
                        cli_run, cli_services, cli_web, services)

#: The registering modules, in the order ``--help`` lists their subcommands.
COMMAND_MODULES = (
    cli_services,        # services up|down|status
    cli_db,              # db migrate|status
    cli_config,          # config check
    ingest.cli,          # collect
    limits.cli,          # check
    limits.pack_cli,     # pack check|reference
    lab.cli,             # surcharge, lab, bill
    simulators.cli,      # simulate
    cli_run,             # run, status
    alerts.cli,          # alerts
    dashboards.cli,      # dashboards
    enforcement.cli,     # schedule, findings, user-reports, milestones, snc, notice, due, report
    cli_field,           # maintenance, instruments, calibrations, grab, inspections
    fog.cli,             # fog (the grease program)
    enforcement.grease_cli,  # fog notices (the grease program's enforcement)
    cli_web,             # web, users
    cli_portal,          # portal
    cli_contacts,        # contacts (the address book)
    cli_mail,            # mail batch|bounces (mailing issued documents)
    cli_backup,          # backup now|list|check|restore, export
)


def not_built(name: str, coming: str):
    """Return a handler for a subcommand whose capability is not built yet.

    Parameters
    ----------
    name : str
        The subcommand, as a person types it.
    coming : str
        A few words, in the utility's language, saying what is still to come (never a
        tracker's number: the message is read at the terminal).
    """

    def handler(args: argparse.Namespace, ctx: Context) -> int:
        raise NotBuiltYet(f"'{name}' is not built yet ({coming}); see the guide for what works today")

    handler.not_built = True
    return handler


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sewerwatch",
        description="Industrial wastewater compliance monitoring: live sensors checked "
        "against the village ordinance, lab results, surcharges, alerts and dashboards.",
    )
    parser.add_argument("--version", action="version", version=f"sewerwatch {__version__}")
    parser.add_argument(
        "--config", metavar="FILE",
        help="the utility's TOML config (default: $SEWERWATCH_CONFIG, else ./sewerwatch.toml if present)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def newest_migration() -> int:
    """The version of the newest migration in ``sewerwatch/db/migrations``."""
    from sewerwatch.db import migrate  # lazy: psycopg, which commands on files do not need

    return migrate.discover()[-1].version


def make_context(config_path: str | None = None) -> Context:
    """The context the shell hands to every handler: the config, connections (each checked
    for the schema of :func:`newest_migration`), and the embedded services brought up on
    request."""
    return Context(config_path, start_services=services.up, schema_version=newest_migration)


def database_error(exc: BaseException) -> SewerwatchError | None:
    """A psycopg error no handler expected, as the one line it means (or None).

    The safety net behind the context's schema check: a table missing later (a database
    restored without the schema, a dropped view) still says to run ``sewerwatch db
    migrate`` instead of printing a traceback.
    """
    if not type(exc).__module__.startswith("psycopg"):
        return None
    from foundation import db  # lazy: only reached when psycopg is loaded already

    return db.translate(exc)


def _config_for_packs(ctx: Context) -> None:
    """Load the config in force for its pack folders. One found by itself (``./sewerwatch.toml``)
    that cannot be read leaves them out, so a command on files alone still runs, and is named
    if a pack is then not found; one given (``--config``, ``$SEWERWATCH_CONFIG``) is an error."""
    import os

    try:
        ctx.config
    except SewerwatchError as exc:
        if ctx.config_path or os.environ.get("SEWERWATCH_CONFIG"):
            raise
        sw_config.pack_dirs_problem(str(exc))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2 if args.command is None else 0
    if args.command == "pack" and getattr(args, "action", None) == "reference":
        from sewerwatch.reference import reference_files      # the formula kinds too (lab, above limits)
        args.reference_files = reference_files
    if args.command == "fog":
        from ereport import mail                             # the portal's mail (a floor above the grease program)
        args.mail = mail
    ctx = make_context(args.config)
    # a pack named by id is looked for in the config's pack_dirs too, on every command
    # (the config loaded when a pack is first looked up, not before)
    sw_config.defer_pack_dirs(lambda: _config_for_packs(ctx))
    try:
        return int(args.func(args, ctx) or 0)
    except SewerwatchError as exc:
        return report(exc)
    except KeyboardInterrupt:
        print("sewerwatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        mapped = database_error(exc)
        if mapped is None:
            raise
        return report(mapped)
    finally:
        sw_config.defer_pack_dirs(None)
