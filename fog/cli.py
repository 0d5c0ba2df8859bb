"""CLI: ``sewerwatch fog ...``: the grease program (establishments and their grease removal
devices, haulers, pump-outs, the findings and what is due). The office's Grease pages call
the same functions (:mod:`fog.store`, :mod:`fog.imports`, :mod:`fog.haulers`).

Each handler is ``func(args, ctx)`` and returns the exit code; the work is imported lazily.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

from foundation import moments
from foundation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "fog", help="the grease program: establishments, grease removal devices, haulers, pump-outs",
        description="The grease program: restaurants, kitchens, garages and car washes with their grease "
        "interceptors and traps, the haulers who pump them, the pump-out reports, and the findings "
        "(pumped too late, overdue, more gallons than the device holds, an unregistered hauler).")
    s = p.add_subparsers(dest="fog_command", metavar="ACTION", required=True)
    p.actions = s        # the packages above add their own (enforcement: ``fog notices``)
    q = s.add_parser("import", help="the business-licence list (CSV, one row a device): a preview unless --commit")
    q.add_argument("file", metavar="FILE.csv")
    q.add_argument("--commit", action="store_true", help="store the good rows; the rejected ones go to the dead "
                   "letters with their reasons")
    q.add_argument("--registered", metavar="DATE", help="the day the program takes the devices on (default: today)")
    q.add_argument("--actor", help="who imports it (default: $USER)")
    q.set_defaults(func=_import)
    q = s.add_parser("list", help="the establishments, overdue first")
    q.add_argument("--search", metavar="TEXT", help="only those whose name, address or licence holds TEXT")
    q.add_argument("--as-of", metavar="DATE", help="judge as of this day (default: today)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = s.add_parser("show", help="one establishment: its devices, pump-outs and findings")
    q.add_argument("licence", metavar="LICENCE", help="its business licence number")
    q.add_argument("--as-of", metavar="DATE", help="judge as of this day (default: today)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_show)
    q = s.add_parser("due", help="the devices overdue (or due soon) as of a day, most overdue first")
    q.add_argument("--as-of", metavar="DATE", help="as of this day (default: today)")
    q.add_argument("--within", type=int, default=0, metavar="DAYS", help="also those due within DAYS of it")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_due)
    q = s.add_parser("rules", help="the program's rules and the ordinance's grease sections")
    q.set_defaults(func=_rules)
    q = s.add_parser("counts", help="the year's counts for the annual report")
    q.add_argument("--year", type=int, required=True)
    q.add_argument("--as-of", metavar="DATE", help="as of this day (default: today)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_counts)

    h = s.add_parser("hauler", help="grease haulers registered with the village")
    hs = h.add_subparsers(dest="hauler_command", metavar="ACTION", required=True)
    q = hs.add_parser("add", help="register a hauler (a company or licence registered already is refused)")
    q.add_argument("company")
    q.add_argument("--licence", required=True, help="its licence number")
    q.add_argument("--actor", help="who registers it (default: $USER)")
    q.set_defaults(func=_hauler_add)
    q = hs.add_parser("list", help="the registered haulers")
    q.set_defaults(func=_hauler_list)
    q = hs.add_parser("assign", help="hire a hauler for a device: it may then report the device's pump-outs in "
                                     "the portal (assigned already is refused)")
    q.add_argument("hauler", help="the hauler's company or licence number")
    q.add_argument("--establishment", required=True, metavar="LICENCE")
    q.add_argument("--device", default="", help="the device's label (may be left out when there is one)")
    q.add_argument("--actor", help="who assigns it (default: $USER)")
    q.set_defaults(func=_hauler_assign)
    q = hs.add_parser("devices", help="the devices a hauler was hired for (assigned, or pumped by it before)")
    q.add_argument("hauler", help="the hauler's company or licence number")
    q.set_defaults(func=_hauler_devices)
    q = hs.add_parser("email", help="the hauler's office e-mail address, where its reminders go (else to its "
                                    "people in the portal)")
    q.add_argument("hauler", help="the hauler's company or licence number")
    q.add_argument("email", metavar="ADDRESS", help="one address; an empty one clears it")
    q.add_argument("--actor", help="who sets it (default: $USER)")
    q.set_defaults(func=_hauler_email)

    q = s.add_parser("contact", help="the e-mail address of an establishment's contact, where its reminders go")
    q.add_argument("licence", metavar="LICENCE", help="its business licence number")
    q.add_argument("--email", required=True, metavar="ADDRESS", help="one address; an empty one clears it")
    q.add_argument("--actor", help="who sets it (default: $USER)")
    q.set_defaults(func=_contact)
    from fog import cli_reminders
    cli_reminders.register(s)

    from fog import cli_blockages

    cli_blockages.register(s)
    from fog import cli_inspections

    cli_inspections.register(s)
    u = s.add_parser("pumpout", help="pump-out reports")
    us = u.add_subparsers(dest="pumpout_command", metavar="ACTION", required=True)
    q = us.add_parser("add", help="record one pump-out report (a manifest number recorded already is refused)")
    q.add_argument("--establishment", required=True, metavar="LICENCE")
    q.add_argument("--device", default="", help="the device's label (may be left out when there is one)")
    q.add_argument("--date", required=True, metavar="DATE", help="the day it was pumped")
    q.add_argument("--hauler", required=True, help="the hauler's company or licence number")
    q.add_argument("--gallons", required=True, help="gallons removed [gal]")
    q.add_argument("--fog-depth", required=True, metavar="INCHES", help="FOG depth before pumping [in]")
    q.add_argument("--solids-depth", required=True, metavar="INCHES", help="solids depth before pumping [in]")
    q.add_argument("--facility", required=True, help="the receiving facility")
    q.add_argument("--manifest", required=True, help="the receiving facility's manifest number")
    q.add_argument("--actor", help="who enters it (default: $USER)")
    q.set_defaults(func=_pumpout_add)
    q = us.add_parser("import", help="a hauler's pump-out CSV: a preview unless --commit")
    q.add_argument("file", metavar="FILE.csv")
    q.add_argument("--commit", action="store_true", help="store the good rows; the rejected ones go to the dead "
                   "letters with their reasons")
    q.add_argument("--actor", help="who imports it (default: $USER)")
    q.set_defaults(func=_pumpout_import)


def _actor(args):
    from foundation.actor import Actor

    return Actor(args.actor, "cli") if getattr(args, "actor", None) else Actor.os_user()


def _day(ctx, text: str | None, what: str) -> date:
    from datetime import datetime

    return moments.day(text, what) if text else datetime.now(moments.village_zone(ctx.config)).date()


def _rules_of(ctx):
    from fog.rules import for_pack

    return for_pack(ctx.config.utility.pack)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text: expected a CSV file") from None


def _print_report(rep) -> None:
    print(rep.summary())
    for line, reason, _ in rep.rejected:
        print(f"  line {line}: {reason}")


def _import(args: argparse.Namespace, ctx) -> int:
    from fog import imports

    text = _read(args.file)
    registered = _day(ctx, args.registered, "--registered")
    with ctx.connect("owner") as conn:
        rep = imports.import_establishments(conn, text, Path(args.file).name, _rules_of(ctx), _actor(args),
                                            commit=args.commit, registered_on=registered)
    _print_report(rep)
    if not args.commit:
        ests = len({d["licence"] for d in rep.good})
        print(f"  {ests} establishments, {sum(1 for d in rep.good if d['label'])} devices")
    return 0


def _finding_line(d: dict, f) -> str:
    return f"  {f.on}  {d['label']}: {f.kind}: {f.words}"


def _plain_est(e: dict) -> dict:
    return {**{k: e[k] for k in ("licence", "name", "address", "contact", "category", "segment", "overdue_days",
                                 "next_due")},
            "devices": [{**{k: d[k] for k in ("label", "kind", "capacity_gal", "liquid_depth_in", "location",
                                              "installed_on", "interval_days", "registered_on")},
                         "interval_now": d["schedule"].interval_days, "due_on": d["schedule"].due_on,
                         "pumpouts": [{k: p[k] for k in ("pumped_on", "hauler_name", "gallons", "fog_depth_in",
                                                         "solids_depth_in", "receiving_facility", "manifest")}
                                      for p in d["pumpouts"]]} for d in e["devices"]],
            "findings": [{"device": d["label"], "kind": f.kind, "on": f.on, "words": f.words, "days": f.days}
                         for d, f in e["findings"]]}


def _list(args: argparse.Namespace, ctx) -> int:
    from fog import store

    as_of = _day(ctx, args.as_of, "--as-of")
    with ctx.connect("owner") as conn:
        ests = store.establishments(conn, _rules_of(ctx), as_of, args.search)
    if args.json:
        print(json.dumps([_plain_est(e) for e in ests], indent=2, default=str))
        return 0
    if not ests:
        print("no establishments" + (f" matching {args.search!r}" if args.search else
                                     " (sewerwatch fog import FILE.csv --commit)"))
        return 0
    for e in ests:
        state = f"{e['overdue_days']} days overdue" if e["overdue_days"] else f"next due {e['next_due']}"
        print(f"{e['licence']:<12} {e['name'][:36]:<36} {e['address'][:32]:<32} {len(e['devices'])} device(s), "
              f"{len(e['findings'])} finding(s), {state}")
    return 0


def _show(args: argparse.Namespace, ctx) -> int:
    from fog import inspections, store

    as_of, rules = _day(ctx, args.as_of, "--as-of"), _rules_of(ctx)
    with ctx.connect("owner") as conn:
        e = store.establishment(conn, rules, as_of, args.licence)
        inspections.add_to(conn, rules, e, as_of)
    seen = [i for i in e["inspections"] if i["inspected_on"] <= as_of]
    if args.json:
        print(json.dumps({**_plain_est(e), "inspections": [
            {**{k: i[k] for k in ("inspected_on", "label", "baffles", "cover", "fog_depth_in", "solids_depth_in",
                                  *inspections.PRACTICES, "notes", "recorded_by")}, "share": round(i["share"], 4),
             "reached": i["reached"]} for i in seen]}, indent=2, default=str))
        return 0
    print(f"{e['name']} ({e['category']}), licence {e['licence']}, {e['address']}"
          + (f"; contact {e['contact']}" if e["contact"] else ""))
    for d in e["devices"]:
        s = d["schedule"]
        print(f"device {d['label']}: {d['kind']}, {float(d['capacity_gal']):g} gal, liquid depth "
              f"{float(d['liquid_depth_in']):g} in" + (f", {d['location']}" if d["location"] else "")
              + (f", installed {d['installed_on']}" if d["installed_on"] else "")
              + f"; pumped every {s.interval_days} days, next due {s.due_on}")
        for p in reversed(d["pumpouts"]):
            print(f"  pumped {p['pumped_on']} by {p['hauler_name']}: {float(p['gallons']):g} gal, FOG "
                  f"{float(p['fog_depth_in']):g} in, solids {float(p['solids_depth_in']):g} in, to "
                  f"{p['receiving_facility']}, manifest {p['manifest']}")
    print(f"inspections: {len(seen)}")
    for i in seen:
        print("  " + inspections.line(i))
    print(f"findings as of {as_of}: {len(e['findings'])}")
    for d, f in e["findings"]:
        print(_finding_line(d, f))
    return 0


def _due(args: argparse.Namespace, ctx) -> int:
    from fog import store

    as_of = _day(ctx, args.as_of, "--as-of")
    if args.within < 0:
        raise InputError(f"--within: expected a number of days of 0 or more, got {args.within}")
    with ctx.connect("owner") as conn:
        rows = store.due(conn, _rules_of(ctx), as_of, args.within)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    overdue = [r for r in rows if r["overdue_days"]]
    print(f"as of {as_of}: {len(overdue)} devices overdue" + (f", {len(rows) - len(overdue)} due within "
                                                               f"{args.within} days" if args.within else ""))
    for r in rows:
        state = f"{r['overdue_days']} days overdue" if r["overdue_days"] else "due"
        print(f"  {r['licence']:<12} {r['name'][:36]:<36} {r['device']:<8} due {r['due_on']}  {state}  "
              f"(every {r['interval_days']} days; last pumped {r['last_pumped'] or 'never'})")
    return 0


def _rules(args: argparse.Namespace, ctx) -> int:
    rules = _rules_of(ctx)
    print(rules.describe())
    if not rules.sections:
        print("The ordinance has no section on grease interceptors.")
    for s in rules.sections:
        print(f"\n{s.section} {s.title}:\n  \"{s.words}\"")
    return 0


def _counts(args: argparse.Namespace, ctx) -> int:
    from fog import store

    as_of = _day(ctx, args.as_of, "--as-of")
    with ctx.connect("owner") as conn:
        c = store.counts(conn, _rules_of(ctx), args.year, as_of)
    if args.json:
        print(json.dumps(c, indent=2, default=str))
        return 0
    print(f"the grease program in {c['year']} (as of {c['as_of']}): {c['establishments']} establishments, "
          f"{c['devices']} devices, {c['pumpouts']} pump-outs, {c['inspections']} inspections")
    for k, n in c["findings"].items():
        print(f"  {k}: {n}")
    print(f"grease blockages found: {c['blockages']}, {c['blockages_traced']} traced to an establishment")
    print("notices issued: " + (", ".join(f"{t}: {n}" for t, n in c["actions"].items()) or "none"))
    return 0


def _hauler_add(args: argparse.Namespace, ctx) -> int:
    from fog import store

    with ctx.connect("owner") as conn:
        h = store.add_hauler(conn, args.company, args.licence, _actor(args))
    print(f"registered {h['company']} (licence {h['licence']})")
    return 0


def _hauler_list(args: argparse.Namespace, ctx) -> int:
    from fog import store

    with ctx.connect("owner") as conn:
        hs = store.haulers(conn)
    if not hs:
        print("no haulers registered (sewerwatch fog hauler add COMPANY --licence NUMBER)")
    for h in hs:
        print(f"{h['company']} (licence {h['licence']}), registered {h['recorded_at']:%Y-%m-%d}")
    return 0


def _hauler_assign(args: argparse.Namespace, ctx) -> int:
    from fog import haulers

    with ctx.connect("owner") as conn:
        a = haulers.assign(conn, args.hauler, args.establishment, args.device, _actor(args))
    print(f"{a['hauler']} is hired for {a['establishment']} {a['device']}: it may report its pump-outs in the portal")
    return 0


def _hauler_devices(args: argparse.Namespace, ctx) -> int:
    from fog import haulers, store

    with ctx.connect("owner") as conn:
        h = store.find_hauler(conn, args.hauler)
        if h is None:
            raise InputError(f"no registered hauler {args.hauler!r} (sewerwatch fog hauler list)")
        found = haulers.devices(conn, h[0])
    if not found:
        print(f"{h[1]} is hired for no device yet (sewerwatch fog hauler assign)")
    for d in found:
        how = "assigned" if d["assigned"] else "pumped it before"
        print(f"{d['licence']} {d['name']}, {d['label']} ({d['kind']}): {how}; it last pumped it "
              f"{d['last_pumped'] or 'never'}")
    return 0


def _address(args) -> str | None:
    text = (args.email or "").strip()
    return args.mail.check_address(text) if text else None


def _contact(args: argparse.Namespace, ctx) -> int:
    from fog import reminders

    with ctx.connect("owner") as conn:
        c = reminders.set_contact_email(conn, args.licence, _address(args), _actor(args))
    print(f"{c['name']}: reminders go to {c['email']}" if c["email"] else
          f"{c['name']}: no address on record (its reminders are listed as not sent)")
    return 0


def _hauler_email(args: argparse.Namespace, ctx) -> int:
    from fog import reminders

    with ctx.connect("owner") as conn:
        h = reminders.set_hauler_email(conn, args.hauler, _address(args), _actor(args))
    print(f"{h['hauler']}: reminders go to {h['email']}" if h["email"] else
          f"{h['hauler']}: reminders go to its people in the portal")
    return 0


def _pumpout_add(args: argparse.Namespace, ctx) -> int:
    from fog import store

    rec = {"establishment": args.establishment, "device": args.device, "date": args.date, "hauler": args.hauler,
           "gallons": args.gallons, "fog_depth_in": args.fog_depth, "solids_depth_in": args.solids_depth,
           "receiving_facility": args.facility, "manifest": args.manifest}
    with ctx.connect("owner") as conn:
        p = store.add_pumpout(conn, rec, _actor(args), today=_day(ctx, None, ""))
    note = "" if p["hauler_id"] else f" ({p['hauler_name']} is not a registered hauler: a finding)"
    print(f"recorded the pump-out of {p['establishment']} {p['device']} on {p['pumped_on']}, manifest "
          f"{p['manifest']}{note}")
    return 0


def _pumpout_import(args: argparse.Namespace, ctx) -> int:
    from fog import imports

    text = _read(args.file)
    with ctx.connect("owner") as conn:
        rep = imports.import_pumpouts(conn, text, Path(args.file).name, _actor(args), commit=args.commit,
                                      today=_day(ctx, None, ""))
    _print_report(rep)
    return 0
