"""ereport: electronic reporting, the industrial users' record with the utility. See
README.md beside this file.

What a user prepares (:mod:`ereport.drafts`, :mod:`ereport.uploads`, the lab check of
:mod:`ereport.labcheck`), what it owes and has (:mod:`ereport.owed`), signing with the
certification of 40 CFR 403.6(a)(2)(ii) (:mod:`ereport.certification`), the copy of record,
its SHA-256, the receipt and the coordinator's review (:mod:`ereport.record`), the portal's
people: invitations, preparers and signatories (:mod:`ereport.invitations`), and the mail
they are told by (:mod:`ereport.mail`). The portal's pages (``web.pages.portal``,
``web.pages.review``, ``web.pages.portal_people``) and ``sewerwatch portal`` call the same
functions; nothing here knows HTTP. Importing this package imports nothing.
"""

__all__ = ["certification", "drafts", "invitations", "labcheck", "mail", "owed", "record", "uploads"]
