-- readings, narrower (issue 15, bytes per reading): measured 105 bytes a reading on the
-- Apache TimescaleDB build, of which
--   * about 22 bytes the hypertable's default index on (time DESC): every query of readings
--     names its sensors, and the unique (sensor_id, time) index serves those (chunk
--     exclusion already limits a time range to its chunks);
--   * 8 bytes alignment padding in each row: (time int8, sensor_id int4, value float8, ...)
--     pads sensor_id to 8 bytes; (time, value, sensor_id, quality) does not.
-- So readings is rebuilt with its columns in that order and only the unique index. Column
-- order is invisible to every statement that names its columns (all of sewerwatch's do).
--
-- The views over readings are re-pointed with CREATE OR REPLACE VIEW and their own
-- definitions (they keep their grants, and views over them stay valid); other indexes
-- on readings are re-created; grants on readings are copied. A trigger or policy on
-- readings stops the migration (it would not know how to carry it).

DO $$
DECLARE
    ts        boolean := EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb');
    chunk     interval := INTERVAL '1 day';
    views     text[] := '{}';
    view_defs text[] := '{}';
    index_defs text[] := '{}';
    acl       aclitem[];
    v         record;
    i         int;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'readings'::regclass AND NOT tgisinternal
                                AND tgname <> 'ts_insert_blocker')   -- TimescaleDB's own
       OR EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = 'readings'::regclass) THEN
        RAISE EXCEPTION 'readings has a trigger or policy that 0070 cannot carry over';
    END IF;
    IF ts THEN
        SELECT d.time_interval INTO chunk FROM timescaledb_information.dimensions d
        WHERE d.hypertable_name = 'readings' AND d.column_name = 'time';
        chunk := coalesce(chunk, INTERVAL '1 day');
    END IF;

    -- views that read readings directly, and their definitions while they still say "readings"
    FOR v IN
        SELECT DISTINCT c.oid, c.oid::regclass::text AS name
        FROM pg_depend d
        JOIN pg_rewrite w ON w.oid = d.objid AND d.classid = 'pg_rewrite'::regclass
        JOIN pg_class c ON c.oid = w.ev_class
        WHERE d.refobjid = 'readings'::regclass AND c.relkind = 'v'
        ORDER BY c.oid
    LOOP
        views := views || v.name;
        view_defs := view_defs || pg_get_viewdef(v.oid, false);
    END LOOP;
    -- indexes other than the unique key and TimescaleDB's default time index
    SELECT coalesce(array_agg(pg_get_indexdef(x.indexrelid)), '{}') INTO index_defs
    FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
    WHERE x.indrelid = 'readings'::regclass
      AND c.relname NOT IN ('readings_sensor_id_time_key', 'readings_time_idx');
    SELECT relacl INTO acl FROM pg_class WHERE oid = 'readings'::regclass;

    ALTER TABLE readings RENAME TO readings_wide;
    CREATE TABLE readings (
        time        timestamptz NOT NULL,
        value       double precision,
        sensor_id   int NOT NULL,
        quality     smallint NOT NULL DEFAULT 0
    );
    IF ts THEN
        PERFORM create_hypertable('readings', 'time', chunk_time_interval => chunk,
                                  create_default_indexes => false);
    END IF;
    INSERT INTO readings (time, value, sensor_id, quality)
        SELECT time, value, sensor_id, quality FROM readings_wide ORDER BY time, sensor_id;

    FOR i IN 1 .. coalesce(array_length(views, 1), 0) LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s AS %s', views[i], view_defs[i]);
    END LOOP;
    DROP TABLE readings_wide;   -- fails if anything still depends on it
    -- built after the rows are in: one sorted build
    ALTER TABLE readings ADD CONSTRAINT readings_sensor_id_time_key UNIQUE (sensor_id, time);
    FOR i IN 1 .. coalesce(array_length(index_defs, 1), 0) LOOP
        EXECUTE index_defs[i];      -- captured while the table was still called readings
    END LOOP;
    FOR v IN SELECT a.privilege_type, a.grantee FROM aclexplode(acl) a
             WHERE a.grantee <> (SELECT relowner FROM pg_class WHERE oid = 'readings'::regclass)
    LOOP
        EXECUTE format('GRANT %s ON readings TO %s', v.privilege_type,
                       CASE WHEN v.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(v.grantee)) END);
    END LOOP;
END
$$;
