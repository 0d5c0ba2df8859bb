-- The office's accounts (issue 24): the people who sign in to the web application, their
-- role, their password (an argon2id hash: web/accounts.py, argon2-cffi), lockout after
-- repeated failures, an optional TOTP second factor, and a session epoch that ends every
-- session of the account when it changes (disable, password reset, role change).
--
-- kind: 'staff' (the utility's people, by role) or 'industrial-user' (the portal, bound to
-- one site; its accounts come with the portal, here only the column and its check).
CREATE TABLE web_accounts (
    id              serial PRIMARY KEY,
    username        text NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    full_name       text NOT NULL,
    kind            text NOT NULL DEFAULT 'staff' CHECK (kind IN ('staff', 'industrial-user')),
    role            text CHECK (role IN ('superintendent', 'coordinator', 'clerk', 'inspector', 'viewer')),
    site_id         int REFERENCES sites (id),
    password_hash   text NOT NULL,
    disabled_at     timestamptz,
    failed_logins   int NOT NULL DEFAULT 0,
    locked_until    timestamptz,
    session_epoch   int NOT NULL DEFAULT 1,
    totp_secret     text,
    totp_last_step  bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text NOT NULL,
    last_login_at   timestamptz,
    CHECK ((kind = 'staff' AND role IS NOT NULL AND site_id IS NULL)
           OR (kind = 'industrial-user' AND site_id IS NOT NULL))
);

-- Sign-ins, failures and lockouts are audit_log rows (actions 'login', 'login-failed',
-- 'account-locked', 'account-*'), object 'account:<username>'; the office reads an object's
-- history by this index.
CREATE INDEX audit_log_object ON audit_log (object);
