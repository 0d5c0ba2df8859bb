"""CLI of field work: ``sewerwatch maintenance``, ``instruments``, ``calibrations``,
``grab`` and ``inspections``. In the shell because recording a calibration or an inspection
stores its findings too (:mod:`enforcement.fieldwork`, the floor above :mod:`field`).

Each handler is ``func(args, ctx)`` and acts as the operating-system user
(:meth:`foundation.actor.Actor.os_user`): the same package functions the office calls with
the signed-in account. Imports of the work are inside the handlers (``--help`` stays fast).
"""

from __future__ import annotations

import json
import sys
from datetime import date

from foundation.display import local_time, num
from foundation.errors import InputError


def _json(x) -> str:
    return json.dumps(x, indent=2, default=lambda o: o.isoformat() if hasattr(o, "isoformat") else str(o))


def _tz(ctx) -> str:
    cfg = ctx.config
    if cfg.timezone:
        return cfg.timezone
    from limits.packs import load_pack
    return load_pack(cfg.pack).timezone


def _when(t, tz: str) -> str:
    return local_time(t, tz) if t is not None else "-"


def _day(text: str | None, what: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected a date such as 2026-07-31, got {text!r}") from None


def _since(text: str | None, what: str):
    from field.common import parse_time
    if not text:
        return None
    if len(text) == 10:
        from datetime import datetime, timezone
        d = _day(text, what)
        return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
    return parse_time(text, what)


def register(sub) -> None:
    # --- maintenance windows ---
    p = sub.add_parser("maintenance", help="maintenance windows: readings of an instrument being calibrated or cleaned",
                       description="Maintenance windows: while an instrument is calibrated, cleaned or "
                       "repaired its readings are stored with their own quality code (3) and never judged, summed "
                       "into a volume or a slug's baseline. A window has a reason and a person; one reaching back "
                       "over readings already judged waits for a second person's approval.")
    ms = p.add_subparsers(dest="maintenance_command", metavar="ACTION", required=True)
    q = ms.add_parser("start", help="open a window on a sensor or a whole site")
    q.add_argument("scope", metavar="SITE[/SENSOR]", help="a site (every sensor of it) or one sensor, e.g. candy/ph")
    q.add_argument("--sensor", action="append", default=[], help="another sensor of the site (repeatable)")
    q.add_argument("--reason", required=True, help="why: calibration, cleaning, repair, ...")
    q.add_argument("--person", help="who does the work (default: you)")
    q.add_argument("--at", help="when it began, ISO-8601 with offset (default: now)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_maint_start)
    q = ms.add_parser("end", help="end an open window")
    q.add_argument("id", type=int)
    q.add_argument("--at", help="when it ended, ISO-8601 with offset (default: now)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_maint_end)
    q = ms.add_parser("list", help="the windows of a period (every one without --since)")
    q.add_argument("--since", help="ISO date or time")
    q.add_argument("--until", help="ISO date or time (exclusive)")
    q.add_argument("--site")
    q.add_argument("--open", action="store_true", help="only those still open")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_maint_list)
    for name, what in (("approve", "approve a window opened after the fact (a second person)"),
                       ("reject", "reject a window opened after the fact: it excludes nothing")):
        q = ms.add_parser(name, help=what)
        q.add_argument("id", type=int)
        q.add_argument("--note")
        q.set_defaults(func=_maint_decide, approve=name == "approve")

    # --- instruments ---
    p = sub.add_parser("instruments", help="the instrument register: make, model, serial, owner, calibration interval",
                       description="Each sensor's instrument (make, model, serial number, range, installed date, "
                       "owner: the utility or the industrial user), its calibration interval (the shortest of the "
                       "permit's, the ordinance's, the instrument's and the configuration's interval) and its history.")
    ins = p.add_subparsers(dest="instruments_command", metavar="ACTION", required=True)
    q = ins.add_parser("list", help="every sensor with its instrument and calibration interval")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_ins_list)
    q = ins.add_parser("show", help="one sensor: its instrument, history, calibrations, windows and grab checks")
    q.add_argument("sensor", metavar="SITE/SENSOR")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_ins_show)
    q = ins.add_parser("set", help="record the instrument at a sensor (another serial number: a new instrument)")
    q.add_argument("sensor", metavar="SITE/SENSOR")
    q.add_argument("--make")
    q.add_argument("--model")
    q.add_argument("--serial")
    q.add_argument("--range", metavar="LOW:HIGH", help="what it measures [the sensor's unit]")
    q.add_argument("--owner", choices=("utility", "industrial-user"))
    q.add_argument("--installed", help="ISO date")
    q.add_argument("--every", type=int, metavar="DAYS", help="its calibration interval [days]")
    q.add_argument("--note")
    q.set_defaults(func=_ins_set)

    # --- calibrations ---
    p = sub.add_parser("calibrations", help="calibration records: buffers, as-found and as-left, pass or fail",
                       description="Calibrations and verifications: a pH probe's buffers with as-found and "
                       "as-left readings, slope and offset; a flow meter against a reference (percent difference); a "
                       "temperature probe against a reference thermometer. Judged pass or fail against [field]'s "
                       "tolerances; a failed or overdue one is a finding and an alert.")
    cs = p.add_subparsers(dest="calibrations_command", metavar="ACTION", required=True)
    q = cs.add_parser("record", help="record a calibration")
    q.add_argument("sensor", metavar="SITE/SENSOR")
    q.add_argument("--buffer", action="append", default=[], metavar="VALUE:AS_FOUND:AS_LEFT",
                   help="a pH buffer, e.g. 4.00:4.12:4.01 (repeatable)")
    q.add_argument("--slope", type=float, help="electrode slope [%% of Nernstian]")
    q.add_argument("--offset", type=float, help="electrode offset [mV]")
    q.add_argument("--temperature", type=float, help="buffer temperature [--temperature-unit]")
    q.add_argument("--temperature-unit", default="degF", choices=("degF", "degC"))
    q.add_argument("--reference", type=float, help="flow or temperature: the reference's reading")
    q.add_argument("--meter", type=float, help="flow or temperature: the instrument's reading")
    q.add_argument("--technician", help="who did it (default: you)")
    q.add_argument("--at", help="when, ISO-8601 with offset (default: now)")
    q.add_argument("--window", type=int, help="the maintenance window it was done in")
    q.add_argument("--note")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_cal_record)
    q = cs.add_parser("list", help="calibrations of a period")
    q.add_argument("--since")
    q.add_argument("--until")
    q.add_argument("--site")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_cal_list)
    q = cs.add_parser("due", help="each instrument's due date: ok, due soon, overdue, failed")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_cal_due)

    # --- grab readings ---
    p = sub.add_parser("grab", help="an inspector's grab pH or temperature, compared with the live sensor",
                       description="A grab pH or temperature taken at a control manhole: compared with the "
                       "live sensor at that time; beyond the drift the configuration allows for pH or temperature the sensor is "
                       "drifting (an alert with both numbers). Lab grab samples' pH are compared the same way.")
    gs = p.add_subparsers(dest="grab_command", metavar="ACTION", required=True)
    q = gs.add_parser("record", help="record a grab reading")
    q.add_argument("--site", required=True)
    q.add_argument("--parameter", required=True, choices=("ph", "temperature"))
    q.add_argument("--value", required=True, type=float)
    q.add_argument("--unit", help="pH, degF or degC (default: pH, degF)")
    q.add_argument("--at", help="when it was taken, ISO-8601 with offset (default: now)")
    q.add_argument("--note")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_grab_record)
    q = gs.add_parser("list", help="grab samples compared with the sensors (and compare those not yet)")
    q.add_argument("--since")
    q.add_argument("--site")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_grab_list)

    # --- inspections ---
    p = sub.add_parser("inspections", help="inspections of industrial users: checklist, findings, photos",
                       description="Visits to industrial users (40 CFR 403.8(f)(2)(v), counted in the annual "
                       "report under 403.12(i)): the checklist of the pack or [[field.checklist]], findings, the "
                       "representative, photos. A deficient item is a finding.")
    ns = p.add_subparsers(dest="inspections_command", metavar="ACTION", required=True)
    q = ns.add_parser("checklist", help="the numbered items to check at a site")
    q.add_argument("--site", required=True)
    q.set_defaults(func=_insp_checklist)
    q = ns.add_parser("record", help="record a visit")
    q.add_argument("--site", required=True)
    q.add_argument("--item", action="append", default=[], metavar="N=ANSWER[:NOTE]",
                   help="checklist item N (inspections checklist) ok, deficient or n/a, e.g. '2=deficient:no records "
                   "since March' (repeatable; items not given are n/a)")
    q.add_argument("--kind", default="routine", choices=("routine", "demand", "follow-up", "complaint"))
    q.add_argument("--sampled", action="store_true", help="samples were taken at the visit")
    q.add_argument("--representative", help="the industrial user's representative present")
    q.add_argument("--inspector", help="who inspected (default: you)")
    q.add_argument("--findings", help="what was found, in words")
    q.add_argument("--ph", type=float, help="a grab pH taken at the control manhole")
    q.add_argument("--temperature", type=float, help="a grab temperature [degF]")
    q.add_argument("--photo", action="append", default=[], metavar="FILE", help="a photo (JPEG, PNG; repeatable)")
    q.add_argument("--at", help="when, ISO-8601 with offset (default: now)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_insp_record)
    q = ns.add_parser("list", help="visits of a period")
    q.add_argument("--since")
    q.add_argument("--until")
    q.add_argument("--site")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_insp_list)
    q = ns.add_parser("photo", help="write an inspection's photo to a file")
    q.add_argument("id", type=int, help="the photo's id (inspections list shows them)")
    q.add_argument("--out", required=True)
    q.set_defaults(func=_insp_photo)


def _actor():
    from foundation.actor import Actor
    return Actor.os_user()


# --- maintenance --------------------------------------------------------------------------

def _window_line(w: dict, tz: str) -> str:
    end = _when(w["end"], tz) if w["end"] else "OPEN"
    state = "" if w["approval"] == "not-needed" else f" [{w['approval'].upper()}" + (
        f" by {w['approved_by']}]" if w["approved_by"] else "]")
    return (f"{w['id']:>5}  {w['scope']:<28} {_when(w['start'], tz)} to {end}  {w['reason']} ({w['person']}, "
            f"{w['source']}){state}")


def _maint_start(args, ctx) -> int:
    from field import windows
    from field.common import parse_time
    site, _, sensor = args.scope.partition("/")
    sensors = ([sensor] if sensor else []) + list(args.sensor)
    with ctx.connect("owner") as conn:
        made = windows.open_window(conn, site, sensors, reason=args.reason, actor=_actor(),
                                   start=parse_time(args.at, "--at"), person=args.person,
                                   settings=windows.Settings.of(ctx.config))
    if args.json:
        print(_json([windows.as_json(w) for w in made]))
        return 0
    tz = _tz(ctx)
    for w in made:
        print(f"opened maintenance window {w['id']}: {w['scope']} from {_when(w['start'], tz)} ({w['reason']}, "
              f"{w['person']})")
        if w["approval"] == "pending":
            print(f"  it reaches back over {w['judged_readings']} readings already judged: until a second person "
                  f"approves it (sewerwatch maintenance approve {w['id']}) it excludes nothing")
    return 0


def _maint_end(args, ctx) -> int:
    from field import windows
    from field.common import parse_time
    with ctx.connect("owner") as conn:
        w = windows.close_window(conn, args.id, actor=_actor(), end=parse_time(args.at, "--at"))
    if args.json:
        print(_json(windows.as_json(w)))
        return 0
    print(f"ended maintenance window {w['id']}: {w['scope']} {_when(w['start'], _tz(ctx))} to {_when(w['end'], _tz(ctx))}")
    return 0


def _maint_list(args, ctx) -> int:
    from field import windows
    with ctx.connect("owner") as conn:
        ws = windows.list_windows(conn, _since(args.since, "--since"), _since(args.until, "--until"), args.site,
                                  args.open)
    if args.json:
        print(_json([windows.as_json(w) for w in ws]))
        return 0
    tz = _tz(ctx)
    for w in ws:
        print(_window_line(w, tz))
    print(f"{len(ws)} window(s)" + (f", {sum(w['approval'] == 'pending' for w in ws)} awaiting approval"
                                    if any(w["approval"] == "pending" for w in ws) else ""))
    return 0


def _maint_decide(args, ctx) -> int:
    from field import windows
    with ctx.connect("owner") as conn:
        fn = windows.approve if args.approve else windows.reject
        w = fn(conn, args.id, actor=_actor(), note=args.note)
    print(f"maintenance window {w['id']} ({w['scope']}) {w['approval']} by {w['approved_by']}")
    return 0


# --- instruments --------------------------------------------------------------------------

def _ins_list(args, ctx) -> int:
    from field import instruments
    with ctx.connect("owner") as conn:
        reg = instruments.register(conn, ctx.config)
    if args.json:
        print(_json([{"sensor": e["sensor"].key, "parameter": e["sensor"].parameter, "instrument": e["instrument"],
                      "interval": None if e["interval"] is None else e["interval"].__dict__} for e in reg]))
        return 0
    for e in reg:
        s, i, iv = e["sensor"], e["instrument"], e["interval"]
        what = (" ".join(x for x in (i.get("make"), i.get("model")) if x) or "instrument") + \
            (f", serial {i['serial']}" if i.get("serial") else "") + f", owner {i['owner']}" if i else "no instrument recorded"
        every = f"calibrated every {iv.days} days ({iv.citation})" if iv else "no calibration interval"
        print(f"{s.key:<24} {s.parameter:<12} {what}; {every}")
    return 0


def _ins_show(args, ctx) -> int:
    from field import calibrations, drift, instruments, windows
    from field.common import sensor
    tz = _tz(ctx)
    with ctx.connect("owner") as conn:
        s = sensor(conn, args.sensor)
        hist = instruments.history(conn, s.id)
        cals = calibrations.list_calibrations(conn, sensor_id=s.id)
        ws = [w for w in windows.list_windows(conn, site=s.site) if w["sensor_id"] in (None, s.id)]
        gs = drift.checks(conn, sensor_id=s.id)
    if args.json:
        print(_json({"sensor": s.key, "instruments": hist, "calibrations": cals,
                     "windows": [windows.as_json(w) for w in ws], "grab_checks": gs}))
        return 0
    print(f"{s.key} ({s.parameter}, {s.unit})")
    for i in hist:
        print(f"  instrument {i['id']}: {i.get('make') or ''} {i.get('model') or ''} serial {i.get('serial') or '-'}, "
              f"owner {i['owner']}, installed {i.get('installed') or '-'}"
              + (f", removed {i['removed']}" if i.get("removed") else " (current)"))
    for c in cals:
        print(f"  {_when(c['performed_at'], tz)}  {calibrations.line(c)}")
    for w in ws:
        print("  " + _window_line(w, tz))
    for g in gs:
        print(f"  {_when(g['taken_at'], tz)}  grab check: {g['detail']}")
    return 0


def _ins_set(args, ctx) -> int:
    from field import instruments
    values = {"make": args.make, "model": args.model, "serial": args.serial, "owner": args.owner,
              "installed": _day(args.installed, "--installed"), "calibration_interval_days": args.every,
              "note": args.note}
    if args.range:
        lo, _, hi = args.range.partition(":")
        try:
            values["range_low"], values["range_high"] = float(lo), float(hi)
        except ValueError:
            raise InputError(f"--range: expected LOW:HIGH numbers, got {args.range!r}") from None
    with ctx.connect("owner") as conn:
        row = instruments.set_instrument(conn, args.sensor, {k: v for k, v in values.items() if v is not None},
                                         actor=_actor())
    print(f"{args.sensor}: instrument {row['id']} ({row.get('make') or ''} {row.get('model') or ''} serial "
          f"{row.get('serial') or '-'}, owner {row['owner']})")
    return 0


# --- calibrations -------------------------------------------------------------------------

def _cal_record(args, ctx) -> int:
    from enforcement import fieldwork
    from field import calibrations
    from field.common import parse_time
    buffers = [calibrations.parse_buffer(b) for b in args.buffer]
    with ctx.connect("owner") as conn:
        c = fieldwork.record_calibration(
            conn, args.sensor, actor=_actor(), cfg=ctx.config, technician=args.technician,
            performed_at=parse_time(args.at, "--at"), buffers=buffers, slope_pct=args.slope, offset_mv=args.offset,
            temperature=args.temperature, temperature_unit=args.temperature_unit, reference=args.reference,
            meter=args.meter, window_id=args.window, note=args.note)
    if args.json:
        print(_json(c))
        return 0 if c["result"] == "pass" else 1
    print(f"calibration {c['id']}: {calibrations.line(c)}")
    if c.get("finding_id"):
        print(f"  a finding: {c['finding_id']} (sewerwatch notice draft --finding {c['finding_id']})")
    return 0 if c["result"] == "pass" else 1


def _cal_list(args, ctx) -> int:
    from field import calibrations
    with ctx.connect("owner") as conn:
        cs = calibrations.list_calibrations(conn, _since(args.since, "--since"), _since(args.until, "--until"),
                                            args.site)
    if args.json:
        print(_json(cs))
        return 0
    tz = _tz(ctx)
    for c in cs:
        print(f"{c['id']:>5}  {_when(c['performed_at'], tz)}  {calibrations.line(c)}")
    print(f"{len(cs)} calibration(s), {sum(c['result'] == 'fail' for c in cs)} failed")
    return 0


def _cal_due(args, ctx) -> int:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from field import calibrations
    today = datetime.now(ZoneInfo(_tz(ctx))).date()
    with ctx.connect("owner") as conn:
        due = calibrations.schedule(conn, today, ctx.config)
    if args.json:
        print(_json([d.as_json() for d in due]))
        return 0
    for d in due:
        print(f"{d.state.upper():<10} {d.site}/{d.sensor:<12} due {d.due_on} (every {d.interval.days} days, "
              f"{d.interval.citation}; last passed {d.last_pass.date() if d.last_pass else 'never'})")
    if not due:
        print("no instrument has a calibration interval (instruments set SITE/SENSOR --every DAYS, [field] "
              "calibration_days, the permit or the ordinance give one)")
    return 0


# --- grab ---------------------------------------------------------------------------------

def _grab_record(args, ctx) -> int:
    from field import drift
    from field.common import parse_time
    with ctx.connect("owner") as conn:
        r = drift.record_field_reading(conn, args.site, args.parameter, args.value, args.unit, actor=_actor(),
                                       taken_at=parse_time(args.at, "--at"), note=args.note)
    if args.json:
        print(_json(r))
        return 0
    print(f"field reading {r['id']}: {args.site} {drift.WORDS[args.parameter]} {num(r['value'])} at "
          f"{_when(r['taken_at'], _tz(ctx))}; compared with the sensor once its readings around it are in "
          "(sewerwatch grab list, or sewerwatch run)")
    return 0


def _grab_list(args, ctx) -> int:
    from field import drift
    with ctx.connect("owner") as conn:
        with conn.transaction():
            drift.check_new(conn, ctx.config)
        gs = drift.checks(conn, _since(args.since, "--since"), None, args.site)
    if args.json:
        print(_json(gs))
        return 0
    tz = _tz(ctx)
    for g in gs:
        print(f"{'DRIFT' if g['drifted'] else 'ok':<6} {_when(g['taken_at'], tz)}  {g['site']}/{g['sensor']}: "
              f"{g['detail']}")
    print(f"{len(gs)} grab sample(s) compared, {sum(bool(g['drifted']) for g in gs)} beyond the tolerance")
    return 0


# --- inspections --------------------------------------------------------------------------

def _insp_checklist(args, ctx) -> int:
    from field import inspections
    with ctx.connect("owner") as conn:
        items = inspections.checklist(conn, args.site, ctx.config)
    for n, c in enumerate(items, start=1):
        print(f"{n:>3}. {c['item']}" + (f" ({c['citation']})" if c["citation"] else ""))
    return 0


def _insp_record(args, ctx) -> int:
    from pathlib import Path

    from enforcement import fieldwork
    from field import inspections
    from field.common import parse_time
    photos = []
    for f in args.photo:
        try:
            photos.append((Path(f).read_bytes(), None))
        except OSError as exc:
            raise InputError(f"--photo {f}: cannot read it ({exc.strerror or exc})") from None
    with ctx.connect("owner") as conn:
        items = inspections.checklist(conn, args.site, ctx.config)
        answers = []
        for spec in args.item:
            n, _, rest = spec.partition("=")
            ans, _, note = rest.partition(":")
            if not n.strip().isdigit() or not 1 <= int(n) <= len(items):
                raise InputError(f"--item {spec!r}: N is the item's number, 1 to {len(items)} "
                                 f"(sewerwatch inspections checklist --site {args.site})")
            answers.append({"item": items[int(n) - 1]["item"], "answer": ans.strip(), "note": note.strip()})
        readings = {k: v for k, v in (("ph", args.ph), ("temperature", args.temperature)) if v is not None}
        ins = fieldwork.record_inspection(conn, args.site, actor=_actor(), cfg=ctx.config, answers=answers,
                                          visited_at=parse_time(args.at, "--at"), inspector=args.inspector,
                                          representative=args.representative, kind=args.kind, sampled=args.sampled,
                                          findings=args.findings, readings=readings, photo_files=photos)
    if args.json:
        print(_json(ins))
        return 0
    print(f"inspection {ins['id']} of {ins['site_name']} ({_when(ins['visited_at'], _tz(ctx))}): "
          f"{len(ins['deficient'])} deficient item(s), {len(ins['photos'])} photo(s)"
          + (f"; findings {', '.join(map(str, ins['findings_recorded']))}" if ins.get("findings_recorded") else ""))
    return 0


def _insp_list(args, ctx) -> int:
    from field import inspections
    with ctx.connect("owner") as conn:
        ins = inspections.list_inspections(conn, _since(args.since, "--since"), _since(args.until, "--until"),
                                           args.site)
    if args.json:
        print(_json(ins))
        return 0
    tz = _tz(ctx)
    for i in ins:
        print(f"{i['id']:>5}  {_when(i['visited_at'], tz)}  {i['site_name']}: {i['kind']} by {i['inspector']}"
              + (", sampled" if i["sampled"] else "") + f"; {len(i['deficient'])} deficient, photos "
              + (", ".join(str(p["id"]) for p in i["photos"]) or "none"))
    print(f"{len(ins)} inspection(s)")
    return 0


def _insp_photo(args, ctx) -> int:
    from pathlib import Path

    from field import inspections
    with ctx.connect("owner") as conn:
        p = inspections.photo(conn, args.id)
    Path(args.out).write_bytes(p["content"])
    print(f"wrote {args.out} ({p['media_type']}, {len(p['content'])} bytes)", file=sys.stderr)
    return 0
