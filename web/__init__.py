"""web: the office, the utility's web application. See README.md beside this file.

The face: :class:`web.office.Office` (what the pages need: config, database, time zone,
the health of ``run``), :class:`web.server.WebServer` (served on the caller's loop: the
component ``web`` of ``run``, or ``sewerwatch web``), :func:`web.app.build_app`, and the
account functions of :mod:`web.accounts` (``sewerwatch users``). Importing this package
imports nothing heavy.
"""

__all__ = ["accounts", "app", "office", "roles", "server"]
