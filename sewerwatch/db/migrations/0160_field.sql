-- Instruments and field work (issue 26): the instrument register, maintenance windows,
-- calibration records, grab samples compared with the live sensor (drift), inspections of
-- industrial users with their photos. field/README.md says what each is for.
--
-- readings.quality gains a code: 3 = taken in a maintenance window (foundation/quality.py):
-- a probe in a calibration buffer, a flow meter lifted out to be cleaned. Such readings are
-- stored, shown and counted, never judged, never in a slug's baseline or a volume.

-- The instrument at each sensor, and its history: a new instrument (another serial number)
-- is a new row, the one it replaces gets its removed date. Owner: the utility or the
-- industrial user (Palmyra §13.52(3): metering devices "owned and maintained by the
-- property owner or user"; Webster NY §113-75: "calibrated annually at the owner's expense").
CREATE TABLE instruments (
    id                         serial PRIMARY KEY,
    sensor_id                  int NOT NULL REFERENCES sensors (id),
    make                       text,
    model                      text,
    serial                     text,
    range_low                  double precision,
    range_high                 double precision,
    range_unit                 text,
    owner                      text NOT NULL DEFAULT 'industrial-user' CHECK (owner IN ('utility', 'industrial-user')),
    installed                  date,
    removed                    date,
    calibration_interval_days  int CHECK (calibration_interval_days > 0),
    note                       text,
    source                     text NOT NULL DEFAULT 'cli' CHECK (source IN ('config', 'cli', 'web')),
    recorded_by                text NOT NULL DEFAULT current_user,
    recorded_at                timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX instruments_current ON instruments (sensor_id) WHERE removed IS NULL;

-- Maintenance windows: a sensor's (sensor_id) or a whole site's (sensor_id NULL). Open while
-- end_time is NULL. A window opened after the fact over readings already judged waits for a
-- second person (approval 'pending'): until approved it excludes nothing. key: a device's
-- window is recorded once however often its message is delivered (mqtt:<site>:<sensors>:<start us>).
CREATE TABLE maintenance_windows (
    id           bigserial PRIMARY KEY,
    site_id      int NOT NULL REFERENCES sites (id),
    sensor_id    int REFERENCES sensors (id),
    start_time   timestamptz NOT NULL,
    end_time     timestamptz,
    reason       text NOT NULL,
    person       text NOT NULL,                   -- who, as records show it (a name)
    opened_by    text NOT NULL,                   -- the account, operating-system user or device that opened it
    closed_by    text,
    source       text NOT NULL CHECK (source IN ('cli', 'web', 'mqtt', 'modbus')),
    device       text,
    approval     text NOT NULL DEFAULT 'not-needed'
                 CHECK (approval IN ('not-needed', 'pending', 'approved', 'rejected')),
    approved_by  text,
    approved_at  timestamptz,
    approval_note text,
    judged_readings int NOT NULL DEFAULT 0,       -- readings already judged when it was opened
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    key          text UNIQUE,
    CHECK (end_time IS NULL OR end_time >= start_time)
);
CREATE INDEX maintenance_windows_time ON maintenance_windows (start_time);
CREATE INDEX maintenance_windows_open ON maintenance_windows (site_id) WHERE end_time IS NULL;

-- Calibrations and verifications. kind 'ph': buffers [{nominal, as_found, as_left}], slope
-- [%], offset [mV], temperature; 'flow': reference [{reference, meter}] and the percent
-- difference; 'temperature': a reference thermometer against the probe. result against the
-- tolerance recorded with it.
CREATE TABLE calibrations (
    id              bigserial PRIMARY KEY,
    sensor_id       int NOT NULL REFERENCES sensors (id),
    instrument_id   int REFERENCES instruments (id),
    performed_at    timestamptz NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('ph', 'flow', 'temperature')),
    technician      text NOT NULL,
    buffers         jsonb NOT NULL DEFAULT '[]'::jsonb,
    slope_pct       double precision,
    offset_mv       double precision,
    temperature     double precision,
    temperature_unit text,
    reference       jsonb NOT NULL DEFAULT '{}'::jsonb,
    percent_difference double precision,
    tolerance       double precision NOT NULL,
    tolerance_unit  text NOT NULL,
    result          text NOT NULL CHECK (result IN ('pass', 'fail')),
    reasons         jsonb NOT NULL DEFAULT '[]'::jsonb,
    window_id       bigint REFERENCES maintenance_windows (id),
    note            text,
    recorded_by     text NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calibrations_sensor ON calibrations (sensor_id, performed_at);

-- Field readings an inspector takes at a control manhole (a grab pH or temperature).
CREATE TABLE field_readings (
    id             bigserial PRIMARY KEY,
    site_id        int NOT NULL REFERENCES sites (id),
    parameter      text NOT NULL CHECK (parameter IN ('ph', 'temperature')),
    value          double precision NOT NULL,        -- canonical unit (pH, degF)
    taken_at       timestamptz NOT NULL,
    taken_by       text NOT NULL,
    inspection_id  bigint,
    note           text,
    recorded_at    timestamptz NOT NULL DEFAULT now()
);

-- A grab sample (a lab result or a field reading) compared with the live sensor at its time.
CREATE TABLE grab_checks (
    id              bigserial PRIMARY KEY,
    sensor_id       int NOT NULL REFERENCES sensors (id),
    source          text NOT NULL CHECK (source IN ('lab', 'field')),
    ref             bigint NOT NULL,               -- lab_results.id or field_readings.id
    taken_at        timestamptz NOT NULL,
    grab            double precision NOT NULL,
    sensor_value    double precision,              -- NULL: no usable reading near the time
    readings        int NOT NULL DEFAULT 0,        -- sensor readings compared
    difference      double precision,
    tolerance       double precision NOT NULL,
    drifted         boolean NOT NULL,
    detail          text NOT NULL,
    checked_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, ref, sensor_id)
);
CREATE INDEX grab_checks_sensor ON grab_checks (sensor_id, taken_at);

-- Inspections of industrial users (40 CFR 403.8(f)(2)(v); counted in the annual report,
-- 403.12(i)). checklist: [{item, citation, answer ('ok', 'deficient', 'n/a'), note}].
CREATE TABLE inspections (
    id              bigserial PRIMARY KEY,
    site_id         int NOT NULL REFERENCES sites (id),
    visited_at      timestamptz NOT NULL,
    inspector       text NOT NULL,
    representative  text,
    kind            text NOT NULL DEFAULT 'routine' CHECK (kind IN ('routine', 'demand', 'follow-up', 'complaint')),
    sampled         boolean NOT NULL DEFAULT false,
    checklist       jsonb NOT NULL DEFAULT '[]'::jsonb,
    findings        text,
    recorded_by     text NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    key             text UNIQUE                    -- a form sent twice records one visit
);
CREATE INDEX inspections_site ON inspections (site_id, visited_at);
ALTER TABLE field_readings ADD CONSTRAINT field_readings_inspection FOREIGN KEY (inspection_id) REFERENCES inspections (id);

-- Photos of an inspection: the bytes in the database (outside any web root), checked and
-- re-encoded on upload, shown only to the office's accounts that may see the site.
CREATE TABLE inspection_photos (
    id             bigserial PRIMARY KEY,
    inspection_id  bigint NOT NULL REFERENCES inspections (id),
    media_type     text NOT NULL CHECK (media_type IN ('image/jpeg', 'image/png')),
    content        bytea NOT NULL,
    bytes          int NOT NULL,
    width          int NOT NULL,
    height         int NOT NULL,
    sha256         text NOT NULL,
    caption        text,
    uploaded_by    text NOT NULL,
    uploaded_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inspection_photos_inspection ON inspection_photos (inspection_id);

-- The findings field work gives enforcement (added to whatever kinds the table has).
DO $$
DECLARE
    kinds text[];
BEGIN
    SELECT array_agg(DISTINCT m[1]) INTO kinds
    FROM pg_constraint c, regexp_matches(pg_get_constraintdef(c.oid), '''([^'']+)''', 'g') AS m
    WHERE c.conname = 'findings_kind_check';
    kinds := array(SELECT DISTINCT unnest(kinds || ARRAY['calibration-failed', 'calibration-overdue',
                                                          'inspection-deficiency']) ORDER BY 1);
    ALTER TABLE findings DROP CONSTRAINT findings_kind_check;
    EXECUTE format('ALTER TABLE findings ADD CONSTRAINT findings_kind_check CHECK (kind = ANY (%L::text[]))', kinds);
END
$$;

-- A device's window, as the writer (the ingest role) records it in the same transaction as the
-- readings: 'start' opens one (once per key), 'end' closes the open one of that key prefix.
-- p_sensors: the sensors' ids (as text) or names at the site; NULL or empty: the whole site.
-- Returns 'opened', 'seen' (recorded before), 'closed', or why nothing could be done.
CREATE OR REPLACE FUNCTION device_window(p_site text, p_sensors text[], p_state text, p_at timestamptz,
                                         p_reason text, p_by text, p_source text, p_device text, p_key text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_site int;
    v_sensor int;
    v_id bigint;
    v_prefix text := split_part(p_key, '@', 1);
BEGIN
    SELECT id INTO v_site FROM sites WHERE key = p_site;
    IF v_site IS NULL THEN
        RETURN format('unknown site %L', p_site);
    END IF;
    IF p_state = 'start' THEN
        IF EXISTS (SELECT 1 FROM maintenance_windows WHERE key = p_key) THEN
            RETURN 'seen';
        END IF;
        IF p_sensors IS NULL OR cardinality(p_sensors) = 0 THEN
            INSERT INTO maintenance_windows (site_id, sensor_id, start_time, reason, person, opened_by, source, device,
                                             key)
            VALUES (v_site, NULL, p_at, p_reason, p_by, 'device ' || p_device, p_source, p_device, p_key);
        ELSE
            FOR i IN 1 .. cardinality(p_sensors) LOOP
                SELECT id INTO v_sensor FROM sensors WHERE site_id = v_site
                    AND (name = p_sensors[i] OR (p_sensors[i] ~ '^[0-9]+$' AND id = p_sensors[i]::int));
                IF v_sensor IS NULL THEN
                    RETURN format('unknown sensor %L at site %L', p_sensors[i], p_site);
                END IF;
                INSERT INTO maintenance_windows (site_id, sensor_id, start_time, reason, person, opened_by, source,
                                                 device, key)
                VALUES (v_site, v_sensor, p_at, p_reason, p_by, 'device ' || p_device, p_source, p_device,
                        CASE WHEN i = 1 THEN p_key ELSE p_key || '#' || i END);
            END LOOP;
        END IF;
        RETURN 'opened';
    ELSIF p_state = 'end' THEN
        UPDATE maintenance_windows SET end_time = GREATEST(p_at, start_time), closed_by = 'device ' || p_device
        WHERE site_id = v_site AND end_time IS NULL AND split_part(key, '@', 1) = v_prefix;
        IF NOT FOUND THEN
            IF EXISTS (SELECT 1 FROM maintenance_windows WHERE site_id = v_site AND split_part(key, '@', 1) = v_prefix
                       AND end_time IS NOT NULL AND end_time = GREATEST(p_at, start_time)) THEN
                RETURN 'seen';
            END IF;
            RETURN 'no open maintenance window to end';
        END IF;
        RETURN 'closed';
    END IF;
    RETURN format('unknown state %L (expected start or end)', p_state);
END
$$;
REVOKE ALL ON FUNCTION device_window(text, text[], text, timestamptz, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION device_window(text, text[], text, timestamptz, text, text, text, text, text)
    TO sewerwatch_ingest;

-- The collectors mark readings in a window as they store them: they read the windows.
GRANT SELECT ON maintenance_windows TO sewerwatch_ingest;
-- Photos are for the office's accounts, not for dashboards.
REVOKE SELECT ON inspection_photos FROM sewerwatch_grafana;

-- A reading stored with quality 3 because a window was recorded after it arrived is the same
-- reading when it is delivered again with quality 0: no conflict (issue 20, item 6).
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
    WHERE r.value IS DISTINCT FROM u.v
       OR (r.quality IS DISTINCT FROM u.q AND NOT (3 IN (r.quality, u.q)))
    ORDER BY u.n
$$;
