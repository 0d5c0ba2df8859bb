"""``sewerwatch letters``: the letters the utility writes. The kinds and their templates, a
preview, issuing one, the letters issued, a letter's PDF and its DOCX, and a PDF edited
outside brought back as the issued one. The same functions as the office's Letters pages
(:mod:`enforcement.letters`); docs/office/letters.md.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from enforcement import cli_common as common
from foundation.actor import Actor


def _needs(q) -> None:
    q.add_argument("--notice", default=None, metavar="NUMBER",
                   help="a notice or an order letter: the number of the notice issued (such as NOV-2026-001)")
    q.add_argument("--month", default=None, help="a sampling reminder: the month of the samples (default: this month)")
    q.add_argument("--about", default=None, metavar="WORDS",
                   help="a warning letter or a kind of the utility's: what the letter is about (its subject line)")


def register(sub) -> None:
    p = sub.add_parser("letters", help="letters the utility writes: kinds, templates, preview, issue, PDF, DOCX",
                       description="Letters written from templates: the program's kinds (notice, order, warning "
                       "letter, sampling reminder, permit renewal reminder) and the utility's own, each a file in "
                       "the letters folder the configuration's [documents] names. A letter issued is numbered and "
                       "kept as issued; the same kind to the same user about the same subject is issued once. A "
                       "letter can be exported as DOCX, edited, and brought back as its PDF.")
    ls = p.add_subparsers(dest="letters_command", metavar="ACTION", required=True)
    q = ls.add_parser("kinds", help="the kinds of letter: the program's or the utility's, and when changed")
    common.add_json(q)
    q.set_defaults(func=_kinds)
    q = ls.add_parser("show-template", help="print the template of a kind, as in force")
    q.add_argument("kind", help="the kind, such as warning-letter")
    q.add_argument("--program", action="store_true", help="the program's own text, not the utility's")
    q.set_defaults(func=_show_template)
    q = ls.add_parser("preview", help="write a letter as it would be issued today, nothing stored")
    q.add_argument("kind", help="the kind, such as warning-letter")
    q.add_argument("--site", required=True, help="the industrial user")
    _needs(q)
    q.add_argument("--html", action="store_true", help="write the HTML instead of the PDF")
    q.add_argument("--out", default=None, metavar="FILE", help="where to write it (default: preview-KIND.pdf)")
    q.set_defaults(func=_preview)
    q = ls.add_parser("issue", help="issue a letter: numbered and kept as issued")
    q.add_argument("kind", help="the kind, such as warning-letter")
    q.add_argument("--site", required=True, help="the industrial user")
    _needs(q)
    q.add_argument("--out", default=None, metavar="FILE", help="also write its PDF here")
    common.add_json(q)
    q.set_defaults(func=_issue)
    q = ls.add_parser("list", help="the letters issued")
    common.add_site(q)
    q.add_argument("--year", type=int, default=None, help="only those issued this year")
    common.add_json(q)
    q.set_defaults(func=_list)
    for name, what in (("pdf", "write a letter's PDF (the one brought back, if any; else as issued)"),
                       ("docx", "write a letter as an editable DOCX for the word processor")):
        q = ls.add_parser(name, help=what)
        q.add_argument("number", help="the letter's number, such as LTR-2026-001")
        q.add_argument("--out", default=None, metavar="FILE", help=f"where (default: NUMBER.{name})")
        if name == "pdf":
            q.add_argument("--first", action="store_true", help="the program's PDF as first issued")
        q.set_defaults(func=_pdf if name == "pdf" else _docx)
    q = ls.add_parser("replace-pdf", help="keep a PDF edited outside as the letter's issued PDF (the first is kept)")
    q.add_argument("number", help="the letter's number, such as LTR-2026-001")
    q.add_argument("file", help="the PDF")
    q.add_argument("--note", default=None, help="what was changed")
    q.set_defaults(func=_replace)


def _today(ctx):
    return datetime.now(common.tz(ctx)).date()


def _kinds(args, ctx) -> int:
    from enforcement.letters import kinds   # lazy

    with ctx.connect("owner") as conn:
        ks = kinds(conn, ctx.config)
    if args.json:
        print(common.as_json([{"kind": t.kind, "title": t.title, "source": t.source, "version": t.version,
                               "saved_by": t.saved_by, "saved_at": t.saved_at, "changed_at": t.changed_at}
                              for t in ks]))
        return 0
    for t in ks:
        when = f", changed {t.changed_at.astimezone(common.tz(ctx)):%Y-%m-%d %H:%M}" if t.changed_at else ""
        print(f"{t.kind:28} {t.title} ({t.source_words}{when})")
    return 0


def _show_template(args, ctx) -> int:
    from foundation.errors import InputError
    from enforcement.letters import templates   # lazy

    if args.program:
        text = templates.program_text(args.kind)
        if text is None:
            raise InputError(f"the program has no letter of kind {args.kind}: it is the utility's own")
    else:
        with ctx.connect("owner") as conn:
            text = templates.template(conn, ctx.config, args.kind).text
    sys.stdout.write(text)
    return 0


def _preview(args, ctx) -> int:
    from enforcement.letters import preview   # lazy

    with ctx.connect("owner") as conn:
        p = preview(conn, ctx.config, args.kind, args.site, _today(ctx), notice=args.notice, month=args.month,
                    about=args.about)
    out = Path(args.out or f"preview-{args.kind}.{'html' if args.html else 'pdf'}")
    if args.html:
        out.write_text(p["html"], encoding="utf-8")
    else:
        out.write_bytes(p["pdf"])
    print(f"{p['title']} for {args.site} ({p['subject']}): {out}")
    return 0


def _issue(args, ctx) -> int:
    from enforcement.letters import issue, pdf   # lazy

    with ctx.connect("owner") as conn:
        lt = issue(conn, ctx.config, args.kind, args.site, _today(ctx), actor=Actor.os_user(), notice=args.notice,
                   month=args.month, about=args.about)
        conn.commit()
        data = pdf(conn, lt["id"])[1] if args.out else None
    if data is not None:
        Path(args.out).write_bytes(data)
    if args.json:
        print(common.as_json({k: v for k, v in lt.items() if k not in ("html", "context", "template_text")}))
        return 0
    print(f"{lt['number']}: {lt['title']} to {lt['site_name']}, {lt['subject']}, issued {lt['issued_on']} "
          f"by {lt['issued_by']}" + (f"; PDF: {args.out}" if args.out else ""))
    return 0


def _list(args, ctx) -> int:
    from enforcement.letters import letters   # lazy

    with ctx.connect("owner") as conn:
        rows = letters(conn, args.site, args.year)
    if args.json:
        print(common.as_json(rows))
        return 0
    if not rows:
        print("no letters issued")
    for r in rows:
        again = " (PDF brought back)" if r["replaced"] else ""
        print(f"{r['number']}  {r['issued_on']}  {r['site']:12} {r['title']}: {r['subject']}{again}")
    return 0


def _pdf(args, ctx) -> int:
    from enforcement.letters import pdf   # lazy

    with ctx.connect("owner") as conn:
        lt, data = pdf(conn, args.number, first=args.first)
    out = Path(args.out or f"{lt['number']}.pdf")
    out.write_bytes(data)
    print(out)
    return 0


def _docx(args, ctx) -> int:
    from enforcement.letters import letter
    from enforcement.letters.docx import render   # lazy

    with ctx.connect("owner") as conn:
        lt = letter(conn, args.number)
    out = Path(args.out or f"{lt['number']}.docx")
    out.write_bytes(render(lt))
    print(out)
    return 0


def _replace(args, ctx) -> int:
    from foundation.errors import InputError
    from enforcement.letters import replace_pdf   # lazy

    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"{args.file}: no such file")
    with ctx.connect("owner") as conn:
        lt = replace_pdf(conn, args.number, path.read_bytes(), path.name, actor=Actor.os_user(), note=args.note)
        conn.commit()
    r = lt["replacements"][0]
    print(f"{lt['number']}: its PDF is now {r['filename']}, brought back by {r['replaced_by']}; "
          "the PDF first issued is kept")
    return 0
