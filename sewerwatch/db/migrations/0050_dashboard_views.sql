-- Views that keep the Grafana panels' SQL short (dashboards/, issue 8).
-- Plain SQL: no time_bucket here (panels bucket with Grafana's $__timeGroup macros), so the
-- views work on plain PostgreSQL as well as on TimescaleDB.

-- Every reading with its sensor and site, for panels that filter on the site key.
CREATE VIEW dash_readings AS
    SELECT r.time, r.value, r.quality, r.sensor_id,
           s.name AS sensor, s.parameter, s.site_id, t.key AS site, t.name AS site_name, t.pack
    FROM readings r
    JOIN sensors s ON s.id = r.sensor_id
    JOIN sites t ON t.id = s.site_id;

-- The last reading of each sensor and its age. One index probe per sensor on the unique
-- (sensor_id, time) index.
CREATE VIEW dash_sensor_last_reading AS
    SELECT t.key AS site, t.name AS site_name, s.id AS sensor_id, s.name AS sensor,
           s.parameter, s.source, s.interval_s,
           last.time AS last_time, last.value AS last_value, last.quality AS last_quality,
           extract(epoch FROM now() - last.time) AS age_s
    FROM sensors s
    JOIN sites t ON t.id = s.site_id
    LEFT JOIN LATERAL (
        SELECT r.time, r.value, r.quality
        FROM readings r
        WHERE r.sensor_id = s.id
        ORDER BY r.time DESC
        LIMIT 1
    ) last ON true;

-- One row per industrial user: open violations, violations in the last 30 days, open
-- alerts, the oldest "last reading" among its sensors, and a compliance status in words.
-- A sensor is stale when its last reading is older than 10 sample intervals (at least
-- 5 minutes); a site with no sensors or no readings is "no data".
CREATE VIEW dash_site_status AS
    WITH v AS (
        SELECT site_id,
               count(*) FILTER (WHERE end_time IS NULL) AS open_violations,
               count(*) FILTER (WHERE start_time > now() - interval '30 days') AS violations_30d,
               max(start_time) AS last_violation
        FROM violations GROUP BY site_id
    ), a AS (
        SELECT site_id, count(*) AS open_alerts
        FROM alerts WHERE state <> 'resolved' GROUP BY site_id
    ), r AS (
        SELECT t.id AS site_id, count(l.sensor_id) AS sensors,
               max(l.age_s) AS oldest_reading_age_s,
               count(*) FILTER (WHERE l.last_time IS NOT NULL AND
                   l.age_s > greatest(10 * coalesce(l.interval_s, 60), 300)) AS stale_sensors,
               count(*) FILTER (WHERE l.sensor_id IS NOT NULL AND l.last_time IS NULL) AS silent_sensors
        FROM sites t LEFT JOIN dash_sensor_last_reading l ON l.site = t.key
        GROUP BY t.id
    )
    SELECT t.id AS site_id, t.key AS site, t.name AS site_name, t.pack, t.sic, t.permit,
           coalesce(v.open_violations, 0) AS open_violations,
           coalesce(v.violations_30d, 0) AS violations_30d,
           v.last_violation,
           coalesce(a.open_alerts, 0) AS open_alerts,
           r.sensors, r.stale_sensors, r.silent_sensors, r.oldest_reading_age_s,
           CASE
               WHEN coalesce(v.open_violations, 0) > 0 THEN 'in violation'
               WHEN coalesce(v.violations_30d, 0) > 0 THEN 'violation in last 30 days'
               WHEN r.sensors = 0 OR r.silent_sensors = r.sensors THEN 'no data'
               WHEN r.stale_sensors > 0 OR r.silent_sensors > 0 THEN 'stale sensors'
               ELSE 'in compliance'
           END AS status
    FROM sites t
    LEFT JOIN v ON v.site_id = t.id
    LEFT JOIN a ON a.site_id = t.id
    LEFT JOIN r ON r.site_id = t.id;

-- Monthly volume discharged per site [million gallons] from its flow sensors: each good
-- reading [gpm] stands for its sensor's sample interval (60 s where none is recorded).
CREATE VIEW dash_monthly_volume AS
    SELECT s.site_id, t.key AS site, date_trunc('month', r.time) AS month,
           sum(r.value * coalesce(s.interval_s, 60) / 60.0) / 1e6 AS volume_mg,
           count(*) AS readings
    FROM readings r
    JOIN sensors s ON s.id = r.sensor_id
    JOIN sites t ON t.id = s.site_id
    WHERE s.parameter = 'flow' AND r.quality = 0
    GROUP BY s.site_id, t.key, date_trunc('month', r.time);

-- Monthly average lab concentration per site and analyte [mg/l], current versions only.
-- A non-detect ('<') counts as zero, as for billing (DESIGN.md, Surcharges).
CREATE VIEW dash_monthly_lab AS
    SELECT ls.site_id, t.key AS site, date_trunc('month', ls.collected) AS month, lr.analyte,
           avg(CASE WHEN lr.qualifier = '<' THEN 0 ELSE lr.value_mg_l END) AS avg_mg_l,
           count(*) AS samples
    FROM lab_results_current lr
    JOIN lab_samples ls ON ls.id = lr.sample_id
    JOIN sites t ON t.id = ls.site_id
    GROUP BY ls.site_id, t.key, date_trunc('month', ls.collected), lr.analyte;

-- The read-only Grafana role reads every view (0001 also sets a default privilege).
GRANT SELECT ON dash_readings, dash_sensor_last_reading, dash_site_status,
                dash_monthly_volume, dash_monthly_lab TO sewerwatch_grafana;
