"""Nothing done twice, nothing overwritten unseen: the office's forms.

Two pieces every page that acts uses.

**One submission, one action (an idempotency key per form).** A form that acts carries a
key made when its page was drawn; the action runs in the same database transaction that
stores the key (table ``web_form_submissions``, migration 0150). A second submission with
the key (a double click, the back button to a page the browser kept, a reload that sends the
form again) waits on the key's row for the first to finish, then gets the first one's
outcome without acting again: one import, one notice. An action that fails rolls its key
back with everything else it did, so sending the form again acts.

How a page uses it::

    # the template of the form (a fresh key each time the page is drawn)
    <form method="post" ...>{{ csrf_input | safe }}{{ form_key() }} ... </form>

    # the handler
    from web import forms

    @post("/things/{n:int}/issue", opt={authz.OPT: "notices.issue"}, sync_to_thread=True)
    def issue(request: Request, n: FromPath[int], data: Form) -> Redirect:
        done = forms.once(request, data, "notice.issue",
                          lambda conn, actor: {"location": f"/things/{n}",
                                               **package.issue(conn, n, actor=actor)})
        return forms.redirect(request, done)     # 303 to the outcome's location

``work(conn, actor)`` calls the package function (the one the command line calls) on the
transaction's connection as the signed-in account (``actor``: :class:`foundation.actor.Actor`)
and returns what the page shows afterwards as JSON-ready data with its ``location``.
:func:`redirect` sends the browser there, adding ``again=1`` for a repeated submission, so the
page can say "this form had been sent already: here is what it did".

A refusal that must stay on record although nothing was done (signing with a wrong password:
the failure counts towards the lockout) names its exception in ``keep``: what ``work`` wrote
before raising it is committed, the key is released (sending the form again acts) and the
exception is raised to the handler.

**Two editors, one clear conflict (optimistic concurrency).** A form that edits a versioned
object (a permit) carries the version it was drawn from (``{{ version_field(n) }}``,
:func:`base_version` reads it back); the package function takes it as ``expected_version``
and raises :class:`foundation.errors.Conflict` when someone saved a newer version meanwhile.
The handler answers :data:`CONFLICT` (409) with :func:`conflict_lines` and the form again,
filled with what the person had typed, so nothing is lost and nothing is overwritten. A form
that issues a document the person reviewed (a notice) carries the version the same way: a
newer one refuses the issue (``Conflict(..., doing="issue")``), and the page shows the
current version instead, for the person to read before issuing it.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from litestar import Request
from litestar.exceptions import ClientException, HTTPException
from litestar.response import Redirect
from markupsafe import Markup

from foundation.errors import Conflict
from web.formats import local

#: The form field holding the key.
FIELD = "_form_key"
#: The form field holding the version an edit was drawn from.
VERSION_FIELD = "_base_version"
#: What a key looks like (:func:`new_key`: 24 random bytes, URL-safe base64).
KEY = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
#: The status of an edit refused because someone saved a newer version meanwhile.
CONFLICT = 409
#: Keys older than this are removed [days] (:func:`purge`).
KEEP_DAYS = 30


@dataclass(frozen=True)
class Done:
    """The outcome of one submission.

    Attributes
    ----------
    outcome : dict
        What ``work`` returned (stored as JSON): at least ``location``.
    again : bool
        True when this submission repeated an earlier one (nothing was done this time).
    at : datetime
        When the action was done.
    """

    outcome: dict
    again: bool
    at: datetime


def new_key() -> str:
    """A fresh submission key."""
    return secrets.token_urlsafe(24)


def key_field() -> Markup:
    """The hidden field with a fresh key (the templates' ``form_key()``)."""
    return Markup(f'<input type="hidden" name="{FIELD}" value="{new_key()}">')


def version_field(version: int) -> Markup:
    """The hidden field with the version an edit is drawn from (``version_field(n)``)."""
    return Markup(f'<input type="hidden" name="{VERSION_FIELD}" value="{int(version)}">')


def base_version(data: dict) -> int:
    """The version the submitted form (an edit, an issue) was drawn from (400 without one)."""
    text = str(data.get(VERSION_FIELD, "")).strip()
    if not text.isdigit():
        raise ClientException("This form does not say which version it was drawn from: reload the page and send "
                              "it again.")
    return int(text)


def key_of(data: dict) -> str:
    key = str(data.get(FIELD, "")).strip()
    if not KEY.match(key):
        raise ClientException("This form has no submission key (it was not sent from a page of this office, or an "
                              "old one): reload the page and send it again.")
    return key


def once(request: Request, data: dict, action: str, work: Callable,
         keep: tuple[type[BaseException], ...] = ()) -> Done:
    """Run ``work(conn, actor) -> dict`` once for the form's key (see the module docstring).

    Parameters
    ----------
    keep : tuple of exception classes
        Refusals after which what ``work`` wrote is committed (the key released), not rolled back.

    Raises
    ------
    litestar.exceptions.ClientException
        400: the form has no key; 409: the key was used by another account or another form.
    Whatever ``work`` raises (its transaction, the key's row included, is rolled back; for an
    exception of ``keep``, committed without the key's row).
    """
    office = request.app.state.office
    account = request.state.account
    key = key_of(data)
    for _ in range(2):       # the first submission may fail meanwhile: then this one acts
        done = office.read(lambda conn: _run(conn, key, account, action, work, keep))
        if done is not None:
            return done
        prev = office.read(lambda conn: conn.execute(
            "SELECT account_id, action, outcome, done_at FROM web_form_submissions WHERE key = %s",
            (key,)).fetchone())
        if prev is None:
            continue
        if prev[0] != account.id or prev[1] != action:
            raise HTTPException(status_code=409, detail="This form's key belongs to another form: reload the page "
                                "and send it again.")
        office.stats["repeated_forms"] = office.stats.get("repeated_forms", 0) + 1
        return Done(prev[2], True, prev[3])
    raise HTTPException(status_code=409, detail="This form could not be sent: reload the page and send it again.")


def _run(conn, key: str, account, action: str, work: Callable, keep: tuple = ()) -> Done | None:
    with conn.transaction():
        # Waits for a submission of the same key still running; returns nothing once it committed.
        claimed = conn.execute(
            "INSERT INTO web_form_submissions (key, account_id, action) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO NOTHING RETURNING done_at", (key, account.id, action)).fetchone()
        if claimed is None:
            return None
        try:
            outcome = work(conn, account.actor)
        except keep as exc:      # a refusal on record: what work wrote is committed, the key released
            conn.execute("DELETE FROM web_form_submissions WHERE key = %s", (key,))
            refused = exc
        else:
            if not isinstance(outcome, dict) or "location" not in outcome:
                raise TypeError(f"{action}: the work of a form returns a dict with its 'location'")
            conn.execute("UPDATE web_form_submissions SET outcome = %s WHERE key = %s",
                         (json.dumps(outcome, default=str), key))
            return Done(json.loads(json.dumps(outcome, default=str)), False, claimed[0])
    raise refused


def redirect(request: Request, done: Done) -> Redirect:
    """303 to the outcome's location (``again=1`` added for a repeated submission)."""
    office = request.app.state.office
    loc = done.outcome["location"]
    if done.again:
        path, _, frag = loc.partition("#")
        loc = path + ("&" if "?" in path else "?") + "again=1" + (f"#{frag}" if frag else "")
    return Redirect(office.url(loc), status_code=303)


def conflict_lines(exc: Conflict, tz: str) -> list[str]:
    """What a person reads when their edit, or the document they issue, met a newer version
    (the time in the village's time zone ``tz``, as every time of the office)."""
    at = local(exc.at, tz, seconds=False) if isinstance(exc.at, datetime) else exc.at
    if exc.doing == "issue":
        return [f"{exc.by} saved version {exc.current} of {exc.what} at {at}, after you opened version "
                f"{exc.expected} to issue it. Nothing was issued.",
                f"Below is version {exc.current} as it stands now (what changed is listed): read it, then issue it "
                "if it is what you mean to send."]
    return [f"{exc.by} saved version {exc.current} of {exc.what} at {at}, after you began editing version "
            f"{exc.expected}. Nothing was saved.",
            f"Your changes are kept in the form below. Compare them with version {exc.current} (its differences are "
            "shown), then save again."]


def purge(conn, days: int = KEEP_DAYS) -> int:
    """Remove the keys of submissions older than ``days``; how many."""
    return conn.execute("DELETE FROM web_form_submissions WHERE done_at < now() - make_interval(days => %s)",
                        (days,)).rowcount
