-- Issue 20, item 3: a frozen `run` is noticed. Leadership is a lease with an expiry in the
-- database, not a lock a frozen process keeps holding: the leader renews it every second;
-- a standby takes it once it has expired (the database's clock decides, no clocks compared);
-- a leader that thaws finds another term holding it and steps down without sending. A
-- leader that died (its database session ended with it) is taken over at once: the lease
-- names the server process of the leader's connection.
CREATE TABLE run_lease (
    id           int PRIMARY KEY CHECK (id = 1),     -- one lease per database
    holder       text NOT NULL,                      -- "sewerwatch-run <host> pid <pid> <token>"
    term         bigint NOT NULL,                    -- +1 at each takeover
    acquired_at  timestamptz NOT NULL,
    renewed_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    backend_pid  int                                 -- the leader's connection (pg_backend_pid())
);
