"""CLI: ``sewerwatch portal ...``, the industrial users' portal from the command line:
invite a person (of an industrial user, or of a grease hauler), list the portal's people, revoke an account or an invitation, the review
queue, a copy of record with its hash checked again, accept and reject (the signatory told by
mail), and an accepted permit application's permit version. Each calls the function the
coordinator's pages call (:mod:`ereport.invitations`, :mod:`ereport.record`) with the
operating-system user as the actor."""

from __future__ import annotations

import json
from datetime import date

from foundation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("portal", help="the industrial users' portal: invite, people, revoke, submissions, show, "
                                      "accept, reject, permit")
    s = p.add_subparsers(dest="portal_command", metavar="ACTION")
    q = s.add_parser("invite", help="invite a person of an industrial user by e-mail (the link is mailed; an "
                                    "open invitation to the same address for the site stops working)")
    q.add_argument("site")
    q.add_argument("--email", required=True)
    q.add_argument("--name", required=True, help="the person's name")
    q.add_argument("--signatory", action="store_true", help="an authorised signatory (40 CFR 403.12(l))")
    q.add_argument("--title", help="the position the authorisation names (a signatory's)")
    q.add_argument("--agreement-on", type=date.fromisoformat, metavar="YYYY-MM-DD",
                   help="the day the signed subscriber agreement was received (a signatory's)")
    q.set_defaults(func=_invite)
    q = s.add_parser("invite-hauler", help="invite a person of a registered grease hauler by e-mail, to report its "
                                           "pump-outs (an open invitation to the same address stops working)")
    q.add_argument("hauler", help="the hauler's company or licence number")
    q.add_argument("--email", required=True)
    q.add_argument("--name", required=True, help="the person's name")
    q.set_defaults(func=_invite)
    q = s.add_parser("invite-contact", help="invite a person of the address book (sewerwatch contacts list) by "
                                            "the e-mail address on file; the account made is linked to the contact")
    q.add_argument("contact", type=int, help="the contact's number")
    q.set_defaults(func=_invite)
    q = s.add_parser("invite-establishment", help="invite a person of a grease program's establishment by e-mail, to "
                                                  "confirm or dispute the pump-outs of its devices")
    q.add_argument("establishment", metavar="LICENCE", help="its business licence number")
    q.add_argument("--email", required=True)
    q.add_argument("--name", required=True, help="the person's name")
    q.set_defaults(func=_invite)
    q = s.add_parser("people", help="the portal's accounts and invitations")
    q.add_argument("--site")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_people)
    q = s.add_parser("revoke", help="revoke a portal account (its sessions end at their next request), "
                                    "or an invitation not yet used (--invitation ID)")
    q.add_argument("username", nargs="?")
    q.add_argument("--invitation", type=int, metavar="ID", help="withdraw this invitation ('portal people' lists them)")
    q.set_defaults(func=_revoke)
    q = s.add_parser("submissions", help="what users submitted (default: awaiting review)")
    q.add_argument("--state", choices=("submitted", "accepted", "rejected", "superseded", "all"), default="submitted")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    q.set_defaults(func=_submissions)
    q = s.add_parser("show", help="a copy of record, its SHA-256 checked against the stored bytes")
    q.add_argument("number")
    q.add_argument("--document", action="store_true", help="print the exact document signed (its bytes)")
    q.set_defaults(func=_show)
    q = s.add_parser("accept", help="accept a submission (self-monitoring results enter the record and are judged)")
    q.add_argument("number")
    q.set_defaults(func=_accept)
    q = s.add_parser("reject", help="return a submission to the user with the reason")
    q.add_argument("number")
    q.add_argument("--reason", required=True)
    q.set_defaults(func=_reject)
    q = s.add_parser("permit", help="an accepted permit application: print the permit file to start from, or "
                                    "make the permit version from one (--file, through the function of 'permit import')")
    q.add_argument("number")
    q.add_argument("--file", metavar="FILE.toml", help="the permit file, edited from the one printed without --file")
    q.set_defaults(func=_permit)
    p.set_defaults(func=lambda args, ctx: (p.print_help(), 2)[1])


def _actor():
    from foundation.actor import Actor
    return Actor.os_user()


def _when(ctx, t) -> str:
    """A time as people read it: the village's clock with its zone (``foundation.display``)."""
    from foundation import moments
    from foundation.display import local_time
    return local_time(t, str(moments.village_zone(ctx.config)), seconds=False)


def _invite(args, ctx) -> int:
    from ereport.invitations import InviteLinks, invite, invite_contact, invite_establishment, invite_hauler
    from ereport.mail import Mailer
    from foundation import secrets
    from foundation.config import WebOptions

    cfg = ctx.config
    opts = cfg.web or WebOptions()
    key = secrets.load_or_create(cfg.services.state_dir)["keys"]["portal_invites"]
    links = InviteLinks(key, opts.link_base, opts.invitation_days * 86400.0)
    with ctx.connect("owner") as conn:
        if getattr(args, "contact", None) is not None:
            made = invite_contact(conn, args.contact, actor=_actor(), links=links, mailer=Mailer(opts.mail_url),
                                  utility=cfg.name)
        elif getattr(args, "establishment", None):
            made = invite_establishment(conn, args.establishment, args.email, args.name, actor=_actor(), links=links,
                                        mailer=Mailer(opts.mail_url), utility=cfg.name)
        elif getattr(args, "hauler", None):
            made = invite_hauler(conn, args.hauler, args.email, args.name, actor=_actor(), links=links,
                                 mailer=Mailer(opts.mail_url), utility=cfg.name)
        else:
            made = invite(conn, args.site, args.email, args.name, signatory=args.signatory, title=args.title,
                          subscriber_agreement_on=args.agreement_on, actor=_actor(), links=links,
                          mailer=Mailer(opts.mail_url), utility=cfg.name)
    inv, url = made.invitation, made.url
    for old in made.superseded:
        print(f"invitation {old.id} of {_when(ctx, old.invited_at)} to {old.email} no longer works: "
              f"invitation {inv.id} replaces it")
    if inv.mailed:
        print(f"invitation {inv.id} mailed to {inv.email} (works once, until {_when(ctx, inv.expires_at)})")
    else:
        print(f"invitation {inv.id} NOT mailed ({inv.mail_error}); give {inv.full_name} this link another way:\n{url}")
    return 0


def _people(args, ctx) -> int:
    from ereport.invitations import people

    with ctx.connect("owner") as conn:
        found = people(conn, args.site)
    if args.json:
        print(json.dumps({"accounts": [{**a.summary(), "site": key, "email": a.email, "signatory": a.signatory,
                                        "title": a.title} for a, key, _ in found["accounts"]]
                          + [{**a.summary(), "hauler": licence, "email": a.email} for a, licence, _ in found["haulers"]],
                          "invitations": [{"id": i.id, "site": i.site_key, "email": i.email, "name": i.full_name,
                                           "signatory": i.signatory, "state": i.state, "mailed": i.mailed}
                                          for i in found["invitations"]]
                          + [{"id": i.id, "hauler": i.hauler_licence, "email": i.email, "name": i.full_name,
                              "state": i.state, "mailed": i.mailed} for i in found["hauler_invitations"]]},
                         default=str))
        return 0
    for a, key, name in found["accounts"]:
        print(f"{a.username:<20} {key:<12} {'signatory' if a.signatory else 'preparer':<10} "
              f"{'REVOKED' if a.disabled_at else 'active':<8} {a.full_name} <{a.email}>")
    for i in found["invitations"]:
        print(f"invitation {i.id:<5} {i.site_key:<12} {i.state:<9} {i.full_name} <{i.email}>")
    for a, licence, company in found["haulers"]:
        print(f"{a.username:<20} {licence:<12} {'hauler':<10} {'REVOKED' if a.disabled_at else 'active':<8} "
              f"{a.full_name} <{a.email}> ({company})")
    for i in found["hauler_invitations"]:
        print(f"invitation {i.id:<5} {i.hauler_licence:<12} {i.state:<9} {i.full_name} <{i.email}> ({i.hauler_name})")
    if not any(found.values()):
        print("nobody yet ('sewerwatch portal invite SITE --email ... --name ...')")
    return 0


def _revoke(args, ctx) -> int:
    from ereport.invitations import revoke, revoke_invitation

    if (args.username is None) == (args.invitation is None):
        raise InputError("portal revoke: name an account (USERNAME) or an invitation (--invitation ID), one of them")
    with ctx.connect("owner") as conn:
        if args.invitation is not None:
            inv = revoke_invitation(conn, args.invitation, actor=_actor())
            print(f"invitation {inv.id} to {inv.full_name} <{inv.email}> withdrawn: its link no longer works")
            return 0
        revoke(conn, args.username, actor=_actor())
    print(f"portal account {args.username} revoked: it cannot sign in, its sessions end at their next request")
    return 0


def _submissions(args, ctx) -> int:
    from ereport import record

    states = record.STATES if args.state == "all" else (args.state,)
    with ctx.connect("owner") as conn:
        subs = record.queue(conn, states)
    if args.json:
        print(json.dumps([{"number": s.number, "site": s.site_key, "kind": s.kind, "state": s.state, "sha256": s.sha256,
                           "signer": s.signer_name, "signed_at": s.signed_at.isoformat()} for s in subs]))
        return 0
    for s in subs:
        print(f"{s.number:<14} {s.site_key:<12} {s.state:<10} {_when(ctx, s.signed_at)} {s.signer_name}: {s.title}")
    if not subs:
        print(f"no submissions {args.state}")
    return 0


def _find(conn, number: str):
    from ereport import record
    sub = record.by_number(conn, number)
    if sub is None:
        raise InputError(f"no submission {number} ('sewerwatch portal submissions --state all' lists them)")
    return sub


def _show(args, ctx) -> int:
    import sys

    from ereport import record

    with ctx.connect("owner") as conn:
        sub = _find(conn, args.number)
        if args.document:
            sys.stdout.buffer.write(record.document(conn, sub.id))
            return 0
        ok = record.verify(conn, sub.id)
        files = record.files(conn, sub.id)
        events = record.events(conn, sub.id)
    print(f"{sub.number}: {sub.title} from {sub.site_name} ({sub.site_key}), {sub.state}")
    print(f"signed by {sub.signer_name}{', ' + sub.signer_title if sub.signer_title else ''} ({sub.signer_username}, "
          f"{sub.signer_email}) at {_when(ctx, sub.signed_at)} ({sub.signed_at.isoformat()})")
    print(f"SHA-256 {sub.sha256}: {'the stored document matches it' if ok['document'] else 'DOES NOT MATCH'}")
    for f, good in zip(files, ok["files"]):
        print(f"  file {f['position']}: {f['name']} ({f['role']}, {f['size']} bytes) {f['sha256']} "
              f"{'ok' if good else 'DOES NOT MATCH'}")
    for e in events:
        print(f"  {_when(ctx, e['at'])} {e['event']} ({e['actor']}){': ' + e['reason'] if e['reason'] else ''}")
    return 0 if ok["all"] else 1


def _review(args, ctx, decision: str, reason: str | None = None):
    from ereport import record
    from ereport.mail import Mailer
    from foundation.config import WebOptions

    cfg = ctx.config
    opts = cfg.web or WebOptions()
    with ctx.connect("owner", autocommit=True) as conn:
        sub = _find(conn, args.number)
        return record.review(conn, sub.id, decision, actor=_actor(), reason=reason,
                             imports=cfg.services.state_dir / "portal-imports", mailer=Mailer(opts.mail_url),
                             utility=cfg.name)


def _told(r) -> str:
    sub = r.submission
    return (f"; the signatory was told by mail ({sub.signer_email})" if r.mail_error is None else
            f"; the signatory was NOT told by mail ({r.mail_error}): tell {sub.signer_name} another way")


def _accept(args, ctx) -> int:
    r = _review(args, ctx, "accept")
    imp = r.done.get("import")
    n = r.done.get("violations_found", 0)
    extra = (f": {imp['stored']} results stored, {n} violation{'' if n == 1 else 's'} found"
             + (f" ({', '.join(r.done['rules'])})" if r.done.get("rules") else "") if imp else "")
    print(f"{args.number} accepted{extra}{_told(r)}")
    return 0


def _reject(args, ctx) -> int:
    r = _review(args, ctx, "reject", args.reason)
    print(f"{args.number} rejected: the user sees the reason{_told(r)}")
    return 0


def _permit(args, ctx) -> int:
    from pathlib import Path

    from ereport import record

    with ctx.connect("owner", autocommit=True) as conn:
        sub = _find(conn, args.number)
        if sub.kind != "permit-application":
            raise InputError(f"{args.number} is a {sub.title.lower()}, not a permit application")
        if args.file is None:
            if sub.state != "accepted":
                raise InputError(f"{args.number} is {sub.state}: accept it first ('sewerwatch portal accept {args.number}')")
            print(record.permit_toml(conn, sub.id), end="")
            return 0
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{args.file}: cannot be read ({exc})") from None
        out = record.make_permit(conn, sub.id, text, actor=_actor())
    what = {"stored": "stored as version 1", "changed": f"version {out['version']}",
            "unchanged": f"unchanged (version {out['version']}: the file is the permit as it stands)"}[out["status"]]
    print(f"permit {out['number']} ({out['site']}) from {args.number}: {what}")
    return 0
