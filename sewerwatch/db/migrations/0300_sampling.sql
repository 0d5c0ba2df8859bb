-- Sampling events with chain of custody (lab/sampling/, docs/office/sampling.md): the samples
-- a schedule owes, planned as events the laboratory receives and returns; the time each result
-- was analysed (the lab CSV's optional column analysed_at) and the results whose holding time
-- (40 CFR 136.3(e), Table II) was exceeded, kept and flagged, never counted as taken.

ALTER TABLE lab_results ADD COLUMN analysed timestamptz;   -- when the laboratory analysed it, if it says

CREATE TABLE sampling_events (
    id            bigserial PRIMARY KEY,
    sample_key    text NOT NULL UNIQUE,          -- the sample id printed on the chain of custody
    site_id       int NOT NULL REFERENCES sites (id),
    requirement   text,                          -- the schedule's requirement it serves (NULL: one planned by hand)
    period        text,                          -- the schedule's period (2026-05, 2026Q2)
    planned_at    timestamptz NOT NULL,
    sampler       text NOT NULL CHECK (sampler IN ('utility', 'user')),
    point         text NOT NULL,                 -- the sampling point: the control manhole
    sample_type   text NOT NULL CHECK (sample_type IN ('grab', 'composite')),
    parameters    text[] NOT NULL CHECK (cardinality(parameters) > 0),
    laboratory    text,
    state         text NOT NULL DEFAULT 'planned' CHECK (state IN ('planned', 'returned', 'cancelled')),
    sampled_at      timestamptz,                   -- the actual time: the lab file's collection time
    returned_at   timestamptz,                   -- the first import that brought results for it
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sampling_events_planned ON sampling_events (planned_at);
CREATE INDEX sampling_events_requirement ON sampling_events (site_id, requirement, period);

-- A result analysed after its holding time: flagged on import; the schedule does not count it as taken.
CREATE TABLE lab_result_holds (
    result_id     bigint PRIMARY KEY REFERENCES lab_results (id),
    held_hours    double precision NOT NULL,     -- sampled to analysed [h]
    limit_hours   double precision NOT NULL,     -- the method's maximum holding time [h]
    citation      text NOT NULL,
    flagged_at    timestamptz NOT NULL DEFAULT now()
);
