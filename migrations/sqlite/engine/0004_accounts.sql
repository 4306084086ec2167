-- Upgrade: creates the local accounts' tables: users (their password hashes only) and browser sessions (the hashes of their secrets)
-- Heavy: none (new tables only)

-- Local accounts, one row per sign-in name. Only the password's argon2id
-- hash (a PHC string) is stored, so a copy of the database holds no
-- password. The failed sign-ins and the lockout live in the row itself, so
-- one UPDATE counts a failure and locks the account at the limit,
-- atomically with other sign-ins of the same name. Booleans are 0 or 1, as
-- in the runtime's tables. Times are microseconds since the epoch, as in
-- ductus_ix_messages.
CREATE TABLE IF NOT EXISTS ductus_ix_users (
    name          VARCHAR(64)  PRIMARY KEY,
    password_hash VARCHAR(255) NOT NULL,
    role          VARCHAR(16)  NOT NULL,
    perms         VARCHAR(255) NOT NULL,
    must_change   INTEGER      NOT NULL,
    disabled      INTEGER      NOT NULL,
    failed_logins INTEGER      NOT NULL,
    locked_until  BIGINT,
    created_at    BIGINT       NOT NULL,
    created_by    VARCHAR(255) NOT NULL,
    password_at   BIGINT       NOT NULL
);

-- Browser sessions. As with API tokens, only the SHA-256 of the cookie's
-- secret is stored (hex), so a copy of the database signs no one in; the
-- hash is the key because it is how a request finds its session. Ending a
-- user's sessions (disabled, new password) deletes by user, hence the
-- index. The prune scans the table: it holds one row per signed-in browser.
CREATE TABLE IF NOT EXISTS ductus_ix_sessions (
    hash       VARCHAR(64)  PRIMARY KEY,
    user_name  VARCHAR(64)  NOT NULL,
    address    VARCHAR(255) NOT NULL,
    created_at BIGINT       NOT NULL,
    last_seen  BIGINT       NOT NULL,
    expires_at BIGINT       NOT NULL
);
CREATE INDEX IF NOT EXISTS ductus_ix_sessions_user ON ductus_ix_sessions (user_name);
