"""web: the office, the utility's web application. See README.md beside this file.

The face: :class:`web.office.Office` (what the pages need: config, database, time zone,
the health of ``run``), :class:`web.server.WebServer` (served on the caller's loop: the
component ``web`` of ``run``, or ``sewerwatch web``) and :func:`web.app.build_app`. The
accounts and roles it signs people in by are :mod:`identity`'s; the portal's record is
:mod:`ereport`'s. Importing this package imports nothing heavy.
"""

__all__ = ["app", "office", "server"]
