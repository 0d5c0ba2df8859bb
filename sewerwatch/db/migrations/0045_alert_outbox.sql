-- Alerts written behind (issue 12, "Alerts never wait for the database"): the alert manager
-- notifies from memory at once and writes its rows when the database takes them, each write
-- exactly once, also after a restart in between (alerts/outbox.py).
--
-- alert_uids: the manager names an alert by a uid of its own before the database has given
--   it an id; every later write of that alert finds its row here.
-- alert_ops: every write applied, by its op id, in the same transaction as the write: a write
--   replayed from the manager's journal after a crash is skipped, never doubled.
CREATE TABLE alert_uids (
    uid       text PRIMARY KEY,
    alert_id  bigint NOT NULL REFERENCES alerts (id)
);
CREATE INDEX alert_uids_alert ON alert_uids (alert_id);

CREATE TABLE alert_ops (
    op_id       text PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_ops_applied ON alert_ops (applied_at);
