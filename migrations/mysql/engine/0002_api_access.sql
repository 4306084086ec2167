-- Upgrade: creates the operator API's tables: API tokens (their hashes only) and the audit log
-- Heavy: none (new tables only)

-- API tokens. Only the SHA-256 of a token's secret is stored (hex), so a
-- copy of the database lets no one call the API; the hash is unique
-- because it is how a request finds its token. A revoked token keeps its
-- row (revoked_at set) so lists and the audit log can still name it.
-- Times are microseconds since the epoch, as in ductus_ix_messages.
--
-- IDs and the hash are VARBINARY, compared and ordered byte for byte, as
-- the 0001 file's keys; the text columns are utf8mb4 with the binary
-- collation, so a filter matches exactly (no case folding). The indexes
-- are written inside CREATE TABLE IF NOT EXISTS so the file can run again
-- (MySQL commits DDL on its own).
CREATE TABLE IF NOT EXISTS ductus_ix_tokens (
    id         VARBINARY(40)  NOT NULL,
    name       VARCHAR(64)    NOT NULL,
    hash       VARBINARY(64)  NOT NULL,
    role       VARCHAR(16)    NOT NULL,
    perms      VARCHAR(255)   NOT NULL,
    owner      VARCHAR(255)   NULL,
    created_at BIGINT         NOT NULL,
    created_by VARCHAR(255)   NOT NULL,
    revoked_at BIGINT         NULL,
    PRIMARY KEY (id),
    UNIQUE KEY ductus_ix_tokens_hash (hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The audit log: who did what to which target, how, from where, with what
-- outcome. The ID is a UUIDv7, so ID order is time order and a page of the
-- log is a keyset page on it; the two indexes serve the log's filters
-- (by action, by actor) in that same order.
CREATE TABLE IF NOT EXISTS ductus_ix_audit (
    id      VARBINARY(40)  NOT NULL,
    at      BIGINT         NOT NULL,
    actor   VARCHAR(255)   NOT NULL,
    via     VARCHAR(16)    NOT NULL,
    address VARCHAR(255)   NOT NULL,
    action  VARCHAR(128)   NOT NULL,
    target  VARCHAR(255)   NOT NULL,
    outcome VARCHAR(16)    NOT NULL,
    detail  TEXT           NULL,
    PRIMARY KEY (id),
    KEY ductus_ix_audit_action (action, id),
    KEY ductus_ix_audit_actor (actor, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
