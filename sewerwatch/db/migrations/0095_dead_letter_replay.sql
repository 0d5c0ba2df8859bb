-- Dead letters you can work with (issue 14 item 3): `sewerwatch deadletters replay` feeds a
-- stored MQTT topic and payload through the current config's decoding again and stores the
-- readings; the dead letter then says when it was replayed and as what. One that still
-- fails keeps its row with the new reason (the reasons before it in detail.previous_reasons)
-- and the time of the last try, so replaying twice stores nothing twice and hides nothing.
ALTER TABLE dead_letters
    ADD COLUMN replayed_at    timestamptz,          -- when a replay stored what it carried
    ADD COLUMN replayed_as    text,                 -- what it was stored as ("3 readings of acme/ph")
    ADD COLUMN last_replay_at timestamptz,          -- the last replay tried, successful or not
    ADD COLUMN replay_tries   integer NOT NULL DEFAULT 0;

-- `status` and `deadletters list` count the ones not replayed, by source, newest first.
CREATE INDEX dead_letters_pending ON dead_letters (source, received_at) WHERE replayed_at IS NULL;
