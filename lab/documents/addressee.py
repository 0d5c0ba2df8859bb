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
    """``<p>`` with the addressee: ``label``, the person (name, position), ``user_line`` (the
    user's name, already HTML), the address lines; then what is not on file.

    Parameters
    ----------
    to : dict or None
        :meth:`identity.contacts.Addressee.as_json` as the document keeps it (None: a document
        from before the address book).
    user_line : str
        The industrial user's line, HTML (escaped by the caller).
    """
    if to is None:
        return f"<p><b>{e(label)}:</b> {user_line}</p>"
    person = ", ".join(e(x) for x in (to.get("name"), to.get("title")) if x)
    lines = [person] if person else []
    lines += [user_line, *(e(x) for x in to.get("lines") or ())]
    missing = to.get("missing") or []
    note = (f"<p class=small>{e('; '.join(missing)[:1].upper() + '; '.join(missing)[1:])}.</p>" if missing else "")
    return f"<p><b>{e(label)}:</b> " + "<br>".join(lines) + "</p>" + note
