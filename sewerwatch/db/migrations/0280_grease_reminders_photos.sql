-- Reminders of a grease removal device coming due (fog/reminders.py): the addresses they
-- go to (the establishment's contact, a hauler's office; a hauler's portal people are
-- mailed too) and every reminder sent, once per device, due date and address.
ALTER TABLE fog_establishments ADD COLUMN contact_email text
    CHECK (contact_email IS NULL OR length(btrim(contact_email)) BETWEEN 3 AND 254);
ALTER TABLE fog_haulers ADD COLUMN email text
    CHECK (email IS NULL OR length(btrim(email)) BETWEEN 3 AND 254);

CREATE TABLE fog_reminders (
    id          bigserial PRIMARY KEY,
    device_id   int NOT NULL REFERENCES fog_devices (id),
    due_on      date NOT NULL,
    address     text NOT NULL,
    recipient   text NOT NULL CHECK (recipient IN ('establishment', 'hauler')),
    hauler_id   int REFERENCES fog_haulers (id),
    sent_at     timestamptz NOT NULL DEFAULT now(),
    sent_by     text NOT NULL,
    UNIQUE (device_id, due_on, address)
);
CREATE INDEX fog_reminders_sent ON fog_reminders (sent_at);

-- Photos of a pump-out attached by the hauler in the portal (ereport/grease_photos.py): each
-- checked and re-encoded as the field inspections' photos are (field/photos.py); the same
-- photo once per report.
CREATE TABLE fog_pumpout_photos (
    id          bigserial PRIMARY KEY,
    pumpout_id  bigint NOT NULL REFERENCES fog_pumpouts (id),
    media_type  text NOT NULL CHECK (media_type IN ('image/jpeg', 'image/png')),
    content     bytea NOT NULL,
    width       int NOT NULL CHECK (width > 0),      -- [px]
    height      int NOT NULL CHECK (height > 0),     -- [px]
    sha256      text NOT NULL,
    added_at    timestamptz NOT NULL DEFAULT now(),
    added_by    text NOT NULL,
    UNIQUE (pumpout_id, sha256)
);

-- A grease inspection of an establishment's device (fog/inspections.py): the device's checks
-- (baffles, cover, FOG and solids depth measured [in]) and the kitchen's best management
-- practices. The 25 % reading is worked out when read, as every finding is.
CREATE TABLE fog_inspections (
    id               bigserial PRIMARY KEY,
    device_id        int NOT NULL REFERENCES fog_devices (id),
    inspected_on     date NOT NULL,
    baffles          text NOT NULL CHECK (baffles IN ('in place', 'damaged', 'missing')),
    cover            text NOT NULL CHECK (cover IN ('sound', 'damaged', 'missing')),
    fog_depth_in     numeric NOT NULL CHECK (fog_depth_in >= 0),      -- [in]
    solids_depth_in  numeric NOT NULL CHECK (solids_depth_in >= 0),   -- [in]
    scraping         boolean NOT NULL,     -- plates scraped into the trash before washing
    strainers        boolean NOT NULL,     -- strainers in the sinks' drains
    training_records boolean NOT NULL,     -- the staff's grease training on record
    notes            text NOT NULL DEFAULT '',
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    recorded_by      text NOT NULL
);
CREATE INDEX fog_inspections_device ON fog_inspections (device_id, inspected_on);

-- An establishment's own portal accounts (kind 'grease-establishment', bound to one
-- establishment as a hauler's account is bound to its hauler): they confirm or dispute each
-- pump-out reported for their devices (fog/verdicts.py), once.
ALTER TABLE web_accounts ADD COLUMN establishment_id int REFERENCES fog_establishments (id);
ALTER TABLE web_accounts DROP CONSTRAINT web_accounts_kind_check;
ALTER TABLE web_accounts ADD CONSTRAINT web_accounts_kind_check
    CHECK (kind IN ('staff', 'industrial-user', 'grease-hauler', 'grease-establishment'));
ALTER TABLE web_accounts DROP CONSTRAINT web_accounts_check;
ALTER TABLE web_accounts ADD CONSTRAINT web_accounts_check
    CHECK ((kind = 'staff' AND role IS NOT NULL AND site_id IS NULL AND hauler_id IS NULL AND establishment_id IS NULL)
           OR (kind = 'industrial-user' AND site_id IS NOT NULL AND hauler_id IS NULL AND establishment_id IS NULL)
           OR (kind = 'grease-hauler' AND hauler_id IS NOT NULL AND site_id IS NULL AND role IS NULL
               AND establishment_id IS NULL)
           OR (kind = 'grease-establishment' AND establishment_id IS NOT NULL AND site_id IS NULL AND hauler_id IS NULL
               AND role IS NULL));

CREATE TABLE fog_pumpout_verdicts (
    pumpout_id  bigint PRIMARY KEY REFERENCES fog_pumpouts (id),
    verdict     text NOT NULL CHECK (verdict IN ('confirmed', 'disputed')),
    reason      text NOT NULL DEFAULT '' CHECK (verdict = 'confirmed' OR length(btrim(reason)) > 0),
    given_at    timestamptz NOT NULL DEFAULT now(),
    given_by    text NOT NULL
);

-- An invitation names a site, a hauler or (now) an establishment: exactly one of them.
ALTER TABLE portal_invitations ADD COLUMN establishment_id int REFERENCES fog_establishments (id);
ALTER TABLE portal_invitations DROP CONSTRAINT portal_invitations_site_or_hauler;
ALTER TABLE portal_invitations ADD CONSTRAINT portal_invitations_one_owner
    CHECK (num_nonnulls(site_id, hauler_id, establishment_id) = 1 AND (site_id IS NOT NULL OR NOT signatory));
