"""Enforcement in the office: the findings with their evidence; a notice
drafted from one, previewed as the PDF the user will receive, its free-text parts edited
where the enforcement response guide allows, issued, answered, closed or escalated as the
guide says with the next step's deadline; the SNC decision of a period criterion by
criterion; the SNC publication list, the annual report and the state's ICIS-NPDES XML.

Every action calls the package function the command line calls (``sewerwatch notice
draft|edit|issue|response|close|escalate|penalty``) as the signed-in account, once per
form (:mod:`web.forms`); every rule is the package's (:mod:`enforcement.notices`,
:mod:`enforcement.snc`, :mod:`enforcement.annual`).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from litestar import Request, get, post
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Redirect, Response, Template

from foundation.errors import Conflict, InputError
from limits import words
from web import authz, formats, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
ACT = {authz.OPT: "notices.issue"}
Q = FromQuery[str | None]
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]
#: Longest note [characters].
NOTE_MAX = 2000


def _note(data: dict) -> str | None:
    return str(data.get("note", "")).strip()[:NOTE_MAX] or None


def _refresh(office, conn):
    """The present's computed findings recorded (as ``findings list`` and ``notice draft``
    do); the settings and the guide."""
    from enforcement.service import refresh

    return refresh(conn, office.cfg)


def _settings(office):
    """The enforcement settings; a question about a period (SNC, the reports) records
    nothing (:mod:`enforcement.asof`)."""
    from enforcement.settings import settings

    return settings(office.cfg)


# --- findings ------------------------------------------------------------------------

@get("/enforcement", opt=VIEW, sync_to_thread=True, name="enforcement")
def findings_page(request: Request, site: Q = None, since: Q = None, until: Q = None) -> Template:
    from enforcement import findings as fnd
    from enforcement import notices

    office = request.app.state.office
    today = office.today()
    first = formats.form_date(since, "from", date(today.year, 1, 1)) if since else date(today.year, 1, 1)
    last = formats.form_date(until, "to", today) if until else today
    tz = ZoneInfo(office.tz)

    def read(conn):
        _st, guide = _refresh(office, conn)
        a = datetime(first.year, first.month, first.day, tzinfo=tz)
        b = datetime(last.year, last.month, last.day, tzinfo=tz) + timedelta(days=1)
        vs = fnd.violations_between(conn, a, b, site or None)
        fs = fnd.findings_between(conn, first, last + timedelta(days=1), site or None)
        ns = notices.list_notices(conn, site or None)
        sites = conn.execute("SELECT key, name FROM sites ORDER BY name").fetchall()
        return vs, fs, ns, sites, guide

    vs, fs, ns, sites, guide = office.read(read)
    by_violation, by_finding = {}, {}
    for n in ns:
        for vid in n["document"]["finding"].get("violation_ids") or ([n["violation_id"]] if n["violation_id"] else []):
            by_violation.setdefault(vid, []).append(n)
        if n["finding_id"]:
            by_finding.setdefault(n["finding_id"], []).append(n)
    open_ns = [dict(n, next=notices.next_step(n, guide, today)) for n in ns
               if n["state"] in ("drafted", "issued", "response-received")]
    return Template("enforcement.html", context={
        "account": request.state.account, "nav": "enforcement", "violations": vs, "findings": fs,
        "by_violation": by_violation, "by_finding": by_finding, "open_notices": open_ns, "sites": sites,
        "kind_words": fnd.KINDS, "violation_kind": _kind_words,
        "filters": {"site": site or "", "since": first.isoformat(), "until": last.isoformat()}})


def _subject_page(request, kind: str, ident: int) -> Template:
    """A violation's or finding's page: its evidence, and the notices that answer it
    (:func:`enforcement.notices.covering`, the rule that refuses a second draft); "Draft a
    notice" only where none does."""
    from enforcement import findings as fnd
    from enforcement import notices

    office = request.app.state.office

    def read(conn):
        _refresh(office, conn)
        try:
            rec = fnd.violation(conn, ident) if kind == "violation" else fnd.finding(conn, ident)
        except InputError:
            return None, []
        ns = (notices.covering(conn, violation_ids=[ident]) if kind == "violation"
              else notices.covering(conn, finding_id=ident))
        name = conn.execute("SELECT name FROM sites WHERE key = %s", (rec["site"],)).fetchone()
        rec = {**rec, "site_name": name[0] if name else rec["site"]}
        return rec, [dict(n, standing=notices.standing(n)) for n in ns]

    rec, ns = office.read(read)
    if rec is None:
        raise NotFoundException(f"no {kind} {ident}")
    return Template("finding.html", context={
        "account": request.state.account, "nav": "enforcement", "kind": kind, "rec": rec, "notices": ns,
        "current": ns[-1] if ns else None,
        "kind_words": fnd.KINDS, "violation_kind": _kind_words, "evidence": _evidence_rows(rec, kind),
        "pretty": lambda x: json.dumps(x, indent=1, default=str)})


def _kind_words(v: dict) -> str:
    from enforcement import findings
    return words.term(findings.violation_kind(v))


#: The evidence's keys as the page labels them.
EVIDENCE_LABELS = {"average_mg_l": "Average [mg/l]", "provenance": "Where the limit comes from",
                   "applies": "Limit set by", "statistic": "Statistic", "results": "Results",
                   "found_by": "Found by", "analyte": "Analyte", "period": "Period", "days": "Days",
                   "sample": "Sample", "samples_due": "Samples due", "samples_taken": "Samples taken"}


def _evidence_rows(rec: dict, kind: str) -> list[tuple[str, str]]:
    """A finding's or violation's evidence as (label, text), in words."""
    ev = rec.get("evidence") or {}
    rows = []
    if kind == "violation":
        rows += [("Rule", words.rule_name(rec["rule"])), ("Parameter", words.analyte_name(rec["parameter"])),
                 ("Most extreme", f"{rec['peak']:g} {rec['unit'] or ''}".strip()),
                 ("Limit", f"{ev.get('comparison') or ''} {rec['limit']:g} {rec['unit'] or ''}".strip()),
                 ("Citation", rec.get("citation") or ""), ("Found by", words.term(rec.get("source") or ""))]
        if ev.get("samples"):
            rows.append(("Samples", ", ".join(str(s) for s in ev["samples"])))
        if ev.get("readings"):
            rows.append(("Readings beyond the limit", str(ev["readings"])))
    for k, v in ev.items():
        if kind == "violation" and k in ("comparison", "samples", "readings", "peak_time", "last"):
            continue
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            label = EVIDENCE_LABELS.get(k, k.replace("_", " ").capitalize())
            rows.append((label, words.term(v) if isinstance(v, str) else str(v)))
    return rows


@get("/enforcement/violations/{violation_id:int}", opt=VIEW, sync_to_thread=True)
def violation_page(request: Request, violation_id: FromPath[int]) -> Template:
    return _subject_page(request, "violation", violation_id)


@get("/enforcement/findings/{finding_id:int}", opt=VIEW, sync_to_thread=True)
def finding_page(request: Request, finding_id: FromPath[int]) -> Template:
    return _subject_page(request, "finding", finding_id)


# --- notices -------------------------------------------------------------------------

@post("/notices/draft", opt=ACT, sync_to_thread=True, status_code=303)
def draft(request: Request, data: Form) -> Redirect:
    """Draft a notice from a violation, an alert, a finding or a user's SNC in a period
    (:func:`enforcement.notices.draft`, as ``sewerwatch notice draft``)."""
    from enforcement import notices
    from enforcement.periods import snc_period
    from enforcement.service import guide_and_head
    from enforcement.snc import snc_finding

    office = request.app.state.office
    guide, head = guide_and_head(office.cfg)
    ids = {k: str(data.get(k, "")).strip() for k in ("violation", "finding", "alert")}
    snc_site, period = str(data.get("snc", "")).strip(), str(data.get("period", "")).strip()
    on = office.today()

    def number(k):
        if not ids[k]:
            return None
        if not ids[k].isdigit():
            raise InputError(f"{k}: expected a number, got {ids[k]!r}")
        return int(ids[k])

    def work(conn, actor):
        st, _guide = _refresh(office, conn)
        finding_id = number("finding")
        if snc_site:
            finding_id = snc_finding(conn, snc_site, snc_period(period), on, st)
        n = notices.draft(conn, guide, head, on, violation_id=number("violation"), finding_id=finding_id,
                          alert_id=number("alert"), actor=actor)
        return {"location": f"/notices/{n['id']}?done=drafted", "notice": n["number"]}

    return forms.redirect(request, forms.once(request, data, "notice.draft", work))


@get("/notices", opt=VIEW, sync_to_thread=True, name="notices")
def notices_page(request: Request, status: Annotated[str | None, QueryParameter(name="state")] = None,
                 site: Q = None) -> Template:
    from enforcement import notices

    office = request.app.state.office
    today = office.today()

    def read(conn):
        from enforcement.service import guide_and_head
        guide, _h = guide_and_head(office.cfg)
        rows = notices.list_notices(conn, site or None, (status,) if status in notices.STATES else None)
        return [dict(n, next=notices.next_step(n, guide, today)) for n in reversed(rows)]

    rows = office.read(read)
    return Template("notices.html", context={"account": request.state.account, "nav": "enforcement",
                                             "notices": rows, "states": notices.STATES, "state": status or "",
                                             "site": site or ""})


def _notice(office, conn, notice_id: int) -> dict:
    from enforcement import notices

    try:
        return notices.notice(conn, notice_id)
    except InputError:
        raise NotFoundException(f"no notice {notice_id}") from None


def _doc_name(n: dict) -> str:
    return f"notice:{n['id']}:{n['revision']}:{n['issued_on'] or 'draft'}"


def _render(n: dict):
    """What makes the notice's PDF (its document and issue date alone)."""
    from enforcement.documents.notice_page import render

    return lambda: render(n["document"], n["issued_on"])[1]


def _pdf_of(office, n: dict) -> bytes:
    return office.documents.pdf(_doc_name(n), _render(n))


def _notice_context(request, n: dict, guide, events, **extra) -> dict:
    from enforcement import notices

    office = request.app.state.office
    pages = office.documents.pages(_doc_name(n), _render(n))
    ed = notices.editable(n, guide)
    return {"account": request.state.account, "nav": "enforcement", "n": n, "doc": n["document"],
            "events": events, "next": notices.next_step(n, guide, office.today()), "pages": len(pages),
            "editable": [(k, notices.EDITABLE[k], (extra.get("typed") or {}).get(k, n["document"].get(k) or ""))
                         for k in ed],
            "escalation": guide.escalation(n["action"]), "today": office.today().isoformat(),
            "escalable": extra.pop("escalable", (None, None)), "sendings": extra.pop("sendings", []),
            "mail_ref": extra.pop("mail_ref", f"notice:{n['number']}"),
            "done": request.query_params.get("done"), "again": request.query_params.get("again"), **extra}


@get("/notices/{notice_id:int}", opt=VIEW, sync_to_thread=True)
def notice_page(request: Request, notice_id: FromPath[int]) -> Template:
    from enforcement import notices
    from enforcement.service import guide_and_head

    office = request.app.state.office
    guide, _head = guide_and_head(office.cfg)
    def read(conn):
        from ereport.mailing.batches import sendings_of

        n = _notice(office, conn, notice_id)
        return (n, notices.events(conn, n["id"]), _escalable(conn, n, guide, office.today()),
                sendings_of(conn, "notice", n["id"]))

    n, events, escalable, sent = office.read(read)
    return Template("notice.html", context=_notice_context(request, n, guide, events, escalable=escalable,
                                                           sendings=sent, mail_ref=f"notice:{n['number']}"))


def _escalable(conn, n: dict, guide, today: date) -> tuple[dict | None, str | None]:
    """Whether notice ``n`` can be escalated today: (the plan, None) or (None, why not) for
    an issued notice (:func:`enforcement.escalation.plan`); (None, None) otherwise."""
    from enforcement import escalation

    if n["state"] not in ("issued", "response-received"):
        return None, None
    try:
        return escalation.plan(conn, n, guide, today), None
    except InputError as exc:
        return None, str(exc)


@get("/notices/{notice_id:int}/page/{page:int}", opt=VIEW, sync_to_thread=True)
def notice_page_png(request: Request, notice_id: FromPath[int], page: FromPath[int]) -> Response:
    """Page ``page`` of the notice's PDF as a picture (the preview)."""
    office = request.app.state.office
    n = office.read(lambda conn: _notice(office, conn, notice_id))
    pages = office.documents.pages(_doc_name(n), _render(n))
    if not 1 <= page <= len(pages):
        raise NotFoundException(f"notice {n['number']} has {len(pages)} pages")
    return Response(pages[page - 1], media_type="image/png")


@get("/notices/{notice_id:int}/pdf", opt=VIEW, sync_to_thread=True)
def notice_pdf(request: Request, notice_id: FromPath[int], inline: Q = None) -> Response:
    """The notice's PDF as the user receives it (the draft's until it is issued)."""
    from enforcement.documents.notice_page import file_name

    office = request.app.state.office
    n = office.read(lambda conn: _notice(office, conn, notice_id))
    return download(_pdf_of(office, n), file_name(n["document"], n["issued_on"]), "application/pdf",
                    attachment=not inline)


@post("/notices/{notice_id:int}/edit", opt=ACT, sync_to_thread=True, status_code=303)
def edit(request: Request, notice_id: FromPath[int], data: Form) -> Redirect | Template:
    """Edit the free-text parts the guide allows (:func:`enforcement.notices.edit`); a
    conflict with someone else's edit keeps what was typed and says who saved what."""
    from enforcement import notices
    from enforcement.service import guide_and_head

    office = request.app.state.office
    guide, _head = guide_and_head(office.cfg)
    changes = {k: str(data[k]) for k in notices.EDITABLE if k in data}
    base = forms.base_version(data)

    def work(conn, actor):
        n = notices.edit(conn, notice_id, changes, expected_revision=base, guide=guide, actor=actor)
        return {"location": f"/notices/{n['id']}?done=edited", "revision": n["revision"]}

    try:
        return forms.redirect(request, forms.once(request, data, "notice.edit", work))
    except Conflict as exc:
        return _conflict_page(request, notice_id, guide, exc, typed=changes)


def _conflict_page(request: Request, notice_id: int, guide, exc: Conflict, **extra) -> Template:
    """409: the notice as it stands now, what was saved since the version the form was drawn
    from (:func:`enforcement.notices.changes_since`) and :func:`web.forms.conflict_lines`."""
    from enforcement import notices

    office = request.app.state.office

    def read(conn):
        n = _notice(office, conn, notice_id)
        return n, notices.events(conn, n["id"]), notices.changes_since(conn, n["id"], exc.expected)

    n, events, changed = office.read(read)
    return Template("notice.html", status_code=forms.CONFLICT, context=_notice_context(
        request, n, guide, events, conflict=forms.conflict_lines(exc, office.tz), changed=changed, **extra))


def _step(request: Request, notice_id: int, data: dict, action: str, call) -> Redirect:
    def work(conn, actor):
        n = call(conn, actor)
        return {"location": f"/notices/{n['id']}?done={action}", "state": n["state"]}

    return forms.redirect(request, forms.once(request, data, f"notice.{action}", work))


@post("/notices/{notice_id:int}/issue", opt=ACT, sync_to_thread=True, status_code=303)
def issue(request: Request, notice_id: FromPath[int], data: Form) -> Redirect | Template:
    """Issue the draft as the person read it (:func:`enforcement.notices.issue_rendered` with
    the revision the form was drawn from, as ``sewerwatch notice issue --revision N``); an edit
    saved meanwhile issues nothing and shows the notice as it stands now, and what changed."""
    from enforcement import notices
    from enforcement.service import guide_and_head

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "issue date", office.today())
    base = forms.base_version(data)
    try:
        return _step(request, notice_id, data, "issued", lambda conn, actor: notices.issue_rendered(
            conn, notice_id, on, actor=actor, expected_revision=base)[0])
    except Conflict as exc:
        guide, _head = guide_and_head(office.cfg)
        return _conflict_page(request, notice_id, guide, exc, issue_on=on.isoformat())


@post("/notices/{notice_id:int}/response", opt=ACT, sync_to_thread=True, status_code=303)
def response(request: Request, notice_id: FromPath[int], data: Form) -> Redirect:
    from enforcement import notices

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "received on", office.today())
    return _step(request, notice_id, data, "response",
                 lambda conn, actor: notices.respond(conn, notice_id, on, note=_note(data), actor=actor))


@post("/notices/{notice_id:int}/close", opt=ACT, sync_to_thread=True, status_code=303)
def close(request: Request, notice_id: FromPath[int], data: Form) -> Redirect:
    from enforcement import notices

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "closed on", office.today())
    return _step(request, notice_id, data, "closed",
                 lambda conn, actor: notices.close(conn, notice_id, on, note=_note(data), actor=actor))


# (a path of its own: a GET and a POST both run in threads on one path, Litestar 2.25 answers
# the GET with a 500, a coroutine returned unawaited)
@get("/notices/{notice_id:int}/escalation", opt=ACT, sync_to_thread=True)
def escalate_page(request: Request, notice_id: FromPath[int], note: Q = None) -> Template:
    """What escalating the notice drafts and why (:func:`enforcement.escalation.plan`), before a
    person confirms it; a notice the guide's condition does not allow escalating (its
    deadline not passed, escalated already) is refused here in the package's words."""
    from enforcement import escalation
    from enforcement.service import guide_and_head

    office = request.app.state.office
    guide, _head = guide_and_head(office.cfg)

    def read(conn):
        n = _notice(office, conn, notice_id)
        return n, escalation.plan(conn, n, guide, office.today())

    n, plan = office.read(read)
    return Template("notice_escalate.html", context={
        "account": request.state.account, "nav": "enforcement", "n": n, "doc": n["document"], "plan": plan,
        "note": (note or "").strip()[:NOTE_MAX], "today": office.today().isoformat()})


@post("/notices/{notice_id:int}/escalate", opt=ACT, sync_to_thread=True, status_code=303)
def escalate(request: Request, notice_id: FromPath[int], data: Form) -> Redirect:
    """Escalate as the guide says, confirmed on the escalation page: the next action drafted
    (:func:`enforcement.escalation.escalate`; refused when the guide's condition does not hold,
    and a second time naming the order drafted the first)."""
    from enforcement import escalation
    from enforcement.service import guide_and_head

    office = request.app.state.office
    guide, head = guide_and_head(office.cfg)
    on = office.today()

    def work(conn, actor):
        _old, new = escalation.escalate(conn, notice_id, on, guide, head, note=_note(data), actor=actor)
        return {"location": f"/notices/{new['id']}?done=escalated", "notice": new["number"]}

    return forms.redirect(request, forms.once(request, data, "notice.escalate", work))


@post("/notices/{notice_id:int}/penalty", opt=ACT, sync_to_thread=True, status_code=303)
def penalty(request: Request, notice_id: FromPath[int], data: Form) -> Redirect:
    from enforcement import notices

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "collected on", office.today())
    text = str(data.get("dollars", "")).replace("$", "").replace(",", "").strip()
    try:
        dollars = float(text)
    except ValueError:
        raise InputError(f"penalty: expected dollars such as 500.00, got {text!r}") from None
    return _step(request, notice_id, data, "penalty",
                 lambda conn, actor: notices.record_penalty(conn, notice_id, dollars, on, note=_note(data),
                                                            actor=actor))


# --- SNC -----------------------------------------------------------------------------

def _period_of(text: str | None, today: date):
    from enforcement.periods import snc_period

    if text:
        return snc_period(text)
    half = 1 if today.month <= 6 else 2
    return snc_period(f"{today.year}H{half}")


@get("/snc", opt=VIEW, sync_to_thread=True, name="snc")
def snc_page(request: Request, period: Q = None) -> Template:
    """Each user's SNC for a period, criterion by criterion with the evidence of each
    (:func:`enforcement.snc.evaluate`, as ``sewerwatch snc``)."""
    from enforcement import snc

    office = request.app.state.office
    p = _period_of(period, office.today())

    st = _settings(office)

    def read(conn):
        return snc.evaluate(conn, p, st=st)

    results = office.read(read)
    today = office.today()
    choices = [f"{y}H{h}" for y in (today.year - 1, today.year) for h in (1, 2)]
    return Template("snc.html", context={"account": request.state.account, "nav": "snc", "period": p,
                                         "results": results, "criteria": snc.CRITERIA, "choices": choices})


# --- reports -------------------------------------------------------------------------

def _year_of(text, today: date) -> int:
    from enforcement.periods import year_period

    return int(year_period(str(text)).name) if text else today.year


@get("/reports", opt=VIEW, sync_to_thread=True, name="reports")
def reports_page(request: Request, year: Q = None) -> Template:
    from enforcement.annual import publication_text, snc_list

    office = request.app.state.office
    y = _year_of(year, office.today())

    st = _settings(office)

    def read(conn):
        return snc_list(conn, y, st.snc_periods, st)

    from web.pages.state_report import reports_context

    lst = office.read(read)
    today = office.today()
    return Template("reports.html", context={
        "account": request.state.account, "nav": "reports", "year": y, "list": lst,
        "text": publication_text(lst, office.utility), "years": list(range(today.year - 3, today.year + 1)),
        "npdes_permit": st.program.npdes_permit, "published": request.query_params.get("published"),
        "again": request.query_params.get("again"), **reports_context(office, y, lst)})


def _annual(office, y: int) -> dict:
    from enforcement.annual import annual_report
    from fog.rules import for_pack

    st = _settings(office)

    def read(conn):
        return annual_report(conn, y, st.snc_periods, office.utility, st, program=st.program,
                             grease_rules=for_pack(office.cfg.utility.pack))

    return office.read(read)


@get("/reports/{name:str}", opt=VIEW, sync_to_thread=True)
def report_file(request: Request, name: FromPath[str]) -> Response:
    """``annual-2026.pdf|html|json``, ``snc-2026.pdf|html|json|txt``, ``icis-2026.xml`` (a year
    not over: ``icis-2026-draft.xml``, :mod:`web.pages.state_report`): made
    by the package's functions, as ``sewerwatch report annual|snc|icis`` writes them."""
    from enforcement.annual import publication_text, snc_list
    from enforcement.documents import annual_page
    from lab.documents.pdf import letterhead, write_pdf

    office = request.app.state.office
    stem, _, ext = name.rpartition(".")
    kind, _, year = stem.partition("-")
    draft = kind == "icis" and year.endswith("-draft")
    year = year.removesuffix("-draft") if draft else year
    if kind not in ("annual", "snc", "icis") or not year.isdigit() or ext not in ("pdf", "html", "json", "txt", "xml"):
        raise NotFoundException(f"no report {name}")
    y = int(year)
    head = letterhead(office.cfg)
    today = office.today()
    if kind == "icis":
        from web.pages.state_report import icis_xml

        if ext != "xml":
            raise NotFoundException(f"no report {name}")
        return icis_xml(request, y, draft)
    if kind == "annual":
        if ext == "txt":
            raise NotFoundException(f"no report {name}")
        rep = _annual(office, y)
        if ext == "json":
            return download(json.dumps(rep, indent=2, default=str).encode(), name, "application/json")
        page = annual_page.render_html(rep, head, today)
        if ext == "html":
            return download(page.encode(), name, "text/html; charset=utf-8")
        return download(write_pdf(page, issued=today), name, "application/pdf")

    st = _settings(office)

    def read(conn):
        return snc_list(conn, y, st.snc_periods, st)

    lst = office.read(read)
    if ext == "json":
        return download(json.dumps(lst, indent=2, default=str).encode(), name, "application/json")
    if ext == "txt":
        return download(publication_text(lst, office.utility).encode(), name, "text/plain; charset=utf-8")
    page = annual_page.snc_list_html(lst, head, today)
    if ext == "html":
        return download(page.encode(), name, "text/html; charset=utf-8")
    return download(write_pdf(page, issued=today), name, "application/pdf")


ROUTES = [findings_page, violation_page, finding_page, draft, notices_page, notice_page, notice_page_png, notice_pdf,
          edit, issue, response, close, escalate_page, escalate, penalty, snc_page, reports_page, report_file]
