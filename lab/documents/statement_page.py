"""A statement of account as the industrial user receives it: the utility's letterhead, the
balance on the chosen date, its aging, each quarter's bill with what was paid and what is
owed, and every bill, credit, payment and late charge in date order with the running
balance (:func:`lab.statements.statement`), in the documents' letter-size page
(:mod:`lab.documents.pdf`).
"""

from __future__ import annotations

import html
from datetime import date

from lab.documents.addressee import block_html
from lab.documents.pdf import Letterhead, document, write_pdf
from lab.statements import BUCKETS


def money(x: float) -> str:
    """``$1,234.50``; below zero ``-$12.00``."""
    return f"-${-x:,.2f}" if x < 0 else f"${x:,.2f}"


def balance_words(s: dict) -> str:
    """The balance in words: what is owed, a credit, or nothing."""
    b = s["balance"]
    if b > 0:
        return f"{money(b)} owed"
    if b < 0:
        return f"a credit of {money(-b)}"
    return "nothing owed"


def body_html(s: dict) -> str:
    """Everything under the letterhead."""
    e = html.escape
    aging = "".join(f"<th class=n>{e(words)}</th>" for _, words, *_ in BUCKETS)
    aged = "".join(f"<td class=n>{money(s['aging'][k])}</td>" for k, *_ in BUCKETS)
    quarters = "".join(
        f"<tr><td>{e(q['quarter'])}</td><td>bill {q['bill']}"
        + (f" (replaces {', '.join(str(x) for x in q['replaced'])})" if q["replaced"] else "")
        + f"</td><td>{e(q['due'])}</td><td class=n>{money(q['billed'])}</td><td class=n>{money(q['late'])}</td>"
        f"<td class=n>{money(q['paid'])}</td><td class=n>{money(q['owed'])}</td>"
        f"<td>{e(_age(q))}</td></tr>" for q in s["quarters"])
    entries = "".join(f"<tr><td>{e(x['date'])}</td><td>{e(x['words'])}</td><td class=n>{money(x['dollars'])}</td>"
                      f"<td class=n>{money(x['balance'])}</td></tr>" for x in s["entries"])
    late = f"<p class=small>Late payment: {e(s['late_terms'])}.</p>" if s.get("late_terms") else ""
    return f"""<h1>Statement of account: {e(s['name'])}</h1>
<p>{block_html(s['mail_to'], f"<b>{e(s['name'])}</b> ({e(s['site'])})") if 'mail_to' in s
   else f"<b>{e(s['name'])}</b> ({e(s['site'])})"}<br>Statement as of {e(s['as_of'])}.</p>
<h2>Balance</h2>
<p>Balance as of {e(s['as_of'])}: <b>{e(balance_words(s))}</b>.</p>
<table><tr>{aging}<th class=n>credit</th><th class=n>balance</th></tr>
<tr>{aged}<td class=n>{money(s['credit'])}</td><td class=n>{money(s['balance'])}</td></tr></table>
<p class=small>Unpaid amounts by the days past each bill's due date; a quarter paid more than its corrected bill
is a credit.</p>
<h2>Bills</h2>
{('<table><tr><th>quarter</th><th>bill</th><th>due</th><th class=n>billed</th><th class=n>late charges</th>'
  '<th class=n>paid</th><th class=n>owed</th><th>age</th></tr>' + quarters + '</table>') if quarters
 else '<p>No bills issued by this date.</p>'}
{late}
<h2>Account</h2>
{('<table><tr><th>date</th><th>item</th><th class=n>amount</th><th class=n>balance</th></tr>' + entries + '</table>')
 if entries else '<p>Nothing billed or paid by this date.</p>'}
"""


def _age(q: dict) -> str:
    if q["owed"] < 0:
        return "credit"
    if q["owed"] == 0:
        return "paid"
    if q["bucket"] == "current":
        return "not yet due"
    return f"{q['days_past_due']} days past due"


def render_html(s: dict, head: Letterhead) -> str:
    """The whole printable statement."""
    return document(f"Statement of account, {s['name']}, {s['as_of']}", body_html(s), head,
                    issued=date.fromisoformat(s["as_of"]), footer=f"Statement of account {s['site']} {s['as_of']}")


def write_statement(s: dict, head: Letterhead, path=None) -> bytes:
    """The statement's PDF (written to ``path`` if given)."""
    return write_pdf(render_html(s, head), path, issued=date.fromisoformat(s["as_of"]))
