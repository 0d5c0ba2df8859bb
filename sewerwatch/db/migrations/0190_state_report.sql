-- The state's electronic report as EPA reads it.
--
-- lab_samples.sampled_by: who took the sample. The control authority must sample every
-- significant industrial user at least once a year (40 CFR 403.8(f)(2)(v)); a user's
-- self-monitoring does not count towards it. 'potw' (the village), 'user' (the industrial
-- user, its self-monitoring), 'potw-contractor' and 'user-contractor' (a contractor for
-- either). Samples stored before this column are taken to be the user's: nothing recorded
-- that the village took them.
ALTER TABLE lab_samples ADD COLUMN sampled_by text NOT NULL DEFAULT 'user'
    CHECK (sampled_by IN ('potw', 'user', 'potw-contractor', 'user-contractor'));

-- The annual publication of the users in significant noncompliance (40 CFR
-- 403.8(f)(2)(viii): "at least annually ... in a newspaper(s) of general circulation"): the
-- act itself, recorded: the year whose list it is, the newspaper, the day it appeared, the
-- page as a PDF or a photo, and the users it named.
CREATE TABLE snc_publications (
    id             bigserial PRIMARY KEY,
    year           int NOT NULL CHECK (year BETWEEN 1990 AND 2200),
    newspaper      text NOT NULL CHECK (length(btrim(newspaper)) BETWEEN 1 AND 200),
    published_on   date NOT NULL,
    media_type     text NOT NULL CHECK (media_type IN ('application/pdf', 'image/jpeg', 'image/png')),
    page           bytea NOT NULL,
    page_name      text NOT NULL,
    bytes          int NOT NULL,
    sha256         text NOT NULL,
    recorded_by    text NOT NULL,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (year, newspaper, published_on)
);

-- The users a publication named (its list may be shorter than the year's, e.g. printed
-- before the year's second half was decided).
CREATE TABLE snc_publication_users (
    publication_id bigint NOT NULL REFERENCES snc_publications (id),
    site_id        int NOT NULL REFERENCES sites (id),
    PRIMARY KEY (publication_id, site_id)
);

-- The pages are for the office's accounts, not for dashboards.
REVOKE SELECT ON snc_publications FROM sewerwatch_grafana;
