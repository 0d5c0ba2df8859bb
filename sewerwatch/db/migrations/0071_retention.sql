-- Retention (issue 15): one-minute aggregates for long ranges, the raw readings of every
-- violation episode kept for the records period, and the maintenance job's progress.
-- Filled by sewerwatch/db/maintain.py (`sewerwatch db maintain`, and periodically by
-- `sewerwatch run`): TimescaleDB's continuous aggregates are not in its Apache build.

-- One row per sensor and minute with at least one usable reading (quality 0, a number).
-- twa: each reading weighted by how long it holds (until the sensor's next reading, at
-- most 3 sample intervals, never past the minute's end).
CREATE TABLE readings_1m (
    minute     timestamptz NOT NULL,            -- start of the minute
    sensor_id  int NOT NULL,
    n          int NOT NULL,                    -- usable readings
    min        double precision NOT NULL,
    max        double precision NOT NULL,
    mean       double precision NOT NULL,
    twa        double precision,                -- time-weighted mean [canonical unit]
    PRIMARY KEY (sensor_id, minute)
);

-- The raw readings around each violation episode (an hour either side by default),
-- copied here before raw readings older than the retention period are removed.
CREATE TABLE readings_evidence (
    time       timestamptz NOT NULL,
    value      double precision,
    sensor_id  int NOT NULL,
    quality    smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (sensor_id, time)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') THEN
        PERFORM create_hypertable('readings_1m', 'minute', chunk_time_interval => INTERVAL '30 days',
                                  create_default_indexes => false);
    END IF;
END
$$;

-- What the maintenance job has done: aggregates complete up to `done_to`, raw readings
-- removed before `done_to` (evidence kept), and so on; one row per job.
CREATE TABLE maintenance_state (
    job         text PRIMARY KEY,
    done_to     timestamptz,
    last_run    timestamptz,
    detail      jsonb NOT NULL DEFAULT '{}'::jsonb
);

-- For Grafana over long ranges: the aggregates with their sensor and site, as dash_readings.
CREATE VIEW dash_readings_1m AS
    SELECT a.minute AS time, a.n, a.min, a.max, a.mean, a.twa, a.sensor_id,
           s.name AS sensor, s.parameter, s.site_id, t.key AS site, t.name AS site_name, t.pack
    FROM readings_1m a
    JOIN sensors s ON s.id = a.sensor_id
    JOIN sites t ON t.id = s.site_id;

GRANT SELECT ON readings_1m, readings_evidence, maintenance_state, dash_readings_1m TO sewerwatch_grafana;
