"""CLI: ``sewerwatch check`` (registered by :mod:`sewerwatch.cli`).

Two modes:

``sewerwatch check --pack PACK --readings FILE.csv [--json]``
    the promised interface: a long-format CSV in, violations out (a JSON array with
    ``--json``, else a table); needs no config, database or service.
``sewerwatch check --from T --to T [--pack PACK] [--site SITE] [--store] [--json]``
    re-evaluates the history in the database (each site by its own pack unless ``--pack``
    is given), reading with binary COPY; ``--store`` writes the violations into the
    ``violations`` table.
"""

from __future__ import annotations

import json
import sys

from foundation.errors import InputError
from limits.csvio import read_readings_csv
from limits.evaluator import DEFAULT_GAP_MULTIPLE, evaluate, prepare, violations
from limits.packs import load_pack


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="check readings against a village's ordinance limits",
        description="Check readings (a CSV, or a time range of the database) against the "
        "continuous rules of a rule pack (pH, temperature, slug) and list the violations.")
    p.add_argument("--pack", metavar="PACK", help="rule pack id (e.g. palmyra-wi) or a pack TOML file; "
                   "required with --readings")
    p.add_argument("--readings", metavar="FILE.csv",
                   help="CSV with header time,site,parameter,value,unit")
    p.add_argument("--from", dest="from_", metavar="TIME", help="re-evaluate the database from TIME (ISO-8601)")
    p.add_argument("--to", metavar="TIME", help="... up to TIME (exclusive, ISO-8601)")
    p.add_argument("--site", action="append", metavar="SITE", help="database mode: only this site (repeatable)")
    p.add_argument("--store", action="store_true", help="database mode: store the violations found")
    p.add_argument("--db-url", metavar="URL", help="database mode: PostgreSQL URL (default: the configured one)")
    p.add_argument("--gap-multiple", type=float, default=None, metavar="K",
                   help="a gap longer than K sample intervals ends an episode (default 3)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args, ctx) -> int:


    if args.gap_multiple is not None and not args.gap_multiple > 0:
        raise InputError(f"--gap-multiple: expected a positive number, got {args.gap_multiple}")
    if args.readings and (args.from_ or args.to):
        raise InputError("give either --readings FILE or --from/--to, not both")
    if args.readings:
        if not args.pack:
            raise InputError("--pack is required with --readings")
        records = check_file(args.pack, args.readings, args.gap_multiple)
    elif args.from_ or args.to:
        if not (args.from_ and args.to):
            raise InputError("database mode needs both --from and --to")
        # lazy: the database mode needs psycopg, which the file mode does not
        from limits.history import check_history, parse_range
        parse_range(args.from_, args.to)   # a bad time is an error before connecting
        with ctx.connect("owner", db_url=args.db_url) as conn:
            records = check_history(args.from_, args.to, conn, pack=args.pack, sites=args.site,
                                    store=args.store, gap_multiple=args.gap_multiple,
                                    progress=not args.quiet)
    else:
        raise InputError("give --readings FILE.csv (with --pack) or --from/--to for the database")
    if args.json:
        sys.stdout.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    else:
        print_table(records, sys.stdout)
    return 0


def check_file(pack_name: str, path: str, gap_multiple: float | None = None) -> list[dict]:
    """Violations in a readings CSV (the records of :func:`limits.evaluator.violations`)."""

    pack = load_pack(pack_name)
    tab = read_readings_csv(path)
    s, t, v, q = prepare(tab.sensor, tab.time, tab.value, tab.quality)
    eps = evaluate(pack, s, t, v, q, meta=tab.meta,
                   gap_multiple=gap_multiple or DEFAULT_GAP_MULTIPLE)
    recs = violations(eps, pack, pack, tab.meta)
    recs.sort(key=lambda r: (r["site"], r["parameter"], r["start"], r["rule"]))
    return recs


def print_table(records: list[dict], out) -> None:
    """A readable table of violations."""
    if not records:
        out.write("no violations\n")
        return
    cols = [("site", "site"), ("sensor", "sensor"), ("rule", "rule"), ("start", "start (UTC)"),
            ("end", "end (UTC)"), ("peak", "peak"), ("limit", "limit"), ("unit", "unit"),
            ("days_of_violation", "days"), ("citation", "citation")]
    rows = []
    for r in records:
        row = []
        for key, _ in cols:
            x = r.get(key, "")
            row.append(f"{x:.4g}" if isinstance(x, float) else str(x))
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, (_, h) in enumerate(cols)]
    out.write("  ".join(h.ljust(w) for (_, h), w in zip(cols, widths)).rstrip() + "\n")
    for row in rows:
        out.write("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() + "\n")
    out.write(f"{len(records)} violation(s)\n")
