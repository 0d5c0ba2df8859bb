-- lab/ (issue 7): where each result came from, composites linked to the flow readings of
-- their window, and the bills issued. Plain SQL: works with or without TimescaleDB.

-- The file and line (or other origin) of each result version.
ALTER TABLE lab_results ADD COLUMN source text;

-- A composite sample's flow meter: the sensor whose readings cover its window
-- (palmyra-wi, 003_44f871d49a02d8f5.txt §13.53(3): 24-hour flow-proportional sample).
ALTER TABLE lab_samples ADD COLUMN flow_sensor_id int REFERENCES sensors (id);

-- The flow of a composite's window as computed from the readings (trapezoid integral of the
-- good readings, gaps not bridged): the volume its concentration applies to.
CREATE TABLE lab_composite_flows (
    sample_id     bigint PRIMARY KEY REFERENCES lab_samples (id),
    sensor_id     int NOT NULL REFERENCES sensors (id),
    window_start  timestamptz NOT NULL,
    window_end    timestamptz NOT NULL,
    readings      int NOT NULL,
    volume_gal    double precision NOT NULL,
    coverage      double precision NOT NULL,     -- fraction of the window the readings cover
    computed_at   timestamptz NOT NULL DEFAULT now()
);

-- Bills issued by `sewerwatch bill`: the whole bill as JSON, its total and period.
CREATE TABLE bills (
    id             bigserial PRIMARY KEY,
    site_id        int NOT NULL REFERENCES sites (id),
    period         text NOT NULL,                 -- e.g. 2026Q1
    period_start   timestamptz NOT NULL,
    period_end     timestamptz NOT NULL,
    issued_at      timestamptz NOT NULL DEFAULT now(),
    total_dollars  numeric(12, 2) NOT NULL,
    detail         jsonb NOT NULL
);
CREATE INDEX bills_site_period ON bills (site_id, period);
