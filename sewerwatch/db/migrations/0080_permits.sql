-- Discharge permits and days of violation (issue 16).
--
-- permits: every version of each industrial user's wastewater discharge permit
--   (palmyra-wi, 003_44f871d49a02d8f5.txt §13.54), the whole permit as JSON (limits/permits.py
--   reads it); append-only: a change is a new version, and audit_log says who changed what
--   (actions permit.import and permit.change, detail: the keys that changed).
-- alerts.kind 'permit': a reminder that a permit's term ends, or that it has expired
--   (§13.54(4)); violations.source 'permit': an expired permit as a finding.
-- violation_days(from, to, tz): distinct local days per site and rule of the violations
--   touching [from, to) (§13.60(1): "Each day a condition is allowed to exist which is
--   contrary to all or any part of this subchapter shall constitute a new violation").

CREATE TABLE permits (
    id          bigserial PRIMARY KEY,
    number      text NOT NULL,                   -- the permit's number, e.g. PAL-IU-2026-02
    version     int NOT NULL,
    site_id     int NOT NULL REFERENCES sites (id),
    issued      date NOT NULL,
    effective   date NOT NULL,
    expires     date NOT NULL,                   -- the end of the term the permit states
    document    jsonb NOT NULL,                  -- the permit as written (limits/permits.py)
    source      text,                            -- the file it was imported from
    entered_by  text NOT NULL DEFAULT current_user,
    entered_at  timestamptz NOT NULL DEFAULT now(),
    reason      text,                            -- why this version was entered
    UNIQUE (number, version)
);
CREATE INDEX permits_site ON permits (site_id);

CREATE FUNCTION permits_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'permits is append-only: enter a change as a new version';
END
$$;
CREATE TRIGGER permits_append_only BEFORE UPDATE OR DELETE ON permits
    FOR EACH ROW EXECUTE FUNCTION permits_append_only();

CREATE VIEW permits_current AS
    SELECT DISTINCT ON (number) *
    FROM permits
    ORDER BY number, version DESC;

GRANT SELECT ON permits, permits_current TO sewerwatch_grafana;

ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check CHECK (kind IN ('violation', 'sensor-health', 'permit'));
ALTER TABLE violations DROP CONSTRAINT violations_source_check;
ALTER TABLE violations ADD CONSTRAINT violations_source_check
    CHECK (source IN ('stream', 'batch', 'lab', 'permit'));

-- Distinct local days of violation per site and rule. An episode's days run from the local
-- day of its first exceeding reading to that of its last (evidence 'last'; else its end,
-- else its start); only days inside [p_from, p_to), counted in the time zone p_tz.
CREATE FUNCTION violation_days(p_from timestamptz, p_to timestamptz, p_tz text)
RETURNS TABLE (site_id int, rule text, days int, dates date[])
LANGUAGE sql STABLE AS $$
    WITH spans AS (
        SELECT v.site_id, v.rule,
               greatest((v.start_time AT TIME ZONE p_tz)::date, (p_from AT TIME ZONE p_tz)::date) AS d0,
               least((coalesce((v.evidence->>'last')::timestamptz, v.end_time, v.start_time) AT TIME ZONE p_tz)::date,
                     ((p_to - interval '1 microsecond') AT TIME ZONE p_tz)::date) AS d1
        FROM violations v
        WHERE v.site_id IS NOT NULL AND v.start_time < p_to
          AND coalesce((v.evidence->>'last')::timestamptz, v.end_time, v.start_time) >= p_from
    ), each_day AS (
        SELECT DISTINCT s.site_id, s.rule, d::date AS day
        FROM spans s, generate_series(s.d0, s.d1, interval '1 day') AS d
        WHERE s.d0 <= s.d1
    )
    SELECT site_id, rule, count(*)::int, array_agg(day ORDER BY day)
    FROM each_day GROUP BY site_id, rule
$$;
