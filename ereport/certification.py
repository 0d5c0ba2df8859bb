"""What a signatory certifies, and what the portal does for each element of 40 CFR 3.2000
(CROMERR, the Cross-Media Electronic Reporting Rule) that an electronic document receiving
system of an authorised program must meet.

Reports of an industrial user "must be signed by an authorized representative ... and contain
the certification statement in §403.6(a)(2)(ii)" (40 CFR 403.12(l)); the statement is given
here in the regulation's words and signed as part of the document (its bytes are hashed with
the rest). :data:`CROMERR` lists each element of §3.2000(b) against what sewerwatch does, and
what the utility must still do itself; the guide's page on electronic reports prints the same
table.
"""

from __future__ import annotations

#: 40 CFR 403.6(a)(2)(ii), the certification every report of 403.12 carries (403.12(l)).
CERTIFICATION = (
    "I certify under penalty of law that this document and all attachments were prepared under my direction or "
    "supervision in accordance with a system designed to assure that qualified personnel properly gather and "
    "evaluate the information submitted. Based on my inquiry of the person or persons who manage the system, or "
    "those persons directly responsible for gathering the information, the information submitted is, to the best "
    "of my knowledge and belief, true, accurate, and complete. I am aware that there are significant penalties "
    "for submitting false information, including the possibility of fine and imprisonment for knowing violations."
)
CERTIFICATION_CITATION = "40 CFR 403.6(a)(2)(ii), as 40 CFR 403.12(l) requires"

#: Who may sign (40 CFR 403.12(l)), as the sign page says it.
SIGNATORY_WORDS = ("Reports are signed by an authorized representative of the industrial user: a responsible "
                   "corporate officer, a general partner or proprietor, or a duly authorized representative "
                   "(40 CFR 403.12(l)).")

#: (element of 40 CFR 3.2000, what it asks, what sewerwatch does, what the utility does itself)
CROMERR = (
    ("3.2000(a)(2)", "a valid electronic signature where the paper document needs one",
     "only an account the coordinator invited as a signatory can sign; the signature is the account's password "
     "and its TOTP second factor, both entered again at signing", ""),
    ("3.2000(b)(1)", "not altered without detection in transmission or after receipt",
     "the SHA-256 of the exact bytes signed is stored with them and mailed in the receipt; every page showing "
     "the copy of record hashes the stored bytes again and says whether they match", "keep TLS on the reverse "
     "proxy (the portal speaks plain HTTP behind it)"),
    ("3.2000(b)(2)", "alterations fully documented",
     "nothing is altered: the copy of record tables refuse UPDATE and DELETE (a trigger, as lab results); a "
     "correction is a new submission naming the one it supersedes; reviews are events appended", ""),
    ("3.2000(b)(3)", "submitted knowingly, not by accident",
     "signing is its own page: the whole report, the certification, a box to tick, the password and code again; "
     "a draft that changed since the page was shown is not signed", ""),
    ("3.2000(b)(4)", "the signatory could review the copy of record in a human-readable form and repudiate it",
     "the sign page shows every field and file; after signing the copy of record (page and PDF) is shown and "
     "mailed as a receipt; a correction supersedes", ""),
    ("3.2000(b)(5)(i)", "each signature valid at the time of signing",
     "the account is checked at signing: active, a signatory, its subscriber agreement recorded, password and "
     "an unused TOTP code right; failures count towards the lockout", ""),
    ("3.2000(b)(5)(ii)", "cannot be altered without detection after signing",
     "the document's SHA-256 binds signer, time, certification and each file's SHA-256", ""),
    ("3.2000(b)(5)(iii)", "the signatory reviewed the content signed", "the sign page shows it all (above)", ""),
    ("3.2000(b)(5)(iv)", "the signatory reviewed the certification, with its criminal penalties",
     "the 40 CFR 403.6(a)(2)(ii) statement in its words on the sign page and in the document", ""),
    ("3.2000(b)(5)(v)", "an electronic signature or subscriber agreement signed by each signatory",
     "a signatory cannot be invited without the day the utility received the signed agreement",
     "collect the subscriber agreement (on paper, wet ink) before inviting a signatory"),
    ("3.2000(b)(5)(vi)", "an acknowledgment of receipt naming the document, the signatory, the date and time, "
     "to an address outside the account's access controls",
     "a receipt mailed to the signatory's e-mail address at once, with the number, the signer, the time and "
     "the SHA-256; a failed mail is recorded and shown", "configure [web] mail_url"),
    ("3.2000(b)(5)(vii)", "the signatory's identity established with legal certainty before the device is issued",
     "the invitation goes only to the address the coordinator enters, works once and expires",
     "identity-proof each signatory (the subscriber agreement, the authorisation of 403.12(l)(2)) before "
     "inviting"),
    ("3.1000", "an authorised program revised, with EPA's approval, to take electronic reports",
     "sewerwatch keeps the copies of record for as long as the database is kept",
     "apply for the state's (or EPA's) approval of the program revision before relying on it"),
)
