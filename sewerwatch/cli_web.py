"""CLI: ``sewerwatch web`` (the office alone) and ``sewerwatch users ...`` (its accounts).

``users`` calls the account functions of :mod:`identity.accounts` with the operating-system
user as the actor, as the office calls them with the signed-in account. A password is never
an argument: it is asked twice on a terminal, or read as one line from standard input with
``--password-stdin`` (provisioning scripts).
"""

from __future__ import annotations

import getpass
import json
import logging
import sys

from foundation.errors import InputError

ROLES = ("superintendent", "coordinator", "clerk", "inspector", "viewer")


def register(sub) -> None:
    p = sub.add_parser("web", help="serve the office (the web application) alone: no collectors, no evaluator")
    p.add_argument("--bind", help="override [web] bind")
    p.add_argument("--port", type=int, help="override [web] port")
    p.set_defaults(func=_web)

    p = sub.add_parser("users", help="the office's accounts: add, list, disable, enable, reset-password, role, totp")
    s = p.add_subparsers(dest="users_command", metavar="ACTION")
    q = s.add_parser("add", help="add an account (the password is asked, or read with --password-stdin)")
    q.add_argument("username")
    q.add_argument("--name", required=True, help="the person's name, as records show it")
    q.add_argument("--role", required=True, choices=ROLES)
    q.add_argument("--password-stdin", action="store_true", help="read the password as one line from standard input")
    q.set_defaults(func=_add)
    q = s.add_parser("list", help="every account with its role and state")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    for name, helptext in (("disable", "disable an account: it cannot sign in; its sessions end at their next request"),
                           ("enable", "enable an account again (also unlocks it)")):
        q = s.add_parser(name, help=helptext)
        q.add_argument("username")
        q.set_defaults(func=_state, action=name)
    q = s.add_parser("reset-password", help="a new password (asked, or --password-stdin); the sessions end")
    q.add_argument("username")
    q.add_argument("--password-stdin", action="store_true")
    q.set_defaults(func=_reset)
    q = s.add_parser("role", help="change an account's role (its sessions end)")
    q.add_argument("username")
    q.add_argument("role", choices=ROLES)
    q.set_defaults(func=_role)
    q = s.add_parser("totp", help="turn the TOTP second factor on or off (roles that can issue notices)")
    q.add_argument("username")
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--on", action="store_true", help="a new secret: prints the otpauth:// URI for the app")
    g.add_argument("--off", action="store_true")
    q.set_defaults(func=_totp)
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])


def _password(args, username: str) -> str:
    from identity.accounts import check_password

    if args.password_stdin:
        line = sys.stdin.readline()
        if not line:
            raise InputError("users: --password-stdin: nothing on standard input (one line: the password)")
        password = line.rstrip("\r\n")
    else:
        if not sys.stdin.isatty():
            raise InputError("users: no terminal to ask the password on; give it as one line on standard input "
                             "with --password-stdin")
        password = getpass.getpass(f"password for {username}: ")
        if getpass.getpass("the same again: ") != password:
            raise InputError("users: the two passwords differ; nothing was changed")
    check_password(password, username)
    return password


def _actor():
    from foundation.actor import Actor
    return Actor.os_user()


def _add(args, ctx) -> int:
    from identity import accounts

    password = _password(args, args.username)
    with ctx.connect("owner") as conn:
        acc = accounts.add(conn, args.username, args.name, args.role, password, actor=_actor())
    print(f"account {acc.username} ({acc.full_name}) added as {acc.role}")
    return 0


def _list(args, ctx) -> int:
    from identity import accounts
    from identity.roles import ROLE_WORDS

    with ctx.connect("owner") as conn:
        accs = accounts.list_accounts(conn)
    if args.json:
        print(json.dumps([a.summary() for a in accs], default=str))
        return 0
    if not accs:
        print("no accounts yet ('sewerwatch users add NAME --name \"...\" --role superintendent')")
        return 0
    from datetime import datetime, timezone
    now = datetime.now(timezone.utc)
    for a in accs:
        state = "DISABLED" if a.disabled_at else ("LOCKED until " + a.locked_until.isoformat(timespec="minutes")
                                                   if a.locked(now) else "active")
        print(f"{a.username:<16} {a.role or a.kind:<15} {state:<10} {'totp ' if a.totp else '':<5}{a.full_name}"
              f"  (last sign-in {a.last_login_at:%Y-%m-%d %H:%M})" if a.last_login_at else
              f"{a.username:<16} {a.role or a.kind:<15} {state:<10} {'totp ' if a.totp else '':<5}{a.full_name}"
              "  (never signed in)")
    print("roles: " + "; ".join(f"{r}: {w}" for r, w in ROLE_WORDS.items()))
    return 0


def _state(args, ctx) -> int:
    from identity import accounts

    with ctx.connect("owner") as conn:
        fn = accounts.disable if args.action == "disable" else accounts.enable
        acc = fn(conn, args.username, actor=_actor())
    print(f"account {acc.username} {args.action}d" + (": its sessions end at their next request"
                                                      if args.action == "disable" else ""))
    return 0


def _reset(args, ctx) -> int:
    from identity import accounts

    password = _password(args, args.username)
    with ctx.connect("owner") as conn:
        accounts.reset_password(conn, args.username, password, actor=_actor())
    print(f"account {args.username}: new password set; its sessions end at their next request")
    return 0


def _role(args, ctx) -> int:
    from identity import accounts

    with ctx.connect("owner") as conn:
        acc = accounts.set_role(conn, args.username, args.role, actor=_actor())
    print(f"account {acc.username} is now {acc.role}; its sessions end at their next request")
    return 0


def _totp(args, ctx) -> int:
    from identity import accounts

    with ctx.connect("owner") as conn:
        if args.off:
            accounts.totp_disable(conn, args.username, actor=_actor())
            print(f"account {args.username}: second factor off")
            return 0
        acc, uri = accounts.totp_enable(conn, args.username, actor=_actor())
    print(f"account {acc.username}: second factor on. Add it to an authenticator app with this URI (or its secret):")
    print(uri)
    return 0


def _web(args, ctx) -> int:
    """Serve the office alone until SIGTERM or Ctrl-C (an office machine that only reads the
    database and acknowledges; the live pipeline runs elsewhere, or in ``run``)."""
    logging.basicConfig(level=logging.INFO, format="sewerwatch: %(name)s: %(message)s", stream=sys.stderr)
    import asyncio
    import signal
    from dataclasses import replace

    from sewerwatch.office import office_server

    cfg = ctx.config
    ep = ctx.endpoints(start=True, mqtt=False)
    state = cfg.services.state_dir
    state.mkdir(parents=True, exist_ok=True)
    from foundation.config import WebOptions
    opts = cfg.web or WebOptions()
    if args.bind:
        opts = replace(opts, bind=args.bind)
    if args.port is not None:
        opts = replace(opts, port=args.port)
    cfg = replace(cfg, web=opts)
    server = office_server(cfg, ep.db("owner"), state, status_source=None)

    class Beat:
        def beat(self):
            pass

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        task = asyncio.create_task(server.serve(Beat(), stop))
        while server.listening is None and not task.done():
            await asyncio.sleep(0.05)
        if server.listening:
            print(f"web: the office on {server.listening} (SIGTERM or Ctrl-C stops)", file=sys.stderr, flush=True)
        await task

    try:
        asyncio.run(main())
    except OSError as exc:
        raise InputError(f"web: cannot listen on {opts.bind}:{opts.port}: {exc.strerror or exc}") from None
    print("web: stopped", file=sys.stderr, flush=True)
    return 0
