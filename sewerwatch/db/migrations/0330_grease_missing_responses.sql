-- The grease program, finished: a device missing at an establishment as a finding, and a
-- grease notice answered and escalated as an industrial user's is.
--
-- fog_missing_devices: an establishment in a category the ordinance requires an interceptor of
-- (Palmyra §13.51, seed 003_44f871d49a02d8f5.txt) found with none (device_id NULL), or a
-- device on record found not there (device_id set); once a day each (fog/missing_devices.py).
-- Its finding (kind 'missing device') is worked out on read, as the others are.
CREATE TABLE fog_missing_devices (
    id               serial PRIMARY KEY,
    establishment_id int NOT NULL REFERENCES fog_establishments (id),
    device_id        int REFERENCES fog_devices (id),
    found_on         date NOT NULL,
    notes            text NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
    source           text NOT NULL,                   -- 'cli', 'office'
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    recorded_by      text NOT NULL
);
CREATE UNIQUE INDEX fog_missing_devices_once
    ON fog_missing_devices (establishment_id, coalesce(device_id, 0), found_on);

-- A grease notice's response and escalation (enforcement/grease_responses.py): the response
-- received (its day, who recorded it, what it said), and the notice of the guide's next step
-- it was escalated to, once.
ALTER TABLE fog_notices ADD COLUMN response_due date;
UPDATE fog_notices SET response_due = (document->>'respond_by')::date;
ALTER TABLE fog_notices ADD COLUMN response_received_on date;
ALTER TABLE fog_notices ADD COLUMN response_note text NOT NULL DEFAULT '' CHECK (length(response_note) <= 2000);
ALTER TABLE fog_notices ADD COLUMN response_by text;
ALTER TABLE fog_notices ADD COLUMN escalated_to int REFERENCES fog_notices (id);
ALTER TABLE fog_notices ADD COLUMN escalated_on date;
ALTER TABLE fog_notices ADD COLUMN escalation_note text NOT NULL DEFAULT '' CHECK (length(escalation_note) <= 2000);
