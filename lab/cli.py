"""CLI: ``sewerwatch surcharge``, ``sewerwatch lab``, ``sewerwatch bill``.

Imports stay light here; the work is imported inside each handler.
"""

from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "surcharge", help="compute surcharges from lab results and volumes (no database needed)",
        description="Surcharge on high-strength waste (EPA Model No. 2, palmyra-wi §13.45(4)) from a lab "
        "CSV, the period's volume per site and the rates per pound.")
    p.add_argument("--pack", default="palmyra-wi", help="rule pack giving the normal-sewage bases (default palmyra-wi)")
    p.add_argument("--lab", required=True, metavar="FILE.csv",
                   help="lab results: sample_id,site,collected,analyte,value,unit,qualifier")
    vol = p.add_mutually_exclusive_group(required=True)
    vol.add_argument("--volume-mg", metavar="X", help="the period's volume of the one site [million gallons]")
    vol.add_argument("--volume", metavar="FILE.csv", help="volumes per site: site,volume_mg")
    p.add_argument("--rates", required=True, metavar="FILE.toml", help="bod, tss, tkn, tp in dollars per pound")
    p.add_argument("--non-detect", default=None, choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for billing (default: the rates file's "
                   "non_detect, else zero)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_surcharge)

    p = sub.add_parser("lab", help="import lab results, list them, check them")
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    q = lsub.add_parser("import", help="import a lab CSV into the database (bad rows go to dead_letters)")
    q.add_argument("file", metavar="FILE.csv")
    q.add_argument("--actor", default=None, help="who imports (audit log; default: $USER)")
    q.add_argument("--correct", action="store_true",
                   help="rows for results already stored become corrections (new versions)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_lab_import)
    q = lsub.add_parser("check", help="check stored lab results against the ordinance (FOG, cyanide, permit, SNC)")
    q.add_argument("--since", required=True, help="ISO date")
    q.add_argument("--until", required=True, help="ISO date (exclusive)")
    q.add_argument("--store", action="store_true", help="store the violations found")
    q.add_argument("--non-detect", default="dl", choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for compliance (default dl: its detection limit)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_lab_check)
    q = lsub.add_parser("list", help="list the current version of stored results")
    q.add_argument("--since", required=True, help="ISO date")
    q.add_argument("--until", required=True, help="ISO date (exclusive)")
    q.add_argument("--site", action="append", help="only this site (repeatable)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_lab_list)
    q = lsub.add_parser("composites", help="composite samples with their window's metered volume and loadings")
    q.add_argument("--since", required=True, help="ISO date")
    q.add_argument("--until", required=True, help="ISO date (exclusive)")
    q.add_argument("--relink", action="store_true", help="recompute each window's volume from the readings now stored")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_lab_composites)

    p = sub.add_parser("bill", help="produce each industrial user's quarterly bill")
    p.add_argument("--quarter", required=True, help="e.g. 2026Q1")
    p.add_argument("--rates", required=True, metavar="FILE.toml", help="surcharge rates [$/lb]")
    p.add_argument("--out", default=".", metavar="DIR", help="where the JSON and HTML bills go (default .)")
    p.add_argument("--non-detect", default=None, choices=("zero", "half", "dl"),
                   help="what a '<' result counts as for billing (default: the rates file's "
                   "non_detect, else zero)")
    p.add_argument("--json", action="store_true", help="also print the bills as JSON")
    p.set_defaults(func=_bill)


def _surcharge(args: argparse.Namespace, ctx) -> int:
    import json
    import math

    from lab.inputs import read_lab_file_strict, read_non_detect_policy, read_rates, read_volumes
    from lab.standards import normal_strength
    from lab.surcharge import surcharges
    from foundation.errors import InputError

    normal_strength(args.pack)  # an unknown pack or one without a surcharge base fails first
    rows = read_lab_file_strict(args.lab)
    rates = read_rates(args.rates)
    non_detect = args.non_detect or read_non_detect_policy(args.rates) or "zero"
    if args.volume is not None:
        volumes = read_volumes(args.volume)
        vsrc = args.volume
    else:
        try:
            volume_mg = float(args.volume_mg)
        except ValueError:
            volume_mg = float("nan")
        if not math.isfinite(volume_mg) or volume_mg < 0:
            raise InputError(f"--volume-mg: expected a volume >= 0 [million gallons], got {args.volume_mg!r}")
        sites = sorted({r.site for r in rows})
        if len(sites) != 1:
            raise InputError(f"{args.lab}: --volume-mg is for one site, the file has {len(sites)} "
                             f"({', '.join(sites) or 'none'}); use --volume FILE.csv")
        volumes, vsrc = {sites[0]: volume_mg}, "--volume-mg"
    result = surcharges(rows, volumes, rates, args.pack, non_detect,
                        lab_source=args.lab, volume_source=vsrc, rates_source=args.rates)
    if args.json:
        print(json.dumps([s.as_json() for s in result], indent=2))
    else:
        from lab.report import surcharge_table
        print(surcharge_table(result))
    return 0


def _lab_import(args: argparse.Namespace, ctx) -> int:
    import json

    from lab.store import import_cli
    report = import_cli(args, ctx)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['file']}: {report['stored']} stored, {report['corrected']} corrected, "
              f"{report['unchanged']} unchanged, "
              f"{report['bad']} bad (kept in dead_letters)")
        for b in report["bad_rows"]:
            print(f"  line {b['line']}: {b['reason']}")
    return 0


def _lab_check(args: argparse.Namespace, ctx) -> int:
    from lab.checkdb import check_cli
    return check_cli(args, ctx)


def _lab_list(args: argparse.Namespace, ctx) -> int:
    from lab.checkdb import list_cli
    return list_cli(args, ctx)


def _lab_composites(args: argparse.Namespace, ctx) -> int:
    from lab.checkdb import composites_cli
    return composites_cli(args, ctx)


def _bill(args: argparse.Namespace, ctx) -> int:
    from lab.bill import bill_cli
    return bill_cli(args, ctx)
