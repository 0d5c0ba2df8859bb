-- The address book's CSV file uploaded in the office (or given to `sewerwatch contacts import
-- --commit`), kept as it came with its preview, then saved once (identity/contacts_files.py,
-- as the bank's files of payments are: migration 0240).
--
-- contact_imports: a contacts file as it came (bytes, sha256) with its preview (what each row
--   would do); state 'staged' until saved, once ('saved', with the report of what was done:
--   rows added, changed, unchanged, not used); a file saved already is refused by its sha256.
CREATE TABLE contact_imports (
    id         bigserial PRIMARY KEY,          -- the contacts file's number
    filename   text NOT NULL,                  -- the file's name as uploaded (no folder)
    sha256     text NOT NULL,                  -- hash of its bytes: the same file is saved once
    data       bytea NOT NULL,                 -- the file as it came
    preview    jsonb NOT NULL,                 -- what each row would do when it was staged
    state      text NOT NULL DEFAULT 'staged' CHECK (state IN ('staged', 'saved')), -- saved once
    staged_by  text NOT NULL,                  -- who uploaded it (account or operating-system user)
    staged_at  timestamptz NOT NULL DEFAULT now(), -- when it was uploaded
    saved_by   text,                           -- who saved it
    saved_at   timestamptz,                    -- when it was saved
    report     jsonb,                          -- what saving did, row by row, with the counts
    CHECK ((state = 'saved') = (saved_at IS NOT NULL AND saved_by IS NOT NULL AND report IS NOT NULL))
);
CREATE UNIQUE INDEX contact_imports_once ON contact_imports (sha256) WHERE state = 'saved';
CREATE INDEX contact_imports_staged ON contact_imports (staged_at);
