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
--
-- Keys are VARBINARY: compared byte for byte, so dedupe keys and origins
-- that differ only in case or trailing spaces stay distinct (utf8mb4
-- collations fold case or pad). Every statement can run again (MySQL
-- commits DDL on its own; the adapter skips an index that already exists).
CREATE TABLE IF NOT EXISTS ductus_ix_messages (
    id           VARBINARY(40)  NOT NULL,
    interface    VARBINARY(64)  NOT NULL,
    received_at  BIGINT         NOT NULL,
    status       VARBINARY(16)  NOT NULL,
    order_key    VARBINARY(255) NULL,
    lane         INTEGER        NOT NULL,
    dedupe_key   VARBINARY(255) NULL,
    duplicate_of VARBINARY(40)  NULL,
    origin       VARBINARY(255) NULL,
    payload      LONGBLOB       NOT NULL,
    ack          BLOB           NULL,
    meta         TEXT           CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (id),
    KEY ductus_ix_messages_interface (interface, received_at),
    UNIQUE KEY ductus_ix_messages_origin (interface, origin)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The lane message of each destination of a message (for its status).
CREATE TABLE IF NOT EXISTS ductus_ix_deliveries (
    message_id      VARBINARY(40) NOT NULL,
    destination     VARBINARY(64) NOT NULL,
    lane_message_id BIGINT        NOT NULL,
    PRIMARY KEY (message_id, destination)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS ductus_ix_dedupe (
    interface  VARBINARY(64)  NOT NULL,
    dedupe_key VARBINARY(255) NOT NULL,
    message_id VARBINARY(40)  NOT NULL,
    seen_at    BIGINT         NOT NULL,
    PRIMARY KEY (interface, dedupe_key),
    KEY ductus_ix_dedupe_seen (seen_at)
) ENGINE=InnoDB;

-- What sources remember (a file's progress, a schedule's last run),
-- always written in the transaction of the messages it accounts for.
CREATE TABLE IF NOT EXISTS ductus_ix_source_state (
    interface  VARBINARY(64)  NOT NULL,
    state_key  VARBINARY(255) NOT NULL,
    value      TEXT           CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    updated_at BIGINT         NOT NULL,
    PRIMARY KEY (interface, state_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
