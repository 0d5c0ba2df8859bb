"""CLI: ``sewerwatch contacts import|list|add|edit|show|address`` (the office's address book).

Each command calls :mod:`identity.contacts` (or :mod:`identity.contacts_import`) with the
operating-system user as the actor, as the office's Contacts page calls them with the
signed-in account; ``import --commit`` keeps the file and saves it once through
:mod:`identity.contacts_files`, as the office's import page does.
"""

from __future__ import annotations

import json
from pathlib import Path

from foundation.actor import Actor
from foundation.errors import InputError

_ROLES_HELP = ("one or more of representative (the authorised representative), plant-manager, billing, "
               "emergency (reached around the clock), separated by ';'")


def register(sub) -> None:
    p = sub.add_parser("contacts", help="the address book: each industrial user's people and addresses")
    s = p.add_subparsers(dest="contacts_command", metavar="ACTION")
    q = s.add_parser("import", help="read people and addresses from a CSV file: shows what it would do; "
                                    "--commit saves it, once (rows that cannot be used are kept aside with the reason; "
                                    "the same file again is refused)")
    q.add_argument("file", help="the CSV file (columns site, entry, name, title, phone, email, street, city, "
                                "state, zip)")
    q.add_argument("--commit", action="store_true", help="save it (without: only show what it would do)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_import)
    q = s.add_parser("list", help="the people of one industrial user, or of all")
    q.add_argument("--site", help="one industrial user's id")
    q.add_argument("--removed", action="store_true", help="also the people no longer contacts")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_list)
    q = s.add_parser("add", help="add a person to an industrial user's contacts")
    q.add_argument("site", help="the industrial user's id")
    q.add_argument("--name", required=True, help="the person's name")
    q.add_argument("--roles", required=True, help=_ROLES_HELP)
    q.add_argument("--title", help="the person's position, as letters address it")
    q.add_argument("--phone", help="telephone (the emergency contact's, around the clock)")
    q.add_argument("--email", help="e-mail address")
    q.set_defaults(func=_add)
    q = s.add_parser("edit", help="change a contact: a new version, the earlier one kept")
    q.add_argument("contact", type=int, help="the contact's number (contacts list)")
    q.add_argument("--name", help="the person's name")
    q.add_argument("--roles", help=_ROLES_HELP)
    q.add_argument("--title", help="the position (an empty value clears it)")
    q.add_argument("--phone", help="telephone (an empty value clears it)")
    q.add_argument("--email", help="e-mail address (an empty value clears it)")
    g = q.add_mutually_exclusive_group()
    g.add_argument("--remove", action="store_true", help="no longer a contact of the user (the record is kept)")
    g.add_argument("--restore", action="store_true", help="a contact of the user again")
    q.add_argument("--note", help="why it changed")
    q.set_defaults(func=_edit)
    q = s.add_parser("show", help="a contact with every earlier version, and its portal account if it has one")
    q.add_argument("contact", type=int, help="the contact's number")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_show)
    q = s.add_parser("address", help="set an industrial user's facility, mailing or billing address")
    q.add_argument("site", help="the industrial user's id")
    q.add_argument("kind", choices=("facility", "mailing", "billing"), help="which address")
    q.add_argument("--street", required=True, help="the street lines (two lines: separate them with '|')")
    q.add_argument("--city", required=True)
    q.add_argument("--state", required=True, help="two letters, such as WI")
    q.add_argument("--zip", required=True, dest="postal_code", help="the ZIP code")
    q.add_argument("--note", help="why it changed")
    q.set_defaults(func=_address)
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])


def _import(args, ctx) -> int:
    from foundation.moments import village_zone
    from identity import contacts_files, contacts_import

    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"contacts import: cannot read {args.file}: {exc.strerror}") from None
    with ctx.connect("owner") as conn:
        if args.commit:       # as the office's Import contacts page: kept, then saved once
            actor, tz = Actor.os_user(), village_zone(ctx.config)
            f = contacts_files.stage(conn, path.name, data, actor=actor, tz=tz)
            f = contacts_files.save(conn, f["id"], actor=actor, tz=tz)
            rep = {**f["report"], "file": f["id"]}
        else:
            rep = contacts_import.preview(conn, path.name, data)
    if args.json:
        print(json.dumps(rep, default=str))
        return 0
    verb = {"add": "added" if args.commit else "to add", "change": "changed" if args.commit else "to change",
            "unchanged": "unchanged", "dead": "not used" if args.commit else "cannot be used"}
    for r in rep["rows"]:
        print(f"line {r['line']:>4}  {verb[r['action']]:<14} {r['site']:<12} {r['entry']}"
              + (f"\n        {r['reason']}" if r["reason"] else ""))
    print(f"{rep['total']} rows: {rep['add']} {verb['add']}, {rep['change']} {verb['change']}, "
          f"{rep['unchanged']} unchanged, {rep['dead']} {verb['dead']}"
          + ("; the rows not used are kept with their reasons ('sewerwatch deadletters list', the office's "
             "Dead letters): import the corrected rows again" if args.commit and rep["dead"]
             else "" if args.commit else "; nothing saved: add --commit to save it"))
    return 0


def _line(c: dict) -> str:
    bits = [", ".join(c["role_words"])] + [x for x in (c["title"], c["phone"], c["email"]) if x]
    return f"{c['id']:>4}  {c['site']:<12} {c['full_name']}" + ("  (removed)" if c["removed"] else "") + \
        f"\n      {'; '.join(bits)}"


def _list(args, ctx) -> int:
    from identity import contacts

    with ctx.connect("owner") as conn:
        if args.site:
            contacts.site_of(conn, args.site)
        found = contacts.contacts_of(conn, args.site, removed=args.removed)
        addrs = contacts.addresses_of(conn, args.site) if args.site else {}
    if args.json:
        print(json.dumps({"contacts": found, "addresses": addrs}, default=str))
        return 0
    if not found:
        print("no contacts on file" + (f" for {args.site}" if args.site else "") +
              " (sewerwatch contacts add SITE --name ... --roles ...)")
    for c in found:
        print(_line(c))
    for kind, a in addrs.items():
        print(f"{kind} address: " + ", ".join(a["lines"]))
    return 0


def _add(args, ctx) -> int:
    from identity import contacts

    with ctx.connect("owner") as conn:
        c = contacts.add_contact(conn, args.site, {"full_name": args.name, "roles": args.roles, "title": args.title,
                                                   "phone": args.phone, "email": args.email}, actor=Actor.os_user())
    print(f"contact {c['id']} added: {c['full_name']} ({', '.join(c['role_words'])}) of {c['site_name']}")
    return 0


def _edit(args, ctx) -> int:
    from identity import contacts

    changes = {k: v for k, v in (("full_name", args.name), ("roles", args.roles), ("title", args.title),
                                 ("phone", args.phone), ("email", args.email)) if v is not None}
    remove = True if args.remove else False if args.restore else None
    with ctx.connect("owner") as conn:
        c = contacts.edit_contact(conn, args.contact, changes, actor=Actor.os_user(), note=args.note, remove=remove)
    print(f"contact {c['id']} saved as version {c['version']}: {c['full_name']}"
          + (" (removed)" if c["removed"] else "") + "; the earlier versions are kept (contacts show)")
    return 0


def _show(args, ctx) -> int:
    from identity import contacts

    with ctx.connect("owner") as conn:
        c = contacts.contact(conn, args.contact)
    if args.json:
        print(json.dumps(c, default=str))
        return 0
    print(_line(c))
    acc = c["account"]
    print(f"      portal account: {acc['username']}" + (" (revoked)" if acc["disabled_at"] else "") if acc
          else "      no portal account")
    print("history:")
    for v in c["history"]:
        print(f"  version {v['version']}, {v['recorded_at']:%Y-%m-%d %H:%M} UTC by {v['recorded_by']}"
              + (f" ({v['note']})" if v["note"] else "") + f": {v['full_name']}; {', '.join(v['role_words'])}; "
              + "; ".join(x for x in (v["title"], v["phone"], v["email"]) if x) + ("; removed" if v["removed"] else ""))
    return 0


def _address(args, ctx) -> int:
    from identity import contacts

    with ctx.connect("owner") as conn:
        a = contacts.set_address(conn, args.site, args.kind, {"street": args.street.replace("|", "\n"),
                                                              "city": args.city, "state": args.state,
                                                              "postal_code": args.postal_code},
                                 actor=Actor.os_user(), note=args.note)
    print(f"the {args.kind} address of {args.site}, version {a['version']}: " + ", ".join(a["lines"]))
    return 0
