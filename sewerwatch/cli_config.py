"""CLI: ``sewerwatch config check``."""

from __future__ import annotations

from foundation import config
from foundation.errors import InputError
from ingest.modbus.options import Options as ModbusOptions


def register(sub) -> None:
    p = sub.add_parser("config", help="validate the utility's config file")
    csub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = csub.add_parser("check", help="validate the config and summarise it")
    c.add_argument("file", nargs="?", help="the config file (default: --config, $SEWERWATCH_CONFIG, ./sewerwatch.toml)")
    c.set_defaults(func=_check)


def _check(args, ctx) -> int:
    cfg = config.load(args.file) if args.file else ctx.require_config("config check", "a file to check")
    ModbusOptions.from_config(cfg)   # the collector validates its own [modbus] settings
    # lazy: the documents' and enforcement's checks import WeasyPrint's caller and the guide
    from enforcement.guide import load_guide
    from enforcement.settings import settings
    from lab.documents.pdf import letterhead

    from foundation.config import find_pack
    from limits.pack_cli import check_pack

    problems = [line for pack in dict.fromkeys([cfg.pack, *(s.pack for s in cfg.sites)])
                for line in check_pack(find_pack(pack, cfg.pack_dirs))]
    if problems:                     # the utility's packs: every problem, one line each
        for line in problems:
            print(line)
        raise InputError(f"{cfg.path}: the rule pack{'s' if len(set(s.pack for s in cfg.sites) | {cfg.pack}) > 1 else ''} "
                         f"of the utility {'have' if len(problems) > 1 else 'has'} {len(problems)} problem"
                         f"{'s' * (len(problems) != 1)} (listed above)")
    head = letterhead(cfg)           # [documents]
    st = settings(cfg)               # [enforcement]
    guide = load_guide(st.guide)
    print(f"{cfg.path}: {cfg.name}, pack {cfg.pack}")
    print(f"  {len(cfg.sites)} sites, {len(cfg.devices)} Modbus devices, {len(cfg.sensors)} sensors, "
          f"{len(cfg.contacts)} alert contacts")
    for s in cfg.sites:
        n = sum(1 for x in cfg.sensors if x.site == s.id)
        print(f"  {s.id:16} {s.name} (SIC {s.sic or '-'}, permit {s.permit or '-'}, pack {s.pack}): {n} sensors")
    print(f"  documents: {head.village}" + (f", {len(head.lines)} letterhead lines" if head.lines else "")
          + (f", signed by {head.signed_by}" if head.signed_by else ""))
    print(f"  enforcement: {guide.name} ({st.guide}), accidental-discharge reports due in "
          f"{st.accidental_report_hours:g} h, SNC periods {st.snc_periods}")
    print(f"  readings: daily maximum {st.readings.daily_maximum}, days of an average {st.readings.average_days}, "
          f"a late report in the SNC period it became late ({st.late_report_period})"
          if st.late_report_period == "late" else
          f"  readings: daily maximum {st.readings.daily_maximum}, days of an average {st.readings.average_days}, "
          f"a late report in the SNC period of its due date ({st.late_report_period})")
    return _print_mqtt_access(cfg)


def _print_mqtt_access(cfg) -> int:
    """The collector's subscriptions and, per site, the subscription each of its topics
    reaches the collector by; exit 2 naming what would vanish."""
    from foundation.errors import InputError
    from sewerwatch import services

    acc = services.mqtt_access(cfg)
    reads = acc["collector_reads"]
    print(f"  mqtt: the collector subscribes to {', '.join(acc['subscriptions'])}"
          + ("" if reads is None else " (each readable under the embedded broker's ACL)" if all(reads.values())
             else "") + ("" if not cfg.services.mqtt_url else
                         " (your broker: give the collector's account read on each)"))
    for site, covered in acc["sites"].items():
        print(f"    site {site} publishes to " + ", ".join(f"{t} (via {f})" for t, f in covered.items()))
    if acc["acl_stale"]:
        print("    (the embedded broker's ACL on disk is from another config: 'sewerwatch services up' or 'run' "
              "writes this one)")
    if acc["sparkplug_host"]:
        print(f"    Sparkplug primary host: run, STATE on {acc['sparkplug_host']}")
    if acc["problems"]:
        raise InputError(f"{cfg.path}: mqtt: {acc['problems'][0]}"
                         + (f" (and {len(acc['problems']) - 1} more)" if len(acc["problems"]) > 1 else ""))
    return 0
