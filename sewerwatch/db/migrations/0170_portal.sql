-- The industrial users' portal (issue 27): its people, their invitations, what they prepare,
-- and the copy of record of what they sign and submit.
--
-- web_accounts of kind 'industrial-user' (0140) gain the person's e-mail address (where the
-- receipts go), whether the person is an authorised signatory (a responsible corporate officer
-- or a duly authorised representative, 40 CFR 403.12(l)), the position named in the
-- authorisation, and the day the utility received the person's signed subscriber agreement
-- (40 CFR 3.2000(b)(5)(v)).
ALTER TABLE web_accounts ADD COLUMN email text;
ALTER TABLE web_accounts ADD COLUMN signatory boolean NOT NULL DEFAULT false;
ALTER TABLE web_accounts ADD COLUMN title text;
ALTER TABLE web_accounts ADD COLUMN subscriber_agreement_on date;
ALTER TABLE web_accounts ADD CONSTRAINT web_accounts_signatory_is_a_portal_person
    CHECK (NOT signatory OR kind = 'industrial-user');

-- An invitation: a signed, expiring link mailed to the person (web/portal/invitations.py); the
-- token's own id is kept so a link works once; the second factor's secret is made when the
-- link is first opened and kept until the account exists.
CREATE TABLE portal_invitations (
    id                       bigserial PRIMARY KEY,
    site_id                  int NOT NULL REFERENCES sites (id),
    email                    text NOT NULL,
    full_name                text NOT NULL,
    title                    text,
    signatory                boolean NOT NULL,
    subscriber_agreement_on  date,
    token_id                 text NOT NULL UNIQUE,
    totp_secret              text,
    invited_by               text NOT NULL,
    invited_at               timestamptz NOT NULL DEFAULT now(),
    expires_at               timestamptz NOT NULL,
    accepted_at              timestamptz,
    account_id               int REFERENCES web_accounts (id),
    revoked_at               timestamptz,
    mailed                   boolean NOT NULL DEFAULT false,
    mail_error               text,
    CHECK (NOT signatory OR subscriber_agreement_on IS NOT NULL)
);
CREATE INDEX portal_invitations_site ON portal_invitations (site_id);

-- What a user prepares before it is signed: a draft (its form's fields as JSON) and its
-- uploads (bytes in the database, never under the web root; names kept only to show them).
-- Drafts change until they are submitted; what is submitted is copied into the record.
CREATE TABLE portal_drafts (
    id            bigserial PRIMARY KEY,
    site_id       int NOT NULL REFERENCES sites (id),
    kind          text NOT NULL CHECK (kind IN ('self-monitoring', 'notice-response', 'accidental-discharge',
                                                'permit-application')),
    target        text,                       -- notice:<number>, report:<id>, permit:<number>
    supersedes    bigint,                     -- the submission a correction replaces
    data          jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_by    int NOT NULL REFERENCES web_accounts (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    submitted_as  bigint
);
CREATE INDEX portal_drafts_site ON portal_drafts (site_id);

CREATE TABLE portal_uploads (
    id           bigserial PRIMARY KEY,
    draft_id     bigint NOT NULL REFERENCES portal_drafts (id) ON DELETE CASCADE,
    role         text NOT NULL CHECK (role IN ('lab-csv', 'lab-report', 'attachment')),
    name         text NOT NULL,               -- as shown (cleaned), never a path
    media_type   text NOT NULL,
    size         int NOT NULL,
    sha256       text NOT NULL,
    content      bytea NOT NULL,
    uploaded_by  int NOT NULL REFERENCES web_accounts (id),
    uploaded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX portal_uploads_draft ON portal_uploads (draft_id);

-- The copy of record (40 CFR 3.2000(b); 3.3 "copy of record"): the exact bytes signed (a
-- canonical JSON document naming every file by its SHA-256), their SHA-256, the signer, the
-- certification signed, the time; the files; the report as rendered (PDF); and the events after
-- it (receipt mailed, accepted, rejected with the reason). All three tables are append-only.
CREATE TABLE portal_submissions (
    id                 bigserial PRIMARY KEY,
    number             text NOT NULL UNIQUE,  -- SMR-2026-001, NR-, ADR-, PA-
    site_id            int NOT NULL REFERENCES sites (id),
    kind               text NOT NULL CHECK (kind IN ('self-monitoring', 'notice-response', 'accidental-discharge',
                                                     'permit-application')),
    title              text NOT NULL,
    target             text,
    supersedes         bigint REFERENCES portal_submissions (id),
    document           bytea NOT NULL,
    sha256             text NOT NULL,
    certification      text NOT NULL,
    signer_id          int NOT NULL REFERENCES web_accounts (id),
    signer_username    text NOT NULL,
    signer_name        text NOT NULL,
    signer_title       text,
    signer_email       text NOT NULL,
    signed_at          timestamptz NOT NULL,
    client             text,
    totp_step          bigint NOT NULL,
    pdf                bytea NOT NULL,
    pdf_sha256         text NOT NULL,
    CHECK (sha256 ~ '^[0-9a-f]{64}$')
);
CREATE INDEX portal_submissions_site ON portal_submissions (site_id);
CREATE UNIQUE INDEX portal_submissions_superseded_once ON portal_submissions (supersedes) WHERE supersedes IS NOT NULL;

CREATE TABLE portal_submission_files (
    id             bigserial PRIMARY KEY,
    submission_id  bigint NOT NULL REFERENCES portal_submissions (id),
    position       int NOT NULL,
    role           text NOT NULL,
    name           text NOT NULL,
    media_type     text NOT NULL,
    size           int NOT NULL,
    sha256         text NOT NULL,
    content        bytea NOT NULL,
    UNIQUE (submission_id, position)
);

CREATE TABLE portal_events (
    id             bigserial PRIMARY KEY,
    submission_id  bigint NOT NULL REFERENCES portal_submissions (id),
    at             timestamptz NOT NULL DEFAULT now(),
    actor          text NOT NULL,
    event          text NOT NULL CHECK (event IN ('submitted', 'receipt-mailed', 'receipt-failed', 'accepted',
                                                  'rejected', 'permit-made', 'outcome-mailed', 'outcome-failed')),
    reason         text,
    detail         jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX portal_events_submission ON portal_events (submission_id);

CREATE FUNCTION portal_record_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: the copy of record of a submission is never changed', TG_TABLE_NAME;
END
$$;
CREATE TRIGGER portal_submissions_append_only BEFORE UPDATE OR DELETE ON portal_submissions
    FOR EACH ROW EXECUTE FUNCTION portal_record_append_only();
CREATE TRIGGER portal_submission_files_append_only BEFORE UPDATE OR DELETE ON portal_submission_files
    FOR EACH ROW EXECUTE FUNCTION portal_record_append_only();
CREATE TRIGGER portal_events_append_only BEFORE UPDATE OR DELETE ON portal_events
    FOR EACH ROW EXECUTE FUNCTION portal_record_append_only();
CREATE TRIGGER portal_submissions_no_truncate BEFORE TRUNCATE ON portal_submissions
    FOR EACH STATEMENT EXECUTE FUNCTION portal_record_append_only();

-- Which lab samples came from an accepted self-monitoring submission (the user's own results).
ALTER TABLE lab_samples ADD COLUMN submission_id bigint REFERENCES portal_submissions (id);

-- The invitations hold second-factor secrets: not for the read-only role.
REVOKE SELECT ON portal_invitations FROM sewerwatch_grafana;
