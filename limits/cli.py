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
from dataclasses import replace

import numpy as np

from foundation.errors import InputError
from foundation import moments
from foundation.moments import HELP
from limits.days import by_site_and_rule
from limits.evaluator import DEFAULT_GAP_MULTIPLE, evaluate, prepare, slug_not_judged, violations
from limits.packs import load_pack
from limits.permits import continuous, load_permit, site_rules


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="check readings against a village's ordinance limits",
        description="Check readings (a CSV, or a time range of the database) against the "
        "continuous rules of a rule pack (pH, temperature, slug) and list the violations.")
    p.add_argument("--pack", metavar="PACK", help="rule pack id (e.g. palmyra-wi) or a pack TOML file; "
                   "required with --readings")
    p.add_argument("--readings", metavar="FILE.csv",
                   help="CSV with header time,site,parameter,value,unit")
    p.add_argument("--from", dest="from_", metavar="WHEN",
                   help="re-evaluate the database from WHEN, a date or an ISO-8601 time (" + HELP + ")")
    p.add_argument("--to", metavar="WHEN", help="... up to WHEN (exclusive; a date, or a time)")
    p.add_argument("--site", action="append", metavar="SITE", help="database mode: only this site (repeatable)")
    p.add_argument("--store", action="store_true", help="database mode: store the violations found")
    p.add_argument("--db-url", metavar="URL", help="database mode: PostgreSQL URL (default: the configured one)")
    p.add_argument("--gap-multiple", type=float, default=None, metavar="K",
                   help="a gap longer than K sample intervals ends an episode (default 3)")
    p.add_argument("--permit", action="append", metavar="FILE.toml",
                   help="with --readings: a site's discharge permit (repeatable): its limits judged with the "
                   "pack's, the stricter applying; its average daily flow the slug baseline before 24 hours "
                   "of readings")
    p.add_argument("--windows", metavar="FILE.csv",
                   help="with --readings: maintenance windows, header site,parameter,start,end,reason,person (their "
                   "readings are not judged; a quality column of 3 marks them too)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args, ctx) -> int:
    checked = None
    notes: list[dict] = []
    if args.gap_multiple is not None and not args.gap_multiple > 0:
        raise InputError(f"--gap-multiple: expected a positive number, got {args.gap_multiple}")
    if args.readings and (args.from_ or args.to):
        raise InputError("give either --readings FILE or --from/--to, not both")
    if args.readings:
        if not args.pack:
            raise InputError("--pack is required with --readings")
        records, notes = check_file(args.pack, args.readings, args.gap_multiple, args.permit or (), args.windows)
    elif args.from_ or args.to:
        if not (args.from_ and args.to):
            raise InputError("database mode needs both --from and --to")
        # lazy: the database mode needs psycopg, which the file mode does not
        from limits.history import check_history, parse_range
        tz = moments.village_zone(ctx.config)
        start_us, end_us = parse_range(args.from_, args.to, tz)   # a bad time is an error before connecting
        with ctx.connect("owner", db_url=args.db_url) as conn:
            n_sensors, n_with_readings = _coverage(conn, args.site, start_us, end_us)
            if not n_sensors and not args.site:   # (an unknown --site is check_history's error)
                raise InputError(_no_sensors(ctx, args.db_url))
            records = check_history(args.from_, args.to, conn, pack=args.pack, sites=args.site,
                                    store=args.store, gap_multiple=args.gap_multiple,
                                    progress=not args.quiet, notes=notes, tz=tz)
        add_site_rule_days(records)
        checked = (f"the readings of {n_with_readings} of {n_sensors} sensors from {args.from_} to {args.to}"
                   if n_with_readings else None)
        if not n_with_readings:
            # nothing was judged: never "no violations"
            print(f"check: nothing checked: no readings from {args.from_} to {args.to} "
                  f"for the {n_sensors} sensors in the database", file=sys.stderr)
    else:
        raise InputError("give --readings FILE.csv (with --pack) or --from/--to for the database")
    if args.windows and not args.readings:
        raise InputError("--windows goes with --readings (the database's windows are its own)")
    if args.json:
        sys.stdout.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
        # the array holds violations only (the promised interface); what could not be
        # judged is said on stderr
        for n in notes:
            sys.stderr.write(f"{note_line(n)}\n")
    elif args.readings or checked:
        print_table(records, sys.stdout, checked)
        print_days(records, sys.stdout)
        for n in notes:
            sys.stdout.write(f"{note_line(n)}\n")
    return 0


def note_line(n: dict) -> str:
    """``acme/flow: slug not judged: no baseline yet (from ... until ...)``, or a note's own line."""
    if "line" in n:
        return n["line"]
    return f"{n['site']}/{n['sensor']}: {n['note']} ({n['rule']}, readings from {n['from']} until {n['until']})"


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


def check_file(pack_name: str, path: str, gap_multiple: float | None = None,
               permit_files=(), windows_file: str | None = None) -> tuple[list[dict], list[dict]]:
    """Violations in a readings CSV (the records of :func:`limits.evaluator.violations`, each
    with ``site_rule_days``), and where a slug could not be judged
    (:func:`limits.evaluator.slug_not_judged`).

    ``permit_files``: discharge permits of sites in the file (:mod:`limits.permits`): a site
    with one is judged by its pack's rules merged with the permit's (the stricter applies),
    and its flow meters' slug baseline before 24 hours of readings is the permit's average
    daily flow. The notes end with a count of the readings outside the physically possible
    range (not judged), when there are any.

    ``windows_file``: maintenance windows (:mod:`limits.windows_csv`); their readings, and those
    the ``quality`` column marks 3, are not judged, and the notes list each window.
    """
    # lazy: pyarrow takes about 0.1 s to import, which --help and the database mode do not need
    from limits.csvio import read_readings_csv

    pack = load_pack(pack_name)
    permits = {}
    for f in permit_files:
        p = load_permit(f, pack)
        if p.site in permits:
            raise InputError(f"{f}: site {p.site!r} has another permit given ({permits[p.site].path})")
        permits[p.site] = p
    tab = read_readings_csv(path)
    unknown = sorted(set(permits) - {m.site for m in tab.meta.values()})
    if unknown:
        raise InputError(f"{permits[unknown[0]].path}: site {unknown[0]!r} has no readings in {path}")
    meta = {c: replace(m, normal=permits[m.site].normal_flow_gpm)
            if m.site in permits and m.parameter == "flow" else m for c, m in tab.meta.items()}
    from limits import windows_csv
    wins, wrows = windows_csv.read_windows_csv(windows_file, tab.meta) if windows_file else (None, [])
    window_notes = windows_csv.notes(tab, wins, wrows)
    quality = wins.mark(tab.sensor, tab.time, tab.quality) if wins else tab.quality
    s, t, v, q = prepare(tab.sensor, tab.time, tab.value, quality)
    recs, notes = [], []
    gm = gap_multiple or DEFAULT_GAP_MULTIPLE
    for site_permit in [None, *permits.values()]:
        # the sites judged by the pack alone, then each site with a permit by its own rules
        if site_permit is None:
            codes = [c for c, m in meta.items() if m.site not in permits]
            rules = pack.continuous_rules()
        else:
            codes = [c for c, m in meta.items() if m.site == site_permit.site]
            rules = continuous(site_rules(pack, site_permit))
        m = np.isin(s, codes)
        part = (s[m], t[m], v[m], None if q is None else q[m])
        eps = evaluate(rules, *part, meta=meta, gap_multiple=gm)
        recs += violations(eps, rules, pack, meta)
        notes += slug_not_judged(rules, *part, meta=meta)
    recs.sort(key=lambda r: (r["site"], r["parameter"], r["start"], r["rule"]))
    add_site_rule_days(recs, pack)
    implausible = implausible_summary(tab)
    if implausible:
        notes.append({"line": implausible})
    return recs, notes + window_notes


def implausible_summary(tab) -> str:
    """``N readings outside the physically possible range were not judged (site/param: n, ...)``
    ("" when there are none): such readings are counted, never left out silently."""
    if tab.implausible is None or not tab.implausible.any():
        return ""
    codes, counts = np.unique(tab.sensor[tab.implausible], return_counts=True)
    per = ", ".join(f"{tab.meta[c].site}/{tab.meta[c].parameter}: {n}" for c, n in zip(codes.tolist(), counts.tolist()))
    total = int(counts.sum())
    return (f"{total} reading{'s' if total != 1 else ''} outside the physically possible range "
            f"{'were' if total != 1 else 'was'} not judged ({per})")


def add_site_rule_days(records: list[dict], pack=None) -> None:
    """Give each record ``site_rule_days``: the distinct local days on which its site was in
    violation of its rule in the readings checked (palmyra-wi, 003_44f871d49a02d8f5.txt
    §13.60(1): "Each day a condition is allowed to exist ... shall constitute a new
    violation"; two episodes on one day are one day). Each record's pack gives the days'
    time zone."""
    by_pack: dict[str, list[dict]] = {}
    for r in records:
        by_pack.setdefault(r["pack"], []).append(r)
    for pid, recs in by_pack.items():
        tz = (pack if pack is not None and pack.id == pid else load_pack(pid)).tz
        days = {(d["site"], d["rule"]): d["days"] for d in by_site_and_rule(recs, tz)}
        for r in recs:
            r["site_rule_days"] = days[(r["site"], r["rule"])]


def print_days(records: list[dict], out) -> None:
    """Distinct days of violation per site and rule, after the table."""
    seen = {}
    for r in records:
        seen[(r["site"], r["rule"])] = (r["site_rule_days"], r["citation"])
    for (site, rule), (days, citation) in sorted(seen.items()):
        out.write(f"{site} {rule}: {days} day(s) of violation ({citation}; each day a new violation)\n")


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
