"""The addressee block of a document (a bill, a statement of account, a notice): the person
and address from the office's address book (:func:`identity.contacts.addressee`, kept in the
document when it is made), under the industrial user's name; what the book does not hold is
said in words ("no billing address on file"), never left blank.

A document made before the address book (no ``addressee`` kept in it) prints the user's name
alone, as it always did.
"""

from __future__ import annotations

import html

e = html.escape


def block_html(to: dict | None, user_line: str, *, label: str = "To") -> str:
    """The addressee's lines (HTML, joined by ``<br>``, for the caller's paragraph): ``label``
    and the person (name, position), ``user_line`` (the user's name, already HTML), the address
    lines; what is not on file said after the user's line, on the same line when nothing is.

    Parameters
    ----------
    to : dict or None
        :meth:`identity.contacts.Addressee.as_json` as the document keeps it (None: a document
        from before the address book: the user's line alone).
    user_line : str
        The industrial user's line, HTML (escaped by the caller).
    """
    if to is None:
        return f"<b>{e(label)}:</b> {user_line}"
    missing = "; ".join(to.get("missing") or [])
    person = ", ".join(e(x) for x in (to.get("name"), to.get("title")) if x)
    lines = [person] if person else []
    lines += [user_line + (f" &#8212; {e(missing)}" if missing else ""), *(e(x) for x in to.get("lines") or ())]
    return f"<b>{e(label)}:</b> " + "<br>".join(lines)
