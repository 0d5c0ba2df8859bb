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
    checked = None
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
        start_us, end_us = parse_range(args.from_, args.to)   # a bad time is an error before connecting
        with ctx.connect("owner", db_url=args.db_url) as conn:
            n_sensors, n_with_readings = _coverage(conn, args.site, start_us, end_us)
            if not n_sensors and not args.site:   # (an unknown --site is check_history's error)
                raise InputError(_no_sensors(ctx, args.db_url))
            records = check_history(args.from_, args.to, conn, pack=args.pack, sites=args.site,
                                    store=args.store, gap_multiple=args.gap_multiple,
                                    progress=not args.quiet)
        checked = (f"the readings of {n_with_readings} of {n_sensors} sensors from {args.from_} to {args.to}"
                   if n_with_readings else None)
        if not n_with_readings:
            # nothing was judged: never "no violations"
            print(f"check: nothing checked: no readings from {args.from_} to {args.to} "
                  f"for the {n_sensors} sensors in the database", file=sys.stderr)
    else:
        raise InputError("give --readings FILE.csv (with --pack) or --from/--to for the database")
    if args.json:
        sys.stdout.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    elif args.readings or checked:
        print_table(records, sys.stdout, checked)
    return 0


def _coverage(conn, sites, start_us: int, end_us: int) -> tuple[int, int]:
    """Sensors (of ``sites``, default all) in the database, and how many have a reading in
    ``[start_us, end_us)`` (each an index probe on ``(sensor_id, time)``)."""
    from datetime import datetime, timezone

    a, b = (datetime.fromtimestamp(x / 1e6, timezone.utc) for x in (start_us, end_us))
    return conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = se.id "
        "AND r.time >= %s AND r.time < %s)) "
        "FROM sensors se JOIN sites si ON si.id = se.site_id "
        "WHERE (%s::text[] IS NULL OR si.key = ANY(%s::text[]))", (a, b, sites, sites)).fetchone()


def _no_sensors(ctx, db_url) -> str:
    if db_url or ctx.has_config:
        return ("check: the database has no sensors to check; 'sewerwatch db migrate' writes the "
                "config's sites and sensors, 'sewerwatch collect' or 'run' their readings")
    from foundation.context import config_search_note

    return ("check: the database has no sensors and there is no config to take them from "
            f"({config_search_note()}); pass --config FILE, then 'sewerwatch db migrate'")


def check_file(pack_name: str, path: str, gap_multiple: float | None = None) -> list[dict]:
    """Violations in a readings CSV (the records of :func:`limits.evaluator.violations`)."""

    # lazy: pyarrow takes about 0.1 s to import, which --help and the database mode do not need
    from limits.csvio import read_readings_csv

    pack = load_pack(pack_name)
    tab = read_readings_csv(path)
    s, t, v, q = prepare(tab.sensor, tab.time, tab.value, tab.quality)
    eps = evaluate(pack, s, t, v, q, meta=tab.meta,
                   gap_multiple=gap_multiple or DEFAULT_GAP_MULTIPLE)
    recs = violations(eps, pack, pack, tab.meta)
    recs.sort(key=lambda r: (r["site"], r["parameter"], r["start"], r["rule"]))
    return recs


def print_table(records: list[dict], out, checked: str | None = None) -> None:
    """A readable table of violations (``checked``: what was judged, for the empty case)."""
    if not records:
        out.write(f"no violations in {checked}\n" if checked else "no violations\n")
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
