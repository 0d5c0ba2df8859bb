-- The compliance calendar's iCalendar feed, one per account (issue 25 item 3; web/feeds.py):
-- its address carries a token signed with the state folder's key (itsdangerous) over the
-- account and the nonce here, so the table alone cannot give an address away. Revoking
-- deletes the row (the address stops working at once); a new address is a new nonce. A
-- disabled account's feed answers 404.
CREATE TABLE web_calendar_feeds (
    account_id   int PRIMARY KEY REFERENCES web_accounts (id) ON DELETE CASCADE,
    nonce        text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_read_at timestamptz
);
