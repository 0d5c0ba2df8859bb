-- Alerts (issue 6): what the live alert manager needs beyond 0001.
--
-- alerts.episode_ended_at: the violation episode (or health condition) is over and the
--   alert waits out the hold-off before it is resolved (NULL while the episode lasts);
-- alerts.episodes: episodes this alert covers (a new episode within the hold-off continues it);
-- alerts.device: the config's device id of a device-unreachable alert;
-- alerts.last_value: the latest peak / value seen [canonical unit].
ALTER TABLE alerts ADD COLUMN episode_ended_at timestamptz;
ALTER TABLE alerts ADD COLUMN episodes int NOT NULL DEFAULT 1;
ALTER TABLE alerts ADD COLUMN device text;
CREATE INDEX alerts_opened ON alerts (opened_at);

-- A daily digest is sent for no single alert: alert_id may be NULL, subject says what.
ALTER TABLE alert_notifications ALTER COLUMN alert_id DROP NOT NULL;
ALTER TABLE alert_notifications ADD COLUMN subject text;
CREATE INDEX alert_notifications_alert ON alert_notifications (alert_id);
