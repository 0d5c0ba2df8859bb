"""The kinds of document a batch may mail, each one entry of :data:`KINDS`.

An entry says, for its kind, which documents are issued (:attr:`Kind.issued`), what one of
them is (:attr:`Kind.describe`: the industrial user, the title and number people read, the
contact role it goes to) and its PDF as issued (:attr:`Kind.pdf`). Notices go to the
authorised representative at the mailing address and bills to the billing contact at the
billing address (as the documents are addressed, :func:`identity.contacts.addressee`); a
grease notice goes to the establishment at its address, which has no e-mail on file: paper.

Adding a kind is one entry: a function ``issued_document(conn, id) -> {"site", "title",
"number", "pdf", "contact_role"}`` (the shape of ``enforcement.letters``) becomes a kind
with :func:`from_issued_document`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from foundation.errors import InputError

#: contact role -> the address kind its documents go to (identity/contacts.py).
ADDRESS_OF_ROLE = {"representative": "mailing", "billing": "billing", "plant-manager": "mailing",
                   "emergency": "facility"}


@dataclass(frozen=True)
class Kind:
    """One kind of document that can be mailed.

    Attributes
    ----------
    words : str
        What it is, in the office's words ("notice", "bill").
    issued : callable
        ``issued(conn) -> list[int]``: the ids of the documents of the kind issued and in force.
    describe : callable
        ``describe(conn, id) -> dict`` with ``site`` (the user's key, or None), ``title``,
        ``number``, ``contact_role``, and for a document not addressed through the address
        book ``to`` (``recipient``, ``person``, ``email``, ``lines``).
    pdf : callable
        ``pdf(conn, id, cfg) -> bytes``: the PDF as issued (drawn again from its document).
    page : str
        The office's page of a document (``{id}`` replaced).
    numbered : bool
        The document prints its number (a notice's NOV-2026-001): the mail's subject names it.
        A bill prints none: its title says which it is.
    """

    words: str
    issued: Callable
    describe: Callable
    pdf: Callable
    page: str
    numbered: bool = True


def _notices_issued(conn) -> list[int]:
    return [i for (i,) in conn.execute("SELECT id FROM notices WHERE issued_on IS NOT NULL ORDER BY id").fetchall()]


def _notice(conn, ref) -> dict:
    from enforcement import notices

    n = notices.notice(conn, ref)
    if n["issued_on"] is None:
        raise InputError(f"notice {n['number']} is not issued: only issued documents are mailed")
    return n


def _notice_describe(conn, ref) -> dict:
    n = _notice(conn, ref)
    title = (n["document"].get("title") or "Notice").strip()
    return {"site": n["site"], "title": title, "number": n["number"], "contact_role": "representative"}


def _notice_pdf(conn, ref, cfg) -> bytes:
    from enforcement.documents.notice_page import render

    n = _notice(conn, ref)
    return render(n["document"], n["issued_on"])[1]


def _bills_issued(conn) -> list[int]:
    return [i for (i,) in conn.execute("SELECT id FROM bills WHERE superseded_by IS NULL ORDER BY id").fetchall()]


def _bill_describe(conn, ref) -> dict:
    from lab import bill_runs

    b = bill_runs.bill(conn, int(ref))
    return {"site": b["site"], "title": f"Bill for {b['quarter']}, {b['site_name']}", "number": f"{b['quarter']}-{b['site']}",
            "contact_role": "billing"}


def _bill_pdf(conn, ref, cfg) -> bytes:
    from lab import bill_runs
    from lab.documents.bill_page import render_pdf
    from lab.documents.pdf import letterhead

    return render_pdf(bill_runs.bill(conn, int(ref))["detail"], letterhead(cfg))


def _grease_issued(conn) -> list[int]:
    return [i for (i,) in conn.execute("SELECT id FROM fog_notices ORDER BY id").fetchall()]


def _grease_describe(conn, ref) -> dict:
    from enforcement import grease_notices

    n, _ = grease_notices.pdf(conn, int(ref))
    row = conn.execute("SELECT address, contact FROM fog_establishments WHERE id = %s",
                       (n["establishment_id"],)).fetchone()
    return {"site": None, "title": n["title"], "number": n["number"], "contact_role": None,
            "to": {"recipient": n["name"], "person": row[1] or None, "email": None,
                   "lines": [x.strip() for x in row[0].replace(";", "\n").splitlines() if x.strip()]}}


def _grease_pdf(conn, ref, cfg) -> bytes:
    from enforcement import grease_notices

    return grease_notices.pdf(conn, int(ref))[1]


def from_issued_document(words: str, issued: Callable, issued_document: Callable, page: str) -> Kind:
    """A kind from a function ``issued_document(conn, id)`` returning ``site``, ``title``,
    ``number``, ``pdf`` and ``contact_role`` (the letters' shape)."""
    def describe(conn, ref):
        d = issued_document(conn, int(ref))
        return {k: d[k] for k in ("site", "title", "number", "contact_role")}
    return Kind(words, issued, describe, lambda conn, ref, cfg: issued_document(conn, int(ref))["pdf"], page)


def _letters_issued(conn) -> list[int]:
    return [i for (i,) in conn.execute("SELECT id FROM letters ORDER BY id").fetchall()]


def _letter(conn, ref) -> dict:
    """An issued letter as :func:`from_issued_document` takes it: the user's key for its id,
    the address book's role for the words the letter gives."""
    from enforcement.letters import issued_document
    from identity.contacts import ROLES

    d = issued_document(conn, int(ref))
    key = conn.execute("SELECT key FROM sites WHERE id = %s", (d["site"],)).fetchone()[0]
    role = {words: k for k, words in ROLES.items()}.get(d["contact_role"], d["contact_role"])
    return dict(d, site=key, contact_role=role)


KINDS: dict[str, Kind] = {
    "notice": Kind("notice", _notices_issued, _notice_describe, _notice_pdf, "/notices/{id}"),
    "grease-notice": Kind("grease notice", _grease_issued, _grease_describe, _grease_pdf, "/grease/notices/{id}/pdf"),
    "bill": Kind("bill", _bills_issued, _bill_describe, _bill_pdf, "/bills/{id}", numbered=False),
    "letter": from_issued_document("letter", _letters_issued, _letter, "/letters/{id}"),
}


def kind(name: str) -> Kind:
    """The kind ``name``, or an error naming the kinds."""
    try:
        return KINDS[name]
    except KeyError:
        raise InputError(f"no kind of document {name!r} (kinds: {', '.join(KINDS)})") from None


def parse_ref(text: str) -> tuple[str, str]:
    """``"bill:12"`` -> ("bill", "12"); a notice may be named by its number (``notice:NOV-2026-001``)."""
    name, sep, ref = str(text).strip().partition(":")
    if not sep or not ref.strip():
        raise InputError(f"document {text!r}: expected KIND:NUMBER such as bill:12 (kinds: {', '.join(KINDS)})")
    kind(name)
    return name, ref.strip()
