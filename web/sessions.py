"""Sessions of the office: Litestar's server-side sessions in Litestar's
file store, a new session id at every sign-in, idle and absolute expiry, and the account
checked against the database at every request.

What is Litestar's and what is here:

* the session id (32 random bytes), its cookie (``HttpOnly``, ``SameSite=Lax``, ``Secure``
  when the public address is https) and the store (:class:`litestar.stores.file.FileStore`
  under the state folder, so a restart of ``run`` keeps people signed in) are Litestar's;
* here: :class:`RotatingBackend`, Litestar's server-side backend with one change, a new
  session id when :func:`sign_in` asks for it (Litestar reuses the id of the cookie, which
  would let a session id planted before the sign-in survive it: session fixation), and the
  old session deleted from the store;
* the session holds the account's id, its ``session_epoch`` (:mod:`identity.accounts`: a
  disabled account, a new password or role ends every session at its next request), when
  it signed in (absolute expiry, ``[web] session_max_h``) and when it last clicked (idle
  expiry, ``session_idle_min``; the Today page's own refreshes do not count as clicks).
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from litestar.connection import ASGIConnection
from litestar.middleware.session.server_side import ServerSideSessionBackend, ServerSideSessionConfig
from litestar.stores.file import FileStore

from identity import accounts

#: The session cookie's name.
COOKIE = "sewerwatch_session"
#: The CSRF cookie's name (Litestar's CSRF middleware, web/app.py).
CSRF_COOKIE = "sewerwatch_csrf"
#: The store's name in the application's store registry.
STORE = "sessions"
#: The scope-state flag :class:`RotatingBackend` reads: give this response a new session id.
_ROTATE = "sewerwatch.rotate_session"
_ROTATED_ID = "sewerwatch.rotated_session_id"
#: The scope-state key of the session as it was loaded (:class:`RotatingBackend`).
_LOADED = "sewerwatch.session_loaded"
#: The idle clock's step [s], at most: a click within this long of the last one recorded
#: is not written (an idle expiry of 30 minutes need not rewrite the session at every page);
#: never more than a hundredth of ``[web] session_idle_min``.
IDLE_STEP_S = 15.0

#: Why a session ended, for the sign-in page (``/login?why=...``).
WHY = {
    "idle": "Your session ended after {idle} minutes without a click. Sign in again.",
    "max": "Your session ended {max} hours after you signed in. Sign in again.",
    "disabled": "This account has been disabled, so its session ended. Ask the superintendent if this is a mistake.",
    "changed": "Your account was changed (its password, role or second factor), so its session ended. Sign in again.",
    "signed-out": "You are signed out.",
    "account-made": "Your account is ready: sign in with the user name and password you chose.",
}


class RotatingBackend(ServerSideSessionBackend):
    """Litestar's server-side session backend, with a new id when :func:`sign_in` asks, and
    no write to the store when a response leaves the session as it was loaded (Litestar
    writes it back at every response: a file written and renamed for each page)."""

    def get_session_id(self, connection: ASGIConnection) -> str:
        state = connection.scope.get("state", {})
        if state.get(_ROTATE):
            if not state.get(_ROTATED_ID):
                state[_ROTATED_ID] = self.generate_session_id()
            return state[_ROTATED_ID]
        return super().get_session_id(connection)

    async def load_from_connection(self, connection: ASGIConnection) -> dict:
        data = await super().load_from_connection(connection)
        connection.scope.setdefault("state", {})[_LOADED] = dict(data) if data else None
        return data

    async def store_in_message(self, scope_session, message, connection: ASGIConnection) -> None:
        state = connection.scope.get("state", {})
        loaded = state.get(_LOADED)
        if loaded and not state.get(_ROTATE) and isinstance(scope_session, dict) and scope_session == loaded:
            return      # unchanged: the store holds it, the browser's cookie names it
        await super().store_in_message(scope_session, message, connection)


class RotatingSessionConfig(ServerSideSessionConfig):
    _backend_class = RotatingBackend


def config(opts) -> RotatingSessionConfig:
    """The session middleware's config for ``[web]`` ``opts``."""
    secure = (opts.public_url or "").startswith("https://")
    return RotatingSessionConfig(key=COOKIE, store=STORE, max_age=int(opts.session_max_h * 3600) + 60,
                                 httponly=True, secure=secure, samesite="lax", path="/", exclude=["^/ack/", "^/static/"])


def store(state_dir: Path) -> FileStore:
    """Litestar's file store in ``<state dir>/web-sessions`` (0700)."""
    path = Path(state_dir) / "web-sessions"
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return FileStore(path, create_directories=True)


async def sign_in(connection: ASGIConnection, account) -> None:
    """Start the session of ``account``: the old session (if any) deleted, a new id."""
    old = connection.cookies.get(COOKIE)
    if old and old != "null":
        await connection.app.stores.get(STORE).delete(old)
    connection.scope.setdefault("state", {})[_ROTATE] = True
    now = time.time()
    connection.set_session({"a": account.id, "e": account.session_epoch, "t0": now, "ta": now})


def new_csrf_token(response):
    """``response`` (a sign-in's) with the CSRF cookie deleted: the next page gets a new token
    from Litestar's CSRF middleware, so a token planted in the browser before the sign-in does
    not outlive it."""
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


async def pending_second_factor(connection: ASGIConnection, account) -> None:
    """The password was right; the session waits for the TOTP code (a new id already)."""
    old = connection.cookies.get(COOKIE)
    if old and old != "null":
        await connection.app.stores.get(STORE).delete(old)
    connection.scope.setdefault("state", {})[_ROTATE] = True
    connection.set_session({"p": account.id, "pt": time.time()})


def pending_account_id(connection: ASGIConnection, within_s: float = 300.0) -> int | None:
    """The account waiting for its second factor (for at most ``within_s``), or None."""
    sess = connection.session or {}
    if sess.get("p") and time.time() - float(sess.get("pt", 0)) <= within_s:
        return int(sess["p"])
    return None


def sign_out(connection: ASGIConnection) -> None:
    connection.clear_session()


async def current_account(connection: ASGIConnection, passive: bool = False):
    """``(account, None)`` of a standing session, or ``(None, why)`` (a :data:`WHY` key, or
    None when there was no session). ``passive``: a refresh of the page, not a click (does
    not keep an idle session alive)."""
    office = connection.app.state.office
    opts = office.opts
    sess = dict(connection.session or {})
    if not sess.get("a"):
        return None, None
    now = time.time()
    why = None
    if now - float(sess.get("t0", 0)) > opts.session_max_h * 3600:
        why = "max"
    elif now - float(sess.get("ta", 0)) > opts.session_idle_min * 60:
        why = "idle"
    if why is None:
        def load(conn):
            acc = accounts.by_id(conn, int(sess["a"]))
            if acc is None or acc.disabled_at is not None:
                return None, "disabled"
            if acc.session_epoch != int(sess.get("e", -1)):
                return None, "changed"
            return acc, None
        acc, why = await anyio.to_thread.run_sync(office.read, load)
        if acc is not None:
            if not passive and now - float(sess.get("ta", 0)) >= min(IDLE_STEP_S, opts.session_idle_min * 0.6):
                sess["ta"] = now
                connection.set_session(sess)
            return acc, None
    client = getattr(connection.state, "client", None) or (connection.client.host if connection.client else "")

    def audit(conn):
        acc = accounts.by_id(conn, int(sess["a"]))
        if acc is not None:
            accounts.signed_out(conn, acc, client, why)
    try:
        await anyio.to_thread.run_sync(office.read, audit)
    except Exception:  # noqa: BLE001 - the session ends all the same
        pass
    connection.clear_session()
    return None, why
