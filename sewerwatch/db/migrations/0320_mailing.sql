-- Mailing issued documents (ereport/mailing/): notices, grease notices and bills go to their
-- contacts by e-mail with the PDF attached, in a batch the clerk reviews first; those without
-- e-mail (or who prefer paper) are on the batch's paper list. Every sending is kept: when, to
-- whom, the Message-ID set on it, the outcome, and a bounce read later from the mail
-- server's delivery-status notification (RFC 3464).

-- A contact's wish for paper instead of e-mail (the latest row of a contact counts).
CREATE TABLE contact_mail_preferences (
    contact_id   int NOT NULL REFERENCES contacts (id), -- the contact
    paper        boolean NOT NULL,                -- true: documents go by post, not e-mail
    recorded_at  timestamptz NOT NULL DEFAULT now(), -- when it was said
    recorded_by  text NOT NULL,                   -- who recorded it
    PRIMARY KEY (contact_id, recorded_at)
);

CREATE TABLE mail_batches (
    id           serial PRIMARY KEY,              -- the batch's number
    choice       text NOT NULL,                   -- what it was made from, in words
    made_at      timestamptz NOT NULL DEFAULT now(), -- when it was made
    made_by      text NOT NULL,                   -- who made it (account or operating-system user)
    sent_at      timestamptz,                     -- when sending began (a batch is sent once)
    sent_by      text,                            -- who sent it
    finished_at  timestamptz                      -- when the last message was handed over
);

-- What a batch holds: one document to one addressee, by e-mail, on paper or nowhere.
CREATE TABLE mail_batch_items (
    id            serial PRIMARY KEY,             -- the item's number
    batch_id      int NOT NULL REFERENCES mail_batches (id), -- the batch it is in
    kind          text NOT NULL,                  -- notice, grease-notice, bill, letter
    document_id   bigint NOT NULL,                -- the document's id in its own table
    number        text NOT NULL,                  -- the number people read (NOV-2026-001, 2026Q1-plating for a bill)
    title         text NOT NULL,                  -- what the document is, in words
    site_id       int REFERENCES sites (id),      -- the industrial user (none for a grease notice)
    recipient     text NOT NULL,                  -- the user's or establishment's name
    contact_id    int REFERENCES contacts (id),   -- the person (none when not on file)
    person        text,                           -- the person's name as addressed
    email         text,                           -- where it is mailed (channel email)
    lines         jsonb NOT NULL DEFAULT '[]',    -- the postal address, line by line
    channel       text NOT NULL CHECK (channel IN ('email', 'paper', 'none')), -- by e-mail, on paper, no address on file
    why           text,                           -- why paper or nowhere, in words
    resend_reason text,                           -- a document sent before, sent again: why
    skipped       text,                           -- not sent at the batch's sending: why
    UNIQUE (batch_id, kind, document_id)
);

CREATE TABLE mail_sendings (
    id            serial PRIMARY KEY,             -- the sending's number
    item_id       int NOT NULL REFERENCES mail_batch_items (id), -- the batch's item sent
    kind          text NOT NULL,                  -- the document's kind (as the item's)
    document_id   bigint NOT NULL,                -- the document's id (as the item's)
    to_address    text NOT NULL,                  -- the e-mail address it was sent to
    message_id    text NOT NULL UNIQUE,           -- the Message-ID header set on the message
    sent_at       timestamptz NOT NULL DEFAULT now(), -- when the server took it (or refused it)
    outcome       text NOT NULL CHECK (outcome IN ('sent', 'bounced', 'failed')), -- taken, refused at once, not reached
    detail        text,                           -- the server's answer when not taken
    bounced_at    timestamptz,                    -- a delivery-status notification said it failed
    bounce_reason text                            -- the notification's status and diagnostic
);
CREATE INDEX mail_sendings_document ON mail_sendings (kind, document_id);
