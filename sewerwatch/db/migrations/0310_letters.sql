-- Letters the utility writes (enforcement/letters/, docs/office/letters.md): each kind is a
-- template (the program's default, or the utility's file of the same name in the folder that
-- [documents] letters names). Every text of a template the office saved is kept here, with who
-- saved it and when (letter_template_versions); a letter issued is kept as issued: its HTML,
-- the template's text and hash, the PDF and its SHA-256 (letters); a PDF edited in the
-- utility's word processor and brought back replaces the one served, the program's first PDF
-- kept (letter_pdfs).

CREATE TABLE letter_template_versions (
    id           bigserial PRIMARY KEY,
    kind         text NOT NULL CHECK (kind ~ '^[a-z0-9][a-z0-9-]{0,59}$'),
    version      int NOT NULL CHECK (version >= 1),       -- 1 = the first text the office saved
    text         text NOT NULL,                           -- the template as saved
    sha256       text NOT NULL,
    saved_by     text NOT NULL,
    saved_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, version)
);

CREATE TABLE letters (
    id              bigserial PRIMARY KEY,
    number          text NOT NULL UNIQUE,                 -- LTR-2026-001
    kind            text NOT NULL,
    title           text NOT NULL,                        -- the kind's title as the letter prints it
    site_id         int NOT NULL REFERENCES sites (id),
    subject_key     text NOT NULL,                        -- what the letter is about (one letter of a kind per user and subject)
    subject         text NOT NULL,                        -- the subject line, in words
    issued_on       date NOT NULL,                        -- the village's day
    context         jsonb NOT NULL,                       -- what the template was given
    html            text NOT NULL,                        -- the rendered document, as issued
    template_text   text NOT NULL,
    template_sha256 text NOT NULL,
    template_source text NOT NULL CHECK (template_source IN ('program', 'utility')),
    pdf             bytea NOT NULL,                       -- the program's PDF as issued
    pdf_sha256      text NOT NULL,
    issued_by       text NOT NULL,
    issued_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, site_id, subject_key)
);
CREATE INDEX letters_site ON letters (site_id, issued_on);

CREATE TABLE letter_pdfs (
    id           bigserial PRIMARY KEY,
    letter_id    bigint NOT NULL REFERENCES letters (id),
    pdf          bytea NOT NULL,                          -- the PDF brought back (edited outside)
    pdf_sha256   text NOT NULL,
    filename     text NOT NULL,
    note         text,
    replaced_by  text NOT NULL,
    replaced_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX letter_pdfs_letter ON letter_pdfs (letter_id, id);
