"""identity: the office's accounts and roles. See README.md beside this file.

Who may sign in and as what: staff accounts with a role, an industrial user's people bound
to its site (:mod:`identity.accounts`: passwords, the TOTP second factor, the lockout, the
signatory's signature checked again), and the table of roles and what each may do
(:mod:`identity.roles`); and the office's address book, each industrial user's people and
addresses (:mod:`identity.contacts`, :mod:`identity.contacts_import`). The office's sessions
and guards (``web``), the portal's signing and invitations (``ereport``), ``sewerwatch users``
and ``sewerwatch contacts`` use them. Importing this package imports nothing.
"""

__all__ = ["accounts", "contacts", "contacts_import", "roles"]
