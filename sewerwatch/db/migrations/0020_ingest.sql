-- Ingest: device health and outages (ingest issue: per-device health, gaps visible).

CREATE TABLE device_health (
    device             text PRIMARY KEY,          -- the config's device id
    site_key           text,
    state              text NOT NULL CHECK (state IN ('up', 'down')),
    last_good_at       timestamptz,
    last_error_at      timestamptz,
    last_error         text,
    polls              bigint NOT NULL DEFAULT 0,
    missed_polls       bigint NOT NULL DEFAULT 0,  -- polls not started on time
    transport_errors   bigint NOT NULL DEFAULT 0,  -- timeouts, refused or dropped connections
    exception_replies  bigint NOT NULL DEFAULT 0,  -- Modbus exception responses
    reconnects         bigint NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- One row per time a device was unreachable: the gap in its readings.
CREATE TABLE device_outages (
    device      text NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,                      -- NULL while it lasts
    reason      text,
    PRIMARY KEY (device, started_at)
);

GRANT SELECT, INSERT, UPDATE ON device_health, device_outages TO sewerwatch_ingest;
GRANT SELECT ON device_health, device_outages TO sewerwatch_grafana;
