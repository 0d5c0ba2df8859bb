-- Lab files uploaded in the office, kept until they are imported or discarded (issue 25
-- item 1; lab/store/uploads.py): the file's bytes as they came, its preview (every row that
-- cannot be used, with line and reason: lab.store.results.import_lab_file with dry_run) and,
-- once imported, the import's report. An upload is imported at most once (state 'staged' ->
-- 'imported', in the import's own transaction).
CREATE TABLE lab_uploads (
    id           bigserial PRIMARY KEY,
    filename     text NOT NULL,
    sha256       text NOT NULL,
    data         bytea NOT NULL,
    size_bytes   int NOT NULL,
    correct      boolean NOT NULL DEFAULT false,   -- rows for stored results become corrections
    site_id      int REFERENCES sites (id),        -- an industrial user's own upload (the portal); NULL: staff
    uploaded_by  text NOT NULL,
    uploaded_at  timestamptz NOT NULL DEFAULT now(),
    preview      jsonb NOT NULL,
    state        text NOT NULL DEFAULT 'staged' CHECK (state IN ('staged', 'imported', 'discarded')),
    done_by      text,
    done_at      timestamptz,
    report       jsonb                             -- the import's report
);
CREATE INDEX lab_uploads_state ON lab_uploads (state, uploaded_at);
