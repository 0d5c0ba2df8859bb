-- Issue 20, item 6: conflicting readings are a record, not a silence. The writer stores a
-- reading of a (sensor, time) stored already with ON CONFLICT DO NOTHING: an identical
-- resend is a quiet duplicate, but another value for the same sensor and time must become
-- a dead letter "conflict: stored X, received Y" (the first stays). The ingest role may not
-- read readings, so it asks this function, which answers only for the keys it is given.
CREATE OR REPLACE FUNCTION reading_conflicts(p_sensor int[], p_time timestamptz[], p_value float8[],
                                             p_quality int2[])
RETURNS TABLE (ord bigint, sensor_id int, "time" timestamptz, stored float8, received float8,
               stored_quality int2, received_quality int2, site text, sensor text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT u.n, u.s, u.t, r.value, u.v, r.quality, u.q, si.key, se.name
    FROM unnest(p_sensor, p_time, p_value, p_quality) WITH ORDINALITY AS u(s, t, v, q, n)
    JOIN readings r ON r.sensor_id = u.s AND r.time = u.t
    LEFT JOIN sensors se ON se.id = u.s
    LEFT JOIN sites si ON si.id = se.site_id
    WHERE r.value IS DISTINCT FROM u.v OR r.quality IS DISTINCT FROM u.q
    ORDER BY u.n
$$;
REVOKE ALL ON FUNCTION reading_conflicts(int[], timestamptz[], float8[], int2[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION reading_conflicts(int[], timestamptz[], float8[], int2[]) TO sewerwatch_ingest;
