"""CLI: ``sewerwatch services up|down|status|credentials``."""

from __future__ import annotations

import json
import sys

from foundation.endpoints import hide_password
from sewerwatch import services


def register(sub) -> None:
    p = sub.add_parser("services", help="start, stop or show the embedded TimescaleDB and Mosquitto")
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ssub.add_parser("up", help="start the embedded services (harmless when they run)").set_defaults(func=_up)
    ssub.add_parser("down", help="stop the embedded services; their data stays").set_defaults(func=_down)
    st = ssub.add_parser("status", help="the services in use, their URLs and state")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.add_argument("--show-secrets", action="store_true",
                    help="show the URLs with their passwords (for integrators and tools; otherwise ***)")
    st.set_defaults(func=_status)
    cr = ssub.add_parser("credentials", help="the broker account of one site's devices (for the integrator)")
    cr.add_argument("site", help="the site id (the config's [[sites]] id)")
    cr.add_argument("--json", action="store_true", help="print JSON")
    cr.set_defaults(func=_credentials)


def _log(msg: str) -> None:
    print(f"sewerwatch: {msg}", file=sys.stderr)


def _up(args, ctx) -> int:
    ep = services.up(ctx.config, log=_log)
    print(f"database: {_hide(ep.db_url)}")
    print(f"broker:   {_hide(ep.mqtt_url)}")
    print("(credentials: 'sewerwatch services status --json')")
    return 0


def _down(args, ctx) -> int:
    services.down(ctx.config, log=_log)
    return 0


def _status(args, ctx) -> int:
    st = services.status(ctx.config, show_secrets=args.show_secrets)
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    for name, label in (("timescaledb", "database"), ("mosquitto", "broker")):
        s = st[name]
        if not s["embedded"]:
            print(f"{label:12} configured  {_hide(s['url'])}")
        else:
            state = f"running (pid {s['pid']})" if s["running"] else "stopped"
            print(f"{label:12} embedded    {state}, 127.0.0.1:{s['port']}")
        if name == "timescaledb" and "server" in s:
            srv = s["server"]
            if srv is None:
                print(f"{'':12} server not reachable")
                continue
            print(f"{'':12} {srv['name']}")
            for x in srv["lost"]:
                print(f"{'':12}   without: {x}")
    print(f"{'state':12} {st['state_dir']}")
    return 0


def _credentials(args, ctx) -> int:
    cred = services.site_credentials(ctx.config, args.site)
    if args.json:
        print(json.dumps(cred, indent=2))
        return 0
    print(f"site:    {cred['site']}")
    print(f"broker:  {cred['mqtt_url']}")
    print(f"topics:  {', '.join(cred['topics'])}  (publish only; anything else is refused)")
    if cred["reads"]:
        print(f"reads:   {', '.join(cred['reads'])}  (its Sparkplug edge nodes' commands, the primary host's STATE)")
    print(f"client:  the broker gives the connection the id {cred['client_id']!r} (one connection per account)")
    for device, url in cred["devices"].items():
        print(f"device {device}: {url}")
    if not cred["devices"]:
        print("(a second device that connects on its own: list it in the site's mqtt_devices for an account of its own)")
    print("(run 'sewerwatch services up' after adding a site to the config: it creates the account)")
    return 0


def _hide(url: str) -> str:
    """``url`` with its password replaced by ``***``."""
    return hide_password(url)
