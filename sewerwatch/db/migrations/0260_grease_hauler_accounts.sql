-- The grease haulers in the portal: a registered hauler (fog_haulers, 0250) has portal
-- accounts of kind 'grease-hauler', bound to the hauler as an industrial user's account is
-- bound to its site; they are invited through the portal's invitations (0170), which name
-- either a site or a hauler. Staff assign a hauler to the devices it was hired for
-- (fog_hauler_devices); a hauler may also report a device it pumped before (its own
-- pump-outs).
ALTER TABLE web_accounts ADD COLUMN hauler_id int REFERENCES fog_haulers (id);
ALTER TABLE web_accounts DROP CONSTRAINT web_accounts_kind_check;
ALTER TABLE web_accounts ADD CONSTRAINT web_accounts_kind_check
    CHECK (kind IN ('staff', 'industrial-user', 'grease-hauler'));
ALTER TABLE web_accounts DROP CONSTRAINT web_accounts_check;
ALTER TABLE web_accounts ADD CONSTRAINT web_accounts_check
    CHECK ((kind = 'staff' AND role IS NOT NULL AND site_id IS NULL AND hauler_id IS NULL)
           OR (kind = 'industrial-user' AND site_id IS NOT NULL AND hauler_id IS NULL)
           OR (kind = 'grease-hauler' AND hauler_id IS NOT NULL AND site_id IS NULL AND role IS NULL));

ALTER TABLE portal_invitations ALTER COLUMN site_id DROP NOT NULL;
ALTER TABLE portal_invitations ADD COLUMN hauler_id int REFERENCES fog_haulers (id);
ALTER TABLE portal_invitations ADD CONSTRAINT portal_invitations_site_or_hauler
    CHECK ((site_id IS NULL) <> (hauler_id IS NULL) AND (hauler_id IS NULL OR NOT signatory));
CREATE INDEX portal_invitations_hauler ON portal_invitations (hauler_id);

CREATE TABLE fog_hauler_devices (
    hauler_id    int NOT NULL REFERENCES fog_haulers (id),
    device_id    int NOT NULL REFERENCES fog_devices (id),
    assigned_at  timestamptz NOT NULL DEFAULT now(),
    assigned_by  text NOT NULL,
    PRIMARY KEY (hauler_id, device_id)
);
CREATE INDEX fog_pumpouts_hauler ON fog_pumpouts (hauler_id, pumped_on);
