-- Acknowledgement links (issue 14 item 7): every alert message carries a signed, expiring,
-- single-use link to the acknowledgement page of `sewerwatch run` (alerts/links.py,
-- alerts/ackpage.py). The link itself is never stored; its id is, once it has been used,
-- in the same transaction as the acknowledgement it made: a second use of the same link
-- finds its row and says who used it and when.
CREATE TABLE ack_links_used (
    token_id  text PRIMARY KEY,
    alert_id  bigint NOT NULL REFERENCES alerts (id),
    used_at   timestamptz NOT NULL DEFAULT now(),
    used_by   text NOT NULL
);
CREATE INDEX ack_links_used_alert ON ack_links_used (alert_id);
