"""CLI: ``sewerwatch rates import|list|show``: the rates the bills use, kept in the database
with their effective dates and versions (:mod:`lab.store.rates`; the office's Rates page
calls the same functions).

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
import json
from datetime import date

from foundation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "rates", help="the rates the bills use: versions with the day each takes effect",
        description="The rates of the bills (surcharge rates per pound, charges per 1,000 gallons, unit rents, "
        "residential equivalents, volumes where a meter gives none) kept as versions, each in effect from a day. "
        "A new version never changes an earlier one; a quarter's bills use the version in effect on its first day.")
    rs = p.add_subparsers(dest="rates_command", metavar="ACTION", required=True)
    q = rs.add_parser("import", help="save a rates file (TOML, the format of bill --rates) as the next version")
    q.add_argument("file", metavar="FILE.toml")
    q.add_argument("--effective", required=True, metavar="DATE",
                   help="the day the rates take effect (e.g. 2027-01-01)")
    q.add_argument("--note", default=None, help="why (a board resolution, the year's rates), kept with the version")
    q.set_defaults(func=_import)
    q = rs.add_parser("list", help="every version, newest first, and the one in effect today")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = rs.add_parser("show", help="one version's rates (default: the one in effect today)")
    q.add_argument("version", type=int, nargs="?", default=None, help="its number (rates list)")
    q.add_argument("--on", default=None, metavar="DATE", help="the version in effect on this day instead")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_show)


def _day(text: str | None, what: str) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2027-01-01, got {text!r}") from None


def _today(ctx) -> date:
    from lab.permit_cli import day

    return day(ctx, None, "today")


def _import(args: argparse.Namespace, ctx) -> int:
    from pathlib import Path

    from foundation.actor import Actor
    from lab.store import rates

    effective = _day(args.effective, "--effective")
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{args.file}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{args.file}: not UTF-8 text: a rates file is TOML") from None
    with ctx.connect("owner") as conn:
        v = rates.save_version(conn, text, effective, source=path.name, actor=Actor.os_user(), note=args.note)
    print(f"saved {rates.label(v)} (from {path.name})")
    return 0


def _plain(v: dict) -> dict:
    return {k: v[k] for k in ("version", "effective", "source", "note", "saved_by", "saved_at", "rates")}


def _list(args: argparse.Namespace, ctx) -> int:
    from lab.store import rates

    with ctx.connect("owner") as conn:
        vs = rates.versions(conn)
        now = rates.in_effect(conn, _today(ctx))
    if args.json:
        print(json.dumps([{**_plain(v), "in_effect": now is not None and v["version"] == now["version"]} for v in vs],
                         indent=2, default=str))
        return 0
    if not vs:
        print("no rates stored (sewerwatch rates import FILE.toml --effective DATE)")
        return 0
    for v in vs:
        mark = "  in effect today" if now is not None and v["version"] == now["version"] else ""
        print(f"version {v['version']:<4} in effect from {v['effective']}  saved {v['saved_at']:%Y-%m-%d %H:%M} by "
              f"{v['saved_by']} from {v['source']}" + (f" ({v['note']})" if v["note"] else "") + mark)
    return 0


def _show(args: argparse.Namespace, ctx) -> int:
    from lab.store import rates

    on = _day(args.on, "--on")
    with ctx.connect("owner") as conn:
        if args.version is not None:
            v = rates.version(conn, args.version)
        else:
            day = on or _today(ctx)
            v = rates.in_effect(conn, day)
            if v is None:
                raise InputError(f"no rates in effect on {day} (sewerwatch rates list shows the versions)")
    if args.json:
        print(json.dumps(_plain(v), indent=2, default=str))
        return 0
    print(f"{rates.label(v)}: saved {v['saved_at']:%Y-%m-%d %H:%M} by {v['saved_by']} from {v['source']}"
          + (f" ({v['note']})" if v["note"] else ""))
    print(v["rates_text"].rstrip("\n"))
    return 0
