"""The pretreatment office's address book: each industrial user's people and addresses.

A *contact* is a person of an industrial user (a site) with one or more roles
(:data:`ROLES`: the authorised representative, the plant manager, billing, the emergency
contact reached around the clock), a position, a telephone and an e-mail address. An
*address* is one of the user's three (:data:`ADDRESS_KINDS`: the facility, where mail goes,
where bills go). Nothing is overwritten: each change is a new version (``contact_versions``,
``site_addresses``, migration 0290) dated and naming who saved it, and an ``audit_log`` row
(object ``contact:<number>`` or ``site:<key>``) names the :class:`foundation.actor.Actor`.

Documents are addressed from here (:func:`addressee`): a notice to the authorised
representative at the mailing address, a bill and a statement of account to the billing
contact at the billing address; an alert's request for the discharger's report goes to the
emergency contacts (:func:`emergency_emails`). Where nothing is on file the document says so
(:attr:`Addressee.missing`) and falls back on what it printed before: the user's name.

The book sits in ``identity`` beside the accounts because a contact may also be a portal
account (one person: :func:`link_account`), and because the floors that read it —
``alerts``, ``lab``, ``enforcement``, ``ereport`` — all stand above this one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from foundation.actor import Actor
from foundation.errors import Conflict, InputError

#: role id -> its words (documents, pages, ``--help``).
ROLES = {"representative": "authorised representative", "plant-manager": "plant manager",
         "billing": "billing", "emergency": "emergency (24 h)"}
_ROLE_ALIASES = {"authorised-representative": "representative", "authorized-representative": "representative",
                 "emergency-(24-h)": "emergency", "24-h": "emergency"}
#: address kind -> its words.
ADDRESS_KINDS = {"facility": "facility", "mailing": "mailing", "billing": "billing"}
#: Longest name, position, street line [characters].
TEXT_MAX = 120
_EMAIL = re.compile(r"^[^@\s<>,;\"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$")
_PHONE = re.compile(r"^[0-9+()./ x-]+$")
_STATE = re.compile(r"^[A-Z]{2}$")
_ZIP = re.compile(r"^\d{5}(?:-\d{4})?$")
#: The fields of a contact a change may give.
CONTACT_FIELDS = ("full_name", "roles", "title", "phone", "email")
#: The fields of an address.
ADDRESS_FIELDS = ("street", "city", "state", "postal_code")


@dataclass(frozen=True)
class Addressee:
    """Whom a document is addressed to and where (:func:`addressee`).

    Attributes
    ----------
    name : str or None
        The person (None: no contact of that role on file).
    title : str or None
        The person's position.
    lines : tuple of str
        The address, line by line (empty: none on file).
    missing : tuple of str
        What is not on file, in words (``"no authorised representative on file"``).
    """

    name: str | None = None
    title: str | None = None
    email: str | None = None
    lines: tuple[str, ...] = ()
    missing: tuple[str, ...] = field(default=())

    def as_json(self) -> dict:
        return {"name": self.name, "title": self.title, "email": self.email, "lines": list(self.lines),
                "missing": list(self.missing)}


# -- checking what people type --------------------------------------------------------------

def _text(value, what: str, *, required: bool = False, most: int = TEXT_MAX) -> str | None:
    text = " ".join(str(value or "").split())
    if not text:
        if required:
            raise InputError(f"{what}: missing")
        return None
    if len(text) > most:
        raise InputError(f"{what}: at most {most} characters, got {len(text)}")
    return text


def check_email(value, what: str = "e-mail") -> str | None:
    """One bare e-mail address (``name@example.org``) or None when blank."""
    text = str(value or "").strip()
    if not text:
        return None
    if len(text) > 254 or not _EMAIL.match(text):
        raise InputError(f"{what}: not one e-mail address: {text[:60]!r}")
    return text


def check_phone(value, what: str = "phone") -> str | None:
    text = " ".join(str(value or "").split())
    if not text:
        return None
    digits = sum(c.isdigit() for c in text)
    if not _PHONE.match(text) or not 7 <= digits <= 15 or len(text) > 40:
        raise InputError(f"{what}: not a telephone number (7 to 15 digits, with spaces, dashes, "
                         f"brackets or an x before an extension): {text[:40]!r}")
    return text


def check_roles(value, what: str = "roles") -> list[str]:
    """Role ids from a list or a text (``"representative; emergency"``), at least one."""
    items = value if isinstance(value, (list, tuple)) else re.split(r"[;,]", str(value or ""))
    out: list[str] = []
    for item in items:
        r = str(item).strip().lower().replace(" ", "-").replace("_", "-")
        r = _ROLE_ALIASES.get(r, r)
        if not r:
            continue
        if r not in ROLES:
            raise InputError(f"{what}: {str(item).strip()!r} is not a role (roles: {', '.join(ROLES)})")
        if r not in out:
            out.append(r)
    if not out:
        raise InputError(f"{what}: at least one of {', '.join(ROLES.values())}")
    return out


def check_contact(values: dict, *, partial: bool = False) -> dict:
    """The contact fields of ``values`` checked (``partial``: only those given)."""
    out = {}
    for k in CONTACT_FIELDS:
        if partial and k not in values:
            continue
        v = values.get(k)
        out[k] = {"full_name": lambda: _text(v, "name", required=True),
                  "roles": lambda: check_roles(v),
                  "title": lambda: _text(v, "position"),
                  "phone": lambda: check_phone(v),
                  "email": lambda: check_email(v)}[k]()
    return out


def check_address(values: dict) -> dict:
    """The four fields of an address checked: street (lines), city, state, ZIP code."""
    street = "\n".join(x for x in (" ".join(line.split()) for line in str(values.get("street") or "").splitlines()) if x)
    if not street:
        raise InputError("street: missing")
    if len(street) > 3 * TEXT_MAX:
        raise InputError(f"street: at most {3 * TEXT_MAX} characters")
    state = str(values.get("state") or "").strip().upper()
    if not _STATE.match(state):
        raise InputError(f"state: two letters, such as WI, got {state[:20]!r}")
    zipc = str(values.get("postal_code") or "").strip()
    if not _ZIP.match(zipc):
        raise InputError(f"ZIP code: five digits (or five, a dash and four), got {zipc[:20]!r}")
    return {"street": street, "city": _text(values.get("city"), "city", required=True), "state": state,
            "postal_code": zipc}


# -- reading ---------------------------------------------------------------------------------

def site_of(conn, site_key: str) -> tuple[int, str]:
    """The id and name of industrial user ``site_key``, or an error naming the users."""
    row = conn.execute("SELECT id, name FROM sites WHERE key = %s", (site_key,)).fetchone()
    if row is None:
        known = ", ".join(k for (k,) in conn.execute("SELECT key FROM sites ORDER BY key").fetchall()) or "none"
        raise InputError(f"no industrial user {site_key!r} (users: {known})")
    return row[0], row[1]


_VCOLS = ("version", "full_name", "roles", "title", "phone", "email", "removed", "recorded_at", "recorded_by", "note")
_LATEST = ("SELECT c.id, s.key, s.name, c.site_id, v.version, v.full_name, v.roles, v.title, v.phone, v.email, "
           "v.removed, v.recorded_at, v.recorded_by, v.note FROM contacts c JOIN sites s ON s.id = c.site_id "
           "JOIN LATERAL (SELECT * FROM contact_versions x WHERE x.contact_id = c.id ORDER BY x.version DESC LIMIT 1) v "
           "ON true")
_CCOLS = ("id", "site", "site_name", "site_id", *_VCOLS)


def _words(c: dict) -> dict:
    c["role_words"] = [ROLES[r] for r in c["roles"]]
    return c


def contacts_of(conn, site_key: str | None = None, *, removed: bool = False) -> list[dict]:
    """The contacts (their latest versions) of one user or of all, by user and name."""
    rows = conn.execute(_LATEST + " WHERE (%s::text IS NULL OR s.key = %s) AND (%s OR NOT v.removed) "
                        "ORDER BY s.name, v.full_name, c.id", (site_key, site_key, removed)).fetchall()
    return [_words(dict(zip(_CCOLS, r))) for r in rows]


def contact(conn, contact_id: int) -> dict:
    """Contact ``contact_id`` as it is now, with ``history`` (every version, newest first) and
    ``account`` (the portal account that is the same person, or None)."""
    row = conn.execute(_LATEST + " WHERE c.id = %s", (contact_id,)).fetchone()
    if row is None:
        raise InputError(f"no contact {contact_id}")
    c = _words(dict(zip(_CCOLS, row)))
    c["history"] = [_words(dict(zip(_VCOLS, r))) for r in conn.execute(
        f"SELECT {', '.join(_VCOLS)} FROM contact_versions WHERE contact_id = %s ORDER BY version DESC",
        (contact_id,)).fetchall()]
    acc = conn.execute("SELECT username, full_name, disabled_at FROM web_accounts WHERE contact_id = %s "
                       "OR (%s::text IS NOT NULL AND kind = 'industrial-user' AND site_id = %s AND lower(email) = lower(%s)) "
                       "ORDER BY (contact_id = %s) DESC NULLS LAST, id LIMIT 1",
                       (contact_id, c["email"], c["site_id"], c["email"], contact_id)).fetchone()
    c["account"] = dict(zip(("username", "full_name", "disabled_at"), acc)) if acc else None
    return c


_ACOLS = ("kind", "version", "street", "city", "state", "postal_code", "recorded_at", "recorded_by", "note")


def _lines(a: dict) -> list[str]:
    return [*a["street"].split("\n"), f"{a['city']}, {a['state']} {a['postal_code']}"]


def addresses_of(conn, site_key: str) -> dict[str, dict]:
    """kind -> the user's current address of that kind (with ``lines``); kinds not on file absent."""
    sid, _ = site_of(conn, site_key)
    rows = conn.execute(f"SELECT DISTINCT ON (kind) {', '.join(_ACOLS)} FROM site_addresses WHERE site_id = %s "
                        "ORDER BY kind, version DESC", (sid,)).fetchall()
    out = {}
    for r in rows:
        a = dict(zip(_ACOLS, r))
        a["lines"] = _lines(a)
        out[a["kind"]] = a
    return out


def address_history(conn, site_key: str) -> list[dict]:
    """Every version of the user's addresses, newest first."""
    sid, _ = site_of(conn, site_key)
    rows = conn.execute(f"SELECT {', '.join(_ACOLS)} FROM site_addresses WHERE site_id = %s "
                        "ORDER BY recorded_at DESC, kind, version DESC", (sid,)).fetchall()
    return [{**dict(zip(_ACOLS, r)), "lines": _lines(dict(zip(_ACOLS, r)))} for r in rows]


def addressee(conn, site_key: str, role: str, address_kind: str) -> Addressee:
    """Whom a document to ``site_key`` goes to: the contact of ``role`` (the first entered, when
    several hold it) at the address of ``address_kind`` (the mailing address when that kind is
    not on file but the mailing one is), and what is not on file, in words."""
    people = [c for c in contacts_of(conn, site_key) if role in c["roles"]]
    people.sort(key=lambda c: c["id"])
    addrs = addresses_of(conn, site_key)
    addr = addrs.get(address_kind) or (addrs.get("mailing") if address_kind != "mailing" else None)
    who = f"{ROLES[role]} contact" if role == "billing" else ROLES[role]
    where = f"{ADDRESS_KINDS[address_kind]} address"
    missing = ([f"no {who} or {where} on file"] if not people and addr is None else
               [f"no {who} on file"] if not people else [f"no {where} on file"] if addr is None else [])
    p = people[0] if people else None
    return Addressee(p["full_name"] if p else None, p["title"] if p else None, p["email"] if p else None,
                     tuple(addr["lines"]) if addr else (), tuple(missing))


def emergency_emails(conn, site_key: str) -> list[tuple[str, str]]:
    """(name, e-mail) of the user's emergency contacts that have an e-mail address."""
    return [(c["full_name"], c["email"]) for c in contacts_of(conn, site_key)
            if "emergency" in c["roles"] and c["email"]]


def with_email(conn, site_key: str) -> list[dict]:
    """The user's contacts that have an e-mail address (those the portal can invite)."""
    return [c for c in contacts_of(conn, site_key) if c["email"]]


# -- changing --------------------------------------------------------------------------------

def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def add_contact(conn, site_key: str, values: dict, *, actor: Actor, note: str | None = None) -> dict:
    """Enter a new contact of ``site_key`` (``values``: :data:`CONTACT_FIELDS`); version 1.

    Raises
    ------
    InputError
        An unknown user, a field that is not right (naming it), or a contact of the user with
        the same e-mail address already in the book (naming its number).
    """
    v = check_contact(values)
    with conn.transaction():
        sid, _ = site_of(conn, site_key)
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-contacts'), %s)", (sid,))
        if v["email"]:
            same = [c for c in contacts_of(conn, site_key) if (c["email"] or "").lower() == v["email"].lower()]
            if same:
                raise InputError(f"{site_key} already has contact {same[0]['id']} ({same[0]['full_name']}) with the "
                                 f"e-mail address {v['email']}: change that one instead")
        cid = conn.execute("INSERT INTO contacts (site_id, created_by) VALUES (%s, %s) RETURNING id",
                           (sid, actor.audit_name)).fetchone()[0]
        _insert_version(conn, cid, 1, v, False, actor, note)
        _audit(conn, actor, "contact.add", f"contact:{cid}", {"site": site_key, **v})
    return contact(conn, cid)


def _insert_version(conn, cid: int, version: int, v: dict, removed: bool, actor: Actor, note: str | None) -> None:
    conn.execute("INSERT INTO contact_versions (contact_id, version, full_name, roles, title, phone, email, removed, "
                 "recorded_by, note) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                 (cid, version, v["full_name"], v["roles"], v["title"], v["phone"], v["email"], removed,
                  actor.audit_name, _text(note, "note", most=300)))


def edit_contact(conn, contact_id: int, changes: dict, *, actor: Actor, expected_version: int | None = None,
                 note: str | None = None, remove: bool | None = None) -> dict:
    """Save a new version of contact ``contact_id`` with ``changes`` (fields of
    :data:`CONTACT_FIELDS`; a blank position, phone or e-mail clears it); ``remove`` True takes
    the person off the user's contacts (kept, with every version), False puts them back.

    Raises
    ------
    Conflict
        ``expected_version`` given and a newer version was saved meanwhile.
    InputError
        No such contact, a field not right, or nothing changed (naming the version it would repeat).
    """
    checked = check_contact(changes, partial=True)
    with conn.transaction():
        row = conn.execute("SELECT id FROM contacts WHERE id = %s FOR UPDATE", (contact_id,)).fetchone()
        if row is None:
            raise InputError(f"no contact {contact_id}")
        now = contact(conn, contact_id)
        if expected_version is not None and now["version"] != expected_version:
            raise Conflict(f"contact {contact_id}", expected_version, now["version"], now["recorded_by"],
                           now["recorded_at"])
        new = {k: checked.get(k, now[k]) for k in CONTACT_FIELDS}
        gone = now["removed"] if remove is None else bool(remove)
        if new["email"] and new["email"].lower() != (now["email"] or "").lower():
            same = [c for c in contacts_of(conn, now["site"])
                    if c["id"] != contact_id and (c["email"] or "").lower() == new["email"].lower()]
            if same:
                raise InputError(f"{now['site']} already has contact {same[0]['id']} ({same[0]['full_name']}) with "
                                 f"the e-mail address {new['email']}")
        if all(new[k] == now[k] for k in CONTACT_FIELDS) and gone == now["removed"]:
            raise InputError(f"contact {contact_id}: nothing changed (version {now['version']} already says this)")
        _insert_version(conn, contact_id, now["version"] + 1, new, gone, actor, note)
        was = {k: now[k] for k in CONTACT_FIELDS if new[k] != now[k]}
        _audit(conn, actor, "contact.remove" if gone and not now["removed"] else "contact.edit", f"contact:{contact_id}",
               {"site": now["site"], "version": now["version"] + 1, "was": was,
                "now": {k: new[k] for k in was}, "removed": gone})
    return contact(conn, contact_id)


def set_address(conn, site_key: str, kind: str, values: dict, *, actor: Actor, note: str | None = None,
                expected_version: int | None = None) -> dict:
    """Save the user's address of ``kind`` (:data:`ADDRESS_KINDS`) as a new version.

    Raises
    ------
    Conflict
        ``expected_version`` given (0: none yet) and another was saved meanwhile.
    InputError
        An unknown user or kind, a field not right, or the address already says this.
    """
    if kind not in ADDRESS_KINDS:
        raise InputError(f"address: {kind!r} is not a kind of address ({', '.join(ADDRESS_KINDS)})")
    a = check_address(values)
    with conn.transaction():
        sid, _ = site_of(conn, site_key)
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sewerwatch-addresses'), %s)", (sid,))
        now = addresses_of(conn, site_key).get(kind)
        have = now["version"] if now else 0
        if expected_version is not None and have != expected_version:
            raise Conflict(f"the {kind} address of {site_key}", expected_version, have,
                           now["recorded_by"] if now else "nobody", now["recorded_at"] if now else "no time")
        if now and all(now[k] == a[k] for k in ADDRESS_FIELDS):
            raise InputError(f"the {kind} address of {site_key}: nothing changed (version {have} already says this)")
        conn.execute("INSERT INTO site_addresses (site_id, kind, version, street, city, state, postal_code, "
                     "recorded_by, note) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                     (sid, kind, have + 1, a["street"], a["city"], a["state"], a["postal_code"], actor.audit_name,
                      _text(note, "note", most=300)))
        _audit(conn, actor, "address.set", f"site:{site_key}",
               {"kind": kind, "version": have + 1, **a, "was": {k: now[k] for k in ADDRESS_FIELDS} if now else None})
    return addresses_of(conn, site_key)[kind]


def link_account(conn, account_id: int, site_id: int | None, email: str | None,
                 contact_id: int | None = None) -> int | None:
    """Link portal account ``account_id`` to its contact: ``contact_id`` (an invitation made
    from a contact), else the user's contact with the same e-mail address; returns the
    contact's number, or None when the book has no such person."""
    if contact_id is None and site_id is not None and email:
        row = conn.execute("SELECT c.id FROM contacts c JOIN LATERAL (SELECT * FROM contact_versions x WHERE "
                           "x.contact_id = c.id ORDER BY x.version DESC LIMIT 1) v ON true WHERE c.site_id = %s "
                           "AND lower(v.email) = lower(%s) AND NOT v.removed ORDER BY c.id LIMIT 1",
                           (site_id, email)).fetchone()
        contact_id = row[0] if row else None
    if contact_id is not None:
        conn.execute("UPDATE web_accounts SET contact_id = %s WHERE id = %s", (contact_id, account_id))
    return contact_id
