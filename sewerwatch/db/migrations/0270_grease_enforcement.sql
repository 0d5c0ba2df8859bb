-- The grease program's enforcement and the sewer crew's grease blockages.
-- An establishment may be given the sewer segment (or manhole) its building sewer drains to
-- (segment, '' when not given): the hot spots list the establishments upstream of a
-- segment where blockages were found. A blockage report (fog_blockages) is the crew's: the
-- day, the manhole or segment, what was found, by whom; traced to an establishment it is a
-- finding for it. The notices issued under the grease program's enforcement response guide
-- (enforcement/guides/grease-erp.toml) are kept as issued (fog_notices: the document as
-- JSON, the PDF's bytes and their SHA-256); a finding gets one notice of a step.

ALTER TABLE fog_establishments ADD COLUMN segment text NOT NULL DEFAULT ''
    CHECK (length(segment) <= 60);
CREATE INDEX fog_establishments_segment ON fog_establishments (lower(segment)) WHERE segment <> '';

CREATE TABLE fog_blockages (
    id               serial PRIMARY KEY,
    found_on         date NOT NULL,
    location         text NOT NULL CHECK (length(btrim(location)) BETWEEN 1 AND 60),   -- manhole or segment
    found            text NOT NULL CHECK (length(btrim(found)) BETWEEN 1 AND 1000),   -- what the crew found
    found_by         text NOT NULL CHECK (length(btrim(found_by)) BETWEEN 1 AND 200),
    establishment_id int REFERENCES fog_establishments (id),                          -- traced to, if any
    source           text NOT NULL,                                                   -- 'cli', 'office', 'import <file>'
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    recorded_by      text NOT NULL
);
CREATE INDEX fog_blockages_location ON fog_blockages (lower(location), found_on);
CREATE INDEX fog_blockages_establishment ON fog_blockages (establishment_id);

CREATE TABLE fog_notices (
    id               serial PRIMARY KEY,
    number           text NOT NULL UNIQUE,                  -- GWL-2026-001
    establishment_id int NOT NULL REFERENCES fog_establishments (id),
    finding_key      text NOT NULL,                         -- which finding it answers (grease_notices.finding_key)
    finding_kind     text NOT NULL,
    finding_on       date NOT NULL,
    step             text NOT NULL,                         -- the guide's step id
    title            text NOT NULL,                         -- the step's title as the notice prints it
    amount_dollars   numeric,                               -- a fine or a cost recovered [$]
    issued_on        date NOT NULL,
    document         jsonb NOT NULL,                        -- everything the notice says
    pdf              bytea NOT NULL,                        -- the PDF as issued
    pdf_sha256       text NOT NULL,
    issued_by        text NOT NULL,
    issued_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (finding_key, step)
);
CREATE INDEX fog_notices_establishment ON fog_notices (establishment_id, issued_on);
