-- Upgrade: creates the integration engine's tables (interface messages with their payload stored once, deliveries, dedupe keys, source state) where they are missing: a database from before the engine had its own line has them already, from the runtime line's 0002
-- Heavy: none (new tables only; on a database that has them, nothing is created)

-- The engine's own migration line: applied by the engine when it opens
-- its store (ixstore.Store.SchemaMigrate), recorded in
-- ductus_ix_schema_migrations, never applied by the runtime's Open.
-- Every statement creates only what does not exist, so the file applies
-- cleanly on a database whose runtime line created these tables.

-- One row per message an interface received. The payload is stored here
-- once, however many destinations it fans out to; each destination's lane
-- actor gets a small message naming the row. Times are microseconds since
-- the epoch.
CREATE TABLE IF NOT EXISTS ductus_ix_messages (
    id           VARCHAR(40)  PRIMARY KEY,
    interface    VARCHAR(64)  NOT NULL,
    received_at  BIGINT       NOT NULL,
    status       VARCHAR(16)  NOT NULL,
    order_key    VARCHAR(255),
    lane         INTEGER      NOT NULL,
    dedupe_key   VARCHAR(255),
    duplicate_of VARCHAR(40),
    origin       VARCHAR(255),
    payload      BLOB         NOT NULL,
    ack          BLOB,
    meta         TEXT
);
CREATE INDEX IF NOT EXISTS ductus_ix_messages_interface ON ductus_ix_messages (interface, received_at);
CREATE UNIQUE INDEX IF NOT EXISTS ductus_ix_messages_origin ON ductus_ix_messages (interface, origin);

-- The lane message of each destination of a message (for its status).
CREATE TABLE IF NOT EXISTS ductus_ix_deliveries (
    message_id      VARCHAR(40) NOT NULL,
    destination     VARCHAR(64) NOT NULL,
    lane_message_id BIGINT      NOT NULL,
    PRIMARY KEY (message_id, destination)
);

CREATE TABLE IF NOT EXISTS ductus_ix_dedupe (
    interface  VARCHAR(64)  NOT NULL,
    dedupe_key VARCHAR(255) NOT NULL,
    message_id VARCHAR(40)  NOT NULL,
    seen_at    BIGINT       NOT NULL,
    PRIMARY KEY (interface, dedupe_key)
);
CREATE INDEX IF NOT EXISTS ductus_ix_dedupe_seen ON ductus_ix_dedupe (seen_at);

-- What sources remember (a file's progress, a schedule's last run),
-- always written in the transaction of the messages it accounts for.
CREATE TABLE IF NOT EXISTS ductus_ix_source_state (
    interface  VARCHAR(64)  NOT NULL,
    state_key  VARCHAR(255) NOT NULL,
    value      TEXT         NOT NULL,
    updated_at BIGINT       NOT NULL,
    PRIMARY KEY (interface, state_key)
);
