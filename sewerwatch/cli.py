"""The ``sewerwatch`` command line.

Each subcommand lives with the package that owns it and is registered here by name. A
registering module exposes ``register(subparsers)``, which adds its parser and sets
``func`` (taking the parsed arguments and returning an exit code). Registering modules
keep their imports light; the work is imported when the command runs, so ``--help`` and
``check`` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from sewerwatch import __version__
from sewerwatch.errors import NotBuiltYet, SewerwatchError, report

#: (module that registers the subcommand(s)) in the order ``--help`` lists them.
COMMAND_MODULES = (
    "sewerwatch.cli_services",   # services up|down|status
    "sewerwatch.cli_db",         # db migrate|status
    "sewerwatch.cli_config",     # config check
    "ingest.cli",                # collect
    "limits.cli",                # check
    "lab.cli",                   # surcharge, lab, bill
    "simulators.cli",            # simulate
    "sewerwatch.cli_run",        # run, status
    "alerts.cli",                # alerts
    "dashboards.cli",            # dashboards
)


def not_built(name: str, issue: str):
    """Return a handler for a subcommand whose capability is not built yet."""

    def handler(args: argparse.Namespace) -> int:
        raise NotBuiltYet(f"'{name}' is not built yet ({issue}); see the README for what works today")

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
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2 if args.command is None else 0
    try:
        return int(args.func(args) or 0)
    except SewerwatchError as exc:
        return report(exc)
    except KeyboardInterrupt:
        print("sewerwatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
