"""CLI: ``sewerwatch permit import|list|show|check`` (registered by :func:`lab.cli.register`),
and the findings of a check as ``lab check`` and ``permit check`` print them (:func:`print_check`).

Discharge permits as data (palmyra-wi, 003_44f871d49a02d8f5.txt §13.54; the file format is
:mod:`limits.permits`'s). ``import`` stores a permit file as a new version when it changed
(the audit log says who changed what); ``list`` shows each site's permit and where it
stands; ``show`` one permit with its limits beside the ordinance's, its monitoring and its
history; ``check`` judges the stored results, loadings and flows of a period against each
site's permit and the ordinance (the stricter applying) and says which permits have
expired or come up for renewal, or, given permit files, validates them without a database.
As in :mod:`lab.cli`, the work is imported inside the handlers.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

from foundation import moments
from foundation.errors import InputError


def village_tz(ctx):
    """The village's time zone (:func:`foundation.moments.village_zone`): the command line's
    dates are its local days."""
    return moments.village_zone(ctx.config)


def day(ctx, text: str | None, what: str) -> date:
    """A date option (:func:`foundation.moments.day`); today in the village when not given."""
    return moments.day(text, what) if text else datetime.now(village_tz(ctx)).date()


def register(sub) -> None:
    p = sub.add_parser("permit", help="industrial users' wastewater discharge permits (limits, monitoring, renewal)")
    s = p.add_subparsers(dest="permit_command", metavar="ACTION", required=True)
    q = s.add_parser("import", help="store permit files (a changed permit becomes a new version, audited)")
    q.add_argument("files", nargs="+", metavar="FILE.toml")
    q.add_argument("--actor", help="who enters it (audit log; default: $USER)")
    q.add_argument("--reason", help="why (e.g. 'renewal 2027', 'copper limit lowered')")
    q.add_argument("--expect-version", type=int, metavar="N",
                   help="store only if the permit's current version is N (an edit made from version N; 0: a new "
                   "permit): otherwise refuse, naming who stored which version")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_import)
    q = s.add_parser("list", help="each site's current permit and where it stands")
    q.add_argument("--today", metavar="DATE", help="judge the terms as of this local date (default: today in "
                   "the village)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = s.add_parser("show", help="one permit (a number in the database, or a file): limits, monitoring, history")
    q.add_argument("permit", metavar="NUMBER|FILE.toml")
    q.add_argument("--today", metavar="DATE", help="judge the terms as of this local date (default: today in "
                   "the village)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_show)
    q = s.add_parser("check", help="judge a period against each site's permit, or validate permit files")
    q.add_argument("files", nargs="*", metavar="FILE.toml", help="validate these files (no database)")
    q.add_argument("--since", metavar="WHEN", help="judge the stored results, loadings and flows from this date "
                   "or time (" + moments.HELP + ")")
    q.add_argument("--until", metavar="WHEN", help="... up to this date or time, exclusive")
    q.add_argument("--today", metavar="DATE", help="judge the terms as of this local date (default: today in "
                   "the village)")
    q.add_argument("--store", action="store_true", help="store the findings in violations")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_check)


STATE_WORDS = {"in-force": "in force", "renewal-due": "term ends soon: renews automatically unless notice is given",
               "expires-soon": "ends soon (notice given or no renewal)", "expired": "EXPIRED",
               "not-yet-effective": "not yet in effect"}


def print_check(res: dict, tz, permits_needed: bool = True) -> None:
    """``lab check``'s (and ``permit check``'s) findings, one line each: the local day, the
    value and the limit stated as the ordinance or permit states it."""
    from lab.checks.compliance import day_ranges    # lazy: see the module docstring
    from lab.checks.permit import reason_words
    from limits.statements import of_violation, quantity

    for v in res["violations"]:
        day = datetime.fromisoformat(v["start"].replace("Z", "+00:00")).astimezone(tz).date()
        print(f"{v['site']:<16} {v['rule']:<18} {day} {quantity(v['peak'], v['unit'])}: the limit is "
              f"{of_violation(v)} ({v['citation']})" + (f"\n{'':<17}{v['stricter_of']}" if v.get("stricter_of") else ""))
    for x in res["incomplete"]:
        print(f"{x['site']:<16} {x['rule']:<18} {x['note']}")
    for st in res["standing"]:
        if st["state"] != "in-force":
            print(f"{st['site']:<16} permit {st['permit']}: {STATE_WORDS.get(st['state'], st['state'])} "
                  f"(term ends {st['term_end']}; {st['citation']})")
    for d in res["days_of_violation"]:
        print(f"{d['site']:<16} {d['rule']:<18} {d['days']} day(s) of violation: {day_ranges(d['dates'])}")
    if permits_needed:
        for p in res["permits"]:
            if p["required"]:
                print(f"{p['site']:<16} discharge permit required: " + "; ".join(reason_words(r) for r in p["reasons"]))
        for s in res["snc"]:
            if s["snc"]:
                kind = "chronic" if s["chronic"] else "technical review criteria"
                print(f"{s['site']:<16} significant noncompliance ({kind}) {s['parameter']} "
                      f"{s['window_start'][:10]}..{s['window_end'][:10]}")


def _import(args, ctx) -> int:
    from foundation import tomlfile               # lazy: see the module docstring
    from limits.permit_store import import_permit, permit_of_site

    with ctx.connect("owner") as conn:
        done = []
        for f in args.files:
            permit = permit_of_site(conn, tomlfile.read(f, "permit file"), str(f))
            done.append(import_permit(conn, permit, actor=args.actor, reason=args.reason,
                                      expected_version=args.expect_version))
    if args.json:
        print(json.dumps(done, indent=2, default=str))
        return 0
    for d in done:
        what = {"stored": "stored as version 1", "changed": f"changed: version {d['version']}",
                "unchanged": f"unchanged (version {d['version']})"}[d["status"]]
        print(f"{d['number']} ({d['site']}): {what}")
        for c in d["changes"]:
            print(f"  {c['key']}: {c['old']!r} -> {c['new']!r}")
    return 0


def _list(args, ctx) -> int:
    from limits.permit_store import current_permits, list_permits   # lazy
    from limits.permits import renewal

    today = day(ctx, args.today, "--today")
    with ctx.connect("owner") as conn:
        rows = list_permits(conn)
        current = {p.number: p for p in current_permits(conn).values()}
    for r in rows:
        p = current.get(r["number"])
        if p is not None:
            st = renewal(p, today)
            r.update(state=st.state, term_end=st.term_end.isoformat(), days_left=st.days_left, current=True)
        else:
            r.update(current=False)      # superseded by a later permit of the same site
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no permits stored (sewerwatch permit import FILE.toml)")
    for r in rows:
        state = STATE_WORDS.get(r.get("state"), "superseded") if r["current"] else "superseded"
        print(f"{r['site']:<16} {r['number']:<18} v{r['version']:<3} effective {r['effective']}  "
              f"term ends {r.get('term_end', r['expires'])}  {state}")
    return 0


def describe(permit, pack_id: str, today: date) -> dict:
    """One permit as ``permit show`` prints it (and the office shows it): dates, standing,
    flows, its limits beside the ordinance's (the stricter applying), monitoring, conditions."""
    from lab.ordinance import pack_of, site_rules   # lazy
    from limits.permits import renewal

    st = renewal(permit, today)
    rules = [{"rule": r.id, "kind": r.kind, "parameter": r.parameter or r.analyte, "basis": r.basis,
              "sample_type": r.sample_type, "comparison": r.comparison, "limit": r.limit_canonical,
              "unit": r.unit if r.kind == "loading-limit" else (r.canonical_unit or r.unit),
              "citation": r.citation, "applies": r.origin, "stricter_of": r.stricter_of}
             for r in site_rules(pack_id, permit) if r.origin == "permit" or r.stricter_of]
    return {"number": permit.number, "site": permit.site, "pack": pack_id, "issued": permit.issued.isoformat(),
            "effective": permit.effective.isoformat(), "expires": permit.expires.isoformat(),
            "renewal": {"term_years": permit.renewal.term_years, "automatic": permit.renewal.automatic,
                        "notice_days": permit.renewal.notice_days,
                        "notice_given": permit.renewal.notice_given.isoformat() if permit.renewal.notice_given else None,
                        "notice_reading": permit.renewal.notice_reading, "citation": permit.renewal.citation},
            "standing": {"state": st.state, "term_end": st.term_end.isoformat(),
                         "ends": st.ends.isoformat() if st.ends else None, "days_left": st.days_left,
                         "notice_by": st.notice_by.isoformat() if st.notice_by else None},
            "flow": {"average_daily_gpd": permit.average_daily_gpd, "maximum_daily_gpd": permit.maximum_daily_gpd},
            "rules": rules,
            "monitoring": [{"condition": m.condition, "parameters": list(m.parameters), "sample_type": m.sample_type,
                            "times": m.times, "per": m.per, "words": m.words} for m in permit.monitoring],
            "conditions": [{"number": c.number, "words": c.words} for c in permit.conditions],
            "code": pack_of(pack_id).code}


def _print_permit(d: dict) -> None:
    from limits.statements import stated   # lazy

    s = d["standing"]
    print(f"Permit {d['number']} — site {d['site']} ({d['pack']})")
    print(f"  issued {d['issued']}, effective {d['effective']}, term ends {s['term_end']}: "
          f"{STATE_WORDS.get(s['state'], s['state'])} ({d['renewal']['citation']})")
    f = d["flow"]
    if f["average_daily_gpd"] or f["maximum_daily_gpd"]:
        print(f"  flow: average {f['average_daily_gpd'] or 0:,.0f} gal/day, maximum {f['maximum_daily_gpd'] or 0:,.0f} gal/day")
    print("  limits (with the ordinance's, the stricter applying):")
    for r in d["rules"]:
        form = {"sample": "each", "monthly": "monthly-average", "average": "period-average",
                "weekly": "weekly-average", "rolling-30-day": "rolling-30-day",
                "daily": "daily-loading" if r["kind"] == "loading-limit" else "daily-maximum"}.get(r["basis"] or "",
                                                                                             "reading")
        said = stated(r['comparison'], r['limit'], r['unit'], form, r['parameter'], r["sample_type"])
        print(f"    {r['rule']:<18} {said}  "
              f"({r['citation']})"
              + (f"\n      {r['stricter_of']}" if r["stricter_of"] else ""))
    if d["monitoring"]:
        print("  monitoring:")
        for m in d["monitoring"]:
            how = "continuously" if m["per"] == "continuous" else f"{m['times']} a {m['per']}"
            print(f"    condition {m['condition']}: {', '.join(m['parameters'])}: {m['sample_type']}, {how}")


def _show(args, ctx) -> int:
    from limits.packs import load_pack           # lazy
    from limits.permit_store import history, versions
    from limits.permits import load_permit, parse_permit

    today = day(ctx, args.today, "--today")
    if args.permit.endswith(".toml") or Path(args.permit).is_file():
        permit = load_permit(args.permit)
        d = describe(permit, permit.pack or ctx.config.pack, today)
    else:
        with ctx.connect("owner") as conn:
            vs = versions(conn, args.permit)
            if not vs:
                raise InputError(f"permit show: no permit {args.permit!r} stored (sewerwatch permit list)")
            pack = conn.execute("SELECT pack FROM sites WHERE key = %s", (vs[-1]["site"],)).fetchone()[0]
            permit = parse_permit(vs[-1]["document"], f"permit {args.permit}", load_pack(pack))
            d = describe(permit, pack, today)
            d["versions"] = [{k: v[k] for k in ("version", "entered_by", "entered_at", "reason", "source")} for v in vs]
            d["history"] = history(conn, args.permit)
    if args.json:
        print(json.dumps(d, indent=2, default=str))
        return 0
    _print_permit(d)
    for v in d.get("versions", []):
        print(f"  version {v['version']}: {v['entered_at'][:19]} by {v['entered_by']}" + (f" ({v['reason']})" if v["reason"] else ""))
    for h in d.get("history", []):
        for c in h.get("changes", []):
            print(f"    {h['at'][:10]} {h['actor']}: {c['key']} {c['old']!r} -> {c['new']!r}")
    return 0


def _check(args, ctx) -> int:
    today = day(ctx, args.today, "--today")
    if args.files:
        from limits.permits import load_permit   # lazy
        out = []
        for f in args.files:
            p = load_permit(f)
            out.append(describe(p, p.pack or ctx.config.pack, today))
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        else:
            for d in out:
                _print_permit(d)
            print(f"{len(out)} permit file(s) valid")
        return 0
    if not (args.since and args.until):
        raise InputError("permit check: give permit files to validate, or --since and --until to judge a period")
    from lab.store.period_checks import check_db   # lazy
    from limits.readings import readings

    start, end = moments.span(args.since, args.until, village_tz(ctx))
    rd = readings(ctx.config)
    with ctx.connect("owner") as conn:
        res = check_db(conn, start, end, store=args.store, today=today, readings=rd)
    found = [v for v in res["violations"] if v.get("applies") == "permit" or v.get("stricter_of")]
    res = {"violations": found, "incomplete": res["incomplete"], "standing": res["standing"],
           "days_of_violation": res["days_of_violation"], "permits": res["permits"], "stored": res["stored"]}
    if args.json:
        print(json.dumps(res, indent=2, default=str))
        return 0
    from lab.checks.permit import reason_words   # lazy
    for st in res["standing"]:
        print(f"{st['site']:<16} permit {st['permit']}: {STATE_WORDS.get(st['state'], st['state'])} "
              f"(term ends {st['term_end']}, {st['days_left']} days; {st['citation']})")
    print_check({**res, "standing": [], "days_of_violation": [], "snc": []}, village_tz(ctx), permits_needed=False)
    held = {st["site"]: st["permit"] for st in res["standing"]}
    for p in res["permits"]:
        if p["required"]:
            has = f" (has permit {held[p['site']]})" if p["site"] in held else ": no permit on file"
            print(f"{p['site']:<16} discharge permit required{has}: "
                  + "; ".join(reason_words(r) for r in p["reasons"]))
    if not found and not res["incomplete"] and not any(p["required"] and p["site"] not in held for p in res["permits"]):
        print("no permit findings in the period")
    return 0
