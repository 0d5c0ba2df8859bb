-- The pretreatment office's address book (identity/contacts.py): each industrial user's
-- people and addresses, one place that notices, bills, statements, portal invitations and
-- the discharger's report in an alert's mail are addressed from. Nothing is overwritten: a
-- change is a new version, dated, naming who made it (and an audit_log row).

CREATE TABLE contacts (
    id          serial PRIMARY KEY,               -- the contact's number
    site_id     int NOT NULL REFERENCES sites (id), -- the industrial user the person is a contact of
    created_at  timestamptz NOT NULL DEFAULT now(), -- when the contact was first entered
    created_by  text NOT NULL                     -- who entered it (account or operating-system user)
);
CREATE INDEX contacts_site ON contacts (site_id);

CREATE TABLE contact_versions (
    contact_id   int NOT NULL REFERENCES contacts (id), -- the contact
    version      int NOT NULL,                   -- 1 when entered, one more at each change
    full_name    text NOT NULL,                  -- the person's name
    roles        text[] NOT NULL,                -- representative, plant-manager, billing, emergency
    title        text,                           -- the position (as letters address it)
    phone        text,                           -- telephone (the emergency contact's, around the clock)
    email        text,                           -- e-mail address
    removed      boolean NOT NULL DEFAULT false, -- no longer a contact of the user (kept for the record)
    recorded_at  timestamptz NOT NULL DEFAULT now(), -- when this version was saved
    recorded_by  text NOT NULL,                  -- who saved it
    note         text,                           -- why it changed, as the person said
    PRIMARY KEY (contact_id, version),
    CHECK (roles <@ ARRAY['representative', 'plant-manager', 'billing', 'emergency']::text[])
);
CREATE INDEX contact_versions_email ON contact_versions (lower(email));

CREATE TABLE site_addresses (
    site_id      int NOT NULL REFERENCES sites (id), -- the industrial user
    kind         text NOT NULL CHECK (kind IN ('facility', 'mailing', 'billing')), -- which of its addresses
    version      int NOT NULL,                   -- 1 when entered, one more at each change
    street       text NOT NULL,                  -- the street lines (a line break between two)
    city         text NOT NULL,                  -- city or village
    state        text NOT NULL,                  -- state (two letters)
    postal_code  text NOT NULL,                  -- ZIP code
    recorded_at  timestamptz NOT NULL DEFAULT now(), -- when this version was saved
    recorded_by  text NOT NULL,                  -- who saved it
    note         text,                           -- why it changed
    PRIMARY KEY (site_id, kind, version)
);

-- A portal account that is also a contact is one person; an invitation made from a contact
-- names it, and the account made from the invitation links it.
ALTER TABLE web_accounts ADD COLUMN contact_id int REFERENCES contacts (id);
ALTER TABLE portal_invitations ADD COLUMN contact_id int REFERENCES contacts (id);
