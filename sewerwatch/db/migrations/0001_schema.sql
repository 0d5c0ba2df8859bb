-- sewerwatch schema, version 1 (DESIGN.md, Storage).
-- Works on plain PostgreSQL; where the timescaledb extension is installed in the database,
-- readings becomes a hypertable.

-- Roles. The embedded cluster creates them as login roles first (sewerwatch/db/bootstrap.py);
-- on a configured server they are created here without login if they do not exist yet.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sewerwatch_ingest') THEN
        CREATE ROLE sewerwatch_ingest NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sewerwatch_grafana') THEN
        CREATE ROLE sewerwatch_grafana NOLOGIN;
    END IF;
END
$$;

-- The industrial users.
CREATE TABLE sites (
    id          serial PRIMARY KEY,
    key         text NOT NULL UNIQUE,            -- the config's site id, used in topics and CSVs
    name        text NOT NULL,
    pack        text NOT NULL,                   -- jurisdiction rule pack, limits/packs/<pack>.toml
    sic         text,
    permit      text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sensors (
    id          serial PRIMARY KEY,
    site_id     int NOT NULL REFERENCES sites (id),
    name        text NOT NULL,
    parameter   text NOT NULL,                   -- ph, temperature, flow, level
    unit        text NOT NULL,                   -- unit the source delivers; readings hold the canonical unit
    source      text NOT NULL CHECK (source IN ('modbus', 'mqtt', 'manual', 'import')),
    address     text,                            -- modbus:<device>/<field> or mqtt:<topic>
    interval_s  double precision,                -- nominal sample interval [s]
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (site_id, name)
);

-- Every reading, in the parameter's canonical unit (limits/units.py).
-- quality: 0 good; 1 outside the physically possible range (kept, skipped by evaluation);
-- 2 device fault. Unique on (sensor_id, time): every write is idempotent.
CREATE TABLE readings (
    time        timestamptz NOT NULL,
    sensor_id   int NOT NULL,
    value       double precision,
    quality     smallint NOT NULL DEFAULT 0,
    UNIQUE (sensor_id, time)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb') THEN
        PERFORM create_hypertable('readings', 'time', chunk_time_interval => INTERVAL '1 day',
                                  if_not_exists => true);
    END IF;
END
$$;

CREATE TABLE violations (
    id                 bigserial PRIMARY KEY,
    site_id            int REFERENCES sites (id),
    sensor_id          int REFERENCES sensors (id),
    parameter          text NOT NULL,
    rule               text NOT NULL,            -- ph-min, ph-max, temperature-max, slug, fog, ...
    pack               text NOT NULL,
    citation           text NOT NULL,            -- seed file and section
    words              text,                     -- the ordinance's words
    start_time         timestamptz NOT NULL,
    end_time           timestamptz,              -- NULL while the episode is open
    peak               double precision,
    limit_value        double precision,
    unit               text,
    days_of_violation  int,
    evidence           jsonb NOT NULL DEFAULT '{}'::jsonb,
    source             text NOT NULL DEFAULT 'batch' CHECK (source IN ('stream', 'batch', 'lab')),
    detected_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (sensor_id, rule, start_time)
);
CREATE INDEX violations_site_time ON violations (site_id, start_time);

CREATE TABLE alerts (
    id               bigserial PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('violation', 'sensor-health')),
    violation_id     bigint REFERENCES violations (id),
    site_id          int REFERENCES sites (id),
    sensor_id        int REFERENCES sensors (id),
    rule             text NOT NULL,
    state            text NOT NULL DEFAULT 'open'
                     CHECK (state IN ('open', 'notified', 'acknowledged', 'escalated', 'resolved')),
    summary          text NOT NULL,
    details          jsonb NOT NULL DEFAULT '{}'::jsonb,
    opened_at        timestamptz NOT NULL DEFAULT now(),
    notified_at      timestamptz,
    escalated_at     timestamptz,
    acknowledged_at  timestamptz,
    acknowledged_by  text,
    ack_note         text,
    resolved_at      timestamptz
);
CREATE INDEX alerts_open ON alerts (state) WHERE state <> 'resolved';

CREATE TABLE alert_notifications (
    id         bigserial PRIMARY KEY,
    alert_id   bigint NOT NULL REFERENCES alerts (id),
    event      text NOT NULL,                    -- open, escalate, resolve, digest
    channel    text NOT NULL,
    contact    text,
    attempt    int NOT NULL DEFAULT 1,
    status     text NOT NULL CHECK (status IN ('sent', 'failed')),
    error      text,
    at         timestamptz NOT NULL DEFAULT now()
);

-- Lab samples and results. A correction is a new version of a result, never an overwrite.
CREATE TABLE lab_samples (
    id            bigserial PRIMARY KEY,
    sample_key    text NOT NULL,                 -- the lab's sample_id
    site_id       int NOT NULL REFERENCES sites (id),
    collected     timestamptz NOT NULL,
    sample_type   text NOT NULL DEFAULT 'grab' CHECK (sample_type IN ('grab', 'composite')),
    window_start  timestamptz,                   -- a composite's sampling window
    window_end    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (site_id, sample_key)
);

CREATE TABLE lab_results (
    id               bigserial PRIMARY KEY,
    sample_id        bigint NOT NULL REFERENCES lab_samples (id),
    analyte          text NOT NULL,              -- bod5, tss, tkn, tp, fog, cn
    version          int NOT NULL DEFAULT 1,
    value_mg_l       double precision,           -- converted to mg/l; the detection limit for a non-detect
    qualifier        text NOT NULL DEFAULT '' CHECK (qualifier IN ('', '<')),
    raw_value        text,
    raw_unit         text,
    entered_by       text NOT NULL DEFAULT current_user,
    entered_at       timestamptz NOT NULL DEFAULT now(),
    reason           text,                       -- why a new version was entered
    UNIQUE (sample_id, analyte, version)
);

CREATE FUNCTION lab_results_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'lab_results is append-only: enter a correction as a new version';
END
$$;
CREATE TRIGGER lab_results_append_only BEFORE UPDATE OR DELETE ON lab_results
    FOR EACH ROW EXECUTE FUNCTION lab_results_append_only();

CREATE VIEW lab_results_current AS
    SELECT DISTINCT ON (sample_id, analyte) *
    FROM lab_results
    ORDER BY sample_id, analyte, version DESC;

-- Every payload or row that could not be used, with its raw bytes and the reason.
CREATE TABLE dead_letters (
    id           bigserial PRIMARY KEY,
    received_at  timestamptz NOT NULL DEFAULT now(),
    source       text NOT NULL,                  -- mqtt, modbus, lab-import, check, ...
    topic        text,                           -- MQTT topic, file name and line, device
    payload      bytea,
    reason       text NOT NULL,
    detail       jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX dead_letters_received ON dead_letters (received_at);

CREATE TABLE audit_log (
    id      bigserial PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    actor   text NOT NULL DEFAULT current_user,
    action  text NOT NULL,
    object  text,
    detail  jsonb NOT NULL DEFAULT '{}'::jsonb
);

-- Privileges. Nobody but the owner may change the schema.
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO sewerwatch_ingest, sewerwatch_grafana;

-- ingest: insert readings and dead letters, read the sensor map; nothing else.
GRANT SELECT ON sites, sensors TO sewerwatch_ingest;
GRANT INSERT ON readings, dead_letters TO sewerwatch_ingest;
GRANT USAGE ON SEQUENCE dead_letters_id_seq TO sewerwatch_ingest;

-- grafana: read everything, now and in later migrations, write nothing.
GRANT SELECT ON ALL TABLES IN SCHEMA public TO sewerwatch_grafana;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO sewerwatch_grafana;
