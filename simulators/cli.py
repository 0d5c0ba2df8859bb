"""CLI: ``sewerwatch simulate``: Modbus TCP and MQTT devices playing a scenario or a CSV."""

from __future__ import annotations

import argparse
import asyncio

from foundation.errors import InputError, SewerwatchError
from ingest import profiles
from simulators.options import add_mqtt_arguments, add_source_arguments, check_live_speed


def register(sub) -> None:
    p = sub.add_parser(
        "simulate", help="run simulated control-manhole devices (Modbus TCP, MQTT)",
        description="Run simulated control-manhole devices: a Modbus TCP server hosting every device "
        "(unit ids 1-247 per port) and one MQTT client per device, playing a scenario "
        "(simulators/scenarios/*.toml) or replaying a CSV. Prints what it serves where.")

    add_source_arguments(p)
    add_mqtt_arguments(p)
    p.add_argument("--mqtt-url", help="broker URL mqtt://user:pass@host:port (default: the running "
                   "embedded broker's device account, from `sewerwatch services status`)")
    p.add_argument("--no-modbus", action="store_true", help="do not serve Modbus TCP")
    p.add_argument("--no-mqtt", action="store_true", help="do not publish over MQTT")
    p.add_argument("--list", action="store_true", help="list the scenarios and profiles and exit")
    p.set_defaults(func=run)


def _embedded_mqtt_url(ctx) -> str:
    """The device account's broker URL, once something listens there."""
    hint = "pass --mqtt-url mqtt://user:pass@host:port, start the broker with `sewerwatch services up`, or use --no-mqtt"
    try:
        return ctx.require_broker("device", hint)
    except SewerwatchError as exc:
        raise InputError(f"no MQTT broker known ({exc})") from None


async def _serve(args) -> int:
    # lazy: the servers pull in pymodbus, paho and scipy (about 0.4 s), which --help does not need
    from simulators.modbus_server import ModbusSimulator, build_source, describe, quiet_pymodbus, run_duration
    from simulators.mqtt_publisher import MqttPublisher
    from simulators.mqtt_publisher import describe as describe_mqtt

    quiet_pymodbus()
    source, clock = build_source(args)
    sim = pub = None
    try:
        if not args.no_modbus:
            sim = ModbusSimulator(source, profiles.load(args.profile), clock, args.host, args.modbus_port, args.tick)
            await sim.start()
        if not args.no_mqtt:
            pub = MqttPublisher(source, clock, args.mqtt_url, args.mqtt_mode, args.qos, args.interval,
                                args.time_format, tick_s=args.tick, units=args.mqtt_unit or {})
            await pub.start()
        duration = run_duration(args, source)
        print(f"simulating {source.n_devices} device(s): {source.name}, speed {args.speed:g}x, "
              + ("until interrupted" if duration is None else f"for {duration:g} s")
              + f", from {started(source, clock)}", flush=True)
        if sim:
            for line in describe(sim):
                print(line, flush=True)
        if pub:
            print(describe_mqtt(pub), flush=True)
        tasks = [x.run(duration) for x in (sim, pub) if x]
        await asyncio.gather(*tasks)
    finally:
        if pub:
            await pub.stop()
        if sim:
            await sim.stop()
    if sim:
        print(f"modbus: {sim.ticks} updates, {sim.missed_ticks} missed ticks, {sim.requests} requests", flush=True)
    if pub:
        print(f"mqtt: {pub.messages} messages, {pub.readings} readings", flush=True)
    return 0


def started(source, clock) -> str:
    """Where the simulated clock begins, in the scenario's local time (UTC for a replay)."""
    import datetime as dt
    offset = getattr(getattr(source, "scenario", None), "utc_offset_s", 0.0)
    tz = dt.timezone(dt.timedelta(seconds=offset))
    return dt.datetime.fromtimestamp(clock.start + clock.offset_s, tz).isoformat(timespec="seconds")


def run(args: argparse.Namespace, ctx) -> int:
    if args.list:
        from simulators import scenarios   # lazy: scipy (see _serve)

        for name in scenarios.names():
            print(f"scenario {name}: {scenarios.load(name).description}")
        for name in profiles.names():
            print(f"profile {name}: {profiles.load(name).description}")
        return 0
    if args.no_modbus and args.no_mqtt:
        raise InputError("--no-modbus and --no-mqtt together leave nothing to simulate")
    if not args.replay:
        check_live_speed(args.speed, args.start, mqtt=not args.no_mqtt)
    if not args.no_mqtt and not args.mqtt_url:
        args.mqtt_url = _embedded_mqtt_url(ctx)
    return asyncio.run(_serve(args))
