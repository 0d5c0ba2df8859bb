-- Legal holds (enforcement/holds.py): while a hold on an industrial user is active, storage
-- retention (sewerwatch/db/maintain.py) removes nothing of that site's: its raw readings are
-- kept (copied into readings_evidence before chunks are dropped), its evidence and one-minute
-- aggregates are kept past the records period. 40 CFR 403.12(o)(2): records are kept longer
-- while litigation or enforcement is pending. Placing and releasing are audited (audit_log).
CREATE TABLE legal_holds (
    id              bigserial PRIMARY KEY,
    site_id         int NOT NULL REFERENCES sites (id),
    reason          text NOT NULL CHECK (length(btrim(reason)) > 0),
    placed_by       text NOT NULL,
    placed_at       timestamptz NOT NULL DEFAULT now(),
    released_by     text,
    released_at     timestamptz,
    release_reason  text
);
-- one active hold per site
CREATE UNIQUE INDEX legal_holds_active ON legal_holds (site_id) WHERE released_at IS NULL;
