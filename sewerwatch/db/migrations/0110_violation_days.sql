-- Days of violation over half-open intervals (issue 21), the rule of limits/days.py in SQL.
--
-- palmyra-wi, 003_44f871d49a02d8f5.txt §13.60(1): "Each day a condition is allowed to exist
-- which is contrary to all or any part of this subchapter shall constitute a new violation."
-- A day counts when the condition existed during it: each row's condition existed during
-- half-open intervals [start, end) (violation_spans), and its days are the local days from
-- that of start to that of the last instant before end. A condition of one whole local day
-- [00:00, 00:00 next day) is one day (0080's violation_days counted the next day too).
--
-- violation_spans(start, end, evidence): the row's intervals, as limits.days.intervals_of:
--   evidence.intervals (pairs of times: an average's sampled days, or its month), else
--   [start, evidence.last + 1 us) (an episode: its first to its last exceeding reading),
--   else [start, end), else the instant [start, start + 1 us).
-- violation_days(from, to, tz): distinct local days per site and rule of the rows whose
--   condition existed in [from, to) (replaces 0080's).
-- violation_in(start, end, evidence, from, to): whether a row's condition existed at some
--   instant of [from, to) (which rows fall in a period; every command asks the same).

CREATE FUNCTION violation_spans(p_start timestamptz, p_end timestamptz, p_evidence jsonb)
RETURNS SETOF tstzrange LANGUAGE sql IMMUTABLE AS $$
    SELECT tstzrange((i->>0)::timestamptz, greatest((i->>1)::timestamptz, (i->>0)::timestamptz + interval '1 microsecond'), '[)')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_evidence->'intervals') = 'array'
                                   THEN p_evidence->'intervals' ELSE '[]'::jsonb END) AS i
    UNION ALL
    SELECT CASE
        WHEN p_evidence->>'last' IS NOT NULL
            THEN tstzrange(p_start, greatest((p_evidence->>'last')::timestamptz, p_start) + interval '1 microsecond', '[)')
        WHEN p_end IS NOT NULL AND p_end > p_start THEN tstzrange(p_start, p_end, '[)')
        ELSE tstzrange(p_start, p_start + interval '1 microsecond', '[)')
    END
    WHERE jsonb_typeof(p_evidence->'intervals') IS DISTINCT FROM 'array'
       OR jsonb_array_length(p_evidence->'intervals') = 0
$$;

CREATE FUNCTION violation_in(p_start timestamptz, p_end timestamptz, p_evidence jsonb,
                             p_from timestamptz, p_to timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT EXISTS (SELECT 1 FROM violation_spans(p_start, p_end, p_evidence) r
                   WHERE r && tstzrange(p_from, p_to, '[)'))
$$;

CREATE OR REPLACE FUNCTION violation_days(p_from timestamptz, p_to timestamptz, p_tz text)
RETURNS TABLE (site_id int, rule text, days int, dates date[])
LANGUAGE sql STABLE AS $$
    WITH parts AS (
        SELECT v.site_id, v.rule, r * tstzrange(p_from, p_to, '[)') AS part
        FROM violations v, violation_spans(v.start_time, v.end_time, v.evidence) AS r
        WHERE v.site_id IS NOT NULL AND r && tstzrange(p_from, p_to, '[)')
    ), each_day AS (
        SELECT DISTINCT p.site_id, p.rule, d::date AS day
        FROM parts p,
             generate_series((lower(p.part) AT TIME ZONE p_tz)::date,
                             ((upper(p.part) - interval '1 microsecond') AT TIME ZONE p_tz)::date,
                             interval '1 day') AS d
        WHERE NOT isempty(p.part)
    )
    SELECT site_id, rule, count(*)::int, array_agg(day ORDER BY day)
    FROM each_day GROUP BY site_id, rule
$$;
