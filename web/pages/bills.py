"""Bills in the office: the clerk drafts a quarter's bills, reviews each
user's bill (the metered volume and its coverage, the lab results used, the charges with
their citations), issues the quarter, downloads the PDFs, and records payments with the late
charge the ordinance adds. A quarter is billed once: drafting it again is refused unless the
clerk drafts corrected bills, with their reason, which replace the bills issued. Each action is :mod:`lab.bill_runs`' function, the one
``sewerwatch bills draft|issue|pay`` calls, as the signed-in account, once per form.
"""

from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path
from typing import Annotated, Any

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import NotFoundException
from litestar.params import Body, FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from foundation.errors import InputError
from web import authz, formats, forms
from web.documents import download

VIEW = {authz.OPT: "view"}
BILL = {authz.OPT: "bills.issue"}
Q = FromQuery[str | None]
Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]
#: Largest rates file taken [bytes].
RATES_MAX = 256 * 1024


def _last_quarter(today: date) -> str:
    q = (today.month - 1) // 3
    return f"{today.year - 1}Q4" if q == 0 else f"{today.year}Q{q}"


@get("/bills", opt=VIEW, sync_to_thread=True, name="bills")
def bills_page(request: Request) -> Template:
    from lab import bill_runs
    from lab.store import rates

    office = request.app.state.office
    runs, issued, now = office.read(lambda conn: (bill_runs.list_runs(conn), bill_runs.issued_bills(conn),
                                                  rates.in_effect(conn, office.today())))
    return Template("bills.html", context={
        "account": request.state.account, "nav": "bills", "runs": runs, "issued": list(reversed(issued))[:60],
        "quarter": _last_quarter(office.today()), "today": office.today().isoformat(),
        "rates_now": rates.label(now) if now else None})


@post("/bills/draft", opt=BILL, sync_to_thread=True, status_code=303, request_max_body_size=RATES_MAX + 65536)
def draft(request: Request, data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]) -> Redirect:
    """Draft the quarter (:func:`lab.bill_runs.draft_quarter`) from the stored rates in effect
    on its first day (an uploaded rates file is saved as that version first); from the
    correction's form, corrected bills of a quarter billed already, with their reason (a
    quarter billed already is otherwise refused)."""
    from lab import bill_runs

    office = request.app.state.office
    quarter = str(data.get("quarter", "")).strip().upper()
    on = formats.form_date(data.get("on"), "planned issue date", office.today())
    # the correction's form says so; its reason is required (the package function says so when empty)
    correction = str(data.get("reason", "")) if data.get("correct") else None
    file = data.get("rates")
    if isinstance(file, UploadFile) and file.filename:
        name, text = Path(file.filename).name[-120:], file.file.read(RATES_MAX + 1)
        if len(text) > RATES_MAX:
            raise InputError(f"{name}: larger than {RATES_MAX // 1024} kB: not a rates file")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"{name}: not UTF-8 text: a rates file is TOML") from None
    else:
        name = text = None

    def work(conn, actor):
        if text is None:
            r = bill_runs.draft_quarter(conn, quarter, None, on=on, actor=actor, correction=correction)
        else:
            with tempfile.TemporaryDirectory(prefix="sewerwatch-rates-") as tmp:
                path = Path(tmp) / (Path(name).name or "rates.toml")
                path.write_text(text, encoding="utf-8")
                r = bill_runs.draft_quarter(conn, quarter, path, on=on, actor=actor, name=name,
                                            correction=correction)
        return {"location": f"/bills/runs/{r['id']}?done=drafted", "run": r["id"]}

    return forms.redirect(request, forms.once(request, data, "bills.draft", work))


def _run(office, run_id: int) -> dict:
    from lab import bill_runs

    try:
        return office.read(lambda conn: bill_runs.run(conn, run_id))
    except InputError:
        raise NotFoundException(f"no bill run {run_id}") from None


@get("/bills/runs/{run_id:int}", opt=VIEW, sync_to_thread=True)
def run_page(request: Request, run_id: FromPath[int]) -> Template:
    office = request.app.state.office
    r = _run(office, run_id)
    issued = {b["site"]: b for b in r["issued"]}
    return Template("bill_run.html", context={
        "account": request.state.account, "nav": "bills", "run": r, "issued": issued,
        "today": office.today().isoformat(), "done": request.query_params.get("done"),
        "again": request.query_params.get("again")})


def _bill_pdf(office, name: str, bill: dict) -> bytes:
    from lab.documents.bill_page import render_pdf
    from lab.documents.pdf import letterhead

    head = letterhead(office.cfg)
    return office.documents.pdf(name, lambda: render_pdf(bill, head))


@get("/bills/runs/{run_id:int}/{site:str}/pdf", opt=VIEW, sync_to_thread=True)
def draft_pdf(request: Request, run_id: FromPath[int], site: FromPath[str]) -> Response:
    office = request.app.state.office
    r = _run(office, run_id)
    b = next((x for x in r["bills"] if x["site"] == site), None)
    if b is None:
        raise NotFoundException(f"no bill of {site} in run {run_id}")
    return download(_bill_pdf(office, f"bill-run:{run_id}:{site}", b), f"bill-{b['quarter']}-{site}-draft.pdf",
                    "application/pdf")


@post("/bills/runs/{run_id:int}/issue", opt=BILL, sync_to_thread=True, status_code=303)
def issue(request: Request, run_id: FromPath[int], data: Form) -> Redirect:
    """Issue the quarter's bills (:func:`lab.bill_runs.issue_run`, as ``sewerwatch bills issue``)."""
    from lab import bill_runs

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "issue date", office.today())

    def work(conn, actor):
        r = bill_runs.issue_run(conn, run_id, on, actor=actor)
        return {"location": f"/bills/runs/{run_id}?done=issued", "bills": [b["id"] for b in r["issued"]]}

    return forms.redirect(request, forms.once(request, data, "bills.issue", work))


def _bill(office, bill_id: int) -> dict:
    from lab import bill_runs

    try:
        return office.read(lambda conn: bill_runs.bill(conn, bill_id))
    except InputError:
        raise NotFoundException(f"no bill {bill_id}") from None


@get("/bills/{bill_id:int}", opt=VIEW, sync_to_thread=True)
def bill_page(request: Request, bill_id: FromPath[int]) -> Template:
    from ereport.mailing.batches import sendings_of

    office = request.app.state.office
    b = _bill(office, bill_id)
    sent = office.read(lambda conn: sendings_of(conn, "bill", bill_id))
    return Template("bill.html", context={"account": request.state.account, "nav": "bills", "b": b, "bill": b["detail"],
                                          "sendings": sent, "mail_ref": f"bill:{bill_id}",
                                          "today": office.today().isoformat(), "done": request.query_params.get("done"),
                                          "again": request.query_params.get("again")})


@get("/bills/{bill_id:int}/pdf", opt=VIEW, sync_to_thread=True)
def bill_pdf(request: Request, bill_id: FromPath[int]) -> Response:
    """The bill as issued (drawn again from its stored document: the same bytes)."""
    office = request.app.state.office
    b = _bill(office, bill_id)
    return download(_bill_pdf(office, f"bill:{bill_id}", b["detail"]), f"bill-{b['quarter']}-{b['site']}.pdf",
                    "application/pdf")


@post("/bills/{bill_id:int}/payment", opt=BILL, sync_to_thread=True, status_code=303)
def payment(request: Request, bill_id: FromPath[int], data: Form) -> Redirect:
    """Record a payment and its late charge (:func:`lab.bill_runs.record_payment`: a day after
    the village's today or before the bill's date refused)."""
    from lab import bill_runs

    office = request.app.state.office
    on = formats.form_date(data.get("on"), "paid on", office.today())
    text = str(data.get("dollars", "")).replace("$", "").replace(",", "").strip()
    try:
        dollars = float(text) if text else None
    except ValueError:
        raise InputError(f"amount paid: expected dollars such as 1234.56, got {text!r}") from None

    def work(conn, actor):
        b = bill_runs.record_payment(conn, bill_id, on, today=office.today(), dollars=dollars, actor=actor)
        return {"location": f"/bills/{bill_id}?done=paid", "late_dollars": b["late_dollars"]}

    return forms.redirect(request, forms.once(request, data, "bills.pay", work))


ROUTES = [bills_page, draft, run_page, draft_pdf, issue, bill_page, bill_pdf, payment]
