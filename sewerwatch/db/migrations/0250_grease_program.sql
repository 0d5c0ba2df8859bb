-- The grease program: the village's food service and other commercial establishments,
-- their grease removal devices, the grease haulers and the pump-outs they report.
-- Not permitted industrial users: no sensors, no permit. The program's rules (the
-- pumping interval, the 25 % rule) are in fog/packs/, the findings are worked out from
-- these rows when read (fog/findings.py).

CREATE TABLE fog_establishments (
    id           serial PRIMARY KEY,
    licence      text NOT NULL UNIQUE CHECK (length(btrim(licence)) BETWEEN 1 AND 60),
    name         text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    address      text NOT NULL CHECK (length(btrim(address)) BETWEEN 1 AND 300),
    contact      text NOT NULL DEFAULT '',
    category     text NOT NULL CHECK (category IN ('restaurant', 'school kitchen', 'hospital kitchen', 'bakery',
                                                   'repair garage', 'gasoline station', 'car wash', 'other')),
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    recorded_by  text NOT NULL
);

CREATE TABLE fog_devices (
    id               serial PRIMARY KEY,
    establishment_id int NOT NULL REFERENCES fog_establishments (id),
    label            text NOT NULL CHECK (length(btrim(label)) BETWEEN 1 AND 60),
    kind             text NOT NULL CHECK (kind IN ('interceptor', 'hydromechanical trap', 'automatic unit',
                                                   'sand/oil separator')),
    capacity_gal     numeric NOT NULL CHECK (capacity_gal > 0),      -- [gal]
    liquid_depth_in  numeric NOT NULL CHECK (liquid_depth_in > 0),   -- [in]
    location         text NOT NULL DEFAULT '',
    installed_on     date,
    interval_days    int NOT NULL CHECK (interval_days BETWEEN 1 AND 3650),  -- [days] before any finding
    registered_on    date NOT NULL,   -- the day the program took it on (its schedule starts no earlier)
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (establishment_id, label)
);

CREATE TABLE fog_haulers (
    id           serial PRIMARY KEY,
    company      text NOT NULL UNIQUE CHECK (length(btrim(company)) BETWEEN 1 AND 200),
    licence      text NOT NULL UNIQUE CHECK (length(btrim(licence)) BETWEEN 1 AND 60),
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    recorded_by  text NOT NULL
);

-- A pump-out as reported; hauler_id is NULL when the company named is not registered
-- (kept, and a finding), hauler_name is the company as the report named it.
CREATE TABLE fog_pumpouts (
    id                 bigserial PRIMARY KEY,
    device_id          int NOT NULL REFERENCES fog_devices (id),
    hauler_id          int REFERENCES fog_haulers (id),
    hauler_name        text NOT NULL CHECK (length(btrim(hauler_name)) BETWEEN 1 AND 200),
    pumped_on          date NOT NULL,
    gallons            numeric NOT NULL CHECK (gallons >= 0),            -- [gal]
    fog_depth_in       numeric NOT NULL CHECK (fog_depth_in >= 0),       -- [in] before pumping
    solids_depth_in    numeric NOT NULL CHECK (solids_depth_in >= 0),    -- [in] before pumping
    receiving_facility text NOT NULL CHECK (length(btrim(receiving_facility)) BETWEEN 1 AND 200),
    manifest           text NOT NULL UNIQUE CHECK (length(btrim(manifest)) BETWEEN 1 AND 60),
    source             text NOT NULL,                                    -- 'cli', 'import <file>', 'office'
    recorded_at        timestamptz NOT NULL DEFAULT now(),
    recorded_by        text NOT NULL
);
CREATE INDEX fog_pumpouts_device ON fog_pumpouts (device_id, pumped_on);
