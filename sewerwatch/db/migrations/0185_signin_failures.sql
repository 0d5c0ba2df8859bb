-- Failed sign-ins counted per account and per client address (web/accounts.py): a run of
-- failures from one address locks the account from that address only, so someone who does
-- not have the password can lock nobody out but themselves; the office's rate limit bounds how
-- often any address may try. web_accounts.locked_until (0140) keeps the latest lock of the
-- account from any address, for the accounts page and 'sewerwatch users list';
-- web_accounts.failed_logins the failures since the last sign-in, from every address.
CREATE TABLE web_signin_failures (
    account_id    int NOT NULL REFERENCES web_accounts (id) ON DELETE CASCADE,
    client        text NOT NULL,
    failures      int NOT NULL DEFAULT 0,
    locked_until  timestamptz,
    last_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, client)
);
-- who tried to sign in from where is the office's, not the dashboards'
REVOKE SELECT ON web_signin_failures FROM sewerwatch_grafana;
