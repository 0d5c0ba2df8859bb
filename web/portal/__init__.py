"""The industrial users' portal: invitations and the portal's people, what a user
owes and has, drafts and their uploads, signing (40 CFR 3.2000, CROMERR) and the copy of
record, the coordinator's review. Pages: :mod:`web.pages.portal` (the user's) and
:mod:`web.pages.review` (the utility's)."""
