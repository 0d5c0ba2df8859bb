-- The rates the bills use, kept with their effective dates and versions (lab/store/rates.py).
--
-- rate_versions: every version of the utility's rates (the numbers the rates file gives:
--   surcharge rates per pound, palmyra-wi 003_44f871d49a02d8f5.txt §13.45(4); the sewer use
--   charge per 1,000 gallons, §13.45(2)(a); a unit rent, webster-ny §113-75; ...), as the TOML
--   of `sewerwatch bill --rates`, in effect from `effective` on. Append-only: a new version
--   never overwrites an old one; a quarter's bills use the version in effect on the quarter's
--   first day (the latest `effective` on or before it; of two with the same day, the later
--   version). audit_log gets `rates.saved` with who saved it and how (file, form).
CREATE TABLE rate_versions (
    version     int PRIMARY KEY CHECK (version >= 1),
    effective   date NOT NULL,                   -- in effect from this day (local to the village)
    rates_text  text NOT NULL,                   -- the rates as TOML (the format of lab/readers/rates.py)
    rates       jsonb NOT NULL,                  -- the same, parsed
    source      text NOT NULL,                   -- where it came from, in words (a file's name, the office's form)
    note        text,                            -- why (a board resolution, "2027 rates")
    saved_by    text NOT NULL,
    saved_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rate_versions_effective ON rate_versions (effective, version);

CREATE FUNCTION rate_versions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rate_versions is append-only: save a change as a new version';
END
$$;
CREATE TRIGGER rate_versions_append_only BEFORE UPDATE OR DELETE ON rate_versions
    FOR EACH ROW EXECUTE FUNCTION rate_versions_append_only();

-- the version a bill run's rates came from (none: a rates file given for that run alone)
ALTER TABLE bill_runs ADD COLUMN rate_version int REFERENCES rate_versions (version);
