"""The industrial users' portal: a user's home page (what it owes and has), its
drafts with their uploads and checks, the sign page, the copy of record, corrections; and the
invitation page (public: the link is its own key).

A GET and a POST never share a path here: Litestar 2.25 registers a path's earlier handlers
again when another joins it, and a ``sync_to_thread`` handler registered twice is wrapped twice
(its page becomes a coroutine, a 500). Every route names :data:`identity.roles.PORTAL`
(accounts of kind ``industrial-user`` only) and every object is checked against the
account's site (:func:`web.authz.own`: another user's draft, upload, submission, notice or
report is "not found"). The handlers call the package
functions of :mod:`ereport`; no rule lives here. Signing is once per form
(:func:`web.forms.once`): a double click on "Sign and submit" gets the first one's receipt.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath
from litestar.response import Redirect, Template
from markupsafe import Markup

from ereport import certification, drafts, invitations, owed, record, uploads
from foundation.errors import InputError
from identity import roles
from web import authz, formats, forms

PORTAL = {authz.OPT: roles.PORTAL}
PUBLIC = {authz.OPT: roles.PUBLIC}
FORM = Annotated[dict, Body(media_type=RequestEncodingType.URL_ENCODED)]
MULTIPART = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]


#: The HTTP status of each refusal of a signature (:data:`ereport.record.REFUSALS`).
REFUSED_STATUS = {"not-found": 404, "conflict": 409, "forbidden": 403, "credentials": 401, "invalid": 400}

def _ctx(request: Request, **kw) -> dict:
    return {"account": request.state.account, "nav": kw.pop("nav", "portal"), **kw}


def _own_draft(conn, account, draft_id: int) -> drafts.Draft:
    d = drafts.get(conn, draft_id)
    authz.own(account, d.site_id if d else None, "no such draft")
    return d


def _own_submission(conn, account, submission_id: int) -> record.Submission:
    s = record.get(conn, submission_id)
    authz.own(account, s.site_id if s else None, "no such submission")
    return s


def _draft_page(request: Request, draft_id: int, *, status: int = 200, error: str | None = None,
                flash: str | None = None) -> Template:
    office, account = request.app.state.office, request.state.account

    def read(conn):
        d = _own_draft(conn, account, draft_id)
        site = owed.site_of(conn, d.site_id)
        files = drafts.files_of(conn, d)
        chk = drafts.check(conn, site, d, files)
        signers = invitations.signatories(conn, d.site_id)
        sub = record.get(conn, d.submitted_as) if d.submitted_as else None
        return d, site, chk, signers, sub
    d, site, chk, signers, sub = office.read(read)
    rows = list(d.data.get("rows") or []) if d.kind == "self-monitoring" else []
    rows += [{}] * max(0, 5 - len(rows)) if not any(u["role"] == "lab-csv" for u in d.uploads) else []
    return Template("portal_draft.html", status_code=status, context=_ctx(
        request, draft=d, site=site, check=chk, fields=drafts.FIELDS[d.kind], rows=rows, signers=signers,
        error=error, flash=flash, submitted=sub, upload_max_mb=office.opts.upload_max_mb,
        roles_of_files=[r for r in uploads.ROLES if d.kind == "self-monitoring" or r == "attachment"]))


def routes(office) -> list:
    """The portal's routes (uploads limited to ``[web] upload_max_mb``)."""
    upload_limit = int(office.opts.upload_max_mb * 1_000_000) + 256 * 1024

    @get("/portal", opt=PORTAL, sync_to_thread=True, name="portal")
    def home(request: Request) -> Template:
        office, account = request.app.state.office, request.state.account
        now = datetime.now(timezone.utc)

        def read(conn):
            site = owed.site_of(conn, account.site_id)
            return (site, owed.home(conn, site, now), record.of_site(conn, site["id"]), drafts.open_drafts(conn, site["id"]),
                    owed.renewal_open(conn, site, owed.home_day(now, site)), invitations.signatories(conn, site["id"]))
        site, data, subs, open_drafts, renewal, signers = office.read(read)
        return Template("portal_home.html", context=_ctx(request, site=site, data=data, submissions=subs,
                                                           drafts=open_drafts, renewal=renewal, signers=signers,
                                                           done=request.query_params.get("done"),
                                                           why=request.query_params.get("why")))

    @post("/portal/drafts", opt=PORTAL, sync_to_thread=True, status_code=303)
    def start(request: Request, data: FORM) -> Redirect:
        """A new draft of one kind, answering what the home page offered (a notice issued to
        the user, a report it owes, a renewal that is open)."""
        office, account = request.app.state.office, request.state.account
        kind = str(data.get("kind", ""))
        target = str(data.get("target", "") or "") or None

        def make(conn):
            from enforcement import notices, reports
            site = owed.site_of(conn, account.site_id)
            if kind not in drafts.KINDS:
                raise NotFoundException("no such kind of report")
            if target:
                what, _, ref = target.partition(":")
                answers = {"notice": ("notice-response",), "report": ("self-monitoring", "accidental-discharge"),
                           "permit": ("permit-application",)}
                if kind not in answers.get(what, ()):
                    raise NotFoundException("no such page")
                if what == "notice":
                    try:
                        n = notices.notice(conn, ref)
                    except InputError:
                        raise NotFoundException("no such notice") from None
                    authz.own(account, site["id"] if n["site"] == site["key"] and n["state"] != "drafted" else None)
                elif what == "report":
                    try:
                        r = reports.report(conn, int(ref)) if ref.isdigit() else None
                    except InputError:
                        r = None
                    authz.own(account, site["id"] if r and r["site"] == site["key"] else None, "no such report")
                    if (r["kind"] == "accidental-discharge") != (kind == "accidental-discharge"):
                        raise NotFoundException("no such report")
                elif what == "permit":
                    pv = owed.permit_view(conn, site, owed.home_day(datetime.now(timezone.utc), site))
                    authz.own(account, site["id"] if pv and pv["permit"].number == ref else None, "no such permit")
                else:
                    raise NotFoundException("no such page")
            elif kind in ("notice-response", "accidental-discharge"):
                raise NotFoundException("a response answers a notice, a §13.49 report a report owed")
            if kind == "permit-application":
                ok, why = owed.renewal_open(conn, site, owed.home_day(datetime.now(timezone.utc), site))
                if not ok:
                    raise InputError(f"Not yet: {why}.")
            prefill = {}
            if kind == "permit-application":
                prefill = {"applicant_name": site["name"], "sic": site["sic"] or ""}
            return drafts.create(conn, site["id"], account.id, kind, target, data=prefill)
        try:
            d = office.read(make)
        except InputError as exc:
            return Redirect(office.url(f"/portal?done=refused&why={_q(str(exc))}"), status_code=303)
        return Redirect(office.url(f"/portal/drafts/{d.id}"), status_code=303)

    @get("/portal/drafts/{draft_id:int}", opt=PORTAL, sync_to_thread=True)
    def draft_page(request: Request, draft_id: FromPath[int]) -> Template:
        return _draft_page(request, draft_id, flash=request.query_params.get("done"))

    @post("/portal/drafts/{draft_id:int}/save", opt=PORTAL, sync_to_thread=True, status_code=303)
    def save(request: Request, draft_id: FromPath[int], data: FORM) -> Redirect | Template:
        office, account = request.app.state.office, request.state.account

        def write(conn):
            d = _own_draft(conn, account, draft_id)
            return drafts.update(conn, d, drafts.clean_data(d.kind, data))
        try:
            office.read(write)
        except InputError as exc:
            return _draft_page(request, draft_id, status=409, error=str(exc))
        return Redirect(office.url(f"/portal/drafts/{draft_id}?done=saved"), status_code=303)

    @post("/portal/drafts/{draft_id:int}/upload", opt=PORTAL, sync_to_thread=True, status_code=303,
          request_max_body_size=upload_limit)
    def upload(request: Request, draft_id: FromPath[int], data: MULTIPART) -> Redirect | Template:
        office, account = request.app.state.office, request.state.account
        role = str(data.get("role", "") or "")
        f = data.get("file")
        if f is None or isinstance(f, str):
            return _draft_page(request, draft_id, status=400, error="Choose a file to upload.")
        content = f.file.read(upload_limit + 1)
        try:
            up = uploads.check(role, f.filename, content, int(office.opts.upload_max_mb * 1_000_000))
        except InputError as exc:
            office.read(lambda conn: _own_draft(conn, account, draft_id))
            return _draft_page(request, draft_id, status=400, error=str(exc))

        def write(conn):
            d = _own_draft(conn, account, draft_id)
            if d.kind != "self-monitoring" and up.role != "attachment":
                raise InputError("this kind of report takes attachments only")
            return drafts.add_upload(conn, d, up, account.id)
        try:
            office.read(write)
        except InputError as exc:
            return _draft_page(request, draft_id, status=400, error=str(exc))
        return Redirect(office.url(f"/portal/drafts/{draft_id}?done=uploaded"), status_code=303)

    @post("/portal/drafts/{draft_id:int}/uploads/{upload_id:int}/remove", opt=PORTAL, sync_to_thread=True,
          status_code=303)
    def remove(request: Request, draft_id: FromPath[int], upload_id: FromPath[int]) -> Redirect:
        office, account = request.app.state.office, request.state.account
        office.read(lambda conn: drafts.remove_upload(conn, _own_draft(conn, account, draft_id), upload_id))
        return Redirect(office.url(f"/portal/drafts/{draft_id}?done=removed"), status_code=303)

    @get("/portal/drafts/{draft_id:int}/uploads/{upload_id:int}", opt=PORTAL, sync_to_thread=True)
    def draft_file(request: Request, draft_id: FromPath[int], upload_id: FromPath[int]) -> Response:
        office, account = request.app.state.office, request.state.account

        def read(conn):
            _own_draft(conn, account, draft_id)
            return drafts.upload_content(conn, draft_id, upload_id)
        found = office.read(read)
        if found is None:
            raise NotFoundException("no such file")
        return _file(found[0], found[1])

    @post("/portal/drafts/{draft_id:int}/discard", opt=PORTAL, sync_to_thread=True, status_code=303)
    def discard(request: Request, draft_id: FromPath[int]) -> Redirect:
        office, account = request.app.state.office, request.state.account

        def write(conn):
            d = _own_draft(conn, account, draft_id)
            if d.submitted_as is None:
                conn.execute("DELETE FROM portal_drafts WHERE id = %s AND submitted_as IS NULL", (d.id,))
        office.read(write)
        return Redirect(office.url("/portal?done=discarded"), status_code=303)

    @get("/portal/drafts/{draft_id:int}/sign", opt=PORTAL, sync_to_thread=True)
    def sign_page(request: Request, draft_id: FromPath[int]) -> Template:
        return _sign_page(request, draft_id)

    @post("/portal/drafts/{draft_id:int}/signature", opt=PORTAL, sync_to_thread=True, status_code=303)
    def sign(request: Request, draft_id: FromPath[int], data: FORM) -> Redirect | Template:
        office, account = request.app.state.office, request.state.account
        opts = office.opts
        client = request.scope["state"].get("client", "")

        def act(conn, actor):        # the draft's owner is checked below, before the form's key
            sub = record.sign(conn, draft_id, account, str(data.get("password", ""))[:300],
                              str(data.get("code", ""))[:12], reviewed=str(data.get("reviewed", "")),
                              confirmed=data.get("certify") == "yes", client=client,
                              lockout_after=opts.lockout_after, lockout_min=opts.lockout_min,
                              utility=office.utility, letterhead=office.letterhead, tz=office.tz)
            return {"location": f"/portal/submissions/{sub.id}?done=signed", "submission": sub.id}
        office.read(lambda conn: _own_draft(conn, account, draft_id))      # another's draft: 404 before the key
        try:        # once per form: a double click gets the first one's receipt; a refusal's failure is counted
            done = forms.once(request, data, "portal.sign", act, keep=(record.SigningRefused,))
        except record.SigningRefused as exc:
            return _sign_page(request, draft_id, status=REFUSED_STATUS[exc.why], error=str(exc))
        if not done.again:
            office.read(lambda conn: record.mail_receipt(conn, record.get(conn, done.outcome["submission"]),
                                                         office.mailer, office.utility, office.tz))
        return forms.redirect(request, done)

    @get("/portal/submissions/{submission_id:int}", opt=PORTAL, sync_to_thread=True)
    def submission(request: Request, submission_id: FromPath[int]) -> Template:
        office, account = request.app.state.office, request.state.account

        def read(conn):
            s = _own_submission(conn, account, submission_id)
            return s, _doc(conn, s.id), record.files(conn, s.id), record.events(conn, s.id), record.verify(conn, s.id)
        s, doc, files, events, verified = office.read(read)
        return Template("portal_submission.html", context=_ctx(request, sub=s, doc=doc, files=files, events=events,
                                                                 verified=verified, staff=False,
                                                                 done=request.query_params.get("done"),
                                                                 again=request.query_params.get("again") == "1"))

    @get("/portal/submissions/{submission_id:int}/pdf", opt=PORTAL, sync_to_thread=True)
    def submission_pdf(request: Request, submission_id: FromPath[int]) -> Response:
        office, account = request.app.state.office, request.state.account

        def read(conn):
            s = _own_submission(conn, account, submission_id)
            return s, record.pdf(conn, s.id)
        s, body = office.read(read)
        return _file({"name": f"{s.number}.pdf", "media_type": "application/pdf"}, body)

    @get("/portal/submissions/{submission_id:int}/files/{position:int}", opt=PORTAL, sync_to_thread=True)
    def submission_file(request: Request, submission_id: FromPath[int], position: FromPath[int]) -> Response:
        office, account = request.app.state.office, request.state.account

        def read(conn):
            _own_submission(conn, account, submission_id)
            return record.file_content(conn, submission_id, position)
        found = office.read(read)
        if found is None:
            raise NotFoundException("no such file")
        return _file(found[0], found[1])

    @post("/portal/submissions/{submission_id:int}/correct", opt=PORTAL, sync_to_thread=True, status_code=303)
    def correct(request: Request, submission_id: FromPath[int]) -> Redirect:
        office, account = request.app.state.office, request.state.account

        def act(conn):
            _own_submission(conn, account, submission_id)
            return record.correction(conn, submission_id, account)
        try:
            d = office.read(act)
        except InputError as exc:
            return Redirect(office.url(f"/portal/submissions/{submission_id}?done={_q(str(exc))}"), status_code=303)
        return Redirect(office.url(f"/portal/drafts/{d.id}"), status_code=303)

    @get("/portal/invite/{token:str}", opt=PUBLIC, sync_to_thread=True)
    def invitation(request: Request, token: FromPath[str]) -> Template:
        return _invitation_page(request, token)

    @post("/portal/invite/{token:str}/accept", opt=PUBLIC, sync_to_thread=True, status_code=303)
    def accept(request: Request, token: FromPath[str], data: FORM) -> Redirect | Template:
        office = request.app.state.office
        if office.invite_links is None:
            raise NotFoundException("no invitations here")
        try:
            office.read(lambda conn: invitations.accept(
                conn, token, str(data.get("username", ""))[:64], str(data.get("password", ""))[:300],
                str(data.get("password_again", ""))[:300], str(data.get("code", ""))[:12], links=office.invite_links))
        except invitations.InvitationError as exc:
            return _invitation_page(request, token, status=410, error=str(exc))
        except InputError as exc:
            return _invitation_page(request, token, status=400, error=str(exc),
                                    username=str(data.get("username", ""))[:64])
        return Redirect(office.url("/login?why=account-made"), status_code=303)

    def _statement(request: Request) -> dict:
        """The account's own site's statement of account (:func:`lab.statements.statement`)
        on the day asked (default today): never another user's."""
        from lab import statements

        office, account = request.app.state.office, request.state.account
        as_of = formats.form_date(request.query_params.get("as_of"), "as of", office.today())
        return office.read(lambda conn: statements.statement(conn, owed.site_of(conn, account.site_id)["key"], as_of))

    @get("/portal/statement", opt=PORTAL, sync_to_thread=True)
    def statement(request: Request) -> Template:
        from lab.statements import BUCKETS
        from lab.documents.statement_page import balance_words

        s = _statement(request)
        return Template("portal_statement.html", context=_ctx(request, s=s, buckets=BUCKETS,
                                                                balance_words=balance_words(s)))

    @get("/portal/statement/pdf", opt=PORTAL, sync_to_thread=True)
    def statement_pdf(request: Request) -> Response:
        from lab.documents.pdf import letterhead
        from lab.documents.statement_page import write_statement

        s = _statement(request)
        return _file({"name": f"statement-{s['as_of']}.pdf", "media_type": "application/pdf"},
                     write_statement(s, letterhead(request.app.state.office.cfg)))

    return [home, start, draft_page, save, upload, remove, draft_file, discard, sign_page, sign, submission,
            submission_pdf, submission_file, correct, invitation, accept, statement, statement_pdf]


def _q(text: str) -> str:
    from urllib.parse import quote
    return quote(text[:300], safe="")


def _doc(conn, submission_id: int) -> dict:
    import json
    return json.loads(record.document(conn, submission_id))


def _file(meta: dict, content: bytes) -> Response:
    """A stored file: its type as found (never the browser's), always a download."""
    return Response(content, media_type=meta["media_type"],
                    headers={"content-disposition": f'attachment; filename="{uploads.clean_name(meta["name"])}"',
                             "x-content-type-options": "nosniff"})


def _sign_page(request: Request, draft_id: int, *, status: int = 200, error: str | None = None) -> Template:
    office, account = request.app.state.office, request.state.account

    def read(conn):
        d = _own_draft(conn, account, draft_id)
        site = owed.site_of(conn, d.site_id)
        files = drafts.files_of(conn, d)
        return d, site, files, drafts.check(conn, site, d, files), invitations.signatories(conn, d.site_id)
    d, site, files, chk, signers = office.read(read)
    return Template("portal_sign.html", status_code=status, context=_ctx(
        request, draft=d, site=site, files=files, check=chk, fields=drafts.FIELDS[d.kind], error=error,
        digest=drafts.digest(d), statement=certification.CERTIFICATION, cites=certification.CERTIFICATION_CITATION,
        signatory_words=certification.SIGNATORY_WORDS, signers=signers))


def _invitation_page(request: Request, token: str, *, status: int = 200, error: str | None = None,
                     username: str | None = None) -> Template:
    office = request.app.state.office
    inv, why, qr = None, error, None
    if office.invite_links is None:
        why = "The portal's invitations are not set up here."
    else:
        try:
            inv = office.read(lambda conn: invitations.open_invitation(conn, token, office.invite_links))
        except invitations.InvitationError as exc:
            why, status = str(exc), 410
    uri = None
    if inv is not None and inv.signatory:
        import segno
        uri = invitations.totp_uri(inv, office.utility)
        qr = Markup(segno.make(uri, error="m").svg_inline(scale=4, border=2, title="The second factor's key"))
    return Template("portal_invite.html", status_code=status, context={
        "account": None, "nav": None, "inv": inv, "error": why, "token": token, "qr": qr, "uri": uri,
        "username": username or (invitations.suggested_username(inv) if inv else ""),
        "password_min": __import__("identity.accounts", fromlist=["PASSWORD_MIN"]).PASSWORD_MIN})
